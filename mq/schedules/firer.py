"""The schedules' firer, run by every worker every `schedule_poll_seconds`: exactly one message per tick.

One transaction takes a batch of due schedules (`FOR UPDATE SKIP LOCKED`: each is fired by one worker, without a
leader), stores each tick's message through the queue's own admission (`QueueService.store_tick`: the topic's
schema and max_depth, the tenant's quotas) in a savepoint, and moves each schedule's `next_run_at` on; then
commits. The message and the schedule's move are one commit: a worker killed before it stored nothing and moved
nothing, so the next worker fires the same tick; after it, the schedule is no longer due. A tick refused (by the
schema, a cap, a quota, a suspended tenant) is recorded in `last_error` and counted, and the schedule moves on
to its next tick: never retried into a storm. Ticks due in the last `LATE` seconds are each fired (a run that
came late is lag); a worker that comes back after a time without workers fires the latest tick it missed and
skips the older ones (`Cron.due`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import msgspec

from mq import errors
from mq.metrics import Metrics
from mq.queue.service import QueueService
from mq.queue.types import rfc3339
from mq.queue.validation import build_item
from mq.schedules.cron import Cron
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
    woken: list[tuple[int, str, bool, int]] = field(default_factory=list)


class ScheduleFirer:
    name = "schedules"

    def __init__(self, repository: ScheduleRepository, queue: QueueService, metrics: Metrics, batch: int = BATCH):
        self.repository = repository
        self.queue = queue
        self.metrics = metrics
        self.batch = batch

    async def run_once(self) -> FireResult:
        """Fire what is due, a batch per transaction, until nothing is (or `_MAX_BATCHES`)."""
        total = FireResult()
        for _ in range(_MAX_BATCHES):
            result = await self._batch()
            total.fired += result.fired
            total.refused += result.refused
            total.batches += 1
            if result.fired + result.refused < self.batch:
                break
        return total

    async def _batch(self) -> FireResult:
        result = FireResult()
        async with self.repository.firing() as conn:
            due = await self.repository.due(conn, self.batch)
            if not due:
                return result
            keys, next_runs, ticks, refusals = [], [], [], []
            for row in due:
                cron = Cron(row["cron"], ZoneInfo(row["timezone"]))  # (ZoneInfo keeps each zone it read)
                now = row["now"]
                fire, skipped = cron.due(row["next_run_at"], now, LATE)
                if skipped:
                    slug, topic = row["slug"], row["topic"]
                    self.metrics.schedule_skipped.labels(slug, self.metrics.topic(slug, topic)).inc(skipped)
                refusal = None
                for tick in fire:
                    refusal = await self._fire(conn, row, tick, result)
                self.metrics.schedule_lag.observe((), [(now - tick).total_seconds() for tick in fire])
                keys.append((row["tenant_id"], row["name"]))
                next_runs.append(cron.next_after(now))
                ticks.append(fire[-1])
                refusals.append(refusal)
            await self.repository.advance(conn, keys, next_runs, ticks, refusals)
        for tenant_id, topic, inserted, polls in result.woken:  # committed: now they may be seen
            self.queue.wake_tick(tenant_id, topic, inserted, polls)
        return result

    async def _fire(self, conn: Connection[Record], row: Record, tick: datetime, result: FireResult) -> str | None:
        """Store the tick's message; why it was refused, or None."""
        tenant_id, slug, topic = row["tenant_id"], row["slug"], row["topic"]
        try:
            if row["status"] != "active":
                raise errors.Forbidden(f"the tenant is {row['status']}")
            metadata = msgspec.json.decode(row["metadata"]) if row["metadata"] is not None else {}
            metadata.update(skiplock_schedule=row["name"], skiplock_tick=rfc3339(tick))
            item = build_item(
                self.queue.settings, topic, bytes(row["payload"]), metadata, row["key"], 0, row["priority"]
            )
            async with self.repository.savepoint(conn):
                _, inserted, polls = await self.queue.store_tick(conn, tenant_id, item)
        except errors.SkiplockError as exc:
            result.refused += 1
            reason = _CODES.get(type(exc), "invalid")
            self.metrics.schedule_refused.labels(slug, self.metrics.topic(slug, topic), reason).inc()
            return f"{reason}: {exc.message}"
        result.fired += 1
        result.woken.append((tenant_id, topic, inserted, polls))
        self.metrics.schedule_ticks.labels(slug, self.metrics.topic(slug, topic)).inc()
        return None


_CODES: dict[type[errors.SkiplockError], str] = {
    errors.SchemaViolation: "schema_violation",
    errors.QueueFull: "queue_full",
    errors.QuotaExceeded: "quota_exceeded",
    errors.RateLimited: "rate_limited",
    errors.PayloadTooLarge: "payload_too_large",
    errors.Forbidden: "tenant_suspended",
}
