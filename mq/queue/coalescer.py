"""Coalescing: concurrent small requests share one statement, one round trip and one commit.

A single enqueue or ack costs Postgres a statement and a commit, and the server an asyncpg round trip; under load
most of that is overhead. A `Coalescer` gathers the requests that arrive while earlier ones are being written and
sends them as one batch statement. Nobody waits for a batch to fill: the first request is flushed on the next
turn of the event loop, together with whatever arrived in the same turn, and later arrivals queue only while
`max_in_flight` flushes are already running. Each caller is answered only when the statement holding its item has
returned, so a 201 or 204 still means "committed".

A flush returns one outcome per item (a result, or the exception for that item's caller). It may run several
statements, so the coalescer never re-runs it: a flush that raises fails all its callers, and recovering from a
failed statement (see `SharedStatements`) is the flush's own business.

A caller cancelled before its item was sent is dropped from the flush. One cancelled while its item was being
written gets nothing back, but the write stands: a caller that must undo it (a lease nobody will see) passes
`orphaned`, which is handed the result its caller did not take.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


class Coalescer(Generic[Item, Result]):
    def __init__(
        self,
        flush: Callable[[Sequence[Item]], Awaitable[Sequence[Result | BaseException]]],  # per item: result or error
        *,
        max_batch: int,
        max_in_flight: int,
        weight: Callable[[Item], int] = lambda _: 1,
    ) -> None:
        """`max_batch` bounds the summed `weight` of a flush (rows, not requests); a heavier item goes alone."""
        self._flush = flush
        self._max_batch = max_batch
        self._max_in_flight = max_in_flight
        self._weight = weight
        self._queue: list[tuple[Item, asyncio.Future[Result], Callable[[Result], None] | None]] = []
        self._in_flight = 0
        self._scheduled = False

    async def submit(self, item: Item, orphaned: Callable[[Result], None] | None = None) -> Result:
        """The item's result once its flush returned. `orphaned` is handed the result if the caller was cancelled
        while its item was being written."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()
        self._queue.append((item, future, orphaned))
        self._schedule(loop)
        return await future

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._scheduled and self._in_flight < self._max_in_flight:
            self._scheduled = True
            loop.call_soon(self._start_flushes)

    def _start_flushes(self) -> None:
        self._scheduled = False
        if any(future.done() for _, future, _ in self._queue):  # cancelled before they were sent
            self._queue = [queued for queued in self._queue if not queued[1].done()]
        while self._queue and self._in_flight < self._max_in_flight:
            taken, total = 0, 0
            for item, _, _ in self._queue:
                total += self._weight(item)
                if taken and total > self._max_batch:
                    break
                taken += 1
            batch = self._queue[:taken]
            del self._queue[:taken]
            self._in_flight += 1
            asyncio.get_running_loop().create_task(self._run(batch))

    async def _run(self, batch: list[tuple[Item, asyncio.Future[Result], Callable[[Result], None] | None]]) -> None:
        try:
            outcomes = await self._flush([item for item, _, _ in batch])
            for (_, future, orphaned), outcome in zip(batch, outcomes, strict=True):
                if future.done():  # the caller went away (cancelled); its item was written all the same
                    if orphaned is not None and not isinstance(outcome, BaseException):
                        orphaned(outcome)
                    continue
                if isinstance(outcome, BaseException):
                    future.set_exception(outcome)
                else:
                    future.set_result(outcome)
        except BaseException as exc:
            for _, future, _ in batch:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
        finally:
            self._in_flight -= 1
            if self._queue:
                self._schedule(asyncio.get_running_loop())
