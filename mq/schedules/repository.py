"""The schedules' rows (`mq.schedules.sql`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import asyncpg

from mq.schedules import sql

Record = asyncpg.Record
#: A connection of the pool, in the firer's transaction.
Connection = asyncpg.pool.PoolConnectionProxy


class ScheduleRepository:
    def __init__(self, pool: asyncpg.Pool[Any], *, citus: bool = False) -> None:
        self.pool = pool
        self._due_tenants = sql.DUE_TENANTS_CITUS if citus else sql.DUE_TENANTS

    async def of_tenant(self, tenant_id: int) -> list[Record]:
        return await self.pool.fetch(sql.LIST, tenant_id)

    async def get(self, tenant_id: int, name: str) -> Record | None:
        row: Record | None = await self.pool.fetchrow(sql.GET, tenant_id, name)
        return row

    async def put(self, tenant_id: int, name: str, values: Sequence[Any], limit: int) -> Record | None:
        """Create or replace; None when the schedule is new and the tenant already has `limit` schedules.
        `values`: topic, cron, timezone, payload, key, metadata (JSON text), priority, enabled, next_run_at."""
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(sql.SCHEDULES_LOCK, tenant_id)
            new = not await conn.fetchval(sql.SCHEDULE_EXISTS, tenant_id, name)
            if new and await conn.fetchval(sql.SCHEDULES_COUNT, tenant_id) >= limit:
                return None
            row: Record | None = await conn.fetchrow(sql.PUT, tenant_id, name, *values)
            assert row is not None  # an upsert answers its row
            return row

    async def delete(self, tenant_id: int, name: str) -> bool:
        status: str = await self.pool.execute(sql.DELETE, tenant_id, name)
        return status.endswith(" 1")

    async def due_tenants(self) -> list[int]:
        """The tenants with a due schedule (no row lock)."""
        return [row[0] for row in await self.pool.fetch(self._due_tenants)]

    @asynccontextmanager
    async def firing(self) -> AsyncIterator[Connection[Record]]:
        """One transaction of the firer, for one tenant: what it takes stays locked until the ticks are stored and
        moved on."""
        async with self.pool.acquire() as conn, conn.transaction():
            yield conn

    @staticmethod
    async def due(conn: Connection[Record], tenant_id: int, limit: int) -> list[Record]:
        return await conn.fetch(sql.DUE, tenant_id, limit)

    @staticmethod
    @asynccontextmanager
    async def savepoint(conn: Connection[Record]) -> AsyncIterator[None]:
        """A tick's own savepoint: a refused enqueue is undone without the rest of the batch."""
        async with conn.transaction():
            yield

    @staticmethod
    async def advance(
        conn: Connection[Record],
        keys: Sequence[tuple[int, str]],
        next_runs: Sequence[datetime],
        ticks: Sequence[datetime],
        refusals: Sequence[str | None],
    ) -> None:
        await conn.execute(
            sql.ADVANCE, [k[0] for k in keys], [k[1] for k in keys], list(next_runs), list(ticks), list(refusals)
        )
