"""The topic schemas' rows (`mq.schemas.sql`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from mq.schemas import sql

Record = asyncpg.Record


class SchemaRepository:
    def __init__(self, pool: asyncpg.Pool[Any]) -> None:
        self.pool = pool

    async def list(self, tenant_id: int) -> list[Record]:
        return await self.pool.fetch(sql.LIST, tenant_id)

    async def get(self, tenant_id: int, topic: str, version: int | None = None) -> Record | None:
        row: Record | None = await self.pool.fetchrow(sql.GET, tenant_id, topic, version)
        return row

    async def add_version(
        self,
        tenant_id: int,
        topic: str,
        schema_format: str,
        schema_json: str,
        check: Callable[[Record | None], Awaitable[None]],
    ) -> Record:
        """Store the next version, after `check` has seen the current one (None: the topic has none) in the same
        transaction, with the topic's other replacements waiting; `check` raises to refuse."""
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(sql.LOCK, tenant_id, topic)
            current: Record | None = await conn.fetchrow(sql.GET, tenant_id, topic, None)
            await check(current)
            version = 1 if current is None else current["version"] + 1
            row: Record | None = await conn.fetchrow(sql.INSERT, tenant_id, topic, version, schema_format, schema_json)
            assert row is not None  # INSERT ... RETURNING answers its row
            return row

    async def delete(self, tenant_id: int, topic: str) -> int:
        status: str = await self.pool.execute(sql.DELETE, tenant_id, topic)
        return int(status.rsplit(" ", 1)[-1])
