"""`Activity`: how many messages each topic took in, had acked and dead-lettered, for the console's rates and charts.

Counted in memory on the hot path (a dict update per request) and added to `topic_activity` by one statement
every `interval` seconds per process, so the rates are those of every instance together. A process that dies
loses at most its last interval's counts: these are figures for people, not for billing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from mq.db.engine import DATABASE_ERRORS
from mq.queue.repository import MessageRepository

log = logging.getLogger(__name__)

_MAX_TOPICS = 100_000  # past this many topics between two flushes, flush early rather than grow


class Activity:
    def __init__(self, repository: MessageRepository, interval_seconds: float = 5.0) -> None:
        self._repository = repository
        self._interval = interval_seconds
        self._counts: dict[tuple[int, str], list[int]] = {}
        self._task: asyncio.Task[None] | None = None

    def enqueued(self, tenant_id: int, topic: str, n: int = 1) -> None:
        self._counter(tenant_id, topic)[0] += n

    def acked(self, tenant_id: int, topic: str, n: int = 1) -> None:
        self._counter(tenant_id, topic)[1] += n

    def dead_lettered(self, tenant_id: int, topic: str, n: int = 1) -> None:
        """`n` messages of `topic` moved to its dead-letter topic (by a nack, or a lease that lapsed once too often)."""
        self._counter(tenant_id, topic)[2] += n

    def _counter(self, tenant_id: int, topic: str) -> list[int]:
        counter = self._counts.get((tenant_id, topic))
        if counter is None:
            counter = self._counts[(tenant_id, topic)] = [0, 0, 0]
        return counter

    async def flush(self) -> None:
        """Add what was counted since the last flush (kept for the next one if Postgres refuses it)."""
        if not self._counts:
            return
        counts, self._counts = self._counts, {}
        keys = list(counts)
        try:
            await self._repository.add_activity(
                [k[0] for k in keys],
                [k[1] for k in keys],
                [counts[k][0] for k in keys],
                [counts[k][1] for k in keys],
                [counts[k][2] for k in keys],
            )
        except DATABASE_ERRORS as exc:
            if len(self._counts) < _MAX_TOPICS:
                for key, kept in counts.items():
                    counter = self._counter(*key)
                    for n, value in enumerate(kept):
                        counter[n] += value
            log.warning("activity counts not stored yet: %s", exc)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            await self.flush()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(Exception):
            await self.flush()
