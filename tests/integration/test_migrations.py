"""The Alembic migrations and the SQLAlchemy models describe the same schema."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import asyncpg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

from mq.db.engine import (
    BASELINE,
    SchemaTooOld,
    alembic_config,
    asyncpg_dsn,
    create_engine,
    migrate,
    schema_problem,
)
from mq.db.models import Base, include_name


async def test_models_match_migrations(database_url: str) -> None:
    engine = create_engine(database_url)

    def diff(connection: Connection) -> list[object]:
        context = MigrationContext.configure(connection, opts={"compare_type": True, "include_name": include_name})
        return list(compare_metadata(context, Base.metadata))

    async with engine.connect() as conn:
        differences = await conn.run_sync(diff)
    await engine.dispose()
    assert differences == []


async def test_dequeue_uses_the_dequeue_index(db: asyncpg.Pool) -> None:  # type: ignore[type-arg]
    from mq.queue.sql.dequeue import dequeue_statement
    from mq.queue.types import DeliveryPlan

    dequeue = dequeue_statement(DeliveryPlan())
    arguments = dequeue.args(
        tenant=1, topic="t", count=10, visibility=30.0, secret="0" * 32, dlq_default=True, consumer="consumer"
    )
    async with db.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL enable_seqscan = off")
        rows = await conn.fetch("EXPLAIN " + dequeue.text, *arguments)
        plan = "\n".join(r[0] for r in rows)
    assert "messages_dequeue_idx" in plan


@pytest.mark.slow
@pytest.mark.parametrize("command", ["api", "worker"])
async def test_a_release_refuses_a_database_without_its_schema(command: str, empty_database: str) -> None:
    """In a deployment the API and the worker never migrate (a hook or a one-shot service does): on a database
    without the schema, or with an older one, they exit at once, naming the command to run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKIPLOCK_")}
    env |= {"SKIPLOCK_DATABASE_URL": empty_database, "SKIPLOCK_REDIS_URL": "redis://127.0.0.1:1/0"}
    env |= {"SKIPLOCK_MIGRATE_ON_START": "false", "SKIPLOCK_PORT": "0", "SKIPLOCK_WORKER_PORT": "0"}

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "skiplock", command],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    missing = await asyncio.to_thread(run)
    assert missing.returncode == 2
    assert "has no Skiplock schema: run `skiplock migrate` first" in missing.stderr
    first = ScriptDirectory.from_config(alembic_config(empty_database)).get_base()
    assert isinstance(first, str)
    await asyncio.to_thread(migrate, empty_database, first)
    older = await asyncio.to_thread(run)
    assert older.returncode == 2
    assert f"schema is at revision {first}" in older.stderr and "run `skiplock migrate`" in older.stderr


async def test_a_database_at_a_folded_revision_is_refused_with_what_to_do(empty_database: str) -> None:
    """The first migrations are folded into one (`migrations/versions/2026_11_28_baseline.py`): a database one of
    them left cannot go on from the middle of the fold, and `skiplock migrate` says what to do instead of Alembic's
    "Can't locate revision"; `skiplock api` and `worker` refuse to serve on it (not taking it for a later schema)."""
    folded = ScriptDirectory.from_config(alembic_config(empty_database)).get_revision(BASELINE).module.FOLDED
    assert len(folded) == 24 and BASELINE not in folded
    conn = await asyncpg.connect(asyncpg_dsn(empty_database))
    try:
        await conn.execute("CREATE TABLE alembic_version (version_num varchar(32) PRIMARY KEY)")
        await conn.execute("INSERT INTO alembic_version VALUES ($1)", folded[-1])
    finally:
        await conn.close()
    with pytest.raises(SchemaTooOld, match=f"at revision {folded[-1]}, .* a release from before the fold"):
        await asyncio.to_thread(migrate, empty_database)
    # the API and the worker, which never migrate in a deployment, refuse it with the same words
    problem = schema_problem(empty_database, folded[-1])
    assert problem is not None and "a release from before the fold" in problem
