"""Background jobs: the expiry reaper, the delete reaper and the queue gauges, each a plain class whose `run_once`
tests call directly and `workers` schedules.

Any number of processes may run the same job: a run first takes the job's Postgres advisory lock (session level, on
a connection held for the run) and is skipped when another process holds it. A process that dies loses its
connection and with it the lock, so another replica's next tick takes over: hand-over within one interval. Work is
done in batches of `batch_size` rows, one statement (one short transaction) each, never one huge transaction. The
end of every run is written to `job_runs`, so any instance can report when each job last ran.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mq import redis_keys
from mq.audit import sql as audit_sql
from mq.cron import normalized, reaper_cron
from mq.db.repository import JobConnection, OperationsRepository, as_rows
from mq.history.partitions import LogPartitions
from mq.metrics import Metrics
from mq.queue import sql
from mq.queue.configs import STALE_SECONDS
from mq.settings import Settings
from mq.topics import sql as topics_sql

log = logging.getLogger(__name__)

#: Broadcast channel announcing a new delete-reaper schedule (the payload is the schedule).
SCHEDULE_CHANNEL = redis_keys.SCHEDULE_CHANNEL
#: How far before a group's creation, and after its staleness, its settle looks for strays (clocks of the instances
#: that made the messages' ids, an insert that began before the group).
SETTLE_MARGIN_SECONDS = 5.0
#: How long a deleted group's tombstone outlives its last delivery: longer than any transaction that may have read
#: the group before its deletion (an insert that then mints the group a delivery; the data plane's statements time
#: out at `db_statement_timeout_seconds`, 15 s), so that the settler still releases what such a transaction minted.
TOMBSTONE_SECONDS = 600.0
DELETE_SCHEDULE_SETTING = "delete_reaper_schedule"


@dataclass(frozen=True)
class JobResult:
    """What a run did: rows touched in total and per (tenant slug, topic); `ran` is false when another process
    held the job's lock."""

    ran: bool
    rows: int = 0
    by_topic: Counter[tuple[str, str]] | None = None


class _BatchJob:
    """Runs `statement` tenant by tenant under the job's lock. `candidates` names the tenants with work (a read of
    at most `batch_size` rows, no row lock: on Citus a multi-shard read, where a row lock across shards is refused);
    each one's batches follow, until a batch comes back smaller than `batch_size`; then the candidates again, until
    none is left or a round changed nothing (what is left is locked by a request, and waits for the next run)."""

    name = ""
    candidates = ""  # $1 how many rows to look at, then `_candidate_arguments()`; returns tenant ids
    statement = ""  # $1 the tenant, $2 the batch size, then `_arguments()`; returns rows (tenant, topic, n)

    def __init__(self, repository: OperationsRepository, batch_size: int) -> None:
        self.repository = repository
        self.batch_size = batch_size

    def _candidate_arguments(self) -> tuple[Any, ...]:
        return ()

    def _arguments(self) -> tuple[Any, ...]:
        raise NotImplementedError

    async def _tenant_done(self, conn: JobConnection, tenant_id: int) -> None:
        """After a tenant's last batch of a run."""

    async def run_once(self, *, wait: bool = False) -> JobResult:
        """One full run: every batch of every tenant until nothing is left. `wait`: block for the lock instead of
        skipping."""
        started = time.perf_counter()
        async with self.repository.job_lock(self.name, wait=wait) as conn:
            if conn is None:
                return JobResult(ran=False)
            by_topic: Counter[tuple[str, str]] = Counter()
            while tenants := await conn.column(self.candidates, self.batch_size, *self._candidate_arguments()):
                changed = 0
                for tenant_id in dict.fromkeys(tenants):
                    while True:
                        rows = await conn.batch(self.statement, tenant_id, self.batch_size, *self._arguments())
                        by_topic.update(as_rows(rows))
                        changed += (n := sum(r.n for r in rows))
                        if n < self.batch_size:
                            break
                    await self._tenant_done(conn, tenant_id)
                if not changed:
                    break
            total = sum(by_topic.values())
            await conn.record_run(self.name, time.perf_counter() - started, total)
        if total:
            log.info("%s: %d messages", self.name, total)
        return JobResult(ran=True, rows=total, by_topic=by_topic)


class ExpiryReaper(_BatchJob):
    """Marks pending and processing messages past `expires_at` as expired, or moves them to their DLQ."""

    name = "expiry_reaper"
    candidates = sql.EXPIRE_DUE
    statement = sql.EXPIRE_BATCH

    def __init__(
        self, repository: OperationsRepository, batch_size: int, expire_to_dlq: bool, dlq_enabled: bool
    ) -> None:
        super().__init__(repository, batch_size)
        self.expire_to_dlq = expire_to_dlq
        self.dlq_enabled = dlq_enabled

    def _arguments(self) -> tuple[Any, ...]:
        return self.expire_to_dlq, self.dlq_enabled


class OrphanSweeper(_BatchJob):
    """Deletes what enqueues racing a forced tenant delete wrote under the deleted tenant's id (reported under the
    tenant's id, its slug being gone), and the tombstones left by those deletes once they stay empty."""

    name = "orphan_sweeper"
    candidates = sql.ORPHANS_DUE
    statement = sql.ORPHANS_SWEEP

    def _arguments(self) -> tuple[Any, ...]:
        return ()

    async def _tenant_done(self, conn: JobConnection, tenant_id: int) -> None:
        # an hour after the delete, racing enqueues are long over: a tombstone with nothing left under it goes
        if not await conn.connection.fetchval(sql.ORPHANS_LEFT, tenant_id):
            await conn.connection.execute(sql.ORPHANS_BURY, tenant_id)


class DeleteReaper(_BatchJob):
    """Deletes expired messages, and failed ones older than the retention."""

    name = "delete_reaper"
    candidates = sql.DELETE_DUE
    statement = sql.DELETE_BATCH

    def __init__(self, repository: OperationsRepository, batch_size: int, failed_retention_seconds: int) -> None:
        super().__init__(repository, batch_size)
        self.failed_retention_seconds = failed_retention_seconds

    def _candidate_arguments(self) -> tuple[Any, ...]:
        return (float(self.failed_retention_seconds),)

    def _arguments(self) -> tuple[Any, ...]:
        return (float(self.failed_retention_seconds),)


class AuditTrimmer(_BatchJob):
    """Drops audit entries older than the retention (`audit_retention_days`), a batch at a time."""

    name = "audit_trimmer"
    candidates = audit_sql.AUDIT_DUE
    statement = audit_sql.AUDIT_TRIM

    def __init__(self, repository: OperationsRepository, batch_size: int, retention_days: int) -> None:
        super().__init__(repository, batch_size)
        self.retention_seconds = retention_days * 86400.0

    def _candidate_arguments(self) -> tuple[Any, ...]:
        return (self.retention_seconds,)

    def _arguments(self) -> tuple[Any, ...]:
        return (self.retention_seconds,)


class GroupSettler:
    """Owes each new consumer group's topic its strays, once, after the config caches' staleness
    (`sql.GROUP_SETTLE`): messages an instance that did not know the topic had groups stored as for a topic without
    them, never owed to any group. Then releases what deleted groups still owe (a deletion's request or background
    task was interrupted, or met leased deliveries). docs/semantics.md, "Healing jobs", says why neither can give
    a group a message twice or lose one."""

    name = "group_settler"

    def __init__(
        self,
        repository: OperationsRepository,
        stale_seconds: float = STALE_SECONDS,
        margin_seconds: float = SETTLE_MARGIN_SECONDS,
        tombstone_seconds: float = TOMBSTONE_SECONDS,
    ) -> None:
        self.repository = repository
        self.stale_seconds = stale_seconds
        self.margin_seconds = margin_seconds
        self.tombstone_seconds = tombstone_seconds

    async def run_once(self, *, wait: bool = False) -> JobResult:
        started = time.perf_counter()
        async with self.repository.job_lock(self.name, wait=wait) as conn:
            if conn is None:
                return JobResult(ran=False)
            by_topic: Counter[tuple[str, str]] = Counter()
            due = (self.stale_seconds, self.margin_seconds)
            while unsettled := await conn.records(sql.GROUPS_UNSETTLED, *due):
                for tenant_id, group_id, topic, low, high in unsettled:
                    settle = (tenant_id, group_id, topic, low, high)
                    by_topic.update(as_rows(await conn.batch(sql.GROUP_SETTLE, *settle)))
            after = (0, 0)
            while tombstones := await conn.records(topics_sql.DELETED_GROUPS, *after):  # what deletions left
                for tenant_id, group_id in tombstones:
                    while await conn.column(topics_sql.GROUP_RELEASE, tenant_id, group_id, RELEASE_BATCH) != [0]:
                        pass
                    await conn.column(topics_sql.GROUP_FORGET, tenant_id, group_id, self.tombstone_seconds)
                after = tuple(tombstones[-1])
            total = sum(by_topic.values())
            await conn.record_run(self.name, time.perf_counter() - started, total)
        if total:
            log.warning(
                "%s: %d messages stored as for a topic without consumer groups, now owed to its groups",
                self.name,
                total,
            )
        return JobResult(ran=True, rows=total, by_topic=by_topic)


class InflightKeeper:
    """The limited topics' counters (`mq.queue.sql`, "Concurrency limits"), their own and their consumer groups':
    each recounted from its recorded leases, after deleting those past their deadline or whose message (delivery)
    is no longer leased by them (a purge, a delete, a TTL expiry of a leased message); the counters of topics no
    longer limited, or of groups deleted, dropped."""

    name = "inflight_keeper"

    def __init__(self, repository: OperationsRepository) -> None:
        self.repository = repository

    async def run_once(self, *, wait: bool = False) -> JobResult:
        started = time.perf_counter()
        async with self.repository.job_lock(self.name, wait=wait) as conn:
            if conn is None:
                return JobResult(ran=False)
            c = conn.connection
            freed = 0
            for tenant_id, topic, group_id, limited in await c.fetch(sql.INFLIGHT_COUNTERS):
                if not limited:
                    await c.execute(sql.INFLIGHT_DROP_GROUP, tenant_id, topic, group_id)
                    continue
                async with c.transaction():
                    await c.execute(sql.INFLIGHT_LOCK, tenant_id, topic, group_id)
                    recount = (tenant_id, topic, group_id, sql.RESERVATION_LOST_SECONDS)
                    freed += await c.fetchval(sql.INFLIGHT_RECOUNT, *recount) or 0
            await conn.record_run(self.name, time.perf_counter() - started, freed)
        return JobResult(ran=True, rows=freed)


class ArchiveReaper:
    """The message log's partitions (`mq.history.partitions`): the next ones made ahead, those below every topic's
    visible floor dropped whole."""

    name = "archive_reaper"

    def __init__(self, repository: OperationsRepository, partitions: LogPartitions, metrics: Metrics) -> None:
        self.repository = repository
        self.partitions = partitions
        self.metrics = metrics

    async def run_once(self, *, wait: bool = False) -> JobResult:
        started = time.perf_counter()
        async with self.repository.job_lock(self.name, wait=wait) as conn:
            if conn is None:
                return JobResult(ran=False)
            await self.partitions.ensure(conn.connection)
            dropped, partitions = await self.partitions.drop_expired(conn.connection)
            self.metrics.partitions_dropped.inc(partitions)
            await conn.record_run(self.name, time.perf_counter() - started, dropped)
        return JobResult(ran=True, rows=dropped)


#: Deliveries of a deleted group released per statement.
RELEASE_BATCH = 5000

#: A scheduled gauge recount rests at least this many times as long as the last one took.
GAUGES_REST_FACTOR = 3


class GaugeRefresher:
    """Recounts messages by tenant, topic and status into `topic_gauges`, replaced whole in one transaction, and
    samples them for the admin console's charts."""

    name = "gauges"

    def __init__(self, repository: OperationsRepository) -> None:
        self.repository = repository
        self._ended = float("-inf")
        self._took = 0.0

    async def run_once(self, *, wait: bool = False) -> JobResult:
        """`wait`: run now, waiting for another instance's run; otherwise a scheduled run, skipped while the last
        one ended less than `GAUGES_REST_FACTOR` times its duration ago (a recount of a large table is a pass over
        all of it: on 10,000,000 messages, every 40 s or so instead of every 15)."""
        if not wait and time.perf_counter() - self._ended < GAUGES_REST_FACTOR * self._took:
            return JobResult(ran=False)
        started = time.perf_counter()
        async with self.repository.job_lock(self.name, wait=wait) as conn:
            if conn is None:
                return JobResult(ran=False)
            rows = await conn.replace_gauges()
            await conn.record_samples()
            self._ended = time.perf_counter()
            self._took = self._ended - started
            await conn.record_run(self.name, self._took, rows)
        return JobResult(ran=True, rows=rows)


class DeleteSchedule:
    """The delete reaper's cron schedule: `worker_settings` overrides the setting; a change is broadcast."""

    def __init__(
        self, repository: OperationsRepository, default: str, publish: Callable[[str, bytes], Awaitable[None]]
    ) -> None:
        self.repository = repository
        self.default = default
        self._publish = publish

    async def get(self) -> str:
        stored = await self.repository.setting(DELETE_SCHEDULE_SETTING)
        return self.default if stored is None else stored

    async def put(self, schedule: str) -> str:
        """Store a valid schedule (InvalidRequest otherwise) and tell every instance; returns it as stored."""
        schedule = normalized(schedule)
        reaper_cron(schedule)  # InvalidRequest for a bad one
        await self.repository.put_setting(DELETE_SCHEDULE_SETTING, schedule)
        await self._publish(SCHEDULE_CHANNEL, schedule.encode())
        return schedule


class Jobs:
    """The process's jobs, built from settings; `workers` schedules them, the admin routes run them on demand.
    `schedule_listeners` are told (with None) whenever some instance changed the delete reaper's schedule."""

    def __init__(
        self,
        repository: OperationsRepository,
        settings: Settings,
        publish: Callable[[str, bytes], Awaitable[None]],
        metrics: Metrics,
    ) -> None:
        self.settings = settings
        self.repository = repository
        self.metrics = metrics
        batch = settings.reaper_batch_size
        self.expiry = ExpiryReaper(repository, batch, settings.expire_to_dlq, settings.dlq_enabled)
        self.orphans = OrphanSweeper(repository, batch)
        self.delete = DeleteReaper(repository, batch, settings.failed_retention_seconds)
        self.audit = AuditTrimmer(repository, batch, settings.audit_retention_days)
        self.gauges = GaugeRefresher(repository)
        # a tombstone outlives the longest transaction by far, whatever the statement timeout
        tombstone = max(TOMBSTONE_SECONDS, 10 * settings.db_statement_timeout_seconds)
        self.groups = GroupSettler(repository, tombstone_seconds=tombstone)
        self.archive = ArchiveReaper(repository, LogPartitions(settings.history_partition_seconds), metrics)
        self.inflight = InflightKeeper(repository)
        self.schedule = DeleteSchedule(repository, settings.delete_reaper_schedule, publish)
        self.schedule_listeners: list[Callable[[], None]] = []

    def schedule_changed(self, _payload: bytes | None) -> None:
        """Broadcast handler (also called after a listener reconnects, when a change may have been missed)."""
        for listener in self.schedule_listeners:
            listener()

    async def expire(self, *, wait: bool = False) -> JobResult:
        """One expiry reaper run, counted in this process's metrics; then the orphan sweeper (rows of deleted
        tenants are not counted: they belong to no tenant any more), the audit trail's retention and the consumer
        groups' strays."""
        result = await self.expiry.run_once(wait=wait)
        await self.orphans.run_once(wait=wait)
        await self.audit.run_once(wait=wait)
        await self.groups.run_once(wait=wait)
        self.metrics.count_by_topic(self.metrics.expired, result.by_topic)
        return result

    async def delete_done(self, *, wait: bool = False) -> JobResult:
        """One delete reaper run, counted in this process's metrics."""
        result = await self.delete.run_once(wait=wait)
        self.metrics.count_by_topic(self.metrics.deleted, result.by_topic)
        return result
