"""`Workers`: the APScheduler `AsyncIOScheduler` that runs the jobs of `mq.jobs` in this process.

Every replica schedules every job; each run takes the job's Postgres advisory lock first and is skipped when
another replica holds it (see `mq.jobs`), so any number of replicas may run, and when one dies the next tick of
another takes over. The delete reaper follows its schedule in Postgres: reloaded when some instance announces a
change (Redis pub/sub or Postgres NOTIFY), and every 30 s in case an announcement was missed.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.interval import IntervalTrigger

from mq import errors
from mq.cron import Cron, reaper_cron
from mq.db.engine import DATABASE_ERRORS
from mq.jobs import Jobs
from mq.runtime import Runtime
from mq.schedules.firer import ScheduleFirer
from mq.settings import Settings

log = logging.getLogger(__name__)

_SCHEDULE_RECHECK_SECONDS = 30.0
_INSTANT = timedelta(microseconds=1)


class CronTrigger(BaseTrigger):  # type: ignore[misc]
    """APScheduler's trigger (untyped: the ignore above) for a cron as `mq.cron` reads it, the one reading the
    API validated."""

    __slots__ = ("cron",)

    def __init__(self, cron: Cron) -> None:
        self.cron = cron

    def get_next_fire_time(self, previous_fire_time: datetime | None, now: datetime) -> datetime | None:
        """The first tick at or after `now`, and after the previous fire time."""
        start = now if previous_fire_time is None else max(now, previous_fire_time + _INSTANT)
        return self.cron.next_after(start - _INSTANT)

    def __str__(self) -> str:
        return f"cron[{self.cron.expression}]"


class Workers:
    def __init__(self, jobs: Jobs, ticks: ScheduleFirer | None = None) -> None:
        """`ticks`: the schedules' firer (periodic messages), run every `schedule_poll_seconds`."""
        self.jobs = jobs
        self.ticks = ticks
        self.scheduler = AsyncIOScheduler(timezone=UTC)
        #: The delete reaper's schedule in force here ("" = off).
        self.delete_schedule = ""
        self._reloads: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        settings, now = self.jobs.settings, datetime.now(UTC)
        options = {"max_instances": 1, "coalesce": True, "misfire_grace_time": None}
        self.scheduler.add_job(
            self._expire,
            IntervalTrigger(seconds=settings.expiry_reaper_interval_seconds),
            id="expiry_reaper",
            next_run_time=now,
            **options,
        )
        self.scheduler.add_job(
            self.jobs.archive.run_once,
            IntervalTrigger(seconds=settings.archive_reaper_interval_seconds),
            id="archive_reaper",
            next_run_time=now,
            **options,
        )
        self.scheduler.add_job(
            self.jobs.inflight.run_once,
            IntervalTrigger(seconds=settings.inflight_keeper_interval_seconds),
            id="inflight_keeper",
            next_run_time=now,
            **options,
        )
        self.scheduler.add_job(
            self.jobs.gauges.run_once,
            IntervalTrigger(seconds=settings.gauges_interval_seconds),
            id="gauges",
            next_run_time=now,
            **options,
        )
        self.scheduler.add_job(
            self.reload_schedule, IntervalTrigger(seconds=_SCHEDULE_RECHECK_SECONDS), id="schedule_check", **options
        )
        if self.ticks is not None:
            self.scheduler.add_job(
                self._fire_ticks,
                IntervalTrigger(seconds=settings.schedule_poll_seconds),
                id="schedules",
                next_run_time=now,
                **options,
            )
        await self.reload_schedule()
        self.jobs.schedule_listeners.append(self._schedule_announced)
        self.scheduler.start()
        log.info("workers started (expiry every %ss)", settings.expiry_reaper_interval_seconds)

    def shutdown(self) -> None:
        """Stop scheduling; a run in progress ends with its current batch's statement or is cut with the pool."""
        if self._schedule_announced in self.jobs.schedule_listeners:
            self.jobs.schedule_listeners.remove(self._schedule_announced)
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)

    async def reload_schedule(self) -> None:
        """Apply the delete reaper's schedule stored in Postgres, if it changed."""
        schedule = await self.jobs.schedule.get()
        if schedule == self.delete_schedule and (not schedule or self.scheduler.get_job("delete_reaper")):
            return
        trigger: CronTrigger | None = None
        try:
            cron = reaper_cron(schedule)
        except errors.InvalidRequest:
            log.exception("the stored delete reaper schedule %r is not a valid cron; the reaper is off", schedule)
        else:
            trigger = None if cron is None else CronTrigger(cron)
        if self.scheduler.get_job("delete_reaper"):
            self.scheduler.remove_job("delete_reaper")
        if trigger is not None:
            self.scheduler.add_job(
                self._delete, trigger, id="delete_reaper", max_instances=1, coalesce=True, misfire_grace_time=60
            )
        self.delete_schedule = schedule
        log.info("delete reaper schedule: %s", schedule or "off")

    def _schedule_announced(self) -> None:
        task = asyncio.get_running_loop().create_task(self.reload_schedule())
        self._reloads.add(task)
        task.add_done_callback(self._reloads.discard)

    async def _fire_ticks(self) -> None:
        assert self.ticks is not None
        try:
            await self.ticks.run_once()
        except DATABASE_ERRORS as exc:  # the next run tries again; nothing was committed
            log.warning("schedules: a run failed (%s); the next one goes on", exc)

    async def _expire(self) -> None:
        await self.jobs.expire()

    async def _delete(self) -> None:
        await self.jobs.delete_done()


@asynccontextmanager
async def hosted_workers(runtime: Runtime) -> AsyncIterator[None]:
    """The jobs scheduled in a process that also does other work (the API's, under `make run`)."""
    workers = Workers(runtime.jobs, runtime.ticks)
    await workers.start()
    try:
        yield
    finally:
        workers.shutdown()


async def run_alone(settings: Settings) -> None:
    """The jobs in a process of their own (`skiplock worker`), until SIGTERM or Ctrl-C."""
    runtime = await Runtime.open(settings, bootstrap_users=False)
    workers = Workers(runtime.jobs, runtime.ticks)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await workers.start()
        await stop.wait()
    finally:
        workers.shutdown()
        await runtime.close()
        log.info("workers stopped")
