"""Periodic messages' schedules as stored."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from mq.queue.types import rfc3339


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

    @classmethod
    def from_row(cls, row: Any) -> PeriodicScheduleView:
        """From a row of a schedule (`mq.schedules.sql`'s columns)."""
        return cls(
            name=row["name"],
            topic=row["topic"],
            cron=row["cron"],
            timezone=row["timezone"],
            payload=bytes(row["payload"]),
            key=row["key"],
            metadata=msgspec.Raw(row["metadata"].encode()) if row["metadata"] is not None else None,
            priority=row["priority"],
            enabled=row["enabled"],
            next_run_at=rfc3339(row["next_run_at"]) or "",
            last_run_at=rfc3339(row["last_run_at"]),
            last_error=row["last_error"],
        )


class PeriodicScheduleListView(msgspec.Struct):
    items: list[PeriodicScheduleView]

    @classmethod
    def from_rows(cls, rows: Sequence[Any]) -> PeriodicScheduleListView:
        return cls(items=[PeriodicScheduleView.from_row(r) for r in rows])
