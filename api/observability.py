"""Request ids, the request log line and the HTTP duration histogram, for every HTTP request.

The request id is the caller's `X-Request-ID` when it is a sane token (at most 128 visible ASCII characters),
else a new one; every response echoes it, and every log line written while serving the request carries it.
`ObservabilityMiddleware` times a routed request; `stamp_response` (an app-level `before_send` hook, so it sees
error responses too, which Litestar sends from outside the middleware) adds the header and notes the status.
"""

from __future__ import annotations

import logging
import random
import re
import time

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from api.errors import status_of
from mq.logs import REQUEST_ID
from mq.metrics import Metrics

log = logging.getLogger("skiplock.http")
_SANE_ID = re.compile(rb"^[\x21-\x7e]{1,128}$")
_ID_KEY = "skiplock_request_id"
_STATUS_KEY = "skiplock_status"


def request_id_of(scope: Scope) -> str:
    known: str | None = scope.get(_ID_KEY)  # type: ignore[assignment]
    if known is None:
        known = ""
        for name, value in scope["headers"]:
            if name == b"x-request-id" and _SANE_ID.fullmatch(value):
                known = value.decode()
                break
        # 128 random bits as 32 hex digits, like a uuid4's hex, without a getrandom(2) call per request: an id to
        # find a request's log lines by, not a secret.
        known = scope[_ID_KEY] = known or f"{random.getrandbits(128):032x}"  # type: ignore[literal-required]
    return known


#: On every response: no content sniffing (a JSON answer is never read as HTML or script by a browser).
_NOSNIFF = (b"x-content-type-options", b"nosniff")
#: The OpenAPI page (`/schema`, Scalar from its CDN, which injects its own styles and loads its fonts from
#: fonts.scalar.com) and the document itself: only what the page loads, and never framed. Left blocked, and harmless:
#: the page's empty inline `<script id="api-reference">` (a holder of the document's URL, read by Scalar) and
#: Scalar's probe of whether `eval` is allowed.
_SCHEMA_CSP = (
    b"default-src 'none'; script-src https://cdn.jsdelivr.net; style-src 'unsafe-inline' https://cdn.jsdelivr.net; "
    b"img-src 'self' data: https://cdn.jsdelivr.net; font-src data: https://cdn.jsdelivr.net https://fonts.scalar.com; "
    b"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_SCHEMA_HEADERS = ((b"content-security-policy", _SCHEMA_CSP), (b"x-frame-options", b"DENY"))


async def stamp_response(message: Message, scope: Scope) -> None:
    if message["type"] == "http.response.start":
        scope[_STATUS_KEY] = message["status"]  # type: ignore[literal-required]
        headers = [*message.get("headers", ()), (b"x-request-id", request_id_of(scope).encode())]
        names = {name.lower() for name, _ in headers}
        if b"x-content-type-options" not in names:
            headers.append(_NOSNIFF)
        if scope.get("path", "").startswith("/schema") and b"content-security-policy" not in names:
            headers.extend(_SCHEMA_HEADERS)
        message["headers"] = headers


class ObservabilityMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        token = REQUEST_ID.set(request_id_of(scope))
        started = time.perf_counter()
        failed: BaseException | None = None
        try:
            await self.app(scope, receive, send)
        except BaseException as exc:  # Litestar turns it into the error response after this
            failed = exc
            raise
        finally:
            elapsed = time.perf_counter() - started
            status: int = status_of(failed) if failed is not None else scope.get(_STATUS_KEY, 500)  # type: ignore[assignment]
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
