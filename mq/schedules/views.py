"""What the schedules' routes answer."""

from __future__ import annotations

from typing import Any

import msgspec


class PeriodicScheduleView(msgspec.Struct):
    """A schedule: the body it was given, and `next_run_at`, `last_run_at` (the last tick fired) and `last_error`
    (why the last tick was refused, or null)."""

    name: str
    topic: str
    cron: str
    timezone: str
    payload: bytes
    key: str | None
    metadata: msgspec.Raw | None
    priority: int
    enabled: bool
    next_run_at: str
    last_run_at: str | None
    last_error: str | None


class PeriodicScheduleListView(msgspec.Struct):
    items: list[PeriodicScheduleView]


class ScheduleSpec(msgspec.Struct, frozen=True):
    """What a PUT gives."""

    topic: str
    cron: str
    payload: bytes
    timezone: str = "UTC"
    key: str | None = None
    metadata: dict[str, Any] | None = None
    priority: int = 0
    enabled: bool = True
