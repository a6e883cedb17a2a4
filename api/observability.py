"""Request ids, the request log line and the HTTP duration histogram, for every HTTP request.

Every request gets the server's own id (`request_id_of`), which every log line written while serving it and every
audit entry it writes carry. A caller's `X-Request-ID`, when it is a sane token (at most 128 visible ASCII
characters), is kept beside it (`client_request_id` in the logs and in an audit entry's details), never instead
of it: an audit entry's request id is the server's, which no caller chooses. Every response answers
`X-Request-ID`: the caller's own when it sent one (its trace goes on), else the server's.
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
from mq.logs import CLIENT_REQUEST_ID, REQUEST_ID
from mq.metrics import Metrics

log = logging.getLogger("skiplock.http")
_SANE_ID = re.compile(rb"^[\x21-\x7e]{1,128}$")
_ID_KEY = "skiplock_request_id"
_STATUS_KEY = "skiplock_status"


def request_id_of(scope: Scope) -> str:
    """The server's id of the request: 128 random bits as 32 hex digits, like a uuid4's hex, without a getrandom(2)
    call per request (an id to find a request's log lines by, not a secret)."""
    known: str | None = scope.get(_ID_KEY)  # type: ignore[assignment]
    if known is None:
        known = scope[_ID_KEY] = f"{random.getrandbits(128):032x}"  # type: ignore[literal-required]
    return known


def client_request_id_of(scope: Scope) -> str | None:
    """The caller's `X-Request-ID`, when it is a sane token."""
    for name, value in scope["headers"]:
        if name == b"x-request-id" and _SANE_ID.fullmatch(value):
            return value.decode()
    return None


def answered_request_id(scope: Scope) -> str:
    """The `X-Request-ID` a response carries: the caller's own, else the server's."""
    return client_request_id_of(scope) or request_id_of(scope)


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
        headers = [*message.get("headers", ()), (b"x-request-id", answered_request_id(scope).encode())]
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
        client_token = CLIENT_REQUEST_ID.set(client_request_id_of(scope))
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
            CLIENT_REQUEST_ID.reset(client_token)
