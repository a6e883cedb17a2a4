"""`AuditRepository`: writes and pages the audit trail (`mq.audit.sql`)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from mq.audit import sql

Record = asyncpg.Record


class AuditRepository:
    def __init__(self, pool: asyncpg.Pool[Any]) -> None:
        self.pool = pool

    async def insert(
        self,
        entry_id: uuid.UUID,
        tenant_id: int | None,
        tenant: str | None,
        actor: str | None,
        action: str,
        target: str,
        details: str | None,
        request_id: str | None,
    ) -> None:
        await self.pool.execute(
            sql.AUDIT_INSERT, entry_id, tenant_id, tenant, actor, action, target, details, request_id
        )

    async def page(
        self, tenant_id: int | None, before: uuid.UUID | None, limit: int, filters: dict[str, Any]
    ) -> list[Record]:
        """`filters`: column condition -> value, each a parameter from $4 on."""
        conditions = [condition.format(f"${n}") for n, condition in enumerate(filters, start=4)]
        return await self.pool.fetch(sql.audit_page(conditions), tenant_id, before, limit, *filters.values())

    async def about(
        self, tenant_id: int, since: uuid.UUID, targets: list[str], actions: list[str] | None, limit: int
    ) -> list[Record]:
        return await self.pool.fetch(sql.AUDIT_ABOUT, tenant_id, since, targets, actions, limit)
