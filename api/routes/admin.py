"""Platform operations: run the reapers now, and the delete reaper's schedule (contract: Control plane)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get, post, put
from litestar.status_codes import HTTP_200_OK, HTTP_204_NO_CONTENT

from api.auth import require_platform_admin
from api.body import strict_body
from api.schemas import DeletedView, ExpiredView, PasswordBody, ScheduleBody, ScheduleView
from mq.jobs import Jobs
from mq.tenancy.auth import Principal
from mq.tenancy.service import TenancyService

AnyRequest = Request[Principal, Any, Any]


def _jobs(request: AnyRequest) -> Jobs:
    require_platform_admin(request.user)
    jobs: Jobs = request.app.state.runtime.jobs
    return jobs


class AdminController(Controller):
    path = "/api/admin"
    tags = ["admin"]

    @post(
        "/expiry-reaper/run",
        status_code=HTTP_200_OK,
        summary="Expire messages past their TTL now",
        operation_id="runExpiryReaper",
    )
    async def run_expiry_reaper(self, request: AnyRequest) -> ExpiredView:
        """Waits for a run in progress elsewhere (the job's lock), then runs; returns the messages it expired."""
        return ExpiredView(expired=(await _jobs(request).expire(wait=True)).rows)

    @post(
        "/delete-reaper/run",
        status_code=HTTP_200_OK,
        summary="Delete expired and old failed messages now",
        operation_id="runDeleteReaper",
    )
    async def run_delete_reaper(self, request: AnyRequest) -> DeletedView:
        return DeletedView(deleted=(await _jobs(request).delete_done(wait=True)).rows)

    @get("/delete-reaper/schedule", summary="The delete reaper's cron schedule", operation_id="getDeleteReaperSchedule")
    async def get_schedule(self, request: AnyRequest) -> ScheduleView:
        schedule = await _jobs(request).schedule.get()
        return ScheduleView(schedule=schedule, active=bool(schedule))

    @put(
        "/delete-reaper/schedule",
        status_code=HTTP_200_OK,
        summary="Set the delete reaper's schedule for every instance",
        operation_id="putDeleteReaperSchedule",
        **strict_body(ScheduleBody),
    )
    async def put_schedule(self, request: AnyRequest, data: ScheduleBody) -> ScheduleView:
        schedule = await _jobs(request).schedule.put(data.schedule)
        return ScheduleView(schedule=schedule, active=bool(schedule))

    @put(
        "/platform-admins/{username:str}/password",
        status_code=HTTP_204_NO_CONTENT,
        summary="Set a platform admin's password (ends its sessions and cached credentials everywhere)",
        operation_id="setPlatformAdminPassword",
        **strict_body(PasswordBody),
    )
    async def set_platform_admin_password(self, request: AnyRequest, username: str, data: PasswordBody) -> None:
        require_platform_admin(request.user)
        tenants: TenancyService = request.app.state.runtime.tenants
        await tenants.set_platform_admin_password(username, data.password)
