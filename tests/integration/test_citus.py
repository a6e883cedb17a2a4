"""Skiplock on Citus (`mq.db.citus`, docs/scale-out.md): every table has a kind; on a Citus coordinator (`make
test-citus`) the tenants' tables are distributed by tenant, tenants spread over the workers, and each data-plane
statement of the registry runs as one task on its tenant's shard. On plain Postgres the distribution does nothing.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import asyncpg
import httpx
import pytest

from bench import explain as sample
from mq.audit import sql as audit_sql
from mq.db import citus
from mq.db.engine import distribute
from mq.db.routed import ROUTED, routed
from mq.db.statements import REGISTRY
from mq.ids import uuid7
from mq.queue import sql as queue_sql
from mq.schedules import sql as schedules_sql
from tests.integration.helpers import b64, dequeue, enqueue
from tests.support.tenants import Tenant

MODES = ("force_custom_plan", "force_generic_plan")
#: The registered statements walked: the data plane's leases and their ends. (A capped tenant's gates, `admit`, is
#: a function call, delegated to the worker: EXPLAIN shows no task; test_schedules' caps run it there.)
DATA_PLANE = ("dequeue[", "ack[", "nack[", "extend[", "superseded[", "inflight_")
#: Registered statements that do not run as one task yet, and why (issue 42: each fixed comes off this list; the
#: test fails until it does).
NOT_ONE_TASK: dict[str, str] = {}


async def _is_citus(db: asyncpg.Pool[Any]) -> bool:
    return bool(await db.fetchval("SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')"))


@pytest.fixture
async def on_citus(db: asyncpg.Pool[Any]) -> None:
    if not await _is_citus(db):
        pytest.skip("plain Postgres: `make test-citus` runs this on a Citus coordinator")


async def test_every_table_has_a_kind(db: asyncpg.Pool[Any]) -> None:
    tables = await db.fetch(
        """SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p')
           AND NOT relispartition"""
    )
    assert citus.unclassified([t["relname"] for t in tables]) == []


async def test_plain_postgres_is_left_as_it_is(db: asyncpg.Pool[Any], database_url: str) -> None:
    if await _is_citus(db):
        pytest.skip("a Citus coordinator")
    assert await distribute(database_url) == []


@pytest.mark.usefixtures("on_citus")
async def test_tenant_tables_are_distributed_by_tenant(db: asyncpg.Pool[Any], database_url: str) -> None:
    kinds = {
        r["table"]: (r["kind"], r["column"], r["colocation"])
        for r in await db.fetch(
            """SELECT logicalrelid::regclass::text AS table, partmethod::text AS kind,
                      column_to_column_name(logicalrelid, partkey) AS column, colocationid AS colocation
               FROM pg_dist_partition"""
        )
    }
    messages = kinds["messages"][2]
    for table in citus.TENANT_TABLES:
        assert kinds[table] == ("h", "tenant_id", messages), table
    for table in citus.REFERENCE_TABLES:
        assert kinds[table][0] == "n", table
    assert not set(citus.COORDINATOR_TABLES) & set(kinds)
    functions = await db.fetch(
        """SELECT objid::regprocedure::text AS f, distribution_argument_index AS arg FROM pg_dist_object
           WHERE classid = 'pg_proc'::regclass"""
    )
    assert {r["f"].split("(")[0] for r in functions if r["arg"] == 0} >= {"skiplock_group_ack_v2", "skiplock_admit_v1"}
    assert await distribute(database_url) == []  # done: a second migration changes nothing


@pytest.mark.usefixtures("on_citus")
async def test_tenants_are_spread_over_the_workers(db: asyncpg.Pool[Any]) -> None:
    ids = [
        await db.fetchval(
            "INSERT INTO tenants (slug, name) VALUES ($1, $1) RETURNING id", f"spread-{uuid7().hex[-12:]}"
        )
        for _ in range(8)
    ]
    nodes = await db.fetch(
        """SELECT DISTINCT p.nodeport FROM unnest($1::bigint[]) AS t(id)
           JOIN pg_dist_placement AS pl ON pl.shardid = get_shard_id_for_distribution_column('messages', t.id)
           JOIN pg_dist_node AS p ON p.groupid = pl.groupid""",
        ids,
    )
    assert len(nodes) >= 2


@pytest.mark.usefixtures("on_citus")
async def test_each_routed_function_is_there_distributed_by_its_tenant(db: asyncpg.Pool[Any]) -> None:
    """`skiplock migrate` made a function for each statement Citus runs routed (`mq.db.routed`), and Citus runs
    each on the worker of its first argument, the tenant."""
    held = dict(
        await db.fetch(
            """SELECT p.proname, o.distribution_argument_index FROM pg_proc AS p
               LEFT JOIN pg_dist_object AS o ON o.classid = 'pg_proc'::regclass AND o.objid = p.oid
               WHERE p.proname LIKE 'skiplock\\_routed\\_%'"""
        )
    )
    assert ROUTED and {form.function: 0 for form in ROUTED.values()}.items() <= held.items()


@pytest.mark.usefixtures("on_citus")
@pytest.mark.parametrize("mode", MODES)
async def test_data_plane_statements_run_as_one_task(db: asyncpg.Pool[Any], mode: str) -> None:
    """Each registered statement (`mq.db.statements.REGISTRY`: the dequeue, ack, nack, extend and their variants;
    a statement's Citus form where it has one), EXPLAINed with sample values in both of Postgres' plan modes: one
    task, no subplan."""
    async with db.acquire() as conn:
        values = await _sample(conn)
        found: dict[str, str] = {}
        # (a session setting, not SET LOCAL: Citus delegates no function call inside a transaction block)
        await conn.execute(f"SET plan_cache_mode = {mode}")
        for name, statement in sorted(REGISTRY.items()):
            if not name.startswith(DATA_PLANE) or "routed]" in name:
                continue  # (the inserts, rows from parameters, go through the coordinator; what other modules
                # register depends on what the session imported; a routed call is checked with its statement)
            if "]" in name and name.replace("]", "+citus]") in REGISTRY:
                continue  # its Citus form (`dequeue_statement(..., citus=True)`) is what runs there
            given = {**values}
            if name.startswith("dequeue[") and "grouped" in name:
                given.update(group=values["group_id"], topic="topic-4")
            await sample.with_reservation(conn, statement, given)
            runs = routed(statement)  # what Citus runs: the statement, or its routed function's call
            explained = [runs.text]
            if runs is not statement:  # and the routed function's main statement, as the worker runs it
                prepared = await conn.prepare(statement.text)
                types = [
                    await conn.fetchval("SELECT format_type($1::oid, NULL)", t.oid) for t in prepared.get_parameters()
                ]
                explained.append(ROUTED[name].main(len(prepared.get_attributes()), types))
            for text in explained:
                try:
                    rows = await conn.fetch("EXPLAIN (COSTS OFF) " + text, *statement.args(**given))
                except asyncpg.PostgresError as exc:
                    found[name] = f"refused: {exc}"
                    break
                plan = "\n".join(r[0] for r in rows)
                tasks = re.findall(r"Task Count: (\d+)", plan)
                if tasks != ["1"] or "Subplan" in plan:
                    found[name] = f"tasks {tasks}, subplans {plan.count('Subplan')}"
                    break
        await conn.execute("RESET plan_cache_mode")
    failing = {name: why for name, why in found.items() if name not in NOT_ONE_TASK}
    assert not failing, failing
    assert not set(NOT_ONE_TASK) - set(found), (
        f"now one task (take them off NOT_ONE_TASK): {set(NOT_ONE_TASK) - set(found)}"
    )


async def _sample(conn: asyncpg.Connection[Any]) -> dict[str, Any]:
    """A tenant with messages of every status on topic-3 and a consumer group owed topic-4's."""
    tenant = await conn.fetchval(
        "INSERT INTO tenants (slug, name) VALUES ($1, $1) RETURNING id", f"routed-{uuid7().hex[-12:]}"
    )
    await conn.execute(
        """INSERT INTO messages (id, tenant_id, topic, key, payload, status, max_retries, available_at, receipt)
           SELECT gen_random_uuid(), $1, 'topic-' || (3 + g % 2), CASE WHEN g % 10 = 0 THEN 'key-' || g END,
                  '\\x00'::bytea, CASE WHEN g % 4 = 0 THEN 'processing' ELSE 'pending' END, 3,
                  now() + CASE WHEN g % 4 = 0 THEN interval '5 min' ELSE -interval '1 min' END,
                  CASE WHEN g % 4 = 0 THEN gen_random_uuid() END
           FROM generate_series(1, 400) AS g""",
        tenant,
    )
    group = await conn.fetchval(
        """INSERT INTO consumer_groups (tenant_id, topic, name, start) VALUES ($1, 'topic-4', 'bench', 'earliest')
           RETURNING id""",
        tenant,
    )
    await conn.execute(
        """INSERT INTO deliveries (tenant_id, group_id, message_id, priority, available_at, expires_at)
           SELECT tenant_id, $2, id, priority, now() - interval '1 minute', expires_at FROM messages
           WHERE tenant_id = $1 AND topic = 'topic-4'""",
        tenant,
        group,
    )
    leases = await conn.fetch(
        "SELECT id, receipt FROM messages WHERE tenant_id = $1 AND status = 'processing' LIMIT 100", tenant
    )
    return {**sample.SAMPLE, "tenant": tenant, "group_id": group, **sample.by_id_values(leases, leases[0])}


#: The jobs' statements that change rows, each run for one tenant (`mq.jobs`, `mq.schedules.firer`), with their
#: arguments after the tenant.
JOB_STATEMENTS = {
    "expiry_reaper": (queue_sql.EXPIRE_BATCH, (100, False, True)),
    "delete_reaper": (queue_sql.DELETE_BATCH, (100, 3600.0)),
    "orphan_sweeper": (queue_sql.ORPHANS_SWEEP, (100,)),
    "orphans_left": (queue_sql.ORPHANS_LEFT, ()),
    "audit_trimmer": (audit_sql.AUDIT_TRIM, (100, 86400.0)),
    "schedules_due": (schedules_sql.DUE, (10,)),
}


@pytest.mark.usefixtures("on_citus")
@pytest.mark.parametrize("mode", MODES)
async def test_the_jobs_work_tenant_by_tenant_one_task_each(db: asyncpg.Pool[Any], mode: str) -> None:
    """The reapers, the orphan sweeper, the audit trimmer and the schedules firer lock rows one tenant at a time:
    each such statement is one task on that tenant's worker (a row lock across workers is refused)."""
    async with db.acquire() as conn:
        tenant = (await _sample(conn))["tenant"]
        found = {}
        for name, (statement, arguments) in JOB_STATEMENTS.items():
            async with conn.transaction():
                await conn.execute(f"SET LOCAL plan_cache_mode = {mode}")
                rows = await conn.fetch("EXPLAIN (COSTS OFF) " + statement, tenant, *arguments)
            plan = "\n".join(r[0] for r in rows)
            found[name] = (re.findall(r"Task Count: (\d+)", plan), plan.count("Subplan"))
    assert found == dict.fromkeys(JOB_STATEMENTS, (["1"], 0))


_PLACEMENT = """
SELECT s.shardid, s.shardminvalue = s.shardmaxvalue AS alone, n.nodename, n.nodeport
FROM pg_dist_shard AS s JOIN pg_dist_placement AS p ON p.shardid = s.shardid
JOIN pg_dist_node AS n ON n.groupid = p.groupid
WHERE s.shardid = get_shard_id_for_distribution_column('messages', $1::bigint)"""


@pytest.mark.usefixtures("on_citus")
async def test_a_big_tenant_isolated_and_moved_while_traffic_runs_loses_nothing(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    """Placing tenants (docs/scale-out.md): a tenant isolated on a shard of its own
    (`isolate_tenant_to_new_shard`), then that shard moved to the other worker (`citus_move_shard_placement`),
    while a producer runs; a statement planned before its shard moved is answered 503 with Retry-After, never 500;
    leases taken before keep their receipts, and every message accepted is delivered once."""
    ids = {await enqueue(client, "placed", str(n)) for n in range(20)}
    leased = await dequeue(client, "placed", count=5)
    produced: set[str] = set()
    retried: list[int] = []
    moving = True

    async def produce() -> None:
        n = 0
        while moving:
            r = await client.post("/api/messages", json={"topic": "placed", "payload": b64(f"during-{n}")})
            if r.status_code == 503:  # planned before its shard moved: the client's retry goes through
                assert r.headers["retry-after"] and r.json()["code"] == "unavailable", r.text
                retried.append(n)
                continue
            assert r.status_code == 201, r.text  # writes wait while a shard is copied
            produced.add(r.json()["id"])
            n += 1
            await asyncio.sleep(0.01)

    producer = asyncio.create_task(produce())
    mode = "shard_transfer_mode => 'block_writes'"  # (logical replication needs wal_level = logical)
    isolate = f"SELECT isolate_tenant_to_new_shard('messages', $1::bigint, 'CASCADE', {mode})"
    shard = await db.fetchval(isolate, tenant.id)
    [placement] = await db.fetch(_PLACEMENT, tenant.id)
    assert placement["shardid"] == shard and placement["alone"]
    target = await db.fetchrow(
        "SELECT nodename, nodeport FROM pg_dist_node WHERE noderole = 'primary' AND shouldhaveshards"
        " AND nodeport <> $1 AND groupid <> 0 LIMIT 1",
        placement["nodeport"],
    )
    await db.execute(
        f"SELECT citus_move_shard_placement($1::bigint, $2::text, $3::int, $4::text, $5::int, {mode})",
        shard,
        placement["nodename"],
        placement["nodeport"],
        target["nodename"],
        target["nodeport"],
    )
    [moved] = await db.fetch(_PLACEMENT, tenant.id)
    assert moved["nodeport"] == target["nodeport"]
    moving = False
    await producer
    assert produced
    for m in leased:  # leases taken before both moves still ack
        r = await client.post(f"/api/messages/{m['id']}/ack", json={"receipt": m["receipt"]})
        assert r.status_code == 204, r.text
    got: list[str] = []
    while batch := await dequeue(client, "placed", count=100):
        got += [m["id"] for m in batch]
    assert sorted(got) == sorted((ids | produced) - {m["id"] for m in leased})
