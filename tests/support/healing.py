"""The background jobs that repair state, run on demand at any moment a test chooses (`mq.jobs`).

Each is the production class, run once against the test's database: the tests prove that running one between (or
during) any two operations never gives a consumer group a message it finished, never owes one it was not owed,
and never loses one it was.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from mq.db.repository import OperationsRepository
from mq.history.partitions import LogPartitions
from mq.jobs import (
    ArchiveReaper,
    AuditTrimmer,
    DeleteReaper,
    ExpiryReaper,
    GaugeRefresher,
    GroupSettler,
    InflightKeeper,
    OrphanSweeper,
)
from mq.metrics import Metrics

#: Every job that repairs or reclaims state, by its name in `job_runs`.
HEALING_JOBS = (
    "group_settler",
    "inflight_keeper",
    "expiry_reaper",
    "delete_reaper",
    "orphan_sweeper",
    "audit_trimmer",
    "archive_reaper",
    "gauges",
)


async def run_job(pool: asyncpg.Pool[Any], name: str, tenant_id: int | None = None, topic: str | None = None) -> int:
    """Run one job now, waiting for its lock; the rows it touched. The group settler runs as if the caches'
    staleness had passed for every group of `tenant_id` (of its `topic`, when given): each is settled again, its
    whole topic in its span. The moment it runs is the test's, not the clock's."""
    repository = OperationsRepository(pool)
    job: Any
    if name == "group_settler":
        if tenant_id is not None:
            await pool.execute(
                "UPDATE consumer_groups SET settled_at = NULL WHERE tenant_id = $1 AND topic = coalesce($2, topic)",
                tenant_id,
                topic,
            )
        job = GroupSettler(repository, stale_seconds=0, margin_seconds=86_400)
    elif name == "inflight_keeper":
        job = InflightKeeper(repository)
    elif name == "expiry_reaper":
        job = ExpiryReaper(repository, 1000, expire_to_dlq=False, dlq_enabled=True)
    elif name == "delete_reaper":
        job = DeleteReaper(repository, 1000, failed_retention_seconds=0)
    elif name == "orphan_sweeper":
        job = OrphanSweeper(repository, 1000)
    elif name == "audit_trimmer":
        job = AuditTrimmer(repository, 1000, retention_days=1)
    elif name == "archive_reaper":
        job = ArchiveReaper(repository, LogPartitions(86_400), Metrics())
    elif name == "gauges":
        job = GaugeRefresher(repository)
    else:
        raise ValueError(f"no job {name!r}")
    result = await job.run_once(wait=True)
    assert result.ran, name
    return int(result.rows)


async def run_every_job(pool: asyncpg.Pool[Any], tenant_id: int | None = None) -> None:
    for name in HEALING_JOBS:
        await run_job(pool, name, tenant_id)
