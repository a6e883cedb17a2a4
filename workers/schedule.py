"""The delete reaper's schedule: a 5-field cron (minute hour day month weekday), in UTC; "" is off."""

from __future__ import annotations

from apscheduler.triggers.cron import CronTrigger


def cron_trigger(schedule: str) -> CronTrigger | None:
    """The trigger of a schedule, None for "" (off). Raises ValueError for anything but five valid fields."""
    if not schedule.strip():
        return None
    if len(schedule.split()) != 5:
        raise ValueError("a schedule is 5 cron fields: minute hour day-of-month month day-of-week")
    return CronTrigger.from_crontab(schedule, timezone="UTC")
