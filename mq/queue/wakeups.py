"""Long-poll wake-ups: a waiting dequeue sleeps on an in-process event, woken when a message for its topic commits.

Waiting requests hold no database connection. Each instance listens on the process's one LISTEN connection
(`mq.db.listener`); after an enqueue commits, the instance wakes its own waiters at once and sends one coalesced
NOTIFY per distinct (tenant, topic) so that waiters on other instances wake too. NOTIFY is sent outside the
enqueue's transaction: inside it, Postgres would serialize every enqueue's commit on its notify-queue lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator

import asyncpg

from mq.db.listener import PostgresListener
from mq.queue import sql

log = logging.getLogger(__name__)

_RETRY_SECONDS = 1.0
#: Other instances' waiters wake at most this much later than this instance's own.
_MIN_NOTIFY_INTERVAL_SECONDS = 0.01


def _channel_key(tenant_id: int, topic: str) -> str:
    return f"{tenant_id}:{topic}"


class WakeupHub:
    """Registry of waiting dequeues per (tenant, topic), fed by local enqueues and by Postgres notifications."""

    def __init__(self, listener: PostgresListener) -> None:
        self._listener = listener
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._outbox: set[str] = set()
        self._flush_wanted = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._draining = False

    async def start(self) -> None:
        await self._listener.listen(sql.WAKEUP_CHANNEL, self._wake)
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
        self._waiters.setdefault(key, set()).add(event)
        try:
            yield event
        finally:
            events = self._waiters.get(key)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._waiters[key]

    def published(self, tenant_id: int, topics: Iterator[str] | list[str] | set[str]) -> None:
        """Called after messages for these topics committed: wake local waiters, notify the other instances."""
        for topic in topics:
            key = _channel_key(tenant_id, topic)
            self._wake(key)
            self._outbox.add(key)
        self._flush_wanted.set()

    @property
    def closing(self) -> bool:
        return self._closing or self._draining

    @property
    def waiting(self) -> int:
        return sum(len(events) for events in self._waiters.values())

    def _wake(self, key: str) -> None:
        for event in self._waiters.get(key, ()):
            event.set()

    async def _run(self) -> None:
        """Send the outbox as one NOTIFY statement at a time; keys added meanwhile go in the next one."""
        while not self._closing:
            await self._flush_wanted.wait()
            self._flush_wanted.clear()
            if not self._outbox:
                continue
            keys, self._outbox = list(self._outbox), set()
            try:
                await self._listener.execute(sql.WAKEUP_NOTIFY, keys)
                # Under load this loop would send a NOTIFY statement per turn; pacing it bounds that work while
                # keys arriving meanwhile gather in the outbox. Local waiters were woken already.
                await asyncio.sleep(_MIN_NOTIFY_INTERVAL_SECONDS)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                log.warning("long-poll notification failed, retrying: %s", exc)
                self._outbox.update(keys)
                await asyncio.sleep(_RETRY_SECONDS)
                self._flush_wanted.set()

    def _wake_all(self) -> None:
        for key in list(self._waiters):
            self._wake(key)
