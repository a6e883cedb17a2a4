"""Topic administration, one home for its routes (`mq.topics.service.TopicAdmin`): summaries and stats, configs,
pause and resume, the console's keyset pages and series (a topic's, and the tenant's), purge, delete by key, DLQ
requeue, and bulk actions and jobs."""

from __future__ import annotations

import json
import urllib.parse
from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, delete, get, post, put
from litestar.params import JSONBody, Parameter, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_202_ACCEPTED, HTTP_204_NO_CONTENT

from api.body import json_post, strict_body
from api.errors import code_of
from api.schemas import (
    MAX_PAGE_LIMIT,
    BulkBody,
    BulkFailureView,
    BulkJobBody,
    BulkJobListView,
    BulkJobView,
    BulkResultView,
    ConsumerGroupBody,
    DeletedView,
    MessagePageView,
    PauseView,
    PurgeBody,
    RequeuedView,
    SeriesView,
    StatRowView,
    StatsView,
    TopicConfigBody,
    TopicConfigListView,
    TopicConfigView,
    TopicListView,
)
from api.views.topics import (
    ConsumerGroupsView,
    ConsumerGroupView,
    ConsumersView,
    ErrorClassesView,
    TopicSettingsView,
    TopicSummaryView,
)
from mq import errors
from mq.commands.topics import TopicCommands
from mq.names import GROUP_PATTERN
from mq.queue.types import TopicConfig
from mq.tenancy.auth import Principal
from mq.topics.types import FilterStatus, MessageFilter, SeriesRange

AnyRequest = Request[Principal, Any, Any]


def _commands(request: AnyRequest) -> TopicCommands:
    commands: TopicCommands = request.app.state.runtime.commands.topics
    return commands


def _metadata_filter(metadata: str | None) -> dict[str, Any] | None:
    if metadata is None:
        return None
    try:
        value = json.loads(metadata)
    except (ValueError, RecursionError):
        raise errors.InvalidRequest('metadata: not JSON; give an object, e.g. {"region": "eu"}') from None
    if not isinstance(value, dict):
        raise errors.InvalidRequest("metadata: give a JSON object; messages whose metadata contains it match")
    return value


class TopicController(Controller):
    path = "/api"
    tags = ["topics"]

    @get("/topics", summary="Every topic with messages or a config, with counts", operation_id="listTopics")
    async def list_topics(self, request: AnyRequest) -> TopicListView:
        return TopicListView(
            items=[TopicSummaryView.from_row(r) for r in await _commands(request).summaries(request.user)]
        )

    @get("/stats", summary="Message counts by topic and status (queue-ti shape)", operation_id="getStats")
    async def stats(self, request: AnyRequest) -> StatsView:
        rows = await _commands(request).stats(request.user)
        return StatsView(topics=[StatRowView(**r) for r in rows])

    @post(
        "/topics/{topic:str}/requeue",
        status_code=HTTP_200_OK,
        summary="Requeue every pending DLQ message",
        operation_id="requeueTopic",
    )
    async def requeue_topic(self, request: AnyRequest, topic: str) -> RequeuedView:
        return RequeuedView(requeued=await _commands(request).requeue_dlq(request.user, topic))

    @json_post(
        "/topics/{topic:str}/purge",
        PurgeBody,
        status_code=HTTP_200_OK,
        summary="Delete a topic's messages",
        operation_id="purgeTopic",
    )
    async def purge(self, request: AnyRequest, topic: str, data: JSONBody[PurgeBody | None] = None) -> DeletedView:
        statuses = data.statuses if data else None
        return DeletedView(deleted=await _commands(request).purge(request.user, topic, statuses))

    @delete(
        "/topics/{topic:str}/messages/by-key/{key:path}",
        status_code=HTTP_200_OK,
        summary="Delete a topic's messages with a key",
        description="The key is percent-encoded in the path; it may contain any character, `/` included.",
        operation_id="deleteMessagesByKey",
    )
    async def delete_by_key(self, request: AnyRequest, topic: str, key: str) -> DeletedView:
        key = _key_from_raw_path(request)
        return DeletedView(deleted=await _commands(request).delete_by_key(request.user, topic, key))


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
        configs = await _commands(request).configs(request.user)
        return TopicConfigListView(
            items=[TopicConfigView(topic=topic, **msgspec.structs.asdict(c)) for topic, c in configs]
        )

    @get("/{topic:str}", summary="One topic's config", operation_id="getTopicConfig")
    async def get_config(self, request: AnyRequest, topic: str) -> TopicConfigView:
        config = await _commands(request).config(request.user, topic)
        return TopicConfigView(topic=topic, **msgspec.structs.asdict(config))

    @put(
        "/{topic:str}",
        **strict_body(TopicConfigBody),
        status_code=HTTP_200_OK,
        summary="Set a topic's config (every field; null or omitted = the global default)",
        operation_id="putTopicConfig",
    )
    async def put_config(self, request: AnyRequest, topic: str, data: TopicConfigBody) -> TopicConfigView:
        if data.topic is not None and data.topic != topic:
            raise errors.InvalidRequest(f"topic: the body names {data.topic!r}, the path {topic!r}")
        fields = msgspec.structs.asdict(data)
        del fields["topic"]
        config = msgspec.convert(fields, TopicConfig)
        stored = await _commands(request).put_config(request.user, topic, config)
        return TopicConfigView(topic=topic, **msgspec.structs.asdict(stored))

    @delete(
        "/{topic:str}",
        status_code=HTTP_204_NO_CONTENT,
        summary="Remove a topic's config",
        operation_id="deleteTopicConfig",
    )
    async def delete_config(self, request: AnyRequest, topic: str) -> None:
        await _commands(request).delete_config(request.user, topic)


class TopicConsoleController(Controller):
    """The console's view of a topic: pause and resume, keyset pages, series, bulk actions and jobs."""

    path = "/api"
    tags = ["console"]

    @post("/topics/{topic:str}/pause", status_code=HTTP_200_OK, summary="Pause a topic", operation_id="pauseTopic")
    async def pause(self, request: AnyRequest, topic: str) -> PauseView:
        """Dequeues answer empty on every instance until the topic is resumed; enqueues are accepted."""
        await _commands(request).pause(request.user, topic)
        return PauseView(topic=topic, paused=True)

    @post("/topics/{topic:str}/resume", status_code=HTTP_200_OK, summary="Resume a topic", operation_id="resumeTopic")
    async def resume(self, request: AnyRequest, topic: str) -> PauseView:
        await _commands(request).resume(request.user, topic)
        return PauseView(topic=topic, paused=False)

    @get("/topics/{topic:str}/config", summary="A topic's configuration in force", operation_id="getTopicSettings")
    async def settings(self, request: AnyRequest, topic: str) -> TopicSettingsView:
        """The topic's own overrides (null when it has no config), the global defaults, and the value of each
        setting in force: the override, else the default."""
        return TopicSettingsView.of(await _commands(request).settings(request.user, topic))

    @get(
        "/topics/{topic:str}/messages",
        summary="Page through a topic's messages by cursor",
        operation_id="pageTopicMessages",
    )
    async def page(
        self,
        request: AnyRequest,
        topic: str,
        status: FilterStatus | None = None,
        key: str | None = None,
        metadata: Annotated[
            str | None, Parameter(description="A JSON object: messages whose metadata contains it")
        ] = None,
        consumer_group: Annotated[
            str | None,
            Parameter(
                pattern=GROUP_PATTERN, description="In a dead-letter topic: the dead letters of this consumer group"
            ),
        ] = None,
        cursor: Annotated[str | None, Parameter(description="`next_cursor` of the previous page")] = None,
        limit: Annotated[int, Parameter(ge=1, le=MAX_PAGE_LIMIT)] = 50,
        reverse: Annotated[
            bool,
            Parameter(
                description="Walk the list from its end: finished messages oldest first, then live ones from the "
                "last to be delivered (a cursor keeps the direction it was given for)"
            ),
        ] = False,
    ) -> MessagePageView:
        """Live messages (pending, delayed, processing) in the order dequeues take them, then finished ones
        (failed, expired) newest first; `reverse` walks the same list from its end. Each page reads a bounded
        window of the topic's index: a filter that matches little answers a short page, and `next_cursor` goes on
        from where it stopped."""
        where = MessageFilter(
            status=status, key=key, metadata=_metadata_filter(metadata), consumer_group=consumer_group
        )
        return MessagePageView.of(await _commands(request).page(request.user, topic, where, cursor, limit, reverse))

    @get("/topics/{topic:str}/consumers", summary="Who holds a topic's messages now", operation_id="listConsumers")
    async def consumers(self, request: AnyRequest, topic: str) -> ConsumersView:
        """Each consumer (the user whose dequeues took the leases) by consumer group, with how many leases it holds
        and its oldest and newest, most first; lapsed leases are held by nobody (RabbitMQ's consumers, Sidekiq's
        Busy)."""
        return ConsumersView.from_rows(await _commands(request).consumers(request.user, topic))

    @get(
        "/topics/{topic:str}/error-classes",
        summary="A topic's failed messages grouped by error class",
        operation_id="listErrorClasses",
    )
    async def error_classes(self, request: AnyRequest, topic: str) -> ErrorClassesView:
        """Its failed messages (on a DLQ, its dead letters too) by the class of their last error: a traceback's
        last line, else the first line, up to its first `:` (`ValueError: bad input` is `ValueError`); each with
        its count and the newest such message (Sidekiq's failed list). The newest 20,000 are read."""
        return ErrorClassesView.from_rows(await _commands(request).error_classes(request.user, topic))

    @get("/topics/{topic:str}/series", summary="A topic's depth and rates", operation_id="getTopicSeries")
    async def series(
        self,
        request: AnyRequest,
        topic: str,
        minutes: Annotated[int, Parameter(ge=1, le=60)] = 60,
        range_: Annotated[
            SeriesRange | None,
            QueryParameter(name="range", description="1h (30 s steps), 24h (5 min) or 7d (1 h); wins over `minutes`"),
        ] = None,
    ) -> SeriesView:
        """Depth by status, the oldest pending age, and enqueue, ack and dead-letter rates: every 30 s over the
        last `minutes` from the gauge job's samples and the API's activity counts, or over a `range` from the
        workers' 5-minute rollups (never a scan of the messages)."""
        return SeriesView.of(await _commands(request).series(request.user, topic, minutes, range_))

    @get("/series", summary="The tenant's depth and rates, all topics together", operation_id="getTenantSeries")
    async def tenant_series(
        self,
        request: AnyRequest,
        range_: Annotated[
            SeriesRange, QueryParameter(name="range", description="1h (30 s steps), 24h (5 min) or 7d (1 h)")
        ] = "1h",
    ) -> SeriesView:
        """The tenant dashboard's figures: every topic summed (the oldest age: the largest). Members need a read
        grant on every topic (`*`)."""
        return SeriesView.of(await _commands(request).series(request.user, None, span=range_))

    @json_post(
        "/topics/{topic:str}/messages/bulk",
        BulkBody,
        status_code=HTTP_200_OK,
        summary="Delete, retry or requeue chosen messages",
        operation_id="bulkMessages",
    )
    async def bulk(self, request: AnyRequest, topic: str, data: BulkBody) -> BulkResultView:
        """`retry`: failed, expired or delayed messages become pending and available now; `requeue`: dead letters
        go back to their topic; `delete`: gone, whatever their status. Each message that cannot take the action is
        listed with the contract's code."""
        done, failures = await _commands(request).bulk(request.user, topic, data.action, data.ids)
        return BulkResultView(
            action=data.action,
            done=done,
            skipped=len(data.ids) - done,
            failures=[BulkFailureView(id=i, code=code_of(exc), error=exc.message) for i, exc in failures],
        )

    @json_post(
        "/topics/{topic:str}/bulk-jobs",
        BulkJobBody,
        status_code=HTTP_202_ACCEPTED,
        summary="Delete, retry or requeue every message matching a filter",
        operation_id="startBulkJob",
    )
    async def start_bulk_job(self, request: AnyRequest, topic: str, data: BulkJobBody) -> BulkJobView:
        """Runs in batches in the background; follow it with `GET /api/bulk-jobs/{id}`. `rate_per_second` paces it
        (a redrive the consumers can take, as the SQS console's velocity); without it, it goes as fast as it can."""
        job = await _commands(request).start_bulk_job(
            request.user, topic, data.action, data.filter, data.rate_per_second
        )
        return BulkJobView.of(job)

    @get("/bulk-jobs", summary="The tenant's recent bulk jobs", operation_id="listBulkJobs")
    async def list_bulk_jobs(self, request: AnyRequest) -> BulkJobListView:
        return BulkJobListView(items=[BulkJobView.of(j) for j in await _commands(request).bulk_jobs(request.user)])

    @get("/bulk-jobs/{job_id:str}", summary="A bulk job's progress", operation_id="getBulkJob")
    async def get_bulk_job(self, request: AnyRequest, job_id: str) -> BulkJobView:
        return BulkJobView.of(await _commands(request).bulk_job(request.user, job_id))

    @delete(
        "/bulk-jobs/{job_id:str}",
        status_code=HTTP_200_OK,
        summary="Stop a bulk job after its current batch",
        operation_id="cancelBulkJob",
    )
    async def cancel_bulk_job(self, request: AnyRequest, job_id: str) -> BulkJobView:
        return BulkJobView.of(await _commands(request).cancel_bulk_job(request.user, job_id))


class ConsumerGroupController(Controller):
    """A topic's consumer groups (fan-out): each group receives every message once, apart from the others."""

    path = "/api"
    tags = ["consumer groups"]

    @json_post(
        "/topics/{topic:str}/consumer-groups",
        ConsumerGroupBody,
        summary="Create a consumer group",
        operation_id="createConsumerGroup",
    )
    async def create(self, request: AnyRequest, topic: str, data: ConsumerGroupBody) -> ConsumerGroupView:
        """`latest`: the group receives the messages enqueued from now on; `earliest`: also every message already
        pending or processing in the topic. From its first group on, the topic is consumed through groups only."""
        group = await _commands(request).create_group(request.user, topic, data.consumer_group, data.start)
        return ConsumerGroupView.of(group)

    @get(
        "/topics/{topic:str}/consumer-groups",
        summary="A topic's consumer groups and what each still owes",
        operation_id="listConsumerGroups",
    )
    async def list_groups(self, request: AnyRequest, topic: str) -> ConsumerGroupsView:
        """`items`: the names in creation order; `groups`: each with pending, processing, dead letters and the age
        of its oldest available message (its lag)."""
        return ConsumerGroupsView.from_rows(await _commands(request).groups(request.user, topic))

    @delete(
        "/topics/{topic:str}/consumer-groups/{group:str}",
        status_code=HTTP_204_NO_CONTENT,
        summary="Delete a consumer group",
        operation_id="deleteConsumerGroup",
    )
    async def delete_group(self, request: AnyRequest, topic: str, group: str) -> None:
        """The group's deliveries go; messages stay for the other groups (and go when none owes them)."""
        await _commands(request).delete_group(request.user, topic, group)
