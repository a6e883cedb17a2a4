"""`TopicRepository`: the topic administration's own statements (`mq.topics.sql`: pauses, keyset pages, series,
bulk jobs). Every method takes the tenant id first."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import asyncpg

from mq.queue.repository import refusal
from mq.queue.types import TopicConfig
from mq.topics import sql

Record = asyncpg.Record


class TopicRepository:
    def __init__(self, pool: asyncpg.Pool[Any]) -> None:
        self.pool = pool

    async def browse(
        self,
        tenant_id: int,
        topic: str | None,
        status: str | None,
        key: str | None,
        limit: int,
        offset: int,
        group: str | None = None,
    ) -> tuple[list[Record], int]:
        statuses = _known(status)
        filters = [v for v in (topic, key, group) if v is not None]
        shape = {"topic": topic is not None, "key": key is not None, "group": group is not None}
        async with self.pool.acquire() as conn:
            rows = await conn.fetch(sql.message_browse(statuses, **shape), tenant_id, *filters, limit, offset)
            total = await conn.fetchval(sql.message_count(statuses, **shape), tenant_id, *filters)
        return rows, int(total)

    async def purge(self, tenant_id: int, topic: str, statuses: Sequence[str] | None) -> int:
        chosen = sorted({s for status in statuses for s in _known(status)}) if statuses else _known(None)
        return _affected(await self.pool.execute(sql.message_purge(chosen), tenant_id, topic))

    async def delete_by_key(self, tenant_id: int, topic: str, key: str) -> int:
        return _affected(await self.pool.execute(sql.message_delete_by_key(_known(None)), tenant_id, topic, key))

    async def stats(self, tenant_id: int) -> list[Record]:
        return await self.pool.fetch(sql.STATS_BY_TOPIC_STATUS, tenant_id)

    async def topic_summaries(self, tenant_id: int) -> list[Record]:
        return await self.pool.fetch(sql.TOPIC_SUMMARY, tenant_id)

    async def put_topic_config(self, tenant_id: int, topic: str, config: TopicConfig, max_topics: int | None) -> Record:
        """Create or replace; a topic new to the tenant must fit `max_topics` (QuotaExceeded otherwise)."""
        try:
            async with self.pool.acquire() as conn, conn.transaction():
                if max_topics is not None:
                    await conn.execute(sql.TOPIC_CONFIG_ADMIT, tenant_id, topic, max_topics)
                row = await conn.fetchrow(
                    sql.TOPIC_CONFIG_PUT,
                    tenant_id,
                    topic,
                    config.max_retries,
                    config.message_ttl_seconds,
                    config.max_depth,
                    config.throughput_limit,
                    config.visibility_timeout_seconds,
                    config.retry_backoff_seconds,
                    config.dlq_enabled,
                    config.expire_to_dlq,
                    config.replayable,
                    config.replay_window_seconds,
                    config.max_inflight,
                )
        except asyncpg.PostgresError as exc:
            error = refusal(exc)
            if error is not None:
                raise error from None
            raise
        assert row is not None
        stored: Record = row
        return stored

    async def delete_topic_config(self, tenant_id: int, topic: str) -> bool:
        return await self.pool.fetchval(sql.TOPIC_CONFIG_DELETE, tenant_id, topic) is not None

    async def topic_configs(self, tenant_id: int) -> list[Record]:
        return await self.pool.fetch(sql.TOPIC_CONFIG_LIST, tenant_id)

    async def live_page(
        self,
        tenant_id: int,
        topic: str,
        after: tuple[int, datetime, uuid.UUID],
        scan: int,
        limit: int,
        conditions: list[str],
        key: str | None,
        metadata: str | None,
        group: str | None = None,
        reverse: bool = False,
    ) -> list[Record]:
        extra, (key_at, metadata_at, group_at) = _extra(8, key, metadata, group)
        statement = sql.live_page(
            conditions, key_at=key_at, metadata_at=metadata_at, group_at=group_at, reverse=reverse
        )
        return await self.pool.fetch(statement, tenant_id, topic, *after, scan, limit, *extra)

    async def done_page(
        self,
        tenant_id: int,
        topic: str,
        after: uuid.UUID,
        scan: int,
        limit: int,
        conditions: list[str],
        key: str | None,
        metadata: str | None,
        group: str | None = None,
        reverse: bool = False,
    ) -> list[Record]:
        extra, (key_at, metadata_at, group_at) = _extra(6, key, metadata, group)
        statement = sql.done_page(
            conditions, key_at=key_at, metadata_at=metadata_at, group_at=group_at, reverse=reverse
        )
        return await self.pool.fetch(statement, tenant_id, topic, after, scan, limit, *extra)

    async def pause(self, tenant_id: int, topic: str, by: str) -> None:
        await self.pool.execute(sql.PAUSE, tenant_id, topic, by)

    async def resume(self, tenant_id: int, topic: str) -> None:
        await self.pool.execute(sql.RESUME, tenant_id, topic)

    async def series(
        self, tenant_id: int, topic: str | None, seconds: float
    ) -> tuple[float, list[Record], list[Record]]:
        """Now (epoch seconds), the topic's (None: the tenant's) depth samples and activity buckets of the last
        `seconds`."""
        async with self.pool.acquire() as conn:
            now: float = await conn.fetchval(sql.NOW)
            if topic is None:
                samples = await conn.fetch(sql.TENANT_SAMPLES, tenant_id, seconds)
                activity = await conn.fetch(sql.TENANT_ACTIVITY, tenant_id, seconds)
            else:
                samples = await conn.fetch(sql.SAMPLES, tenant_id, topic, seconds)
                activity = await conn.fetch(sql.ACTIVITY, tenant_id, topic, seconds)
        return now, samples, activity

    async def rollups(self, tenant_id: int, topic: str | None, seconds: float) -> tuple[float, list[Record]]:
        """Now (epoch seconds) and the 5-minute rollups of the topic (None: the tenant) of the last `seconds`."""
        async with self.pool.acquire() as conn:
            now: float = await conn.fetchval(sql.NOW)
            rows = await conn.fetch(sql.ROLLUPS, tenant_id, topic or "", seconds)
        return now, rows

    async def create_bulk_job(
        self,
        tenant_id: int,
        job_id: uuid.UUID,
        topic: str,
        action: str,
        filter_json: str,
        by: str,
        rate_per_second: int | None = None,
    ) -> None:
        async with self.pool.acquire() as conn:
            await conn.execute(sql.BULK_FORGET, tenant_id)
            await conn.execute(sql.BULK_CREATE, job_id, tenant_id, topic, action, filter_json, by, rate_per_second)

    async def bulk_progress(
        self, tenant_id: int, job_id: uuid.UUID, matched: int, done: int, skipped: int, skipped_by: str
    ) -> str | None:
        """Count a batch (`skipped_by`: the job's skips so far by reason, JSON: the job is its only writer); returns
        the job's state ('cancelled' when someone asked it to stop)."""
        state: str | None = await self.pool.fetchval(
            sql.BULK_PROGRESS, tenant_id, job_id, matched, done, skipped, skipped_by
        )
        return state

    async def finish_bulk_job(self, tenant_id: int, job_id: uuid.UUID, state: str, error: str | None) -> None:
        await self.pool.execute(sql.BULK_FINISH, tenant_id, job_id, state, error)

    async def cancel_bulk_job(self, tenant_id: int, job_id: uuid.UUID) -> bool:
        return await self.pool.fetchval(sql.BULK_CANCEL, tenant_id, job_id) is not None

    async def bulk_job(self, tenant_id: int, job_id: uuid.UUID) -> Record | None:
        return await self.pool.fetchrow(sql.BULK_GET, tenant_id, job_id)

    async def bulk_jobs(self, tenant_id: int) -> list[Record]:
        return await self.pool.fetch(sql.BULK_LIST, tenant_id)

    async def usage(self) -> list[Record]:
        return await self.pool.fetch(sql.USAGE)

    # --- consumer groups ---------------------------------------------------------------------------------------

    async def create_group(self, tenant_id: int, topic: str, name: str, start: str) -> Record | None:
        """The new group's row, or None when the topic has one of that name. `earliest`: in the same transaction,
        the group owes every message already live in the topic."""
        async with self.pool.acquire() as conn, conn.transaction():
            row: Record | None = await conn.fetchrow(sql.GROUP_CREATE, tenant_id, topic, name, start)
            if row is not None and start == "earliest":
                await conn.execute(sql.GROUP_BACKFILL, tenant_id, topic, row["id"])
            return row

    async def groups(self, tenant_id: int, topic: str) -> list[Record]:
        return await self.pool.fetch(sql.GROUPS_LIST, tenant_id, topic)

    async def topics_with_group(self, tenant_id: int, name: str) -> list[str]:
        return [row[0] for row in await self.pool.fetch(sql.GROUP_TOPICS, tenant_id, name)]

    async def delete_group(self, tenant_id: int, topic: str, name: str) -> int | None:
        """Delete the group; its id, or None when there is no such group. What it owed is released after."""
        group_id: int | None = await self.pool.fetchval(sql.GROUP_DELETE, tenant_id, topic, name)
        return group_id

    async def release_group(self, tenant_id: int, group_id: int, batch: int) -> int:
        """Release up to `batch` of a deleted group's deliveries; how many went (0: none, or only locked ones,
        left)."""
        released: int = await self.pool.fetchval(sql.GROUP_RELEASE, tenant_id, group_id, batch)
        return released

    async def group_owes(self, tenant_id: int, group_id: int) -> bool:
        """Whether a deleted group still has deliveries (leased ones its release skipped)."""
        owes: bool = await self.pool.fetchval(sql.GROUP_OWES, tenant_id, group_id)
        return owes

    async def consumers(self, tenant_id: int, topic: str) -> list[Record]:
        return await self.pool.fetch(sql.TOPIC_CONSUMERS, tenant_id, topic)

    async def error_classes(self, tenant_id: int, topic: str, dead_letters: bool) -> list[Record]:
        return await self.pool.fetch(sql.TOPIC_ERROR_CLASSES, tenant_id, topic, dead_letters)


def _extra(first: int, *values: str | None) -> tuple[Sequence[Any], list[int]]:
    """The filter's optional parameters (those not None) and each one's position from `first` on (0: absent)."""
    extra: list[Any] = []
    positions: list[int] = []
    for value in values:
        if value is None:
            positions.append(0)
        else:
            extra.append(value)
            positions.append(first + len(extra) - 1)
    return extra, positions


def _known(status: str | None) -> list[str]:
    """The statuses a filter names (all for None); anything outside the fixed set is a programming error, the
    service validates input first."""
    if status is None:
        return sorted(sql.KNOWN_STATUSES)
    if status not in sql.KNOWN_STATUSES:
        raise ValueError(f"unknown status {status!r}")
    return [status]


def _affected(status: str) -> int:
    """Rows affected, from a command tag such as 'DELETE 3'."""
    return int(status.rsplit(" ", 1)[-1])
