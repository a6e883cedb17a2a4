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
    on_citus,
    schema_problem,
)
from mq.db.models import Base, include_name
from mq.migration import migrate


async def test_models_match_migrations(database_url: str) -> None:
    engine = create_engine(database_url)

    def diff(connection: Connection) -> list[object]:
        context = MigrationContext.configure(connection, opts={"compare_type": True, "include_name": include_name})
        return list(compare_metadata(context, Base.metadata))

    async with engine.connect() as conn:
        differences = await conn.run_sync(diff)
    await engine.dispose()
    assert differences == []


# Every key (primary or unique) of a table that holds a tenant's rows leads with its tenant id: what one tenant's
# request reads or changes is one range of each index, and (issue 42) one shard. Not so: users and their grants,
# the control plane's, found by username at a login before any tenant is known (and platform admins have none).
KEYED_ELSEWHERE = {"users_pkey", "users_username_key", "grants_pkey", "grants_unique"}
KEYS = """
SELECT c.conname AS name, c.conrelid::regclass::text AS table_name,
       array(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, position)
             JOIN pg_attribute AS a ON a.attrelid = c.conrelid AND a.attnum = k.attnum ORDER BY k.position) AS columns
FROM pg_constraint AS c
WHERE c.contype IN ('p', 'u') AND c.connamespace = 'public'::regnamespace
  AND EXISTS (SELECT FROM pg_attribute AS a
              WHERE a.attrelid = c.conrelid AND a.attname IN ('tenant_id', 'tenant') AND NOT a.attisdropped)"""


async def test_every_tenant_scoped_key_leads_with_the_tenant(db: asyncpg.Pool) -> None:  # type: ignore[type-arg]
    keys = await db.fetch(KEYS)
    if await on_citus(db):  # the shards of the reference tables a coordinator holds are its own tables, named so
        shards = {
            r[0] for r in await db.fetch("SELECT logicalrelid::regclass::text || '_' || shardid FROM pg_dist_shard")
        }
        keys = [k for k in keys if k["table_name"] not in shards]
    assert {k["table_name"] for k in keys} >= {"messages", "deliveries", "consumer_groups", "topic_gauges"}
    wrong = [(k["table_name"], k["name"], k["columns"]) for k in keys if k["columns"][0] != "tenant_id"]
    assert sorted(name for _, name, _ in wrong) == sorted(KEYED_ELSEWHERE), wrong


async def test_dequeue_uses_the_dequeue_index(db: asyncpg.Pool) -> None:  # type: ignore[type-arg]
    from mq.queue.sql.dequeue import dequeue_statement
    from mq.queue.types import DeliveryPlan

    citus = await on_citus(db)
    dequeue = dequeue_statement(DeliveryPlan(), citus=citus)
    arguments = dequeue.args(
        tenant=1, topic="t", count=10, visibility=30.0, secret="0" * 32, dlq_default=True, consumer="consumer"
    )
    async with db.acquire() as conn, conn.transaction():
        if citus:  # the setting below reaches the worker that plans the tenant's shard
            await conn.execute("SET LOCAL citus.propagate_set_commands = 'local'")
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


async def test_the_contract_step_keys_the_audit_trail_by_tenant_and_drops_what_the_release_before_kept(
    empty_database: str,
) -> None:
    """`2026_11_30_tenant_keys_contract` on a database the release before left: its platform-wide entries written
    with a NULL tenant are kept under tenant 0, the key is (tenant_id, id), and the slug-keyed gauges, the tombstone
    trigger and its function are gone."""
    await asyncio.to_thread(migrate, empty_database, "2026_11_29_gauges_by_tenant")
    conn = await asyncpg.connect(asyncpg_dsn(empty_database))
    try:
        await conn.execute(
            "INSERT INTO audit_log (id, tenant_id, action, target) VALUES"
            " (gen_random_uuid(), NULL, 'platform.login_refused', 'x'), (gen_random_uuid(), 7, 'topic.purge', 'y')"
        )
        await conn.execute("INSERT INTO queue_gauges VALUES ('t', 'q', 'pending', 1, NULL)")
        await asyncio.to_thread(migrate, empty_database)
        rows = await conn.fetch("SELECT tenant_id, action FROM audit_log ORDER BY action")
        assert [tuple(r) for r in rows] == [(0, "platform.login_refused"), (7, "topic.purge")]
        key = await conn.fetchval(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'audit_log_pkey'"
        )
        assert key == "PRIMARY KEY (tenant_id, id)"
        left = await conn.fetchval(
            """SELECT array[to_regclass('queue_gauges'), to_regclass('group_gauges'),
                            to_regclass('audit_log_tenant_idx'), to_regclass('audit_log_new_key')]::text[]"""
        )
        assert left == [None, None, None, None]
        assert await conn.fetchval("SELECT to_regclass('audit_log_id_idx')::text") == "audit_log_id_idx"
        assert not await conn.fetchval(
            "SELECT EXISTS (SELECT FROM pg_trigger WHERE tgname = 'consumer_groups_tombstone')"
        )
        assert await conn.fetchval("SELECT to_regproc('skiplock_group_tombstone_v2')") is None
    finally:
        await conn.close()
