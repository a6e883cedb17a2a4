"""The commands of the platform's operations, for platform admins: run a reaper now, the delete reaper's schedule,
the scheduled jobs' last runs, a platform admin's password. Each change is in the platform's audit trail."""

from __future__ import annotations

from datetime import datetime

from mq import errors
from mq.audit.service import AuditTrail
from mq.commands.audited import PLATFORM, record
from mq.cron import MAX_SCHEDULE_LENGTH, next_runs
from mq.db.repository import JobRun
from mq.jobs import Jobs
from mq.tenancy.auth import Principal
from mq.tenancy.authorization import require_platform_admin
from mq.tenancy.service import TenancyService


def schedule_runs(schedule: str) -> list[datetime]:
    """When a stored schedule runs next; none for one that no longer parses (the workers treat it as off)."""
    try:
        return next_runs(schedule)
    except errors.InvalidRequest:
        return []


class PlatformCommands:
    def __init__(self, jobs: Jobs, tenancy: TenancyService, audit: AuditTrail) -> None:
        self.jobs = jobs
        self.tenancy = tenancy
        self.audit = audit

    async def run_expiry_reaper(self, principal: Principal) -> int:
        """Waits for a run in progress elsewhere (the job's lock), then runs; answers the messages it expired."""
        require_platform_admin(principal)
        expired = (await self.jobs.expire(wait=True)).rows
        await record(self.audit, principal, "reaper.expiry_run", "expiry-reaper", {"expired": expired}, tenant=PLATFORM)
        return expired

    async def run_archive_reaper(self, principal: Principal) -> int:
        """Answers the log entries whose partitions were dropped (hidden before by a trim or a topic's window)."""
        require_platform_admin(principal)
        deleted = (await self.jobs.archive.run_once(wait=True)).rows
        details = {"deleted": deleted}
        await record(self.audit, principal, "reaper.archive_run", "archive-reaper", details, tenant=PLATFORM)
        return deleted

    async def run_delete_reaper(self, principal: Principal) -> int:
        require_platform_admin(principal)
        deleted = (await self.jobs.delete_done(wait=True)).rows
        details = {"deleted": deleted}
        await record(self.audit, principal, "reaper.delete_run", "delete-reaper", details, tenant=PLATFORM)
        return deleted

    async def delete_schedule(self, principal: Principal) -> str:
        require_platform_admin(principal)
        return await self.jobs.schedule.get()

    async def set_delete_schedule(self, principal: Principal, schedule: str) -> str:
        """Sets the delete reaper's schedule for every instance; answers it as stored."""
        require_platform_admin(principal)
        stored = await self.jobs.schedule.put(schedule)
        details = {"schedule": stored}
        await record(self.audit, principal, "reaper.schedule_update", "delete-reaper", details, tenant=PLATFORM)
        return stored

    def preview_schedule(self, principal: Principal, schedule: str) -> list[datetime]:
        """When `schedule` would run; 400 with the parser's reason for one that is not 5 valid cron fields (UTC;
        "" is off)."""
        require_platform_admin(principal)
        if len(schedule) > MAX_SCHEDULE_LENGTH:
            raise errors.InvalidRequest(f"schedule: at most {MAX_SCHEDULE_LENGTH} characters")
        try:
            return next_runs(" ".join(schedule.split()))
        except ValueError as exc:
            raise errors.InvalidRequest(f"schedule: {exc}") from None

    async def job_runs(self, principal: Principal) -> tuple[list[JobRun], str]:
        """The scheduled jobs' last runs, and the delete reaper's schedule."""
        require_platform_admin(principal)
        return await self.jobs.repository.job_runs(), await self.jobs.schedule.get()

    async def set_platform_admin_password(self, principal: Principal, username: str, password: str) -> None:
        """Ends the admin's sessions and cached credentials everywhere."""
        require_platform_admin(principal)
        await self.tenancy.set_platform_admin_password(username, password)
        await record(self.audit, principal, "user.password_change", username, tenant=PLATFORM)
