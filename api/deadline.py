"""Every request ends by a deadline: a Postgres that holds locks, a pool with no free connection or a dependency
that stopped answering turns into `503 unavailable` with `Retry-After`, never a hang (docs/reliability.md).

Long polls wait at most 20 s by contract, so the deadline (`SKIPLOCK_REQUEST_TIMEOUT_SECONDS`, 30 s) leaves them
be. A request cut off at its deadline may still have been written (a coalesced statement completes for every
request in it): like any 503 of a write, its outcome is unknown and a retry may store it twice. A dequeue cut off
gives back what its statement leased (`QueueService._give_back`).
"""

from __future__ import annotations

import asyncio

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from mq import errors


class RequestDeadline:
    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        started = False

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            async with asyncio.timeout(self.seconds):
                await self.app(scope, receive, watched_send)
        except TimeoutError:
            if started:  # too late to answer otherwise; the client sees the connection end
                raise
            raise errors.Unavailable(
                f"the request did not complete within {self.seconds:g} s; retry shortly", retry_after=1
            ) from None
