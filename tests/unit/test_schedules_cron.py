"""A schedule's cron across daylight-saving changes, 6-field crons, and catching up; the delete reaper's schedule
read the same way (`mq.cron`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mq import errors
from mq.cron import Cron, next_runs, reaper_cron
from workers.scheduler import CronTrigger

BERLIN = "Europe/Berlin"  # 2026: clocks go forward on 29 March at 02:00, back on 25 October at 03:00


def ticks(cron: Cron, start: datetime, n: int) -> list[str]:
    out, at = [], start
    for _ in range(n):
        at = cron.next_after(at)
        out.append(at.astimezone(cron.zone).isoformat())
    return out


def test_a_tick_that_does_not_exist_happens_just_after_the_clocks_jump() -> None:
    daily = Cron.parse("30 2 * * *", BERLIN)
    assert ticks(daily, datetime(2026, 3, 27, 12, tzinfo=UTC), 3) == [
        "2026-03-28T02:30:00+01:00",
        "2026-03-29T03:00:00+02:00",  # 02:30 did not happen that night: at 03:00, once
        "2026-03-30T02:30:00+02:00",
    ]


def test_a_named_hour_that_happens_twice_ticks_once_and_a_wildcard_hour_in_both() -> None:
    daily = Cron.parse("30 2 * * *", BERLIN)
    assert ticks(daily, datetime(2026, 10, 23, 12, tzinfo=UTC), 3) == [
        "2026-10-24T02:30:00+02:00",
        "2026-10-25T02:30:00+02:00",  # the first 02:30 only
        "2026-10-26T02:30:00+01:00",
    ]
    half_hourly = Cron.parse("*/30 * * * *", BERLIN)
    assert ticks(half_hourly, datetime(2026, 10, 24, 23, 45, tzinfo=UTC), 4) == [
        "2026-10-25T02:00:00+02:00",
        "2026-10-25T02:30:00+02:00",
        "2026-10-25T02:00:00+01:00",  # the hour again: every 30 minutes stays every 30 minutes
        "2026-10-25T02:30:00+01:00",
    ]


def test_six_field_crons_follow_the_same_daylight_saving_rules() -> None:
    daily = Cron.parse("15 30 2 * * *", BERLIN)
    assert ticks(daily, datetime(2026, 3, 27, 12, tzinfo=UTC), 3) == [
        "2026-03-28T02:30:15+01:00",
        "2026-03-29T03:00:15+02:00",  # the night 02:30 does not exist: just after the jump, once
        "2026-03-30T02:30:15+02:00",
    ]
    assert ticks(daily, datetime(2026, 10, 23, 12, tzinfo=UTC), 3) == [
        "2026-10-24T02:30:15+02:00",
        "2026-10-25T02:30:15+02:00",  # once, the night 02:30 happens twice
        "2026-10-26T02:30:15+01:00",
    ]
    every_20s = Cron.parse("*/20 0 2 * * *", BERLIN)
    assert ticks(every_20s, datetime(2026, 10, 24, 23, 59, 50, tzinfo=UTC), 4) == [
        "2026-10-25T02:00:00+02:00",
        "2026-10-25T02:00:20+02:00",
        "2026-10-25T02:00:40+02:00",
        "2026-10-26T02:00:00+01:00",
    ]


def test_six_fields_have_seconds_first_and_ticks_are_utc() -> None:
    cron = Cron.parse("15 */2 * * * *", "UTC")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert [t.isoformat() for t in (cron.next_after(start), cron.next_after(cron.next_after(start)))] == [
        "2026-01-01T00:00:15+00:00",
        "2026-01-01T00:02:15+00:00",
    ]
    assert Cron.parse("0 9 * * 1-5", "America/New_York").next_after(start).tzinfo == UTC


def test_late_ticks_are_each_fired_and_of_missed_ones_only_the_latest() -> None:
    minutely = Cron.parse("* * * * *", "UTC")
    late = timedelta(seconds=5)
    now = datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC)
    noon = datetime(2026, 1, 1, 12, tzinfo=UTC)
    assert minutely.due(now - timedelta(minutes=10, seconds=30), now, late) == ([noon], 10)
    assert minutely.due(noon, now, late) == ([noon], 0)
    every_second = Cron.parse("* * * * * *", "UTC")
    fired, skipped = every_second.due(now - timedelta(seconds=3), now, late)  # a run 3 s late: lag
    assert [t.second for t in fired] == [27, 28, 29, 30] and skipped == 0
    fired, skipped = every_second.due(now - timedelta(minutes=2), now, late)  # away two minutes
    assert [t.second for t in fired] == [26, 27, 28, 29, 30] and skipped == 116
    yearly = Cron.parse("0 0 1 1 *", "UTC")  # sparse: found by walking from the due tick
    assert yearly.due(datetime(2020, 1, 1, tzinfo=UTC), now, late) == ([datetime(2026, 1, 1, tzinfo=UTC)], 6)


@pytest.mark.parametrize(
    ("cron", "zone", "says"),
    [
        ("* * *", "UTC", "5 fields"),
        ("* * * * * * *", "UTC", "5 fields"),
        ("61 * * * *", "UTC", "cron"),
        ("0 0 30 2 *", "UTC", "cron"),
        ("* * * * *", "Mars/Olympus", "timezone"),
        ("* * * * *", "../../etc/passwd", "timezone"),
    ],
)
def test_bad_crons_and_zones_are_refused_with_the_reason(cron: str, zone: str, says: str) -> None:
    with pytest.raises(errors.InvalidRequest) as refused:
        Cron.parse(cron, zone)
    assert says in refused.value.message


def test_the_delete_reapers_schedule_is_the_same_reading_in_utc_and_its_trigger_fires_on_it() -> None:
    start = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)  # a Saturday
    assert reaper_cron("") is None and next_runs("") == []
    # a day of week as cron means it: 1-5 Monday to Friday, 0 and 7 Sunday
    assert [t.day for t in next_runs("0 3 * * 1-5", 3, start)] == [30, 1, 2]
    assert [t.weekday() for t in next_runs("0 3 * * 0", 2, start)] == [6, 6]
    assert next_runs("0 3 * * 7", 1, start) == next_runs("0 3 * * 0", 1, start)
    for bad in ("61 * * * *", "* * * *", "every day", "* * * * * *"):
        with pytest.raises(errors.InvalidRequest):
            reaper_cron(bad)
    cron = reaper_cron("*/5 * * * *")
    assert cron is not None
    trigger = CronTrigger(cron)
    assert trigger.get_next_fire_time(None, start) == start  # a tick at `now` fires now
    fired = trigger.get_next_fire_time(start, start)
    assert fired == datetime(2026, 11, 28, 12, 5, tzinfo=UTC)  # after the previous fire time
