"""`OperationsRepository`: the statements of the maintenance jobs, the stored gauges and job runs, worker settings,
a tenant's quotas, the readiness probe and Postgres notifications. Rows come back as the named tuples below."""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

import asyncpg

from mq.db import sql


class TopicCount(NamedTuple):
    """Messages a job touched in one topic of one tenant (the tenant's slug, or its id once it is deleted)."""

    tenant: str
    topic: str
    n: int


class GaugeRow(NamedTuple):
    tenant: str
    topic: str
    status: str
    messages: int
    oldest_pending_age_seconds: float | None


class GroupGaugeRow(NamedTuple):
    tenant: str
    topic: str
    consumer_group: str
    pending: int
    processing: int
    oldest_pending_age_seconds: float | None


class TopicLimitRow(NamedTuple):
    tenant: str
    topic: str
    max_inflight: int | None
    max_depth: int | None
    throughput_limit: int | None


class JobRun(NamedTuple):
    job: str
    finished_at: float
    duration_seconds: float
    rows: int


def lock_key(job: str) -> int:
    """A job's advisory lock key: a stable 32-bit hash of its name, in a namespace of Skiplock's own."""
    return (0x5C1F << 32) | zlib.crc32(f"skiplock:job:{job}".encode())


#: Heap pages (8 KiB) the gauge recount reads per statement: 2 MiB, about 4,000 messages of 256 bytes (a few
#: milliseconds: shorter than a scheduler's time slice, so a request never waits long behind one).
GAUGES_PAGES_PER_STATEMENT = 256
#: After each range, the recount pauses this many times as long as the range took: it uses at most a quarter of a
#: core.
GAUGES_PAUSE_FACTOR = 3


class JobConnection:
    """The connection that holds a job's advisory lock: a run's statements go through it."""

    def __init__(self, conn: asyncpg.pool.PoolConnectionProxy[Any]) -> None:
        self._conn = conn

    async def batch(self, statement: str, *arguments: Any) -> list[TopicCount]:
        """One batch of a batch job: `statement` returns rows (tenant, topic, n)."""
        return [TopicCount(*row) for row in await self._conn.fetch(statement, *arguments)]

    @property
    def connection(self) -> asyncpg.pool.PoolConnectionProxy[Any]:
        """The lock holder's connection, for a job's own statements (`mq.history.partitions`)."""
        return self._conn

    async def column(self, statement: str, *arguments: Any) -> list[Any]:
        """The first column of `statement`'s rows."""
        return [row[0] for row in await self._conn.fetch(statement, *arguments)]

    async def records(self, statement: str, *arguments: Any) -> list[tuple[Any, ...]]:
        """`statement`'s rows as tuples."""
        return [tuple(row) for row in await self._conn.fetch(statement, *arguments)]

    async def replace_gauges(self) -> int:
        """Recount into `topic_gauges` and `consumer_group_gauges`, replaced whole in one transaction; returns the
        rows stored."""
        rows = await self._count_messages()
        groups = await self._conn.fetch(sql.GROUP_GAUGES)
        async with self._conn.transaction():
            await self._conn.execute(sql.GAUGES_CLEAR)
            await self._conn.copy_records_to_table(
                sql.GAUGES_TABLE, records=[tuple(r) for r in rows], columns=list(sql.GAUGES_COLUMNS)
            )
            await self._conn.execute(sql.GROUP_GAUGES_CLEAR)
            if groups:
                await self._conn.copy_records_to_table(
                    sql.GROUP_GAUGES_TABLE, records=[tuple(r) for r in groups], columns=list(sql.GROUP_GAUGES_COLUMNS)
                )
        return len(rows) + len(groups)

    async def _count_messages(self) -> list[tuple[Any, ...]]:
        """Rows (tenant id, topic, status, messages, oldest pending age) of the whole messages table.

        A small table is counted by one statement. A large one is a range of pages per statement, with a pause
        after each, so that the recount takes at most a quarter of one core and never holds it for long: on
        10,000,000 messages one statement took 1.8 s of a core every 15 s, and the hot path's p99 on 2 cores went
        from 15 to 266 ms while it ran (loadtests/RESULTS.md, "Scale with work"). Rows that an update moves to
        another page during the pass may be counted twice or not at all: a gauge of a busy queue is a moment's
        estimate in any case.
        """
        pages = await self._conn.fetchval(sql.MESSAGES_PAGES)
        if pages <= GAUGES_PAGES_PER_STATEMENT:
            return [tuple(r) for r in await self._conn.fetch(sql.GAUGES)]
        counts: dict[tuple[int, str, str], list[Any]] = {}
        first = 0
        while True:
            last = first + GAUGES_PAGES_PER_STATEMENT
            final = last > pages  # the last range is open-ended: pages added during the pass are counted too
            started = time.perf_counter()
            rows = await self._conn.fetch(sql.GAUGES_RANGE, first, 2**32 - 1 if final else last)
            for tenant_id, topic, status, n, oldest in rows:
                seen = counts.get((tenant_id, topic, status))
                if seen is None:
                    counts[(tenant_id, topic, status)] = [n, oldest]
                else:
                    seen[0] += n
                    if oldest is not None and (seen[1] is None or oldest > seen[1]):
                        seen[1] = oldest
            if final:
                break
            first = last
            await asyncio.sleep(GAUGES_PAUSE_FACTOR * (time.perf_counter() - started))
        return [(tenant_id, topic, status, n, oldest) for (tenant_id, topic, status), (n, oldest) in counts.items()]

    async def record_samples(self) -> None:
        """Copy the stored gauges into the console's depth samples, roll samples and activity up into 5-minute
        buckets; forget samples and activity past an hour, rollups past 8 days."""
        await self._conn.execute(sql.SAMPLES_RECORD)
        await self._conn.execute(sql.ROLLUPS_RECORD)
        await self._conn.execute(sql.ROLLUPS_FORGET)
        await self._conn.execute(sql.SAMPLES_FORGET)
        await self._conn.execute(sql.ACTIVITY_FORGET)

    async def record_run(self, job: str, seconds: float, rows: int) -> None:
        await self._conn.execute(sql.RECORD_RUN, job, seconds, rows)


class OperationsRepository:
    def __init__(self, pool: asyncpg.Pool[Any]) -> None:
        self.pool = pool
        self._citus: bool | None = None  # learnt by the first job's run

    @asynccontextmanager
    async def job_lock(self, job: str, *, wait: bool) -> AsyncIterator[JobConnection | None]:
        """The connection holding the job's lock, or None when another process holds it (and `wait` is false;
        with `wait`, block until it is free). The lock goes with the connection: released at exit or if the
        process dies.

        The hot-path pool does not reset connections it takes back, so a session lock must never go back to it:
        if anything (a cancellation, a lost connection) stops the unlock from completing, or strikes while the lock
        may have been granted, the connection is terminated instead, and its backend's locks die with it. A lock
        left in the pool would stop this job on every replica for as long as that connection lived.

        On Citus a run's connection never goes back either: after some of the jobs' statements across tenants (the
        console's rollups), Citus stops delegating function calls on that connection to the tenant's worker (a
        Citus bug), and every routed statement it then ran would run from the coordinator, not on the worker."""
        async with self.pool.acquire() as conn:
            if self._citus is None:
                self._citus = bool(await conn.fetchval(sql.ON_CITUS))
            key = lock_key(job)
            released = False
            try:
                if wait:
                    await conn.execute(sql.LOCK_WAIT, key)
                elif not await conn.fetchval(sql.LOCK_TRY, key):
                    released = True
                    yield None
                    return
                try:
                    yield JobConnection(conn)
                finally:
                    await conn.execute(sql.LOCK_RELEASE, key)
                    released = not self._citus
            finally:
                if not released:
                    conn.terminate()

    async def setting(self, name: str) -> str | None:
        value: str | None = await self.pool.fetchval(sql.SETTING_GET, name)
        return value

    async def put_setting(self, name: str, value: str) -> None:
        await self.pool.execute(sql.SETTING_PUT, name, value)

    async def gauges(self) -> list[GaugeRow]:
        return [GaugeRow(*row) for row in await self.pool.fetch(sql.GAUGES_READ)]

    async def group_gauges(self) -> list[GroupGaugeRow]:
        return [GroupGaugeRow(*row) for row in await self.pool.fetch(sql.GROUP_GAUGES_READ)]

    async def job_runs(self) -> list[JobRun]:
        return [JobRun(*row) for row in await self.pool.fetch(sql.JOB_RUNS)]

    async def topic_limits(self) -> list[TopicLimitRow]:
        return [TopicLimitRow(*row) for row in await self.pool.fetch(sql.TOPIC_LIMITS_READ)]

    async def connections(self) -> tuple[int, int]:
        """Client connections open on the Postgres server, and the most it accepts from ordinary roles."""
        row = await self.pool.fetchrow(sql.CONNECTIONS)
        assert row is not None
        return int(row[0]), int(row[1])

    async def quotas_json(self, tenant_id: int) -> str | None:
        """A tenant's quotas as JSON text (None for no such tenant)."""
        value: str | None = await self.pool.fetchval(sql.QUOTAS_OF_TENANT, tenant_id)
        return value

    async def ping(self) -> None:
        await self.pool.fetchval(sql.PING)

    async def notify(self, channel: str, payload: str) -> None:
        await self.pool.execute(sql.NOTIFY, channel, payload)


def as_rows(rows: Sequence[TopicCount]) -> dict[tuple[str, str], int]:
    """Counts per (tenant, topic)."""
    return {(r.tenant, r.topic): r.n for r in rows}
