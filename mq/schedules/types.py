"""What a schedule is given (the API renders a stored one: `api.views.schedules`)."""

from __future__ import annotations

from typing import Any

import msgspec


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
