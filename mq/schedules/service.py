"""`Schedules`: a tenant's periodic messages (contract, "Periodic messages"). A schedule is checked when it is put
(its cron and time zone, and its message as an enqueue would be) and its first tick computed; the workers fire
it (`mq.schedules.firer`). A tenant has at most its `max_schedules` quota of them (the platform's
`max_schedules_per_tenant` when it has none); a caller sees only those whose topic it may read (`visible`).

Raises only `mq.errors`. Who may do what is the API's business (`api.routes.schedules`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from mq import errors
from mq.cron import Cron
from mq.names import TOPIC_RE
from mq.queue.validation import build_item
from mq.quotas import QuotaCache
from mq.schedules.repository import Record, ScheduleRepository
from mq.schedules.types import ScheduleSpec
from mq.settings import Settings

#: Who may see a schedule: a predicate on its topic (a member's read grants); everyone by default.
Visible = Callable[[str], bool]


def _everyone(topic: str) -> bool:
    return True


class Schedules:
    def __init__(self, repository: ScheduleRepository, settings: Settings, quotas: QuotaCache | None = None) -> None:
        self.repository = repository
        self.settings = settings
        self.quotas = quotas

    async def list(self, tenant_id: int, visible: Visible = _everyone) -> list[Record]:
        """The tenant's schedules the caller may see (`sql.LIST`'s rows)."""
        return [r for r in await self.repository.of_tenant(tenant_id) if visible(r["topic"])]

    async def get(self, tenant_id: int, name: str, visible: Visible = _everyone) -> Record:
        row = await self.repository.get(tenant_id, _name(name))
        if row is None or not visible(row["topic"]):  # one the caller may not see is as one that is not there
            raise errors.NotFound(f"no schedule {name!r}")
        return row

    async def put(self, tenant_id: int, name: str, spec: ScheduleSpec) -> Record:
        """Create or replace; the next tick is computed from now. A new one past the tenant's limit is refused
        (403 `quota_exceeded`)."""
        cron = Cron.parse(spec.cron, spec.timezone)
        item = build_item(self.settings, spec.topic, spec.payload, spec.metadata, spec.key, 0, spec.priority)
        next_run = cron.next_after(datetime.now(UTC))
        values = (
            item.topic,
            cron.expression,
            spec.timezone,
            item.payload,
            item.key,
            item.metadata_json,
            item.priority,
            spec.enabled,
            next_run,
        )
        limit = await self._limit(tenant_id)
        row = await self.repository.put(tenant_id, _name(name), values, limit)
        if row is None:
            raise errors.QuotaExceeded(
                f"the tenant has {limit} schedules, its max_schedules: delete one, or raise the quota",
                details={"quota": "max_schedules", "limit": limit},
            )
        return row

    async def delete(self, tenant_id: int, name: str) -> None:
        if not await self.repository.delete(tenant_id, _name(name)):
            raise errors.NotFound(f"no schedule {name!r}")

    async def _limit(self, tenant_id: int) -> int:
        quota = (await self.quotas.of(tenant_id)).max_schedules if self.quotas is not None else None
        return self.settings.max_schedules_per_tenant if quota is None else quota


def _name(name: str) -> str:
    if not TOPIC_RE.fullmatch(name):
        raise errors.InvalidRequest("a schedule's name must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
    return name
