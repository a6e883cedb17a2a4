"""Periodic messages (contract, "Periodic messages"): a tenant's schedules, read by its members and written by its
tenant admins; the workers fire them (`mq.schedules.firer`)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, Request, delete, get, post, put
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_204_NO_CONTENT

from api.body import strict_body
from api.schemas import IdView, PeriodicScheduleBody
from api.views.schedules import PeriodicScheduleListView, PeriodicScheduleView
from mq.commands.topic_data import ScheduleCommands
from mq.schedules.types import ScheduleSpec
from mq.tenancy.auth import Principal

AnyRequest = Request[Principal, Any, Any]


def _commands(request: AnyRequest) -> ScheduleCommands:
    commands: ScheduleCommands = request.app.state.runtime.commands.schedules
    return commands


class ScheduleController(Controller):
    path = "/api/schedules"
    tags = ["schedules"]

    @get(
        "/",
        summary="The tenant's schedules (periodic messages) whose topic the caller may read",
        operation_id="listSchedules",
    )
    async def list_schedules(self, request: AnyRequest) -> PeriodicScheduleListView:
        return PeriodicScheduleListView.from_rows(await _commands(request).list(request.user))

    @get(
        "/{name:str}",
        summary="One schedule (404 when its topic is not one the caller may read)",
        operation_id="getSchedule",
    )
    async def get_schedule(self, request: AnyRequest, name: str) -> PeriodicScheduleView:
        return PeriodicScheduleView.from_row(await _commands(request).get(request.user, name))

    @put(
        "/{name:str}",
        **strict_body(PeriodicScheduleBody),
        status_code=HTTP_200_OK,
        summary="Create or replace a schedule",
        operation_id="putSchedule",
    )
    async def put_schedule(self, request: AnyRequest, name: str, data: PeriodicScheduleBody) -> PeriodicScheduleView:
        """At each tick of `cron` (5 fields, or 6 with seconds first) in `timezone` (IANA), the workers enqueue
        one message into `topic` with the payload, key, priority and metadata given, and `metadata.skiplock_schedule`
        (the name) and `metadata.skiplock_tick` (the tick's time). A replacement starts from its new cron."""
        spec = msgspec.convert(msgspec.structs.asdict(data), ScheduleSpec)
        return PeriodicScheduleView.from_row(await _commands(request).put(request.user, name, spec))

    @delete("/{name:str}", status_code=HTTP_204_NO_CONTENT, summary="Delete a schedule", operation_id="deleteSchedule")
    async def delete_schedule(self, request: AnyRequest, name: str) -> None:
        await _commands(request).delete(request.user, name)

    @post(
        "/{name:str}/run",
        status_code=HTTP_201_CREATED,
        summary="Enqueue the schedule's message once, now (tenant admins)",
        operation_id="runSchedule",
    )
    async def run_schedule(self, request: AnyRequest, name: str) -> IdView:
        """The schedule's message enqueued into its topic now, as a producer's enqueue (schema, max_depth, quotas
        and rates apply: a refusal is this call's answer). `metadata.skiplock_run` is `"manual"`. The schedule's
        cron, next run, last run and last error are unchanged; the audit trail records `schedule.run`."""
        return IdView(id=str(await _commands(request).run_now(request.user, name)))
