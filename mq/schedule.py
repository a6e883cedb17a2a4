"""The delete reaper's schedule: a 5-field cron (minute hour day month weekday), in UTC; "" is off.

The grammar is APScheduler's crontab parser (`apscheduler.triggers.cron`, a pure parser): the schedule the API
accepts is exactly the one the scheduler (`workers`) then runs. The core imports no other part of APScheduler.
"""

from __future__ import annotations

from apscheduler.triggers.cron import CronTrigger

from mq import errors

MAX_SCHEDULE_LENGTH = 200


def normalized(schedule: str) -> str:
    """The schedule as stored: fields separated by one space."""
    return " ".join(schedule.split())


def cron_trigger(schedule: str) -> CronTrigger | None:
    """The trigger of a schedule, None for "" (off). Raises ValueError for anything but five valid fields."""
    if not schedule.strip():
        return None
    if len(schedule.split()) != 5:
        raise ValueError("a schedule is 5 cron fields: minute hour day-of-month month day-of-week")
    return CronTrigger.from_crontab(schedule, timezone="UTC")


def check_schedule(schedule: str) -> None:
    """Raise InvalidRequest for a schedule that is not "" or five valid cron fields."""
    try:
        cron_trigger(schedule)
    except ValueError as exc:
        raise errors.InvalidRequest(f"schedule: {exc}") from None
