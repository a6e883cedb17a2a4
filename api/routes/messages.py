"""Data plane: enqueue, dequeue, ack, nack, extend, requeue, browse and delete messages."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Protocol

from litestar import Controller, Request, delete, get, post
from litestar.params import JSONBody, Parameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_204_NO_CONTENT

from api.audit import audit
from api.auth import require_consumer_group, require_grant, tenant_for, tenant_for_messages
from api.body import BatchBody, json_post
from api.schemas import (
    MAX_OFFSET,
    MAX_PAGE_LIMIT,
    AckBody,
    BatchAckBody,
    BatchEnqueueBody,
    DequeueBody,
    DequeueView,
    EnqueueBody,
    ExtendBody,
    ExtendView,
    IdsView,
    IdView,
    InvalidItem,
    MessagePage,
    NackBody,
    NackView,
    Page,
)
from mq import errors
from mq.names import GROUP_PATTERN
from mq.queue.service import QueueService
from mq.queue.types import BatchAckView, MessageDetailView, MessageStatus
from mq.queue.validation import build_item, build_rows
from mq.tenancy import grants
from mq.tenancy.auth import Principal
from mq.topics.service import TopicAdmin

if TYPE_CHECKING:
    from litestar import Litestar
    from litestar.types import Receive

AnyRequest = Request[Principal, Any, Any]


class Caller(Protocol):
    """What the data plane's handlers read of a request: a Litestar `Request`, or the hot routes' own stand-in for
    one (`api.hot_routes`), which serves the five busiest routes with these same functions."""

    @property
    def user(self) -> Principal: ...

    @property
    def app(self) -> Litestar: ...

    @property
    def receive(self) -> Receive: ...


def _queue(request: Caller) -> QueueService:
    queue: QueueService = request.app.state.runtime.queue
    return queue


def _batch_limit(request: Caller, n: int, what: str) -> None:
    limit: int = request.app.state.runtime.settings.max_batch_size
    if n > limit:
        raise errors.InvalidRequest(f"at most {limit} {what} per request; got {n}")


async def _tenant_for_messages(
    request: Caller, action: str, message_ids: list[str], groups: Sequence[str | None] | None = None
) -> int:
    return await tenant_for_messages(request.user, _queue(request), action, message_ids, groups)


async def _disconnected(request: Caller) -> None:
    """Returns when the client of a long poll goes away (its body is read: the next ASGI message is the disconnect),
    so that the wait ends without leasing a message nobody would receive."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _item_code(exc: errors.SkiplockError) -> str:
    """The contract's code for a bad item of a batch."""
    if isinstance(exc, errors.PayloadTooLarge):
        return "payload_too_large"
    return "reserved_topic" if isinstance(exc, errors.ReservedTopic) else "invalid_request"


# --- the hot routes' work, shared by the controller and `api.hot_routes` --------------------------------------


async def enqueue(request: Caller, data: EnqueueBody) -> IdView:
    tenant = tenant_for(request.user, action="produce", topic=data.topic)
    queue = _queue(request)
    item = build_item(
        queue.settings, data.topic, data.payload, data.metadata, data.key, data.delay_seconds, data.priority
    )
    message_id, _ = await queue.enqueue(tenant, item)
    return IdView(id=str(message_id))


async def enqueue_batch(request: Caller, data: BatchEnqueueBody) -> IdsView:
    tenant = tenant_for(request.user, action="produce")
    queue = _queue(request)
    _batch_limit(request, len(data.messages), "messages")
    invalid = [(i, e) for i, e in enumerate(data.messages) if isinstance(e, InvalidItem)]
    entries = [e for e in data.messages if not isinstance(e, InvalidItem)] if invalid else data.messages
    items, bad = await build_rows(queue.settings, data.topic, entries, functools.partial(queue.limits, tenant))
    problems: list[dict[str, Any]] = [
        {"index": index, "code": "invalid_request", "error": entry.error} for index, entry in invalid
    ]
    if bad:
        positions = [i for i, e in enumerate(data.messages) if not isinstance(e, InvalidItem)]
        for index, exc in bad:
            problems.append({"index": positions[index], "code": _item_code(exc), "error": exc.message})
        problems.sort(key=lambda p: p["index"])
    if problems:
        if all(p["code"] == "payload_too_large" for p in problems):
            raise errors.PayloadTooLarge("a payload in the batch is too large", details=problems)
        raise errors.InvalidRequest(f"{len(problems)} of {len(data.messages)} messages are not valid", details=problems)
    if request.user.is_member:  # admins need no grant: skip the per-item pass
        for topic in {item.topic for item in items}:
            require_grant(request.user, "produce", topic)
    ids = await queue.enqueue_batch(tenant, items)
    return IdsView(ids=[str(i) for i in ids])


async def dequeue(request: Caller, data: DequeueBody) -> DequeueView:
    tenant = tenant_for(request.user, action="consume", topic=data.topic)
    require_consumer_group(request.user, data.topic, data.consumer_group)
    messages = await _queue(request).dequeue(  # (which checks the count against the batch limit)
        tenant,
        data.topic,
        data.count,
        data.visibility_timeout_seconds,
        data.wait_seconds,
        lambda: _disconnected(request),
        consumer=request.user.username,
        consumer_group=data.consumer_group,
    )
    return DequeueView(messages=messages)


async def ack_batch(request: Caller, data: BatchAckBody) -> BatchAckView:
    _batch_limit(request, len(data.acks), "acks")
    acks = data.acks
    tenant = await _tenant_for_messages(request, "consume", [a.id for a in acks], [a.consumer_group for a in acks])
    return await _queue(request).ack_batch(tenant, [(a.id, a.receipt, a.consumer_group) for a in data.acks])


async def ack(request: Caller, message_id: str, data: AckBody | None) -> None:
    group = data.consumer_group if data else None
    tenant = await _tenant_for_messages(request, "consume", [message_id], [group])
    await _queue(request).ack(tenant, message_id, data.receipt if data else None, group)


class MessageController(Controller):
    path = "/api/messages"
    tags = ["messages"]

    @json_post(
        "/", EnqueueBody, status_code=HTTP_201_CREATED, summary="Enqueue a message", operation_id="enqueueMessage"
    )
    async def enqueue(self, request: AnyRequest, data: EnqueueBody) -> IdView:
        return await enqueue(request, data)

    @post(
        "/batch",
        status_code=HTTP_201_CREATED,
        summary="Enqueue many messages, all or nothing",
        operation_id="enqueueMessages",
        dto=BatchBody,
        return_dto=None,
    )
    async def enqueue_batch(self, request: AnyRequest, data: BatchEnqueueBody) -> IdsView:
        return await enqueue_batch(request, data)

    @json_post(
        "/dequeue",
        DequeueBody,
        status_code=HTTP_200_OK,
        summary="Lease messages (long poll with wait_seconds)",
        operation_id="dequeueMessages",
    )
    async def dequeue(self, request: AnyRequest, data: DequeueBody) -> DequeueView:
        return await dequeue(request, data)

    @json_post(
        "/ack",
        BatchAckBody,
        status_code=HTTP_200_OK,
        summary="Acknowledge many messages in one round trip",
        operation_id="ackMessages",
    )
    async def ack_batch(self, request: AnyRequest, data: BatchAckBody) -> BatchAckView:
        return await ack_batch(request, data)

    @json_post(
        "/{message_id:str}/ack",
        AckBody,
        status_code=HTTP_204_NO_CONTENT,
        summary="Acknowledge (delete) a message",
        operation_id="ackMessage",
    )
    async def ack(self, request: AnyRequest, message_id: str, data: JSONBody[AckBody | None] = None) -> None:
        await ack(request, message_id, data)

    @json_post(
        "/{message_id:str}/nack",
        NackBody,
        status_code=HTTP_200_OK,
        summary="Reject a message: retry, DLQ or failed",
        operation_id="nackMessage",
    )
    async def nack(self, request: AnyRequest, message_id: str, data: JSONBody[NackBody | None] = None) -> NackView:
        body = data or NackBody()
        tenant = await _tenant_for_messages(request, "consume", [message_id], [body.consumer_group])
        outcome = await _queue(request).nack(
            tenant, message_id, body.receipt, body.error, body.delay_seconds, body.consumer_group, body.metadata
        )
        return NackView(outcome=outcome)

    @json_post(
        "/{message_id:str}/visibility",
        ExtendBody,
        status_code=HTTP_200_OK,
        summary="Extend a lease (heartbeat)",
        operation_id="extendLease",
    )
    async def extend(self, request: AnyRequest, message_id: str, data: ExtendBody) -> ExtendView:
        tenant = await _tenant_for_messages(request, "consume", [message_id], [data.consumer_group])
        deadline = await _queue(request).extend(
            tenant, message_id, data.receipt, data.visibility_timeout_seconds, data.consumer_group
        )
        return ExtendView(visibility_deadline=deadline)

    @post(
        "/{message_id:str}/requeue",
        status_code=HTTP_204_NO_CONTENT,
        summary="Move a DLQ message back",
        operation_id="requeueMessage",
    )
    async def requeue(self, request: AnyRequest, message_id: str) -> None:
        topic = await _queue(request).requeue(await _tenant_for_messages(request, "consume", [message_id]), message_id)
        await audit(request, "message.requeue", message_id, {"topic": topic})

    @post(
        "/{message_id:str}/retry",
        status_code=HTTP_204_NO_CONTENT,
        summary="Retry a failed or expired message, or release a delayed one now",
        operation_id="retryMessage",
    )
    async def retry(self, request: AnyRequest, message_id: str) -> None:
        """The message becomes pending and available now, its attempts counted from 0 (an expired one gets its TTL
        again from now). 400 for a message in any other state; 409 `key_conflict` when a pending message holds its
        key; 429 `queue_full` when its topic is at max_depth."""
        topic = await _queue(request).retry(await _tenant_for_messages(request, "consume", [message_id]), message_id)
        await audit(request, "message.retry", message_id, {"topic": topic})

    @get("/", summary="Browse messages, newest first", operation_id="listMessages")
    async def browse(
        self,
        request: AnyRequest,
        topic: str | None = None,
        status: MessageStatus | None = None,
        key: str | None = None,
        consumer_group: Annotated[
            str | None,
            Parameter(
                pattern=GROUP_PATTERN,
                description="With `topic`: the messages this consumer group still owes, and its dead letters",
            ),
        ] = None,
        limit: Annotated[int, Parameter(ge=1, le=MAX_PAGE_LIMIT)] = 50,
        offset: Annotated[int, Parameter(ge=0, le=MAX_OFFSET)] = 0,
    ) -> MessagePage:
        principal = request.user
        tenant = tenant_for(principal, action="read", topic=topic)
        if topic is None and principal.is_member and not grants.allows_every_topic(principal.grants, "read"):
            raise errors.Forbidden("name a topic you may read (a read grant on '*' lists every topic)")
        topics: TopicAdmin = request.app.state.runtime.topics
        items, total = await topics.browser.browse(tenant, topic, status, key, limit, offset, consumer_group)
        return Page(items=items, total=total, limit=limit, offset=offset)

    @get("/{message_id:str}", summary="One message", operation_id="getMessage")
    async def get_message(self, request: AnyRequest, message_id: str) -> MessageDetailView:
        return await _queue(request).get(await _tenant_for_messages(request, "read", [message_id]), message_id)

    @delete(
        "/{message_id:str}",
        status_code=HTTP_204_NO_CONTENT,
        summary="Delete a message (tenant admin)",
        operation_id="deleteMessage",
    )
    async def delete_message(self, request: AnyRequest, message_id: str) -> None:
        topic = await _queue(request).delete(tenant_for(request.user, admin_only=True), message_id)
        await audit(request, "message.delete", message_id, {"topic": topic})
