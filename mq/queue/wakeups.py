"""Long-poll wake-ups: a waiting dequeue sleeps on an in-process event, woken when a message for its topic commits.

Waiting requests hold no database connection. Each instance listens on the process's one LISTEN connection
(`mq.db.listener`); after an enqueue commits, the instance wakes its own waiters at once and sends one coalesced
NOTIFY per distinct (tenant, topic) so that waiters on other instances wake too. NOTIFY is sent outside the
enqueue's transaction: inside it, Postgres would serialize every enqueue's commit on its notify-queue lock.

A wake-up names how many messages arrived, and wakes that many waiters, longest waiting first, not all of them:
every woken poll runs a dequeue, and with 4 consumers waiting on a topic fed one message at a time, waking all of
them ran 4 dequeues per message of which 3 found nothing (`make bench`, part longpoll). A waiter that leaves with
a wake-up it did not use passes it on. An instance ignores its own NOTIFY (it woke its waiters already).
The payload is `<tenant>:<topic>` or `<tenant>:<topic>#<n>`; a payload without a count wakes every waiter.

An empty look stands for a moment: a poll that found its topic empty (and asked when its next message is due)
lets this instance's next polls of the topic wait without looking first, for `EMPTY_LOOK_SECONDS` or until that
due time, whichever is sooner. A wake-up whose every message woke a waiter here leaves it standing (those waiters
take them); one with messages left over, one for everyone, or one a leaving waiter did not use and no other waiter
took ends it at once (a reconnect ends all). At 500 messages a
second to 8 waiting consumers, each new poll's empty look and its next-available query were 1.5 of the 4.6
transactions per delivered message (bench/RESULTS.md). What no wake-up announces (a delayed message or a
delayed retry come due, a lapsing lease, all covered by the due time asked; or one enqueued delayed on another
instance since) a new poll so sees at most `EMPTY_LOOK_SECONDS` late.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Iterator, Mapping

from mq.db.engine import DATABASE_ERRORS
from mq.db.listener import PostgresListener
from mq.queue import sql

log = logging.getLogger(__name__)

_RETRY_SECONDS = 1.0
#: Other instances' waiters wake at most this much later than this instance's own.
_MIN_NOTIFY_INTERVAL_SECONDS = 0.01


def _channel_key(tenant_id: int, topic: str) -> str:
    return f"{tenant_id}:{topic}"


#: Wake every waiter of a key (a change that is not a count of messages: a resume, a reconnect).
EVERYONE = 1 << 30
#: How long an empty look stands for this instance's next polls of the topic (see the module's docstring).
EMPTY_LOOK_SECONDS = 0.05
# Empty looks kept at most (past it, those no longer standing are dropped).
_EMPTY_LOOKS_KEPT = 4096


class Look:
    """A poll's look at a topic, begun: it stands for others only if no wake-up of the topic came meanwhile."""

    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key


class WakeupHub:
    """Registry of waiting dequeues per (tenant, topic), fed by local enqueues and by Postgres notifications."""

    def __init__(self, listener: PostgresListener) -> None:
        self._listener = listener
        # Per key, the waiting events in the order they started waiting (a dict as an ordered set).
        self._waiters: dict[str, dict[asyncio.Event, None]] = {}
        self._outbox: dict[str, int] = {}
        self._flush_wanted = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._draining = False
        # Per key: the loop time until which an empty look stands, or the Look under way.
        self._empty: dict[str, float | Look] = {}

    async def start(self) -> None:
        await self._listener.listen(sql.WAKEUP_CHANNEL, self._received, others_only=True)
        self._listener.on_reconnect(self._wake_all)  # notifications may have been missed while disconnected
        self._task = asyncio.create_task(self._run(), name="skiplock-wakeups")

    def stop_waiting(self) -> None:
        """The process is shutting down: answer every waiting long poll now (empty), and every later one at once,
        so that in-flight requests finish within the graceful shutdown. Notifications keep flowing until close."""
        self._draining = True
        for events in self._waiters.values():
            for event in events:
                event.set()

    async def close(self) -> None:
        self._closing = True
        self._flush_wanted.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.stop_waiting()

    @contextlib.contextmanager
    def waiter(self, tenant_id: int, topic: str) -> Iterator[asyncio.Event]:
        """An event set when a message for (tenant, topic) may have become available. Register it before the
        last check for messages, so that a message committed between that check and the wait is not missed."""
        key = _channel_key(tenant_id, topic)
        event = asyncio.Event()
        if self._closing or self._draining:
            event.set()
        self._waiters.setdefault(key, {})[event] = None
        try:
            yield event
        finally:
            events = self._waiters.get(key)
            if events is not None:
                events.pop(event, None)
                if not events:
                    del self._waiters[key]
                    if event.is_set():  # a wake-up no one used: the next polls must look
                        self._empty.pop(key, None)
                elif event.is_set() and not self.closing:
                    self._wake(key, 1)  # a wake-up this waiter did not use: another must look

    def published(self, tenant_id: int, topics: Mapping[str, int] | Iterable[str]) -> None:
        """Called after messages for these topics committed (topic -> how many, or topics: every waiter should
        look): wake local waiters, notify the other instances."""
        counts = topics if isinstance(topics, Mapping) else dict.fromkeys(topics, EVERYONE)
        for topic, n in counts.items():
            key = _channel_key(tenant_id, topic)
            self._wake(key, n)
            self._outbox[key] = min(EVERYONE, self._outbox.get(key, 0) + n)
        self._flush_wanted.set()

    def looking(self, tenant_id: int, topic: str) -> Look:
        """A look at (tenant, topic) begins (before the lease): `found_empty` with it after the lease came back
        empty."""
        look = Look(_channel_key(tenant_id, topic))
        self._empty[look.key] = look
        return look

    def found_empty(self, look: Look, until: float) -> None:
        """The look found nothing, and nothing is due before `until` (loop time): it stands until then, at most
        `EMPTY_LOOK_SECONDS` from now, unless a wake-up of the topic came since it began."""
        if self._empty.get(look.key) is not look:
            return
        now = asyncio.get_running_loop().time()
        self._empty[look.key] = min(until, now + EMPTY_LOOK_SECONDS)
        if len(self._empty) > _EMPTY_LOOKS_KEPT:
            self._empty = {k: v for k, v in self._empty.items() if isinstance(v, float) and v > now}

    def empty_until(self, tenant_id: int, topic: str, now: float) -> float | None:
        """Until when (loop time) a new poll of (tenant, topic) may wait without looking first, or None."""
        until = self._empty.get(_channel_key(tenant_id, topic))
        return until if isinstance(until, float) and until > now else None

    @property
    def closing(self) -> bool:
        return self._closing or self._draining

    @property
    def waiting(self) -> int:
        return sum(len(events) for events in self._waiters.values())

    def waiting_by_topic(self) -> dict[tuple[int, str], int]:
        """Waiting polls per (tenant id, topic)."""
        waiting = {}
        for key, events in self._waiters.items():
            tenant_id, _, topic = key.partition(":")
            waiting[(int(tenant_id), topic)] = len(events)
        return waiting

    def _wake(self, key: str, n: int = EVERYONE) -> None:
        """Make `n` more waiters of `key` look, longest waiting first. A waiter already woken is passed over: it
        has not looked yet, so it will see these messages anyway, and each new message must make one more look
        (a waiter that asks for one message would otherwise take one of two and leave the other unseen)."""
        everyone = n >= EVERYONE
        for event in self._waiters.get(key, ()):
            if n <= 0:
                break
            if not event.is_set():
                event.set()
                n -= 1
        if everyone or n > 0:  # messages no waiter here was woken for: the next polls must look
            self._empty.pop(key, None)

    def _received(self, payload: str) -> None:
        key, sep, count = payload.rpartition("#")
        if sep and count.isdigit():
            self._wake(key, int(count))
        else:
            self._wake(payload)

    async def _run(self) -> None:
        """Send the outbox as one NOTIFY statement at a time; keys added meanwhile go in the next one."""
        while not self._closing:
            await self._flush_wanted.wait()
            self._flush_wanted.clear()
            if not self._outbox:
                continue
            counts, self._outbox = self._outbox, {}
            payloads = [key if n >= EVERYONE else f"{key}#{n}" for key, n in counts.items()]
            try:
                await self._listener.execute(sql.WAKEUP_NOTIFY, payloads)
                # Under load this loop would send a NOTIFY statement per turn; pacing it bounds that work while
                # keys arriving meanwhile gather in the outbox. Local waiters were woken already.
                await asyncio.sleep(_MIN_NOTIFY_INTERVAL_SECONDS)
            except DATABASE_ERRORS as exc:
                log.warning("long-poll notification failed, retrying: %s", exc)
                for key, n in counts.items():
                    self._outbox[key] = min(EVERYONE, self._outbox.get(key, 0) + n)
                await asyncio.sleep(_RETRY_SECONDS)
                self._flush_wanted.set()

    def _wake_all(self) -> None:
        self._empty.clear()
        for key in list(self._waiters):
            self._wake(key)
