"""Request ids, the request log line and the HTTP duration histogram, for every HTTP request.

The request id is the caller's `X-Request-ID` when it is a sane token (at most 128 visible ASCII characters),
else a new one; it is echoed in the response and carried by every log line written while serving the request.
"""

from __future__ import annotations

import logging
import re
import time
import uuid

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from mq.logs import REQUEST_ID
from mq.metrics import Metrics

log = logging.getLogger("skiplock.http")
_SANE_ID = re.compile(rb"^[\x21-\x7e]{1,128}$")


class ObservabilityMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        request_id = ""
        for name, value in scope["headers"]:
            if name == b"x-request-id" and _SANE_ID.match(value):
                request_id = value.decode()
                break
        request_id = request_id or uuid.uuid4().hex
        token = REQUEST_ID.set(request_id)
        status = 500
        header = (b"x-request-id", request_id.encode())

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", ()), header]}
            await send(message)

        started = time.perf_counter()
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            route = scope.get("path_template") or "unmatched"
            method = scope["method"]
            metrics: Metrics = scope["app"].state.runtime.metrics
            metrics.http.observe((route, method, f"{status // 100}xx"), (elapsed,))
            if log.isEnabledFor(logging.DEBUG):
                log.debug(
                    "request",
                    extra={"method": method, "route": route, "status": status, "duration_ms": round(elapsed * 1e3, 2)},
                )
            REQUEST_ID.reset(token)
