"""The consumer runtime: long-polls a topic and runs a handler on each message, as a bounded pool of workers.

What it holds at once: `concurrency` handlers running, and at most `prefetch` messages leased ahead of them, fewer
when handlers are slow (never more than the workers can start before about two thirds of a lease has passed: the
bound follows an average of recent handler durations). A fetch asks for what fits, once at least half of it fits.

Leases: a held message whose lease has about a third of `visibility_timeout` left is extended (a running handler's,
and a prefetched one's). A handler that returns acks its message; one that raises nacks it with the exception's
text, after the delay a `Retry` exception asks for, or the topic's backoff. A handler may also return a `Retry`
(a deferral, not an error): its `metadata` is saved state, merged into the message's for the next attempt.
Acks go in batches (one request per `ack_batch_size` acks, or per `ack_interval` seconds); nacks of a flush go out
together. A message whose lease was lost (an extension answered lease_lost: another consumer has it now) is never
acked.

Stopping (`stop()`, SIGTERM or SIGINT while `run` is going): no more fetches, prefetched messages that never
started are released at once (nacked with no delay, so another consumer gets them without waiting for their
leases: like an SQS receive, the release counts as a delivery attempt), running handlers get `grace_period`
seconds to finish, then are cancelled and their messages released too, and the last acks are flushed.

Poison messages: a handler that keeps failing, or a consumer that keeps crashing on one (each lapsed lease counts as
an attempt on the server), sends the message to `<topic>.dlq` after the topic's `max_retries`. With `model=`,
payloads are decoded before the handler; an undecodable one is nacked with the decode error, without calling the
handler, and takes the same path to the DLQ.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import inspect
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

from skiplock_client import errors
from skiplock_client.handling import Counters, Middleware, Retry, maybe_await
from skiplock_client.models import BatchAck, Message, NackOutcome
from skiplock_client.retry import RetryPolicy

log = logging.getLogger("skiplock_client.consumer")

_MAX_DEQUEUE = 1000  # the server's largest dequeue count


class Leases(Protocol):
    """What a consumer asks of its client (`AsyncClient` is one): leases taken, acked, nacked and extended, the
    largest batch it sends and how it waits before retrying."""

    batch_size: int
    retry: RetryPolicy

    async def receive(
        self,
        topic: str,
        count: int = 1,
        *,
        visibility_timeout: int | None = None,
        wait_seconds: float = 0,
        consumer_group: str | None = None,
    ) -> list[Message]: ...

    async def ack_batch(
        self, messages: Iterable[tuple[str, str | None]], *, consumer_group: str | None = None
    ) -> BatchAck: ...

    async def nack(
        self,
        message: Message,
        error: str | None = None,
        *,
        delay: float | None = None,
        consumer_group: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> NackOutcome: ...

    async def extend(self, message: Message, visibility_timeout: int, *, consumer_group: str | None = None) -> str: ...


@dataclass(eq=False)
class _Lease:
    message: Message
    deadline: float  # monotonic time the lease lapses, as this client reckons it (from before the request)
    lost: bool = False
    extending: bool = False


class BatchConsumerOptions(TypedDict, total=False):
    """The consumer runtime's options but `batch` (a batch consumer's): `Consumer`'s keyword parameters, whose
    defaults and documentation are there. `AsyncClient.consumer` and `Client.consumer` take them as `**options`."""

    concurrency: int
    prefetch: int | None
    visibility_timeout: int
    wait_seconds: float
    max_fetch: int
    batch_size: int
    model: type[Any] | None
    middleware: Sequence[Middleware]
    metrics: Any
    grace_period: float
    ack_batch_size: int
    ack_interval: float
    handle_signals: bool
    consumer_group: str | None


class ConsumerOptions(BatchConsumerOptions, total=False):
    """Every option of the consumer runtime (`Consumer`'s keyword parameters)."""

    batch: bool


@dataclass
class _Outbox:
    acks: list[_Lease] = field(default_factory=list)
    nacks: list[tuple[_Lease, str, float | None, dict[str, Any] | None]] = field(default_factory=list)


class Consumer:
    def __init__(
        self,
        client: Leases,
        topic: str,
        handler: Callable[..., Any],
        *,
        concurrency: int = 1,
        prefetch: int | None = None,
        visibility_timeout: int = 30,
        wait_seconds: float = 20,
        max_fetch: int = 100,
        batch: bool = False,
        batch_size: int = 100,
        model: type[Any] | None = None,
        middleware: Sequence[Middleware] = (),
        metrics: Any = None,
        grace_period: float = 30.0,
        ack_batch_size: int = 100,
        ack_interval: float = 0.05,
        handle_signals: bool = True,
        consumer_group: str | None = None,
    ) -> None:
        """`concurrency`: handler calls at once (threads for a plain function, tasks for a coroutine function).
        `prefetch`: messages leased ahead of the running ones (default: `concurrency`, times `batch_size` for a
        batch handler). `visibility_timeout`: each lease's length in seconds, extended while held.
        `wait_seconds`: the long poll. `max_fetch`: messages asked for per dequeue (at most 1,000). `batch`: the
        handler takes a list of up to `batch_size` messages. `model`: decode each payload (JSON) into this type
        before the handler. `middleware`: hooks around each handler call. `metrics`: a Prometheus registry to
        count into (True: the default one). `grace_period`: seconds running handlers get to finish once stopping.
        `ack_batch_size`, `ack_interval`: acks go in one request per that many, or per that many seconds.
        `handle_signals`: SIGTERM and SIGINT stop the consumer (when run in the main thread).
        `consumer_group`: consume the topic as this consumer group (each group receives every message).
        """
        if concurrency < 1 or visibility_timeout < 1:
            raise ValueError("concurrency and visibility_timeout must be at least 1")
        self.client = client
        self.topic = topic
        self.consumer_group = consumer_group
        self._handler = handler
        self._async_handler = inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
            getattr(handler, "__call__", None)  # noqa: B004 - an instance with an async __call__
        )
        self.concurrency = concurrency
        self._unit = batch_size if batch else 1
        self.prefetch = prefetch if prefetch is not None else concurrency * self._unit
        self.visibility_timeout = visibility_timeout
        self.wait_seconds = wait_seconds
        self.max_fetch = min(max_fetch, _MAX_DEQUEUE)
        self.batch = batch
        self.model = model
        self.middleware = list(middleware)
        self.grace_period = grace_period
        self.ack_batch_size = min(ack_batch_size, client.batch_size)
        self.ack_interval = ack_interval
        self.handle_signals = handle_signals
        self._counters = Counters(metrics) if metrics else None

        self._ready: collections.deque[_Lease] = collections.deque()
        self._held: set[_Lease] = set()  # every lease not yet acked or nacked: ready, running, awaiting its flush
        self._running = 0  # messages in handlers
        self._outbox = _Outbox()
        self._mean_seconds = 0.0  # recent handler durations, per message
        self._has_ready = asyncio.Event()
        self._has_room = asyncio.Event()
        self._fetcher_waiting = False
        #: A fetch waits until at least this many messages fit: half of what the consumer may hold, or of a fetch.
        self._threshold = max(1, min(self.max_fetch, self.concurrency * self._unit + self.prefetch) // 2)
        self._flush_now = asyncio.Event()
        self._stopping = asyncio.Event()
        self._closed = False
        self._threads: ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # where `run` runs: `stop` may come from elsewhere
        self._thread: threading.Thread | None = None
        self.handled = 0  # handler calls that returned

    # --- running and stopping -------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop fetching, release prefetched messages, let running handlers finish (see the module's docstring).
        Safe to call from a signal handler or another thread."""
        loop = self._loop
        if loop is not None and threading.current_thread() is not self._thread:
            loop.call_soon_threadsafe(self._stopping.set)
        else:
            self._stopping.set()

    async def run(self) -> None:
        """Consume until `stop()` (or SIGTERM/SIGINT with `handle_signals` in the main thread)."""
        self._loop = asyncio.get_running_loop()
        self._thread = threading.current_thread()
        if not self._async_handler:
            self._threads = ThreadPoolExecutor(self.concurrency, thread_name_prefix=f"skiplock-{self.topic}")
        signals = self._install_signals()
        fetcher = asyncio.create_task(self._fetch_loop(), name="skiplock-fetch")
        flusher = asyncio.create_task(self._flush_loop(), name="skiplock-flush")
        keeper = asyncio.create_task(self._keep_leases(), name="skiplock-leases")
        workers = [asyncio.create_task(self._work(), name=f"skiplock-worker-{n}") for n in range(self.concurrency)]
        try:
            await self._stopping.wait()
        finally:
            await self._shut_down(fetcher, workers, keeper, flusher)
            for sig in signals:
                asyncio.get_running_loop().remove_signal_handler(sig)
            if self._threads is not None:
                self._threads.shutdown(wait=False, cancel_futures=True)

    async def _shut_down(
        self,
        fetcher: asyncio.Task[None],
        workers: list[asyncio.Task[None]],
        keeper: asyncio.Task[None],
        flusher: asyncio.Task[None],
    ) -> None:
        """No more fetches; prefetched messages released; handlers given the grace period, then cancelled (their
        messages released too); the last acks and nacks sent."""
        fetcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await fetcher
        self._release_ready("released: the consumer stopped before handling it")
        self._has_ready.set()  # idle workers see the stop and leave
        _, late = await asyncio.wait(workers, timeout=self.grace_period)
        for task in late:
            task.cancel()  # their handlers' messages are released (see _handle)
        if late:
            await asyncio.wait(late)
        keeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await keeper
        self._closed = True  # the flusher sends what it has and leaves (cancelling it could lose a flush)
        self._flush_now.set()
        await flusher
        await self._flush()

    def run_forever(self) -> None:
        """`run` on an event loop of its own, in this thread (the sync API): returns once stopped."""
        asyncio.run(self.run())

    def _install_signals(self) -> list[signal.Signals]:
        if not self.handle_signals or threading.current_thread() is not threading.main_thread():
            return []
        installed = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                asyncio.get_running_loop().add_signal_handler(sig, self.stop)
                installed.append(sig)
        return installed

    # --- fetching -------------------------------------------------------------------------------------------------

    def _room(self) -> int:
        """Messages to fetch now: free handler places plus the prefetch allowance, less what is waiting."""
        ahead = self.prefetch
        if self._mean_seconds > 0:  # at most what the workers can start within two thirds of a lease
            startable = self.concurrency * self._unit * (self.visibility_timeout * 2 / 3) / self._mean_seconds
            ahead = min(ahead, int(startable))
        free = self.concurrency * self._unit - self._running
        return max(0, free + ahead - len(self._ready))

    async def _fetch_loop(self) -> None:
        retries = 0
        while not self._stopping.is_set():
            room = self._room()
            if room < self._threshold and (self._ready or self._running):
                self._has_room.clear()
                self._fetcher_waiting = True
                await self._has_room.wait()
                continue
            started = time.monotonic()
            try:
                messages = await self.client.receive(
                    self.topic,
                    min(room, self.max_fetch),
                    visibility_timeout=self.visibility_timeout,
                    wait_seconds=self.wait_seconds,
                    consumer_group=self.consumer_group,
                )
            except errors.SkiplockError as exc:
                retries += 1
                delay = self.client.retry.backoff(min(retries, 8), exc.retry_after)
                log.warning("dequeue from %s failed (%s); again in %.1f s", self.topic, exc, delay)
                await asyncio.sleep(delay)
                continue
            retries = 0
            deadline = started + self.visibility_timeout
            for message in messages:
                lease = _Lease(message, deadline)
                self._held.add(lease)
                self._ready.append(lease)
            if messages:
                self._has_ready.set()

    # --- handling -------------------------------------------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            while not self._ready:
                if self._stopping.is_set():
                    return
                self._has_ready.clear()
                await self._has_ready.wait()
            if self._stopping.is_set():
                return
            if self.batch:
                leases = [self._ready.popleft() for _ in range(min(self._unit, len(self._ready)))]
            else:
                leases = [self._ready.popleft()]
            leases = [lease for lease in leases if not self._drop_lost(lease)]
            if leases:
                await self._handle(leases)

    def _drop_lost(self, lease: _Lease) -> bool:
        if lease.lost:
            self._held.discard(lease)
            self._count("lease_lost")
        return lease.lost

    async def _handle(self, leases: list[_Lease]) -> None:
        self._running += len(leases)
        started = time.monotonic()
        subject: Any = None
        try:
            subject = self._subject(leases)
            result = await self._call_handler(subject)
            if isinstance(result, Retry):  # a deferral returned, not raised: no error hooks
                self._fail(leases, f"Retry: {result}", result.delay, result.metadata)
                return
        except asyncio.CancelledError:
            self._fail(leases, "released: the handler outlived the consumer's grace period", 0)
            raise
        except _Undecodable as exc:
            self._fail(leases, f"undecodable payload: {exc}", 0)
        except Exception as exc:  # any handler error fails its message, never the consumer
            for hook in self.middleware:
                with contextlib.suppress(Exception):
                    await maybe_await(hook.on_error(subject, exc))
            retry = exc if isinstance(exc, Retry) else None
            delay, metadata = (retry.delay, retry.metadata) if retry is not None else (None, None)
            self._fail(leases, f"{type(exc).__name__}: {exc}", delay, metadata)
        else:
            self.handled += 1
            for lease in leases:
                if not self._drop_lost(lease):
                    self._outbox.acks.append(lease)
            if len(self._outbox.acks) >= self.ack_batch_size:
                self._flush_now.set()
        finally:
            seconds = time.monotonic() - started
            per_message = seconds / len(leases)
            self._mean_seconds = per_message if not self._mean_seconds else 0.8 * self._mean_seconds + 0.2 * per_message
            if self._counters is not None:
                self._counters.seconds.labels(self.topic).observe(seconds)
            self._running -= len(leases)
            if self._fetcher_waiting and (self._room() >= self._threshold or not self._running):
                self._fetcher_waiting = False  # wake the fetcher once, not after every message
                self._has_room.set()

    async def _call_handler(self, subject: Any) -> Any:
        for hook in self.middleware:
            await maybe_await(hook.before(subject))
        if self._async_handler:
            result = await self._handler(subject)
        else:
            assert self._threads is not None
            call = functools.partial(self._handler, subject)
            result = await asyncio.get_running_loop().run_in_executor(self._threads, call)
        for hook in self.middleware:
            await maybe_await(hook.after(subject, result))
        return result

    def _subject(self, leases: list[_Lease]) -> Any:
        messages = [lease.message for lease in leases]
        if self.model is not None:
            try:
                decoded = [m.decode(self.model) for m in messages]
            except Exception as exc:  # msgspec's and pydantic's errors alike
                raise _Undecodable(str(exc)) from exc
            return decoded if self.batch else decoded[0]
        return messages if self.batch else messages[0]

    def _fail(
        self, leases: list[_Lease], error: str, delay: float | None, metadata: dict[str, Any] | None = None
    ) -> None:
        for lease in leases:
            if not self._drop_lost(lease):
                self._outbox.nacks.append((lease, error, delay, metadata))
        self._flush_now.set()

    def _release_ready(self, reason: str) -> None:
        leases = list(self._ready)
        self._ready.clear()
        self._fail(leases, reason, 0)
        for _ in leases:
            self._count("released")

    # --- acks, nacks and leases -----------------------------------------------------------------------------------

    async def _flush_loop(self) -> None:
        while not self._closed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._flush_now.wait(), self.ack_interval)
            self._flush_now.clear()
            await self._flush()

    async def _flush(self) -> None:
        outbox, self._outbox = self._outbox, _Outbox()
        size = self.client.batch_size
        sends = [self._send_acks(outbox.acks[i : i + size]) for i in range(0, len(outbox.acks), size)]
        sends += [self._send_nack(lease, error, delay, metadata) for lease, error, delay, metadata in outbox.nacks]
        if sends:
            await asyncio.gather(*sends)

    async def _send_acks(self, leases: list[_Lease]) -> None:
        try:
            answer = await self.client.ack_batch(
                ((lease.message.id, lease.message.receipt) for lease in leases), consumer_group=self.consumer_group
            )
        except errors.SkiplockError as exc:
            if isinstance(exc, errors.TransportError | errors.Unavailable):
                log.warning("acks failed (%s); trying them again", exc)
                self._outbox.acks.extend(lease for lease in leases if lease.deadline > time.monotonic())
                return
            log.error("acks refused: %s", exc)  # noqa: TRY400 - the server's refusal; no traceback to show
            return
        failed = {f.id: f.code for f in answer.failed}
        for lease in leases:
            self._held.discard(lease)
            code = failed.get(lease.message.id)
            if code is not None:
                log.warning("ack of %s failed: %s", lease.message.id, code)
            self._count("lease_lost" if code == "lease_lost" else "acked" if code is None else code)

    async def _send_nack(
        self, lease: _Lease, error: str, delay: float | None, metadata: dict[str, Any] | None = None
    ) -> None:
        outcome: str
        try:
            outcome = await self.client.nack(
                lease.message, error, delay=delay, consumer_group=self.consumer_group, metadata=metadata
            )
        except errors.SkiplockError as exc:
            log.warning("nack of %s failed (%s): its lease will lapse", lease.message.id, exc)
            outcome = exc.error_code
        self._held.discard(lease)
        if not error.startswith("released"):
            self._count(outcome)

    async def _keep_leases(self) -> None:
        """Extend held leases that have a third of their time left."""
        margin = self.visibility_timeout / 3
        tick = max(0.05, min(1.0, self.visibility_timeout / 10))
        while True:
            await asyncio.sleep(tick)
            now = time.monotonic()
            for lease in list(self._held):
                if not lease.lost and not lease.extending and lease.deadline - now <= margin:
                    lease.extending = True
                    asyncio.create_task(self._extend(lease))  # noqa: RUF006 - short, tracked by `extending`

    async def _extend(self, lease: _Lease) -> None:
        started = time.monotonic()
        try:
            await self.client.extend(lease.message, self.visibility_timeout, consumer_group=self.consumer_group)
            lease.deadline = started + self.visibility_timeout
        except (errors.LeaseLost, errors.NotFound) as exc:
            log.warning("lease of %s lost (%s): it will not be acked", lease.message.id, exc.error_code)
            lease.lost = True
        except errors.SkiplockError as exc:
            log.warning("lease of %s not extended (%s); trying again", lease.message.id, exc)
        finally:
            lease.extending = False

    def _count(self, outcome: str) -> None:
        if self._counters is not None:
            self._counters.outcomes.labels(self.topic, outcome).inc()


class _Undecodable(Exception):
    pass
