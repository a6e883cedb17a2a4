"""Data plane: enqueue, dequeue, ack, nack, extend, requeue, browse and delete messages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Protocol

from litestar import Controller, Request, delete, get, post
from litestar.params import JSONBody, Parameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_204_NO_CONTENT

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
    MessagePage,
    NackBody,
    NackView,
    Page,
)
from api.views.messages import BatchAckView, MessageDetailView, MessageStoryView, MessageView
from mq.commands.messages import BatchItem, MessageCommands
from mq.names import ADDRESSABLE_TOPIC_PATTERN, GROUP_PATTERN
from mq.queue.types import MessageStatus
from mq.tenancy.auth import Principal

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


def _commands(request: Caller) -> MessageCommands:
    commands: MessageCommands = request.app.state.runtime.commands.messages
    return commands


async def _disconnected(request: Caller) -> None:
    """Returns when the client of a long poll goes away (its body is read: the next ASGI message is the disconnect),
    so that the wait ends without leasing a message nobody would receive."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


# --- the hot routes' work, shared by the controller and `api.hot_routes`: decode, call, render ------------------


async def enqueue(request: Caller, data: EnqueueBody) -> IdView:
    message_id = await _commands(request).enqueue(
        request.user, data.topic, data.payload, data.metadata, data.key, data.delay_seconds, data.priority
    )
    return IdView(id=str(message_id))


async def enqueue_batch(request: Caller, data: BatchEnqueueBody) -> IdsView:
    items: list[BatchItem] = data.messages  # type: ignore[assignment]  # (bad items as their messages: decode_batch)
    ids = await _commands(request).enqueue_batch(request.user, data.topic, items)
    return IdsView(ids=[str(i) for i in ids])


async def dequeue(request: Caller, data: DequeueBody) -> DequeueView:
    messages = await _commands(request).dequeue(
        request.user,
        data.topic,
        data.count,
        data.visibility_timeout_seconds,
        data.wait_seconds,
        lambda: _disconnected(request),
        consumer_group=data.consumer_group,
    )
    return DequeueView(messages=MessageView.from_rows(messages, with_lease=True))


async def ack_batch(request: Caller, data: BatchAckBody) -> BatchAckView:
    results = await _commands(request).ack_batch(request.user, [(a.id, a.receipt, a.consumer_group) for a in data.acks])
    return BatchAckView.of(results)


async def ack(request: Caller, message_id: str, data: AckBody | None) -> None:
    group = data.consumer_group if data else None
    await _commands(request).ack(request.user, message_id, data.receipt if data else None, group)


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
        outcome = await _commands(request).nack(
            request.user, message_id, body.receipt, body.error, body.delay_seconds, body.consumer_group, body.metadata
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
        deadline = await _commands(request).extend(
            request.user, message_id, data.receipt, data.visibility_timeout_seconds, data.consumer_group
        )
        return ExtendView(visibility_deadline=deadline)

    @post(
        "/{message_id:str}/requeue",
        status_code=HTTP_204_NO_CONTENT,
        summary="Move a DLQ message back",
        operation_id="requeueMessage",
    )
    async def requeue(self, request: AnyRequest, message_id: str) -> None:
        await _commands(request).requeue(request.user, message_id)

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
        await _commands(request).retry(request.user, message_id)

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
        items, total = await _commands(request).browse(request.user, topic, status, key, limit, offset, consumer_group)
        return Page(items=MessageView.from_rows(items, with_lease=False), total=total, limit=limit, offset=offset)

    @get("/{message_id:str}", summary="One message", operation_id="getMessage")
    async def get_message(self, request: AnyRequest, message_id: str) -> MessageDetailView:
        return MessageDetailView.from_detail_row(await _commands(request).get(request.user, message_id))

    @get("/{message_id:str}/story", summary="A message's whole story", operation_id="getMessageStory")
    async def get_story(
        self,
        request: AnyRequest,
        message_id: str,
        topic: Annotated[
            str | None,
            Parameter(
                pattern=ADDRESSABLE_TOPIC_PATTERN,
                description="Where to look for a message that is not stored any more (its message log entry)",
            ),
        ] = None,
    ) -> MessageStoryView:
        """Its enqueue, every attempt with its error (each consumer group's too), dead-lettering, requeues,
        retries, replays and acks, oldest first, joined from its row, its groups' deliveries and dead letters, the
        message log and the audit trail. Readers of its topic; 404 `message_not_found` when nothing is known."""
        story = await request.app.state.runtime.commands.stories.story(request.user, message_id, topic)
        return MessageStoryView.of(story)

    @delete(
        "/{message_id:str}",
        status_code=HTTP_204_NO_CONTENT,
        summary="Delete a message (tenant admin)",
        operation_id="deleteMessage",
    )
    async def delete_message(self, request: AnyRequest, message_id: str) -> None:
        await _commands(request).delete(request.user, message_id)
