"""The schedules' firer, run by every worker every `schedule_poll_seconds`: exactly one message per tick.

One transaction takes a batch of due schedules (`FOR UPDATE SKIP LOCKED`: each is fired by one worker, without a
leader), stores the ticks' messages through the queue's own admission (`QueueService.admit_ticks`: the topic's
schema and max_depth, the tenant's quotas): the ticks nothing can refuse in one statement for the batch, the
others one statement per (tenant, topic) in a savepoint (a group refused is tried again tick by tick, so a cap
admits what fits; keyed ticks go one by one), and moves each schedule's `next_run_at` on; then commits. The
message and the schedule's move are one commit: a worker killed before it stored nothing and moved nothing, so
the next worker fires the same tick; after it, the schedule is no longer due. A tick refused (by the schema, a
cap, a quota, a suspended tenant) is recorded in `last_error` and counted, and the schedule moves on to its next
tick: never retried into a storm. Ticks due in the last `LATE` seconds are each fired (a run that came late is
lag); a worker that comes back after a time without workers fires the latest tick it missed and
skips the older ones (`Cron.due`).
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import msgspec

from mq import errors
from mq.cron import Cron
from mq.metrics import Metrics
from mq.queue.service import QueueService
from mq.queue.types import AdmittedTicks, EnqueueItem, rfc3339
from mq.queue.validation import build_item
from mq.schedules.repository import Connection, Record, ScheduleRepository

log = logging.getLogger(__name__)

#: Schedules fired per transaction; a run repeats batches while some are due.
BATCH = 500
#: Ticks due less than this long ago are each fired, however many (a run that came late is lag); older ones were
#: missed while no worker ran, and only the latest of them is fired when no recent one is.
LATE = timedelta(seconds=5)
#: Batches one run fires at most before it lets the other jobs run (the next run goes on).
_MAX_BATCHES = 20


@dataclass
class FireResult:
    fired: int = 0
    refused: int = 0
    batches: int = 0


@dataclass
class _Tick:
    """One tick to fire: its schedule (the due row), when, its message, and what came of it (None: stored)."""

    schedule: Record
    at: datetime
    item: EnqueueItem | None
    refusal: str | None = None
    inserted: bool = True


class ScheduleFirer:
    name = "schedules"

    def __init__(self, repository: ScheduleRepository, queue: QueueService, metrics: Metrics, batch: int = BATCH):
        self.repository = repository
        self.queue = queue
        self.metrics = metrics
        self.batch = batch
        #: (tenant, topic) -> waiting polls to wake per message (one per consumer group), as last stored
        self._polls: dict[tuple[int, str], int] = {}

    async def run_once(self) -> FireResult:
        """Fire what is due, a batch per transaction, until a batch finds nothing (or `_MAX_BATCHES`): a batch
        gives each tenant a share, so one smaller than `batch` does not mean nothing is left."""
        total = FireResult()
        for _ in range(_MAX_BATCHES):
            result = await self.fire_batch()
            total.fired += result.fired
            total.refused += result.refused
            total.batches += 1
            if not result.fired + result.refused:
                break
        return total

    async def fire_batch(self) -> FireResult:
        """A batch of due schedules fired, fairly across tenants (`mq.schedules.sql.DUE`): each tenant with a due
        schedule takes an equal share of the batch, in a transaction of its own."""
        result = FireResult()
        tenants = await self.repository.due_tenants()
        share = -(-self.batch // max(len(tenants), 1))
        for tenant_id in tenants:
            fired = await self._fire_tenant(tenant_id, share)
            result.fired += fired.fired
            result.refused += fired.refused
        return result

    async def _fire_tenant(self, tenant: int, share: int) -> FireResult:
        """One transaction: up to `share` of one tenant's due schedules fired."""
        result = FireResult()
        async with self.repository.firing() as conn:
            due = await self.repository.due(conn, tenant, share)
            if not due:
                return result
            keys, next_runs, last_ticks, last_refusals = [], [], [], []
            ticks: list[_Tick] = []
            lags: list[float] = []
            for row in due:
                now = row["now"]
                fire, skipped, next_run = _plan(row["cron"], row["timezone"], row["next_run_at"], now)
                if skipped:
                    self.metrics.schedule_skipped.labels(*self._labels(row)).inc(skipped)
                ticks.extend([self._tick(row, at) for at in fire])
                keys.append((row["tenant_id"], row["name"]))
                next_runs.append(next_run)
                last_ticks.append(fire[-1])
                lags.extend([(now - at).total_seconds() for at in fire])
            self.metrics.schedule_lag.observe((), lags)
            await self._store(conn, ticks)
            by_schedule = {(t.schedule["tenant_id"], t.schedule["name"]): t.refusal for t in ticks}  # the latest
            last_refusals = [by_schedule[key] for key in keys]
            await self.repository.advance(conn, keys, next_runs, last_ticks, last_refusals)
        stored: dict[tuple[int, str, str], list[int]] = {}
        refused: Counter[tuple[str, str, str]] = Counter()
        for tick in ticks:
            row = tick.schedule
            if tick.refusal is None:
                counts = stored.setdefault((row["tenant_id"], row["topic"], row["slug"]), [0, 0])
                counts[0 if tick.inserted else 1] += 1
            else:
                refused[(row["slug"], row["topic"], tick.refusal.split(":", 1)[0])] += 1
        for (tenant_id, topic, slug), (inserted, upserted) in stored.items():  # committed: now they may be seen
            result.fired += inserted + upserted
            self.metrics.schedule_ticks.labels(slug, self.metrics.topic(slug, topic)).inc(inserted + upserted)
            polls = self._polls.get((tenant_id, topic), 1)
            self.queue.wake_ticks(tenant_id, topic, inserted, upserted, polls)
        for (slug, topic, reason), n in refused.items():
            result.refused += n
            self.metrics.schedule_refused.labels(slug, self.metrics.topic(slug, topic), reason).inc(n)
        return result

    def _tick(self, row: Record, at: datetime) -> _Tick:
        """The tick's message, or the tick refused when its tenant is not active or the message is not valid."""
        if row["status"] != "active":
            return _Tick(row, at, None, f"tenant_suspended: the tenant is {row['status']}")
        metadata = msgspec.json.decode(row["metadata"]) if row["metadata"] is not None else {}
        metadata.update(skiplock_schedule=row["name"], skiplock_tick=rfc3339(at))
        try:
            item = build_item(
                self.queue.settings, row["topic"], bytes(row["payload"]), metadata, row["key"], 0, row["priority"]
            )
        except errors.SkiplockError as exc:
            return _Tick(row, at, None, f"{_reason(exc)}: {exc.message}")
        return _Tick(row, at, item)

    async def _store(self, conn: Connection[Record], ticks: list[_Tick]) -> None:
        """The ticks' messages: keyless ones checked per (tenant, topic), a group refused (a cap may admit some of
        it) and keyed ones tick by tick. Those nothing can refuse (`AdmittedTicks.plain`) go in one statement for
        the whole batch; the others in a statement each, in its own savepoint."""
        groups: dict[tuple[int, str], list[_Tick]] = {}
        alone: list[_Tick] = []
        for tick in ticks:
            if tick.item is None:
                continue
            if tick.item.key is None:
                groups.setdefault((tick.schedule["tenant_id"], tick.item.topic), []).append(tick)
            else:
                alone.append(tick)
        plain: list[tuple[list[_Tick], AdmittedTicks]] = []
        for group in groups.values():
            if len(group) == 1 or not await self._try(conn, group, plain):
                alone.extend(group)
        for tick in alone:
            await self._try(conn, [tick], plain)
        if plain:
            await self.queue.store_plain_ticks(conn, [admitted for _, admitted in plain])
            for group, admitted in plain:
                self._polls[(admitted.tenant_id, group[0].schedule["topic"])] = admitted.polls
                for tick in group:
                    tick.refusal, tick.inserted = None, True

    async def _try(
        self, conn: Connection[Record], group: list[_Tick], plain: list[tuple[list[_Tick], AdmittedTicks]]
    ) -> bool:
        """Admit the group's messages, all or none, and store them in a savepoint, or add them to `plain` (stored
        by the caller). A refusal is recorded on each of them only when the group is one tick (a larger one is
        tried again tick by tick)."""
        tenant_id = group[0].schedule["tenant_id"]
        try:
            admitted = await self.queue.admit_ticks(tenant_id, [t.item for t in group if t.item])
            if admitted.plain:
                plain.append((group, admitted))
                return True
            async with self.repository.savepoint(conn):
                outcomes = await self.queue.store_ticks(conn, admitted)
        except errors.SkiplockError as exc:
            if len(group) == 1:
                group[0].refusal = f"{_reason(exc)}: {exc.message}"
            return False
        self._polls[(tenant_id, group[0].schedule["topic"])] = admitted.polls
        for tick, (_, inserted) in zip(group, outcomes, strict=True):
            tick.refusal, tick.inserted = None, inserted
        return True

    def _labels(self, row: Record) -> tuple[str, str]:
        slug = row["slug"]
        return slug, self.metrics.topic(slug, row["topic"])


@functools.lru_cache(maxsize=4096)
def _plan(expression: str, timezone: str, due: datetime, now: datetime) -> tuple[tuple[datetime, ...], int, datetime]:
    """A due schedule's ticks to fire, how many are skipped, and its next tick (`Cron.due`). A batch's rows share
    `now` (the transaction's), and schedules that share a cron and a due tick (the minute's boundary) share the
    answer: computed once per batch."""
    cron = Cron(expression, ZoneInfo(timezone))  # (ZoneInfo keeps each zone it read)
    fire, skipped = cron.due(due, now, LATE)
    return tuple(fire), skipped, cron.next_after(now)


def _reason(exc: errors.SkiplockError) -> str:
    """A refused tick's reason: the error's code for the refusals an enqueue can meet, `invalid` for the rest."""
    return exc.code if exc.code in _REASONS else "invalid"


#: The reasons the metric `skiplock_schedule_ticks_refused` counts (and `tenant_suspended`, `invalid`)
_REASONS = frozenset({"schema_violation", "queue_full", "quota_exceeded", "rate_limited", "payload_too_large"})
