"""The Alembic migrations and the SQLAlchemy models describe the same schema."""

from __future__ import annotations

import asyncpg
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection

from mq.db.engine import create_engine
from mq.db.models import Base


async def test_models_match_migrations(database_url: str) -> None:
    engine = create_engine(database_url)

    def diff(connection: Connection) -> list[object]:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))

    async with engine.connect() as conn:
        differences = await conn.run_sync(diff)
    await engine.dispose()
    assert differences == []


async def test_dequeue_uses_the_dequeue_index(db: asyncpg.Pool) -> None:  # type: ignore[type-arg]
    from mq.queue import sql

    async with db.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL enable_seqscan = off")
        rows = await conn.fetch("EXPLAIN " + sql.MESSAGE_DEQUEUE, 1, "t", 10, 30.0, "0" * 32, True)
        plan = "\n".join(r[0] for r in rows)
    assert "messages_dequeue_idx" in plan
