"""Statements that find messages by id use the primary key whatever the statistics say.

A tenant the statistics do not know yet (new, or grown since the last ANALYZE) is estimated at a handful of rows,
and a status the last ANALYZE never saw at none. With the tenant and status conditions beside the id, the planner
then preferred reading every live message of the tenant through messages_dequeue_idx: a batch ack of 1,000 took up
to 2 s under `make loadtest-fairness`, and one nack 525 ms among a tenant's 1,000,000 messages. Here the statistics
are taken while the table holds one small tenant; then another gets 100,000 messages, and each plan is checked in
both of Postgres's modes (custom plans for the first executions of a prepared statement, then a generic one).
"""

from __future__ import annotations

import asyncpg
import pytest

from mq.db.engine import asyncpg_dsn
from mq.queue import sql as queue_sql
from mq.queue.sql import dequeue, insert, settle
from mq.queue.types import PLAIN
from tests.support.servers import migrated_database

FLOOD = 100_000
MODES = ("force_custom_plan", "force_generic_plan")


async def _stale_statistics(conn: asyncpg.Connection) -> tuple[int, list[asyncpg.Record]]:
    quiet = await conn.fetchval("INSERT INTO tenants (slug, name) VALUES ('quiet', 'quiet') RETURNING id")
    flood = await conn.fetchval("INSERT INTO tenants (slug, name) VALUES ('flood', 'flood') RETURNING id")
    await conn.execute(
        """INSERT INTO messages (id, tenant_id, topic, payload, status, max_retries)
           SELECT gen_random_uuid(), $1, 'steady', '\\x00', 'pending', 3 FROM generate_series(1, 50)""",
        quiet,
    )
    await conn.execute("ANALYZE messages")
    await conn.execute(
        """INSERT INTO messages (id, tenant_id, topic, payload, status, receipt, max_retries, available_at)
           SELECT gen_random_uuid(), $1, 'flood-' || (g % 4), '\\x00',
                  CASE WHEN g % 10 = 0 THEN 'processing' ELSE 'pending' END,
                  CASE WHEN g % 10 = 0 THEN gen_random_uuid() END, 3, now() + interval '1 hour'
           FROM generate_series(1, $2) AS g""",
        flood,
        FLOOD,
    )
    leased = await conn.fetch(
        "SELECT id, receipt FROM messages WHERE tenant_id = $1 AND status = 'processing' LIMIT 1000", flood
    )
    return flood, leased


async def _plan(conn: asyncpg.Connection, mode: str, statement: str, *args: object) -> str:
    async with conn.transaction():
        await conn.execute(f"SET LOCAL plan_cache_mode = {mode}")
        rows = await conn.fetch(f"EXPLAIN (COSTS OFF) {statement}", *args)
    return "\n".join(r[0][:160] for r in rows)


@pytest.mark.parametrize("mode", MODES)
async def test_by_id_statements_take_the_primary_key_under_stale_statistics(pg_server_url: str, mode: str) -> None:
    async with migrated_database(pg_server_url, "skiplock_plans") as url:
        conn = await asyncpg.connect(asyncpg_dsn(url))
        try:
            tenant, leased = await _stale_statistics(conn)
            ids = ",".join(str(r["id"]) for r in leased)
            receipts = ",".join(str(r["receipt"]) for r in leased)
            one, receipt = leased[0]["id"], leased[0]["receipt"]
            values = {
                "tenant": tenant,
                "ids": ids,
                "receipts": receipts,
                "message": one,
                "receipt": receipt,
                "error": "e",
                "dlq_default": True,
                "delay": None,
                "backoff_default": [1],
                "seconds": 30,
                "expire_default": False,
            }
            statements = {
                "ack batch": settle.ack_statement(PLAIN),
                "nack": settle.nack_statement(PLAIN, merged=False),
                "extend": settle.extend_statement(PLAIN),
                "superseded": settle.SUPERSEDED[False],
                "expired twins": insert.EXPIRE_TWINS["message"],
            }
            plans = {
                name: await _plan(conn, mode, statement.text, *statement.args(**values))
                for name, statement in statements.items()
            }
            for name, text in {
                "lease holder": queue_sql.MESSAGE_LEASE_HOLDER,
                "leased metadata": queue_sql.MESSAGE_LEASED_METADATA,
            }.items():
                plans[name] = await _plan(conn, mode, text, tenant, one)
            # the inflight keeper's recount, for a topic's leases (group 0), with one lease recorded
            await conn.execute(
                """INSERT INTO inflight_leases (tenant_id, topic, group_id, receipt, message_id, deadline)
                   VALUES ($1, 'flood-0', 0, $2, $3, now() + interval '1 hour')""",
                tenant,
                receipt,
                one,
            )
            recount = await _plan(conn, mode, queue_sql.INFLIGHT_RECOUNT, tenant, "flood-0", 0, 60.0)
            plans["inflight recount"] = recount
        finally:
            await conn.close()
    for name, plan in plans.items():
        assert "messages_pkey" in plan and "messages_dequeue_idx" not in plan, f"{name}:\n{plan}"


@pytest.mark.parametrize("count", [1, 37, 100])
async def test_a_dequeue_keeps_one_plan_that_probes_the_primary_key(pg_server_url: str, count: int) -> None:
    """A dequeue under its count's cap (`mq.queue.sql.dequeue`, `dequeue[plain]:128`): a prepared statement goes
    over to the generic plan after Postgres' first custom ones (nothing planned again per dequeue), that plan leases
    each row through the primary key, never a hash join over the tenant's messages, and each dequeue takes exactly
    its count."""
    async with migrated_database(pg_server_url, "skiplock_plans") as url:
        conn = await asyncpg.connect(asyncpg_dsn(url))
        try:
            tenant = await conn.fetchval("INSERT INTO tenants (slug, name) VALUES ('t', 't') RETURNING id")
            await conn.execute(
                """INSERT INTO messages (id, tenant_id, topic, payload, status, max_retries, available_at)
                   SELECT gen_random_uuid(), $1, 'deep', '\\x00', 'pending', 3, now() - interval '1 minute'
                   FROM generate_series(1, 10000)""",
                tenant,
            )
            await conn.execute("ANALYZE messages")
            statement = dequeue.dequeue_statement(PLAIN, count=count)
            values = {
                "tenant": tenant,
                "topic": "deep",
                "dlq_default": True,
                "count": count,
                "visibility": 30.0,
                "secret": "0" * 32,
                "consumer": "c",
            }
            prepared = await conn.prepare(statement.text)
            taken = [len(await prepared.fetch(*statement.args(**values))) for _ in range(8)]
            generic, custom = await conn.fetchrow(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1", statement.text
            )
            # the generic plan itself: EXPLAIN of a statement with bound values plans for the values
            await conn.execute("SET plan_cache_mode = force_generic_plan")
            await conn.execute(f"PREPARE lease AS {statement.text}")
            literals = ", ".join(f"'{value}'" for value in statement.args(**values))
            plan = "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN (COSTS OFF) EXECUTE lease({literals})"))
        finally:
            await conn.close()
    assert taken == [count] * 8
    assert generic >= 2 and custom <= 6, (generic, custom)
    assert "messages_pkey" in plan and "Seq Scan" not in plan and "Hash" not in plan, plan
