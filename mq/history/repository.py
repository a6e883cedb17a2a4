"""The message log's reads and writes (`mq.history.sql`)."""

from __future__ import annotations

import uuid
from datetime import datetime

import asyncpg

from mq.history import sql

Record = asyncpg.Record


class HistoryRepository:
    def __init__(self, pool: asyncpg.Pool[asyncpg.Record]) -> None:
        self.pool = pool

    async def page(
        self,
        tenant_id: int,
        topic: str,
        window_seconds: int | None,
        after: tuple[datetime, uuid.UUID],
        since: datetime,
        until: datetime,
        key: str | None,
        limit: int,
        *,
        for_replay: bool = False,
    ) -> list[Record]:
        """`for_replay`: only the columns a replay takes (`sql.REPLAY_PAGE`), the id as a UUID."""
        statement = sql.REPLAY_PAGE if for_replay else sql.PAGE
        return await self.pool.fetch(
            statement, tenant_id, topic, window_seconds, after[0], after[1], since, until, limit, key
        )

    async def trim(self, tenant_id: int, topic: str, window_seconds: int | None, before: datetime) -> int:
        return int(await self.pool.fetchval(sql.TRIM, tenant_id, topic, window_seconds, before))

    async def story_entry(
        self, tenant_id: int, topic: str, window_seconds: int | None, since: datetime, message_id: uuid.UUID
    ) -> Record | None:
        return await self.pool.fetchrow(sql.STORY_ENTRY, tenant_id, topic, window_seconds, since, message_id)

    async def story_replayed(
        self, tenant_id: int, topic: str, window_seconds: int | None, since: datetime, message_id: uuid.UUID
    ) -> list[Record]:
        return await self.pool.fetch(sql.STORY_REPLAYED, tenant_id, topic, window_seconds, since, str(message_id))
