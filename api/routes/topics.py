"""Topics: summaries, stats, purge, delete by key, DLQ requeue, and reading topic configs."""

from __future__ import annotations

import urllib.parse
from typing import Any

import msgspec
from litestar import Controller, Request, delete, get, post, put
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK, HTTP_204_NO_CONTENT

from api.audit import audit
from api.auth import tenant_for
from api.body import json_post, strict_body
from api.schemas import (
    DeletedView,
    PurgeBody,
    RequeuedView,
    StatRowView,
    StatsView,
    TopicConfigBody,
    TopicConfigListView,
    TopicConfigView,
    TopicListView,
)
from mq import errors
from mq.queue.service import QueueService
from mq.queue.types import TopicConfig
from mq.tenancy import grants
from mq.tenancy.auth import Principal

AnyRequest = Request[Principal, Any, Any]


def _queue(request: AnyRequest) -> QueueService:
    queue: QueueService = request.app.state.runtime.queue
    return queue


def _may_read(principal: Principal, topic: str) -> bool:
    """Lists show a member only the topics it may read."""
    return not principal.is_member or grants.allowed(principal.grants, "read", topic)


class TopicController(Controller):
    path = "/api"
    tags = ["topics"]

    @get("/topics", summary="Every topic with messages or a config, with counts", operation_id="listTopics")
    async def list_topics(self, request: AnyRequest) -> TopicListView:
        items = await _queue(request).topics(tenant_for(request.user, action="read"))
        return TopicListView(items=[t for t in items if _may_read(request.user, t.topic)])

    @get("/stats", summary="Message counts by topic and status (queue-ti shape)", operation_id="getStats")
    async def stats(self, request: AnyRequest) -> StatsView:
        rows = await _queue(request).stats(tenant_for(request.user, action="read"))
        return StatsView(topics=[StatRowView(**r) for r in rows if _may_read(request.user, r["topic"])])

    @post(
        "/topics/{topic:str}/requeue",
        status_code=HTTP_200_OK,
        summary="Requeue every pending DLQ message",
        operation_id="requeueTopic",
    )
    async def requeue_topic(self, request: AnyRequest, topic: str) -> RequeuedView:
        tenant = tenant_for(request.user, action="consume", topic=topic)
        requeued = await _queue(request).requeue_topic(tenant, topic)
        await audit(request, "topic.requeue", topic, {"requeued": requeued})
        return RequeuedView(requeued=requeued)

    @json_post(
        "/topics/{topic:str}/purge",
        PurgeBody,
        status_code=HTTP_200_OK,
        summary="Delete a topic's messages",
        operation_id="purgeTopic",
    )
    async def purge(self, request: AnyRequest, topic: str, data: JSONBody[PurgeBody | None] = None) -> DeletedView:
        tenant = tenant_for(request.user, admin_only=True)
        statuses = data.statuses if data else None
        deleted = await _queue(request).purge(tenant, topic, statuses)
        await audit(request, "topic.purge", topic, {"statuses": statuses, "deleted": deleted})
        return DeletedView(deleted=deleted)

    @delete(
        "/topics/{topic:str}/messages/by-key/{key:path}",
        status_code=HTTP_200_OK,
        summary="Delete a topic's messages with a key",
        description="The key is percent-encoded in the path; it may contain any character, `/` included.",
        operation_id="deleteMessagesByKey",
    )
    async def delete_by_key(self, request: AnyRequest, topic: str, key: str) -> DeletedView:
        tenant = tenant_for(request.user, admin_only=True)
        key = _key_from_raw_path(request)
        deleted = await _queue(request).delete_by_key(tenant, topic, key)
        await audit(request, "topic.delete_by_key", topic, {"key": key, "deleted": deleted})
        return DeletedView(deleted=deleted)


def _key_from_raw_path(request: AnyRequest) -> str:
    """The key exactly as sent. The router matches a decoded path that Litestar also normalizes (a trailing `/`
    or a doubled one is dropped), so the key is read from the raw path, where the topic (letters, digits, '.', '_',
    '-') and the fixed segments stand unencoded before it."""
    raw = request.scope.get("raw_path") or request.scope["path"].encode()
    _, _, key = raw.decode("latin-1").partition("/messages/by-key/")
    try:
        return urllib.parse.unquote(key, errors="strict")
    except UnicodeDecodeError:
        raise errors.InvalidRequest("key: the percent-encoded bytes are not UTF-8") from None


class TopicConfigController(Controller):
    path = "/api/topic-configs"
    tags = ["topic-configs"]

    @get("/", summary="Every topic config of the tenant", operation_id="listTopicConfigs")
    async def list_configs(self, request: AnyRequest) -> TopicConfigListView:
        configs = await _queue(request).topic_configs(tenant_for(request.user, action="read"))
        return TopicConfigListView(
            items=[
                TopicConfigView(topic=topic, **msgspec.structs.asdict(c))
                for topic, c in configs
                if _may_read(request.user, topic)
            ]
        )

    @get("/{topic:str}", summary="One topic's config", operation_id="getTopicConfig")
    async def get_config(self, request: AnyRequest, topic: str) -> TopicConfig:
        return await _queue(request).topic_config(tenant_for(request.user, action="read", topic=topic), topic)

    @put(
        "/{topic:str}",
        **strict_body(TopicConfigBody),
        status_code=HTTP_200_OK,
        summary="Set a topic's config (every field; null or omitted = the global default)",
        operation_id="putTopicConfig",
    )
    async def put_config(self, request: AnyRequest, topic: str, data: TopicConfigBody) -> TopicConfig:
        tenant = tenant_for(request.user, admin_only=True)
        config = msgspec.convert(msgspec.structs.asdict(data), TopicConfig)
        stored = await _queue(request).put_topic_config(tenant, topic, config)
        await audit(request, "topic_config.update", topic, msgspec.to_builtins(stored))
        return stored

    @delete(
        "/{topic:str}",
        status_code=HTTP_204_NO_CONTENT,
        summary="Remove a topic's config",
        operation_id="deleteTopicConfig",
    )
    async def delete_config(self, request: AnyRequest, topic: str) -> None:
        await _queue(request).delete_topic_config(tenant_for(request.user, admin_only=True), topic)
        await audit(request, "topic_config.delete", topic)
