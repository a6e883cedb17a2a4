"""Periodic messages (contract, "Periodic messages"): a tenant's schedules, read by its members and written by its
tenant admins; the workers fire them (`mq.schedules.firer`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from litestar import Controller, Request, delete, get, put
from litestar.status_codes import HTTP_200_OK, HTTP_204_NO_CONTENT

from api.audit import audit
from api.body import strict_body
from api.schemas import PeriodicScheduleBody
from mq.schedules.service import Schedules, ScheduleSpec
from mq.schedules.views import PeriodicScheduleListView, PeriodicScheduleView
from mq.tenancy import grants
from mq.tenancy.auth import Principal
from mq.tenancy.authorization import tenant_for

AnyRequest = Request[Principal, Any, Any]


def _readable(principal: Principal) -> Callable[[str], bool]:
    """Whose topics the caller may read: a schedule holds a message (payload, metadata) of its topic."""
    if not principal.is_member:
        return lambda _topic: True
    return lambda topic: grants.allowed(principal.grants, "read", topic)


def _schedules(request: AnyRequest) -> Schedules:
    schedules: Schedules = request.app.state.runtime.schedules
    return schedules


class ScheduleController(Controller):
    path = "/api/schedules"
    tags = ["schedules"]

    @get(
        "/",
        summary="The tenant's schedules (periodic messages) whose topic the caller may read",
        operation_id="listSchedules",
    )
    async def list_schedules(self, request: AnyRequest) -> PeriodicScheduleListView:
        return await _schedules(request).list(tenant_for(request.user, action="read"), _readable(request.user))

    @get(
        "/{name:str}",
        summary="One schedule (404 when its topic is not one the caller may read)",
        operation_id="getSchedule",
    )
    async def get_schedule(self, request: AnyRequest, name: str) -> PeriodicScheduleView:
        return await _schedules(request).get(tenant_for(request.user, action="read"), name, _readable(request.user))

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
        tenant = tenant_for(request.user, admin_only=True)
        spec = msgspec.convert(msgspec.structs.asdict(data), ScheduleSpec)
        stored = await _schedules(request).put(tenant, name, spec)
        details = {"topic": stored.topic, "cron": stored.cron, "timezone": stored.timezone, "enabled": stored.enabled}
        await audit(request, "schedule.update", name, details)
        return stored

    @delete("/{name:str}", status_code=HTTP_204_NO_CONTENT, summary="Delete a schedule", operation_id="deleteSchedule")
    async def delete_schedule(self, request: AnyRequest, name: str) -> None:
        tenant = tenant_for(request.user, admin_only=True)
        await _schedules(request).delete(tenant, name)
        await audit(request, "schedule.delete", name)
