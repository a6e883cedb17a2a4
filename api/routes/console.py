"""The admin console's routes: pause and resume a topic, page through its messages by keyset, its series over the
last hour, and bulk actions on chosen messages or on every message matching a filter."""

from __future__ import annotations

import json
from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, delete, get, post
from litestar.params import Parameter, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_202_ACCEPTED

from api.audit import audit
from api.auth import require_grant, tenant_for
from api.body import json_post
from api.errors import code_of
from api.schemas import (
    MAX_PAGE_LIMIT,
    BulkBody,
    BulkFailureView,
    BulkJobBody,
    BulkJobListView,
    BulkJobView,
    BulkResultView,
    MessagePageView,
    PauseView,
    SeriesView,
)
from mq import errors
from mq.console.service import BulkAction, Console, FilterStatus, MessageFilter, SeriesRange, TopicSettingsView
from mq.tenancy import grants
from mq.tenancy.auth import Principal

AnyRequest = Request[Principal, Any, Any]

#: What each bulk action needs: deleting is for tenant admins, as a single delete is; retry and requeue are a
#: consumer's (the contract's requeue needs `consume`).
_BULK_GRANT: dict[str, str | None] = {"delete": None, "retry": "consume", "requeue": "consume"}


def _console(request: AnyRequest) -> Console:
    console: Console = request.app.state.runtime.console
    return console


def _tenant_for_bulk(request: AnyRequest, action: BulkAction, topic: str) -> int:
    grant = _BULK_GRANT[action]
    if grant is None:
        return tenant_for(request.user, admin_only=True)
    return tenant_for(request.user, action=grant, topic=topic)


def _metadata_filter(metadata: str | None) -> dict[str, Any] | None:
    if metadata is None:
        return None
    try:
        value = json.loads(metadata)
    except ValueError:
        raise errors.InvalidRequest('metadata: not JSON; give an object, e.g. {"region": "eu"}') from None
    if not isinstance(value, dict):
        raise errors.InvalidRequest("metadata: give a JSON object; messages whose metadata contains it match")
    return value


class ConsoleController(Controller):
    path = "/api"
    tags = ["console"]

    @post("/topics/{topic:str}/pause", status_code=HTTP_200_OK, summary="Pause a topic", operation_id="pauseTopic")
    async def pause(self, request: AnyRequest, topic: str) -> PauseView:
        """Dequeues answer empty on every instance until the topic is resumed; enqueues are accepted."""
        await _console(request).pause(tenant_for(request.user, admin_only=True), topic, request.user.username)
        await audit(request, "topic.pause", topic)
        return PauseView(topic=topic, paused=True)

    @post("/topics/{topic:str}/resume", status_code=HTTP_200_OK, summary="Resume a topic", operation_id="resumeTopic")
    async def resume(self, request: AnyRequest, topic: str) -> PauseView:
        await _console(request).resume(tenant_for(request.user, admin_only=True), topic)
        await audit(request, "topic.resume", topic)
        return PauseView(topic=topic, paused=False)

    @get("/topics/{topic:str}/config", summary="A topic's configuration in force", operation_id="getTopicSettings")
    async def settings(self, request: AnyRequest, topic: str) -> TopicSettingsView:
        """The topic's own overrides (null when it has no config), the global defaults, and the value of each
        setting in force: the override, else the default."""
        return await _console(request).settings(tenant_for(request.user, action="read", topic=topic), topic)

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
        cursor: Annotated[str | None, Parameter(description="`next_cursor` of the previous page")] = None,
        limit: Annotated[int, Parameter(ge=1, le=MAX_PAGE_LIMIT)] = 50,
    ) -> MessagePageView:
        """Live messages (pending, delayed, processing) in the order dequeues take them, then finished ones
        (failed, expired) newest first. Each page reads a bounded window of the topic's index: a filter that
        matches little answers a short page, and `next_cursor` goes on from where it stopped."""
        tenant = tenant_for(request.user, action="read", topic=topic)
        where = MessageFilter(status=status, key=key, metadata=_metadata_filter(metadata))
        return await _console(request).page(tenant, topic, where, cursor, limit)

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
        tenant = tenant_for(request.user, action="read", topic=topic)
        return await _console(request).series(tenant, topic, minutes, range_)

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
        tenant = tenant_for(request.user, action="read", topic="*")
        return await _console(request).series(tenant, None, span=range_)

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
        tenant = _tenant_for_bulk(request, data.action, topic)
        done, failures = await _console(request).bulk(tenant, topic, data.action, data.ids)
        await audit(
            request, f"messages.bulk_{data.action}", topic, {"topic": topic, "ids": len(data.ids), "done": done}
        )
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
        """Runs in batches in the background; follow it with `GET /api/bulk-jobs/{id}`."""
        tenant = _tenant_for_bulk(request, data.action, topic)
        job = await _console(request).start_bulk_job(tenant, topic, data.action, data.filter, request.user.username)
        await audit(
            request,
            "bulk_job.start",
            topic,
            {"topic": topic, "job": job.id, "action": data.action, "filter": msgspec.to_builtins(data.filter)},
        )
        return job

    @get("/bulk-jobs", summary="The tenant's recent bulk jobs", operation_id="listBulkJobs")
    async def list_bulk_jobs(self, request: AnyRequest) -> BulkJobListView:
        principal = request.user
        jobs = await _console(request).bulk_jobs(tenant_for(principal, action="read"))
        visible = [j for j in jobs if not principal.is_member or grants.allowed(principal.grants, "read", j.topic)]
        return BulkJobListView(items=visible)

    @get("/bulk-jobs/{job_id:str}", summary="A bulk job's progress", operation_id="getBulkJob")
    async def get_bulk_job(self, request: AnyRequest, job_id: str) -> BulkJobView:
        job = await _console(request).bulk_job(tenant_for(request.user, action="read"), job_id)
        require_grant(request.user, "read", job.topic)
        return job

    @delete(
        "/bulk-jobs/{job_id:str}",
        status_code=HTTP_200_OK,
        summary="Stop a bulk job after its current batch",
        operation_id="cancelBulkJob",
    )
    async def cancel_bulk_job(self, request: AnyRequest, job_id: str) -> BulkJobView:
        console = _console(request)
        job = await console.bulk_job(tenant_for(request.user, action="read"), job_id)
        tenant = _tenant_for_bulk(request, job.action, job.topic)
        cancelled = await console.cancel_bulk_job(tenant, job_id)
        await audit(request, "bulk_job.cancel", job.topic, {"topic": job.topic, "job": job_id})
        return cancelled
