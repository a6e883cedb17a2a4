"""Platform operations: run the reapers now, and the delete reaper's schedule (contract: Control plane). The routes
decode, call a command (`mq.commands.platform`) and render."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from litestar import Controller, Request, get, post, put
from litestar.status_codes import HTTP_200_OK, HTTP_204_NO_CONTENT

from api.body import strict_body
from api.schemas import (
    DeletedView,
    ExpiredView,
    JobRunView,
    MaintenanceView,
    PasswordBody,
    ScheduleBody,
    SchedulePreviewView,
    ScheduleView,
)
from api.views.history import ArchiveRunView
from mq.commands.platform import PlatformCommands, schedule_runs
from mq.queue.types import rfc3339
from mq.tenancy.auth import Principal

AnyRequest = Request[Principal, Any, Any]


def _platform(request: AnyRequest) -> PlatformCommands:
    commands: PlatformCommands = request.app.state.runtime.commands.platform
    return commands


def _times(runs: list[datetime]) -> list[str]:
    return [rfc3339(r) or "" for r in runs]


def _schedule_view(schedule: str) -> ScheduleView:
    runs = schedule_runs(schedule)
    return ScheduleView(schedule=schedule, active=bool(runs), next_runs=_times(runs))


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
        return ExpiredView(expired=await _platform(request).run_expiry_reaper(request.user))

    @post(
        "/archive-reaper/run",
        status_code=HTTP_200_OK,
        summary="Make the message log's next partitions and drop those nothing can see, now",
        operation_id="runArchiveReaper",
    )
    async def run_archive_reaper(self, request: AnyRequest) -> ArchiveRunView:
        """Returns the log entries whose partitions were dropped (hidden before by a trim or a topic's window)."""
        return ArchiveRunView(deleted=await _platform(request).run_archive_reaper(request.user))

    @post(
        "/delete-reaper/run",
        status_code=HTTP_200_OK,
        summary="Delete expired and old failed messages now",
        operation_id="runDeleteReaper",
    )
    async def run_delete_reaper(self, request: AnyRequest) -> DeletedView:
        return DeletedView(deleted=await _platform(request).run_delete_reaper(request.user))

    @get("/delete-reaper/schedule", summary="The delete reaper's cron schedule", operation_id="getDeleteReaperSchedule")
    async def get_schedule(self, request: AnyRequest) -> ScheduleView:
        return _schedule_view(await _platform(request).delete_schedule(request.user))

    @put(
        "/delete-reaper/schedule",
        status_code=HTTP_200_OK,
        summary="Set the delete reaper's schedule for every instance",
        operation_id="putDeleteReaperSchedule",
        **strict_body(ScheduleBody),
    )
    async def put_schedule(self, request: AnyRequest, data: ScheduleBody) -> ScheduleView:
        return _schedule_view(await _platform(request).set_delete_schedule(request.user, data.schedule))

    @get(
        "/delete-reaper/schedule/preview",
        summary="Check a cron schedule and list when it would run",
        operation_id="previewDeleteReaperSchedule",
    )
    async def preview_schedule(self, request: AnyRequest, schedule: str) -> SchedulePreviewView:
        """400 with the parser's reason for a schedule that is not 5 valid cron fields (UTC; "" is off)."""
        runs = _platform(request).preview_schedule(request.user, schedule)
        return SchedulePreviewView(schedule=schedule, next_runs=_times(runs))

    @get("/jobs", summary="The scheduled jobs' last runs and the delete reaper's schedule", operation_id="getJobs")
    async def list_jobs(self, request: AnyRequest) -> MaintenanceView:
        runs, schedule = await _platform(request).job_runs(request.user)
        return MaintenanceView(
            jobs=[
                JobRunView(
                    job=r.job,
                    finished_at=rfc3339(datetime.fromtimestamp(r.finished_at, UTC)) or "",
                    duration_seconds=r.duration_seconds,
                    rows=r.rows,
                )
                for r in runs
            ],
            delete_reaper=_schedule_view(schedule),
        )

    @put(
        "/platform-admins/{username:str}/password",
        status_code=HTTP_204_NO_CONTENT,
        summary="Set a platform admin's password (ends its sessions and cached credentials everywhere)",
        operation_id="setPlatformAdminPassword",
        **strict_body(PasswordBody),
    )
    async def set_platform_admin_password(self, request: AnyRequest, username: str, data: PasswordBody) -> None:
        await _platform(request).set_platform_admin_password(request.user, username, data.password)
