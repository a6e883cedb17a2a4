"""The five busiest routes (enqueue, batch enqueue, dequeue, batch ack, ack) answered without the framework's
per-request machinery.

A profile of the server under single enqueues (bench/RESULTS.md, issue 32) put about 40% of its CPU in Litestar's
per-request layers: routing, the middleware chain, signature and dependency resolution, response objects and the
send wrappers. `HotRoutes` sits in front of the app and answers these five itself, from the same parts the app uses:

- the same checks, in the same order: the Host header (Litestar's), cross-site refusal and authentication
  (`api.auth`), the text of the query string and path parameter (`api.input_checks`, as the app's `RequestChecks`),
  the body size limit (Litestar's exceptions), strict body decoding and its checks (`api.body`);
- the same work: the handler functions of `api.routes.messages`, which the app's controller calls too;
- the same answers: success bodies encoded by msgspec with the headers Litestar sends, every error rendered by
  the app's own exception handlers (`api.errors`) through Litestar's response classes, the request id and the
  `nosniff` header (`api.observability.stamp_response`), the request deadline (`api.deadline`'s 503), the HTTP
  duration metric under the app's route templates.

Anything out of the ordinary (another method or path, a mounted root path, an invalid Host header) goes to the app
untouched; `SKIPLOCK_HOT_ROUTES=false` sends everything there. tests/integration/test_hot_routes.py sends the same
requests, valid and not, to a server with and one without, and compares the answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import typing
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec
from litestar import Request
from litestar._asgi.utils import is_valid_host
from litestar.enums import ScopeType
from litestar.exceptions import ClientException, InternalServerException
from litestar.exceptions.http_exceptions import RequestEntityTooLarge
from litestar.handlers import HTTPRouteHandler

from api.auth import READ_HEADERS, AuthMiddleware, refuse_cross_site
from api.body import decode_batch_body, decode_strict
from api.errors import EXCEPTION_HANDLERS
from api.input_checks import check_query_string
from api.observability import client_request_id_of, log, request_id_of, stamp_response
from api.routes import messages
from api.schemas import BatchEnqueueBody
from mq import errors
from mq.logs import CLIENT_REQUEST_ID, REQUEST_ID
from mq.names import check_text

if TYPE_CHECKING:
    from litestar import Litestar
    from litestar.datastructures import State
    from litestar.types import HTTPResponseBodyEvent, HTTPResponseStartEvent, Message, Receive, Scope, Send

    from mq.metrics import Metrics
    from mq.settings import Settings
    from mq.tenancy.auth import Principal


@dataclasses.dataclass(slots=True)
class _Call:
    """A request as the handler functions see it (`api.routes.messages.Caller`)."""

    user: Principal
    app: Litestar
    receive: Receive


Handle = Callable[[_Call, Any, str], Awaitable[msgspec.Struct | None]]
#: Puts the caller's `Principal` in `scope["user"]`, or raises (`AuthMiddleware.authenticate`).
Authenticate = Callable[["Scope", dict[bytes, bytes], bool], Awaitable[None]]


@dataclasses.dataclass(frozen=True, slots=True)
class _Route:
    handler: Callable[..., Any]  # the controller's method, whose routing this route mirrors
    sample_path: str  # a path the app routes to `handler`
    handle: Handle
    # From the app's own route, found at start: its route template (the metrics' `route` label), its status and
    # the decoder of its body's type
    template: str = ""
    status: int = 0
    decode: Callable[[bytes], Any] = bytes


async def _enqueue(call: _Call, data: Any, _: str) -> msgspec.Struct:
    return await messages.enqueue(call, data)


async def _enqueue_batch(call: _Call, data: Any, _: str) -> msgspec.Struct:
    return await messages.enqueue_batch(call, data)


async def _dequeue(call: _Call, data: Any, _: str) -> msgspec.Struct:
    return await messages.dequeue(call, data)


async def _ack_batch(call: _Call, data: Any, _: str) -> msgspec.Struct:
    return await messages.ack_batch(call, data)


async def _ack(call: _Call, data: Any, message_id: str) -> None:
    await messages.ack(call, message_id, data)


def _strict(model: type[Any]) -> Callable[[bytes], Any]:
    return lambda body: decode_strict(model, body)


_CONTROLLER = messages.MessageController
_ROUTES: dict[str, _Route] = {
    "/api/messages": _Route(_CONTROLLER.enqueue, "/api/messages", _enqueue),
    "/api/messages/batch": _Route(_CONTROLLER.enqueue_batch, "/api/messages/batch", _enqueue_batch),
    "/api/messages/dequeue": _Route(_CONTROLLER.dequeue, "/api/messages/dequeue", _dequeue),
    "/api/messages/ack": _Route(_CONTROLLER.ack_batch, "/api/messages/ack", _ack_batch),
}
_ACK = _Route(_CONTROLLER.ack, "/api/messages/x/ack", _ack)
_ID_PREFIX, _ACK_SUFFIX = "/api/messages/", "/ack"
#: Body types decoded by a faster decoder of the same rules than `decode_strict`.
_DECODERS: dict[type[Any], Callable[[bytes], Any]] = {BatchEnqueueBody: decode_batch_body}
#: The app's middleware, outermost first, as `HotRoutes` applies each: observability (the request id, the metrics,
#: the log line, `stamp_response`) in `_serve`; the deadline in `_serve`; authentication and the cross-site refusal
#: in `_work`; the query string and path parameter checks in `_work`. A middleware added to the app stops the server
#: from starting until it is applied here too (`mirrored_layers`).
MIRRORED_MIDDLEWARE = ("ObservabilityMiddleware", "RequestDeadline", "AuthMiddleware", "RequestChecks")


def mirrored_layers(app: Litestar, handler: Any, auth: str = "AuthMiddleware") -> list[str]:
    """What the app would do for `handler`'s requests that the hot path does not: each a sentence (none: the hot
    path applies every layer). Litestar's layers are the app, its routers and controllers, and the handler; each may
    add middleware, guards, dependencies, request hooks and its own body limit. `auth`: the name of the app's
    authentication middleware (the benchmark's auth-less server has its own, `bench.noauth`)."""
    missing = []
    names = [getattr(m, "middleware", m) for m in app.middleware]
    found = tuple(getattr(m, "__name__", type(m).__name__) for m in names)
    expected = tuple(auth if name == "AuthMiddleware" else name for name in MIRRORED_MIDDLEWARE)
    if found != expected:
        missing.append(f"the app's middleware is {found}, the hot path applies {expected}")
    for layer in handler.ownership_layers:
        what = f"{type(layer).__name__} {getattr(layer, 'path', '')!r}"
        if layer is not app and layer.middleware:
            missing.append(f"{what} adds middleware")
        if layer.guards:
            missing.append(f"{what} has guards")
        if layer.dependencies:
            missing.append(f"{what} has dependencies")
        for hook in ("before_request", "after_request", "after_response"):
            if getattr(layer, hook, None):
                missing.append(f"{what} has a {hook} hook")
        limit = getattr(layer, "request_max_body_size", None)
        if layer is not app and isinstance(limit, int):
            missing.append(f"{what} sets its own body limit")
    return missing


def _body_type(handler: Any) -> type[Any]:
    """The type of the handler's `data` (an optional body's: the type it has when present)."""
    annotation = handler.parsed_fn_signature.parameters["data"].annotation
    members = [t for t in typing.get_args(annotation) if t is not type(None)]
    body: type[Any] = members[0] if members else annotation
    return body


_JSON = (b"content-type", b"application/json")
_NOSNIFF = (b"x-content-type-options", b"nosniff")


class HotRoutes:
    """The ASGI app a server runs: the hot routes here, everything else in `app`."""

    def __init__(self, app: Litestar, settings: Settings, auth: type[Any] = AuthMiddleware) -> None:
        """`auth`: the app's authentication middleware, whose check the hot path applies (another than
        `AuthMiddleware` only in the benchmark, `bench.noauth`)."""
        self.app = app
        self._authenticate: Authenticate = auth.authenticate
        self._max_body = settings.max_request_body_bytes
        self._deadline = settings.request_timeout_seconds
        router = app.asgi_router
        routes: dict[str, _Route] = {}
        for path, route in [*_ROUTES.items(), ("", _ACK)]:
            _, handler, _, _, template = router.handle_routing(path=route.sample_path, method="POST")
            # The app must route these paths to the handlers mirrored here; anything else is a bug in this table.
            if getattr(handler.fn, "__func__", None) is not route.handler.fn:  # type: ignore[attr-defined]
                raise RuntimeError(f"{route.sample_path} is not routed to {route.handler} in the app")
            if not isinstance(handler, HTTPRouteHandler):
                raise TypeError(f"{route.sample_path} is not an HTTP route in the app")
            if missing := mirrored_layers(app, handler, auth.__name__):
                raise RuntimeError(f"the hot path of {route.sample_path} would skip: {'; '.join(missing)}")
            body = _body_type(handler)
            decode = _DECODERS.get(body) or _strict(body)
            routes[path] = dataclasses.replace(route, template=template, status=handler.status_code, decode=decode)
        self._ack = routes.pop("")
        self._routes = routes

    @property
    def state(self) -> State:
        """The app's state (the server reads its `runtime` on shutdown)."""
        return self.app.state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP and scope["method"] == "POST" and not scope.get("root_path"):
            path = scope["path"]
            route = self._routes.get(path)
            message_id = ""
            if route is None and path.startswith(_ID_PREFIX) and path.endswith(_ACK_SUFFIX):
                message_id = path[len(_ID_PREFIX) : -len(_ACK_SUFFIX)]
                route = self._ack if message_id and "/" not in message_id else None
            if route is not None:
                headers = {name: value for name, value in scope["headers"] if name in READ_HEADERS}
                host = headers.get(b"host")
                if host is None or is_valid_host(host):
                    await self._serve(route, message_id, headers, scope, receive, send)
                    return
        await self.app(scope, receive, send)

    async def _serve(
        self, route: _Route, message_id: str, headers: dict[bytes, bytes], scope: Scope, receive: Receive, send: Send
    ) -> None:
        scope["app"] = self.app  # as Litestar does: authentication and the handlers find the runtime there
        scope["path_template"] = route.template
        request_id = request_id_of(scope)
        client_id = client_request_id_of(scope)
        token = REQUEST_ID.set(request_id)
        client_token = CLIENT_REQUEST_ID.set(client_id)
        started = time.perf_counter()
        status = 500
        answered = False
        try:
            try:
                async with asyncio.timeout(self._deadline):
                    result = await self._work(route, message_id, headers, scope, receive)
            except TimeoutError:  # as api.deadline answers it
                raise errors.Unavailable(
                    f"the request did not complete within {self._deadline:g} s; retry shortly", retry_after=1
                ) from None
            status = route.status
            body = b"" if result is None else msgspec.json.encode(result)
            # as `api.observability.stamp_response` answers: the caller's own id, else the server's
            response_headers = [(b"x-request-id", (client_id or request_id).encode()), _NOSNIFF]
            if status != 204:
                response_headers[:0] = [_JSON, (b"content-length", str(len(body)).encode())]
            answered = True
            start: HTTPResponseStartEvent = {
                "type": "http.response.start",
                "status": status,
                "headers": response_headers,
            }
            await send(start)
            end: HTTPResponseBodyEvent = {"type": "http.response.body", "body": body, "more_body": False}
            await send(end)
        except Exception as exc:
            if answered:  # the client went away mid-answer: nothing more to say
                raise
            status = await self._fail(exc, scope, receive, send)
        finally:
            elapsed = time.perf_counter() - started
            metrics: Metrics = self.app.state.runtime.metrics
            metrics.http.observe((route.template, "POST", f"{status // 100}xx"), (elapsed,))
            metrics.lean[route.template] += 1
            if log.isEnabledFor(logging.DEBUG):
                log.debug(
                    "request",
                    extra={
                        "method": "POST",
                        "route": route.template,
                        "status": status,
                        "duration_ms": round(elapsed * 1e3, 2),
                    },
                )
            REQUEST_ID.reset(token)
            CLIENT_REQUEST_ID.reset(client_token)

    async def _work(
        self, route: _Route, message_id: str, headers: dict[bytes, bytes], scope: Scope, receive: Receive
    ) -> msgspec.Struct | None:
        refuse_cross_site(headers)
        await self._authenticate(scope, headers, True)
        if scope["query_string"]:  # the routes read none, but the app refuses what no parameter may hold
            check_query_string(scope["query_string"])
        if message_id:
            check_text(message_id, "message_id")  # the app's route calls its path parameter so
        data = route.decode(await self._body(headers, receive))
        return await route.handle(_Call(scope["user"], self.app, receive), data, message_id)

    async def _body(self, headers: dict[bytes, bytes], receive: Receive) -> bytes:
        """The request body, with Litestar's limit and refusals (`Request.stream`)."""
        announced = headers.get(b"content-length")
        if announced is not None:
            try:
                length = int(announced)
            except ValueError:
                raise ClientException(f"Invalid content-length: {announced.decode('latin-1')!r}") from None
            if length > self._max_body:
                raise RequestEntityTooLarge
        chunks: list[bytes] = []
        total = 0
        while True:
            event = await receive()
            if event["type"] == "http.request":
                chunk = event.get("body", b"")
                if chunk:
                    total += len(chunk)
                    if total > self._max_body:
                        raise RequestEntityTooLarge
                    chunks.append(chunk)
                if not event.get("more_body", False):
                    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
            elif event["type"] == "http.disconnect":
                raise InternalServerException("client disconnected prematurely")

    async def _fail(self, exc: Exception, scope: Scope, receive: Receive, send: Send) -> int:
        """Answer `exc` as the app would: its exception handler's response, sent by Litestar's response classes,
        stamped as every response is. The status answered."""
        handler = next(EXCEPTION_HANDLERS[cls] for cls in type(exc).__mro__ if cls in EXCEPTION_HANDLERS)
        request: Request[Any, Any, Any] = Request(scope, receive, send)
        response = handler(request, exc)

        async def stamped(message: Message) -> None:
            await stamp_response(message, scope)
            await send(message)

        await response.to_asgi_response(None, request)(scope, receive, stamped)
        status: int = response.status_code
        return status


def with_hot_routes(app: Litestar, settings: Settings) -> HotRoutes | Litestar:
    """The ASGI app to serve: `app` behind `HotRoutes`, unless `SKIPLOCK_HOT_ROUTES` is off."""
    return HotRoutes(app, settings) if settings.hot_routes else app
