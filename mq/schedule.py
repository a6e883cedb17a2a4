"""The delete reaper's schedule: a 5-field cron (minute hour day month weekday), in UTC; "" is off.

The grammar is APScheduler's crontab parser (`apscheduler.triggers.cron`, a pure parser): the schedule the API
accepts is exactly the one the scheduler (`workers`) then runs. The core imports no other part of APScheduler.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

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
    minute, hour, day, month, weekday = schedule.split()
    return CronTrigger(minute=minute, hour=hour, day=day, month=month, day_of_week=_weekdays(weekday), timezone="UTC")


_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def _weekdays(field: str) -> str:
    """A crontab day-of-week field (0 or 7 = Sunday, 1 = Monday) in APScheduler's terms, where numbers count from
    Monday = 0: numbered days become names (`1-5` is mon,tue,wed,thu,fri); names and `*` pass as they are."""
    if not any(c.isdigit() for c in field.replace("*/", "")):
        return field
    days: set[int] = set()
    for part in field.split(","):
        span, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if span == "*":
            first, last = 0, 6
        else:
            low, _, high = span.partition("-")
            first = _day_number(low)
            last = _day_number(high) if high else (6 if step_text else first)
            if high and high.strip() == "7":
                last = 7
        if step < 1 or first > last:
            raise ValueError(f"day of week {part!r} is not a valid range")
        days.update(d % 7 for d in range(first, last + 1, step))
    return ",".join(_DAY_NAMES[d] for d in sorted(days))


def _day_number(text: str) -> int:
    text = text.strip().lower()
    if text in _DAY_NAMES:
        return _DAY_NAMES.index(text)
    if not text.isdigit() or int(text) > 7:
        raise ValueError(f"day of week {text!r} is not 0-7 or a day name")
    return int(text)


def check_schedule(schedule: str) -> None:
    """Raise InvalidRequest for a schedule that is not "" or five valid cron fields."""
    try:
        cron_trigger(schedule)
    except ValueError as exc:
        raise errors.InvalidRequest(f"schedule: {exc}") from None


def next_runs(schedule: str, count: int = 5, after: datetime | None = None) -> list[datetime]:
    """The next `count` times a valid schedule fires, in UTC (none for "", off)."""
    trigger = cron_trigger(schedule)
    if trigger is None:
        return []
    runs: list[datetime] = []
    previous: datetime | None = None
    now = after or datetime.now(UTC)
    while len(runs) < count:
        fire = trigger.get_next_fire_time(previous, now)
        if fire is None:
            break
        runs.append(fire)
        previous, now = fire, fire + timedelta(seconds=1)
    return runs
