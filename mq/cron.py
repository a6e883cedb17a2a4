"""Cron expressions, the one reading of them: a periodic message's schedule (`mq.schedules`: 5 fields, or 6 with
seconds first, in the schedule's time zone) and the delete reaper's (`reaper_cron`: 5 fields in UTC, "" is off,
run by the workers' APScheduler through `workers.scheduler.CronTrigger`). Both are read by `cronsim`, so the
schedule the API accepts is exactly the one that runs, and a day of week means what it means to cron (0 and 7
are Sunday).

`cronsim` follows Debian cron across daylight-saving changes, which is what a schedule in local time should do:
- a tick that does not exist (the clock jumps from 02:00 to 03:00 and the cron says 02:30) happens at the first
  instant after the jump (03:00 local time): a daily job is not lost;
- a tick that happens twice (the clock goes back from 03:00 to 02:00) happens once, at its first occurrence, when
  the cron names the hour; crons whose hour field is `*` tick in both hours (every 30 minutes stays every 30
  minutes).
The same holds for 6-field crons (seconds first): their minutes follow these rules, their seconds fall within each
minute. Ticks are computed in local time and stored in UTC (`next_run_at`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from mq import errors

#: Catching up, the latest missed tick is looked for in the last hour first (a schedule every second missed for a
#: week does not walk 600,000 ticks); a sparser schedule walks from its due tick.
_RECENT = timedelta(hours=1)
_INSTANT = timedelta(microseconds=1)
_MINUTE = timedelta(minutes=1)
MAX_CRON_LENGTH = 200


@dataclass(frozen=True)
class Cron:
    expression: str
    zone: ZoneInfo

    @classmethod
    def parse(cls, expression: str, timezone: str, *, seconds: bool = True, what: str = "cron") -> Cron:
        """Raises InvalidRequest naming what is wrong (`what`: the field's name). `seconds`: 6 fields, seconds
        first, are accepted too."""
        fields = expression.split()
        if len(expression) > MAX_CRON_LENGTH or len(fields) not in ((5, 6) if seconds else (5,)):
            also = ", or 6 with seconds first" if seconds else ""
            raise errors.InvalidRequest(f"{what}: 5 fields (minute hour day month weekday){also}; got {expression!r}")
        try:
            zone = ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise errors.InvalidRequest(
                f"timezone: {timezone!r} is not an IANA time zone (e.g. Europe/Berlin)"
            ) from None
        cron = cls(" ".join(fields), zone)
        try:
            next(cron.ticks_after(datetime.now(UTC)))
        except (CronSimError, StopIteration, ValueError) as exc:
            raise errors.InvalidRequest(f"{what}: {exc or 'no tick ever matches'} in {expression!r}") from None
        return cron

    def ticks_after(self, at: datetime) -> Iterator[datetime]:
        """The ticks strictly after `at`, in UTC. A 6-field cron's minutes are read as the 5-field cron of its
        last five fields (cronsim applies its daylight-saving rules to those only), and its seconds field gives
        the ticks within each of those minutes (read by cronsim too, in UTC: a minute has no clock change)."""
        fields = self.expression.split()
        if len(fields) == 5:
            for tick in CronSim(self.expression, at.astimezone(self.zone)):
                yield tick.astimezone(UTC)
            return
        seconds, minutes = f"{fields[0]} * * * * *", " ".join(fields[1:])
        start = at.astimezone(UTC).replace(second=0, microsecond=0) - _INSTANT
        for local in CronSim(minutes, start.astimezone(self.zone)):
            minute = local.astimezone(UTC)
            for tick in CronSim(seconds, minute - _INSTANT):
                if tick >= minute + _MINUTE:
                    break
                if tick > at:
                    yield tick

    def next_after(self, at: datetime) -> datetime:
        return next(self.ticks_after(at))

    def due(self, due: datetime, now: datetime, late: timedelta) -> tuple[list[datetime], int]:
        """The ticks to fire now, from `due` (a tick itself, at or before `now`) on, and how many are skipped.
        Ticks less than `late` old are all fired: a pass that ran late is lag, not absence. Older ones were missed
        while no worker ran: only the latest of them is fired when none is recent (a worker coming back enqueues
        the tick it missed once), and the rest are skipped. Counting walks the last hour at most."""
        recent = now - late
        for start in (max(due, now - _RECENT), due):
            fired: list[datetime] = []
            missed = 0
            for tick in self.ticks_after(start - _INSTANT):
                if tick > now:
                    break
                if tick > recent:
                    fired.append(tick)
                else:
                    missed += 1
                    latest_missed = tick
            if fired:
                return fired, missed
            if missed:
                return [latest_missed], missed - 1
        return [due], 0


# --- The delete reaper's schedule ---------------------------------------------------------------------------------
MAX_SCHEDULE_LENGTH = MAX_CRON_LENGTH


def normalized(schedule: str) -> str:
    """A delete reaper schedule as stored: fields separated by one space."""
    return " ".join(schedule.split())


def reaper_cron(schedule: str) -> Cron | None:
    """The delete reaper's schedule read, None for "" (off); InvalidRequest for anything but five valid fields."""
    if not schedule.strip():
        return None
    return Cron.parse(schedule, "UTC", seconds=False, what="schedule")


def next_runs(schedule: str, count: int = 5, after: datetime | None = None) -> list[datetime]:
    """The next `count` times a valid delete reaper schedule fires, in UTC (none for "", off)."""
    cron = reaper_cron(schedule)
    if cron is None:
        return []
    ticks = cron.ticks_after(after or datetime.now(UTC))
    return [next(ticks) for _ in range(count)]
