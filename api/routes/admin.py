"""Platform operations: run the reapers now, and the delete reaper's schedule (contract: Control plane)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from litestar import Controller, Request, get, post, put
from litestar.status_codes import HTTP_200_OK, HTTP_204_NO_CONTENT

from api.audit import audit
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
from mq import errors
from mq.cron import MAX_SCHEDULE_LENGTH, next_runs
from mq.history.views import ArchiveRunView
from mq.jobs import Jobs
from mq.queue.types import rfc3339
from mq.tenancy.auth import Principal
from mq.tenancy.authorization import require_platform_admin
from mq.tenancy.service import TenancyService

AnyRequest = Request[Principal, Any, Any]


def _jobs(request: AnyRequest) -> Jobs:
    require_platform_admin(request.user)
    jobs: Jobs = request.app.state.runtime.jobs
    return jobs


def _schedule_view(schedule: str) -> ScheduleView:
    try:
        runs = next_runs(schedule)
    except errors.InvalidRequest:  # a stored schedule that no longer parses: the workers treat it as off
        runs = []
    return ScheduleView(schedule=schedule, active=bool(runs), next_runs=[rfc3339(r) or "" for r in runs])


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
        expired = (await _jobs(request).expire(wait=True)).rows
        await audit(request, "reaper.expiry_run", "expiry-reaper", {"expired": expired}, tenant=(None, None))
        return ExpiredView(expired=expired)

    @post(
        "/archive-reaper/run",
        status_code=HTTP_200_OK,
        summary="Make the message log's next partitions and drop those nothing can see, now",
        operation_id="runArchiveReaper",
    )
    async def run_archive_reaper(self, request: AnyRequest) -> ArchiveRunView:
        """Returns the log entries whose partitions were dropped (hidden before by a trim or a topic's window)."""
        deleted = (await _jobs(request).archive.run_once(wait=True)).rows
        await audit(request, "reaper.archive_run", "archive-reaper", {"deleted": deleted}, tenant=(None, None))
        return ArchiveRunView(deleted=deleted)

    @post(
        "/delete-reaper/run",
        status_code=HTTP_200_OK,
        summary="Delete expired and old failed messages now",
        operation_id="runDeleteReaper",
    )
    async def run_delete_reaper(self, request: AnyRequest) -> DeletedView:
        deleted = (await _jobs(request).delete_done(wait=True)).rows
        await audit(request, "reaper.delete_run", "delete-reaper", {"deleted": deleted}, tenant=(None, None))
        return DeletedView(deleted=deleted)

    @get("/delete-reaper/schedule", summary="The delete reaper's cron schedule", operation_id="getDeleteReaperSchedule")
    async def get_schedule(self, request: AnyRequest) -> ScheduleView:
        return _schedule_view(await _jobs(request).schedule.get())

    @put(
        "/delete-reaper/schedule",
        status_code=HTTP_200_OK,
        summary="Set the delete reaper's schedule for every instance",
        operation_id="putDeleteReaperSchedule",
        **strict_body(ScheduleBody),
    )
    async def put_schedule(self, request: AnyRequest, data: ScheduleBody) -> ScheduleView:
        schedule = await _jobs(request).schedule.put(data.schedule)
        await audit(request, "reaper.schedule_update", "delete-reaper", {"schedule": schedule}, tenant=(None, None))
        return _schedule_view(schedule)

    @get(
        "/delete-reaper/schedule/preview",
        summary="Check a cron schedule and list when it would run",
        operation_id="previewDeleteReaperSchedule",
    )
    async def preview_schedule(self, request: AnyRequest, schedule: str) -> SchedulePreviewView:
        """400 with the parser's reason for a schedule that is not 5 valid cron fields (UTC; "" is off)."""
        _jobs(request)
        if len(schedule) > MAX_SCHEDULE_LENGTH:
            raise errors.InvalidRequest(f"schedule: at most {MAX_SCHEDULE_LENGTH} characters")
        try:
            runs = next_runs(" ".join(schedule.split()))
        except ValueError as exc:
            raise errors.InvalidRequest(f"schedule: {exc}") from None
        return SchedulePreviewView(schedule=schedule, next_runs=[rfc3339(r) or "" for r in runs])

    @get("/jobs", summary="The scheduled jobs' last runs and the delete reaper's schedule", operation_id="getJobs")
    async def list_jobs(self, request: AnyRequest) -> MaintenanceView:
        jobs = _jobs(request)
        runs = await jobs.repository.job_runs()
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
            delete_reaper=_schedule_view(await jobs.schedule.get()),
        )

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
        await audit(request, "user.password_change", username, tenant=(None, None))
