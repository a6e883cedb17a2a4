"""queue-ti's gRPC service (`queue.QueueService`, `queue.proto` beside this file) over Skiplock's queue.

Every call goes through what REST goes through: the bearer token of `POST /api/auth/login` in the `authorization`
metadata (`Authenticator.authenticate_bearer`), the tenant of the token's user (a platform admin names one in
`x-tenant`, as over REST), grants, and `QueueService` with its limits, quotas, schemas, consumer groups and
fairness. An empty `consumer_group` (proto3's default) means none. queue-ti's clients ack and nack by id alone:
that acts on the current lease of the message, as a REST ack without a receipt does.

Errors are the REST errors as gRPC status codes (`_GRPC_CODES`), with the contract's code in the status details
(gRPC's rich error model, `grpc-status-details-bin`: a `google.rpc.ErrorInfo` whose `reason` is the code, domain
`skiplock`; grpcio-status reads it) and in the trailing metadata `skiplock-code` for clients that read no details.

`Subscribe` leases one message at a time, when the previous one was written to the
stream (HTTP/2 flow control holds a write until the reader keeps up), and waits as a long poll does (woken by the
wake-ups of `mq.queue.wakeups`, never a polling loop); the messages it delivered and that no gRPC ack or nack of
this process settled are released when the stream ends (their lease lapses at once: they are delivered again,
counted as an attempt, as a lapsed lease is).

What one caller can make it do is bounded as over REST (contract, "Bounds on what one tenant can make the server
do"): a stream checks its caller again before each lease (a deleted user, a changed password or role, a removed
grant, a suspended tenant or an expired token ends it), holds at most `grpc_stream_max_unsettled` deliveries not
yet settled, and a user has at most `grpc_max_streams_per_user` streams open; the server pings idle connections
(`grpc_keepalive_seconds`) and drops a peer gone silent, releasing its streams' leases. `Ack` and `Nack` by id act
only on the caller's own lease: the receipt this process delivered to that user, or the lease that user holds
now. An unexpected error answers `INTERNAL` with the text "internal error" (logged with its stack).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from google.rpc import error_details_pb2, status_pb2

from api.errors import code_of, status_of
from api.input_checks import check_message, lenient
from api.queue_ti import queue_pb2, queue_pb2_grpc
from mq import errors
from mq.queue.types import MessageRow
from mq.queue.validation import check_group
from mq.runtime import Runtime
from mq.tenancy.auth import Principal

log = logging.getLogger(__name__)

#: A Subscribe stream's long poll: how long one wait lasts before it looks again (the contract's longest).
_SUBSCRIBE_WAIT_SECONDS = 20.0
#: Receipts of `Dequeue` and `BatchDequeue` deliveries remembered for acks by id (the oldest forgotten first: an
#: ack by id then finds the caller's lease in Postgres).
_RECEIPTS_KEPT = 100_000

_GRPC_CODES = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.NOT_FOUND,
    409: grpc.StatusCode.FAILED_PRECONDITION,
    413: grpc.StatusCode.INVALID_ARGUMENT,
    415: grpc.StatusCode.INVALID_ARGUMENT,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    503: grpc.StatusCode.UNAVAILABLE,
}

Reply = TypeVar("Reply")


class _Stream:
    """A Subscribe stream's deliveries that no gRPC ack or nack settled yet: id -> (receipt, lease deadline as Unix
    time). Those whose lease lapsed no longer count against the stream's bound."""

    def __init__(self, user_id: str, limit: int) -> None:
        self.user_id = user_id
        self.limit = limit
        self.delivered: dict[str, tuple[str | None, float]] = {}
        self.settled = asyncio.Event()

    def holding(self) -> int:
        now = time.time()
        return sum(1 for _, deadline in self.delivered.values() if deadline > now)

    async def room(self, gone: asyncio.Event) -> None:
        """Wait while the stream holds its limit of live deliveries (until one is settled or lapses)."""
        while not gone.is_set() and self.holding() >= self.limit:
            self.settled.clear()
            next_lapse = min(deadline for _, deadline in self.delivered.values()) - time.time()
            waits = (asyncio.ensure_future(self.settled.wait()), asyncio.ensure_future(gone.wait()))
            _, pending = await asyncio.wait(waits, timeout=max(next_lapse, 0.01), return_when=asyncio.FIRST_COMPLETED)
            for waiting in pending:
                waiting.cancel()
            now = time.time()
            for message_id in [m for m, (_, deadline) in self.delivered.items() if deadline <= now]:
                del self.delivered[message_id]  # lapsed: delivered again to whoever leases it next

    def settle(self, message_id: str) -> None:
        if self.delivered.pop(message_id, None) is not None:
            self.settled.set()


class QueueTiService(queue_pb2_grpc.QueueServiceServicer):
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        #: Messages a Subscribe stream of this process delivered and no gRPC ack or nack of it settled yet: id -> the
        #: stream, whose record a settling ack or nack empties too
        self._unsettled: dict[str, _Stream] = {}
        #: `Dequeue` and `BatchDequeue` deliveries of this process: id -> (the user's id, the receipt)
        self._receipts: OrderedDict[str, tuple[str, str | None]] = OrderedDict()
        self._streams: Counter[str] = Counter()  # open Subscribe streams per user id

    # --- calls ------------------------------------------------------------------------------------------------

    async def Enqueue(  # noqa: N802 - the proto's method names
        self, request: queue_pb2.EnqueueRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> queue_pb2.EnqueueResponse:
        async def enqueue(principal: Principal) -> queue_pb2.EnqueueResponse:
            key = request.key if request.HasField("key") else None
            metadata = dict(request.metadata) if request.metadata else None
            message_id = await self.runtime.commands.messages.enqueue(
                principal, request.topic, request.payload, metadata, key
            )
            return queue_pb2.EnqueueResponse(id=str(message_id))

        return await self._call("Enqueue", request, context, enqueue)

    async def Dequeue(  # noqa: N802
        self, request: queue_pb2.DequeueRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> queue_pb2.DequeueResponse:
        async def dequeue(principal: Principal) -> queue_pb2.DequeueResponse:
            visibility = _visibility(request)
            messages = await self._lease(principal, request.topic, 1, visibility, request.consumer_group)
            if not messages:
                raise errors.NotFound(f"no message available in topic {request.topic!r}")
            self._remember(principal, messages)
            return _dequeued(messages[0])

        return await self._call("Dequeue", request, context, dequeue)

    async def BatchDequeue(  # noqa: N802
        self, request: queue_pb2.BatchDequeueRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> queue_pb2.BatchDequeueResponse:
        async def batch(principal: Principal) -> queue_pb2.BatchDequeueResponse:
            visibility = _visibility(request)  # (the count and the visibility are checked by the queue's dequeue)
            messages = await self._lease(principal, request.topic, request.count, visibility, request.consumer_group)
            self._remember(principal, messages)
            return queue_pb2.BatchDequeueResponse(messages=[_dequeued(m) for m in messages])

        return await self._call("BatchDequeue", request, context, batch)

    async def Ack(  # noqa: N802
        self, request: queue_pb2.AckRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> queue_pb2.AckResponse:
        async def ack(principal: Principal) -> queue_pb2.AckResponse:
            group = _group(request.consumer_group)
            receipt = await self._own_receipt(principal, request.id, group)
            await self.runtime.commands.messages.ack(principal, request.id, receipt, group)
            self._settled(request.id)
            return queue_pb2.AckResponse()

        return await self._call("Ack", request, context, ack)

    async def Nack(  # noqa: N802
        self, request: queue_pb2.NackRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> queue_pb2.NackResponse:
        async def nack(principal: Principal) -> queue_pb2.NackResponse:
            group = _group(request.consumer_group)
            receipt = await self._own_receipt(principal, request.id, group)
            await self.runtime.commands.messages.nack(
                principal, request.id, receipt, request.error or None, None, group
            )
            self._settled(request.id)
            return queue_pb2.NackResponse()

        return await self._call("Nack", request, context, nack)

    async def Subscribe(  # noqa: N802
        self, request: queue_pb2.SubscribeRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[queue_pb2.SubscribeResponse]:
        code = grpc.StatusCode.OK
        gone = asyncio.Event()
        context.add_done_callback(lambda _: gone.set())
        principal: Principal | None = None
        stream: _Stream | None = None
        try:
            principal = await self._caller(context)
            check_message(request)
            stream = self._open_stream(principal)
            visibility = _visibility(request)
            queue = self.runtime.queue

            async def recheck() -> None:  # before each lease: the caller as stored now, its grants
                nonlocal principal
                principal = await self._caller(context)
                self.runtime.commands.messages.check_consumer(principal, request.topic, _group(request.consumer_group))

            while not gone.is_set() and not queue.wakeups.closing:
                await stream.room(gone)
                if gone.is_set():
                    break
                messages = await self._lease(
                    principal, request.topic, 1, visibility, request.consumer_group, gone.wait, recheck
                )
                for message in messages:  # a fresh lease: its deadline is the row's available_at
                    stream.delivered[message["id"]] = (message["receipt"], _unix(message["available_at"]))
                    self._unsettled[message["id"]] = stream
                    yield _subscribed(message)
        except Exception as exc:  # a refusal, or a dependency's fault (UNAVAILABLE); anything else INTERNAL
            code = _code(exc)
            await _abort(context, exc)
        finally:
            self.runtime.metrics.grpc_calls.labels("Subscribe", code.name).inc()
            if stream is not None:
                self._streams[stream.user_id] -= 1
                if not self._streams[stream.user_id]:
                    del self._streams[stream.user_id]
                if principal is not None and stream.delivered:
                    await self._release(principal, request, stream)

    # --- the parts ----------------------------------------------------------------------------------------------

    async def _call(
        self,
        method: str,
        request: Message,
        context: grpc.aio.ServicerContext[Any, Any],
        run: Callable[[Principal], Awaitable[Reply]],
    ) -> Reply:
        code = grpc.StatusCode.OK
        started = time.perf_counter()
        try:
            principal = await self._caller(context)
            check_message(request)  # after authentication, as over REST
            return await run(principal)
        except Exception as exc:
            code = _code(exc)
            await _abort(context, exc)
            raise AssertionError from exc  # unreachable: _abort raises
        finally:
            metrics = self.runtime.metrics
            metrics.grpc_calls.labels(method, code.name).inc()
            metrics.grpc_duration.observe((method,), (time.perf_counter() - started,))

    async def _caller(self, context: grpc.aio.ServicerContext[Any, Any]) -> Principal:
        metadata = {k: v for k, v in (context.invocation_metadata() or ()) if isinstance(v, str)}
        authorization = metadata.get("authorization", "")
        if authorization[:7].lower() != "bearer ":
            raise errors.Unauthorized("send a bearer token (POST /api/auth/login) in the authorization metadata")
        principal = await self.runtime.auth.authenticate_bearer(authorization[7:].strip())
        if tenant := metadata.get("x-tenant"):
            principal = await self.runtime.auth.address_tenant(principal, tenant)
        if principal.tenant_id is not None:
            self.runtime.metrics.tenant_names[principal.tenant_id] = principal.tenant_slug or ""
        return principal

    async def _lease(
        self,
        principal: Principal,
        topic: str,
        count: int,
        visibility: int | None,
        consumer_group: str,
        caller_gone: Callable[[], Awaitable[Any]] | None = None,
        before_lease: Callable[[], Awaitable[None]] | None = None,
    ) -> list[MessageRow]:
        wait = _SUBSCRIBE_WAIT_SECONDS if caller_gone is not None else 0
        return await self.runtime.commands.messages.dequeue(
            principal,
            topic,
            count,
            visibility,
            wait,
            caller_gone,
            consumer_group=_group(consumer_group),
            before_lease=before_lease,
        )

    def _open_stream(self, principal: Principal) -> _Stream:
        """A new Subscribe stream of the caller, within its user's count of open streams."""
        limit = self.runtime.settings.grpc_max_streams_per_user
        if self._streams[principal.user_id] >= limit:
            raise errors.RateLimited(f"a user may have {limit} Subscribe streams open at once")
        self._streams[principal.user_id] += 1
        return _Stream(principal.user_id, self.runtime.settings.grpc_stream_max_unsettled)

    def _remember(self, principal: Principal, messages: list[MessageRow]) -> None:
        for message in messages:
            message_id = message["id"]
            self._receipts[message_id] = (principal.user_id, message["receipt"])
            self._receipts.move_to_end(message_id)
        while len(self._receipts) > _RECEIPTS_KEPT:
            self._receipts.popitem(last=False)

    async def _own_receipt(self, principal: Principal, message_id: str, group: str | None) -> str:
        """The receipt of the caller's own lease of the message: the one this process delivered to the caller
        (a stream's, or a dequeue's), else the lease the caller holds now (LeaseLost when another consumer holds
        it: an ack by id never ends someone else's lease)."""
        stream = self._unsettled.get(message_id)
        if stream is not None and stream.user_id == principal.user_id:
            receipt = stream.delivered.get(message_id, (None, 0.0))[0]
            if receipt is not None:
                return receipt
        known = self._receipts.get(message_id)
        if known is not None and known[0] == principal.user_id and known[1] is not None:
            return known[1]
        _, receipt = await self.runtime.commands.messages.own_receipt(principal, message_id, group)
        return receipt

    def _settled(self, message_id: str) -> None:
        """A gRPC ack or nack of this process settled the message: its stream does not release it."""
        self._receipts.pop(message_id, None)
        stream = self._unsettled.pop(message_id, None)
        if stream is not None:
            stream.settle(message_id)

    async def _release(self, principal: Principal, request: queue_pb2.SubscribeRequest, stream: _Stream) -> None:
        """The stream ended: its deliveries that no gRPC ack or nack settled lapse now (a lease extended to 0 s:
        available again at once, its slot of a max_inflight freed). One already settled elsewhere is left as it
        is (its receipt no longer matches). The stream's own cleanup, not a caller's command: it holds even when the
        stream ended because the caller lost its grant."""
        tenant = principal.tenant_id
        group = _group(request.consumer_group)
        for message_id, (receipt, _) in list(stream.delivered.items()):
            if self._unsettled.get(message_id) is stream:
                del self._unsettled[message_id]
            if tenant is None:
                continue
            with contextlib.suppress(errors.SkiplockError):
                await self.runtime.queue.extend(tenant, message_id, receipt, 0, group)


def _group(name: str) -> str | None:
    """A request's consumer group: proto3's empty default is none; a name is checked as every edge checks it."""
    group = name or None
    check_group(group)
    return group


def _visibility(request: Any) -> int | None:
    """The visibility timeout a request sets (proto3's optional field), None when unset."""
    return int(request.visibility_timeout_seconds) if request.HasField("visibility_timeout_seconds") else None


def _code(exc: Exception) -> grpc.StatusCode:
    """The gRPC status of the REST status the API would answer `exc` with."""
    return _GRPC_CODES.get(status_of(exc), grpc.StatusCode.INTERNAL)


async def _abort(context: grpc.aio.ServicerContext[Any, Any], exc: Exception) -> None:
    """End the call with `_code(exc)`, the error's message and the contract's code in the trailing metadata
    (`skiplock-code`); raises. An unexpected error answers INTERNAL "internal error" (its text and stack go to the
    log only)."""
    status = status_of(exc)
    if isinstance(exc, errors.SkiplockError):
        message, contract_code = exc.message, code_of(exc)
    elif status == 503:
        message, contract_code = "a dependency is unavailable; retry later", "unavailable"
    else:
        message, contract_code = "internal error", "internal"
    if not isinstance(exc, errors.SkiplockError) and status != 503:
        log.error("gRPC call failed", exc_info=exc)
    code = _code(exc)
    info = any_pb2.Any()
    info.Pack(error_details_pb2.ErrorInfo(reason=contract_code, domain="skiplock"))
    rich = status_pb2.Status(code=code.value[0], message=message, details=[info])
    trailer = (("skiplock-code", contract_code), ("grpc-status-details-bin", rich.SerializeToString()))
    await context.abort(code, message, trailer)


def _metadata(row: MessageRow) -> dict[str, str]:
    """queue-ti's metadata is a map of strings: strings stay as they are, other JSON values are written as JSON."""
    text = row["metadata"]
    if text is None:
        return {}
    decoded = json.loads(text)
    return {k: v if isinstance(v, str) else json.dumps(v, separators=(",", ":")) for k, v in decoded.items()}


def _unix(rfc3339: str | None) -> float:
    """A lease deadline as Unix time (none: already past)."""
    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp() if rfc3339 else 0.0


def _timestamp(rfc3339: str | None) -> Timestamp:
    stamp = Timestamp()
    if rfc3339:
        stamp.FromDatetime(datetime.fromisoformat(rfc3339.replace("Z", "+00:00")))
    return stamp


def _dequeued(row: MessageRow) -> queue_pb2.DequeueResponse:
    """From a leased message's row (`mq.queue.sql.common.message_columns`)."""
    reply = queue_pb2.DequeueResponse(
        id=row["id"],
        topic=row["topic"],
        payload=row["payload"],
        metadata=_metadata(row),
        created_at=_timestamp(row["created_at"]),
        retry_count=row["retry_count"],
        max_retries=row["max_retries"],
    )
    if (key := row["key"]) is not None:
        reply.key = key
    return reply


def _subscribed(row: MessageRow) -> queue_pb2.SubscribeResponse:
    return queue_pb2.SubscribeResponse(
        id=row["id"],
        topic=row["topic"],
        payload=row["payload"],
        metadata=_metadata(row),
        created_at=_timestamp(row["created_at"]),
        retry_count=row["retry_count"],
    )


class _Lenient:
    """Registers the generated handlers on `server` with request deserializers that never raise (`lenient`): a
    request that does not decode reaches the service, which refuses it as INVALID_ARGUMENT, instead of grpc
    answering UNKNOWN with the parser's text."""

    def __init__(self, server: grpc.aio.Server) -> None:
        self.server = server

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        pass  # the same methods as `add_registered_method_handlers`, which serves them

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        handlers = {
            name: handler._replace(request_deserializer=lenient(handler.request_deserializer))
            for name, handler in handlers.items()
        }
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
        self.server.add_registered_method_handlers(service, handlers)


@contextlib.asynccontextmanager
async def grpc_server(runtime: Runtime) -> AsyncIterator[None]:
    """queue-ti's gRPC service on `grpc_port` (0: none), in this process's event loop, for as long as the app runs;
    its streams end with the HTTP server's graceful shutdown (long polls answer at once from the first signal)."""
    port = runtime.settings.grpc_port
    if not port:
        yield
        return
    keepalive_ms = int(runtime.settings.grpc_keepalive_seconds * 1000)
    server = grpc.aio.server(
        options=[
            ("grpc.so_reuseport", 1),
            # the server pings a connection idle for keepalive_ms and drops it when the ping goes unanswered as
            # long: a peer gone without closing its connection ends its streams (their leases released)
            ("grpc.keepalive_time_ms", keepalive_ms),
            ("grpc.keepalive_timeout_ms", keepalive_ms),
            ("grpc.http2.ping_timeout_ms", keepalive_ms),  # what bounds the wait for a ping's ack (grpc 1.5x+)
            ("grpc.keepalive_permit_without_calls", 1),
            # an idle stream sends no data: the pings must not wait for any (grpc's defaults allow 2, then none
            # for 5 minutes)
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.http2.min_sent_ping_interval_without_data_ms", keepalive_ms),
            ("grpc.http2.min_time_between_pings_ms", keepalive_ms),
            # clients may ping as often as every 10 s (queue-ti's Go client's default is never)
            ("grpc.http2.min_recv_ping_interval_without_data_ms", 10_000),
            ("grpc.http2.max_ping_strikes", 2),
        ]
    )
    queue_pb2_grpc.add_QueueServiceServicer_to_server(QueueTiService(runtime), _Lenient(server))  # type: ignore[no-untyped-call]
    address = f"{runtime.settings.host}:{port}"
    if server.add_insecure_port(address) == 0:
        raise OSError(f"cannot listen on {address} for gRPC")
    await server.start()
    started = time.monotonic()
    try:
        yield
    finally:
        runtime.queue.wakeups.stop_waiting()
        await server.stop(grace=max(1.0, min(10.0, time.monotonic() - started)))
