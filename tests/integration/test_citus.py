"""Skiplock on Citus (`mq.db.citus`, docs/scale-out.md): every table has a kind; on a Citus coordinator (`make
test-citus`) the tenants' tables are distributed by tenant, tenants spread over the workers, and each data-plane
statement of the registry runs as one task on its tenant's shard. On plain Postgres the distribution does nothing.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import httpx
import pytest

from bench import explain as sample
from mq.audit import sql as audit_sql
from mq.db import citus
from mq.db.routed import ROUTED, routed
from mq.db.statements import REGISTRY
from mq.ids import uuid7
from mq.migration import distribute, migrate
from mq.queue import sql as queue_sql
from mq.queue.sql.insert import InsertPlan, insert_statement
from mq.schedules import sql as schedules_sql
from tests.integration.helpers import b64, dequeue, enqueue, unb64
from tests.support import citus_node
from tests.support.servers import ADMIN, Server, new_database, start_server, stop_server
from tests.support.tenants import Tenant
from tests.support.waiting import eventually

MODES = ("force_custom_plan", "force_generic_plan")
#: The registered statements walked: the data plane's leases and their ends, and the requeues of dead letters. (A
#: capped tenant's gates, `admit`, is a function call, delegated to the worker: EXPLAIN shows no task;
#: test_schedules' caps run it there. The inserts: `test_inserts_run_as_one_call_on_the_tenants_worker`.)
DATA_PLANE = ("dequeue[", "ack[", "nack[", "extend[", "superseded[", "inflight_", "requeue[")
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
            if not name.startswith(DATA_PLANE) or "routed]" in name or "]:" in name:
                continue  # (the inserts, rows from parameters, go through the coordinator; what other modules
                # register depends on what the session imported; a routed call is checked with its statement; a
                # dequeue under a cap, `dequeue[plain]:128`, runs on one Postgres only)
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


@pytest.mark.usefixtures("on_citus")
@pytest.mark.parametrize("mode", MODES)
async def test_inserts_run_as_one_call_on_the_tenants_worker(db: asyncpg.Pool[Any], mode: str) -> None:
    """Each insert's Citus form (`insert_statement(plan, citus=True)`, a stepwise function: `mq.db.routed`) is one
    task, its call delegated to the tenant's worker, in both plan modes; run, every plan stores its rows, and each
    new message of a grouped topic is owed to the topic's group and has its delivery."""
    async with db.acquire() as conn:
        values = await _sample(conn)
        found = {}
        for plan in InsertPlan.every():
            if plan.admitted:
                continue  # (on Citus a capped insert passes its gates apart, then inserts uncapped)
            call = insert_statement(plan, citus=True)
            given = {**values, **sample.insert_sample(f"insert[{plan.name}]")}
            await conn.execute(f"SET plan_cache_mode = {mode}")
            rows = await conn.fetch("EXPLAIN (COSTS OFF) " + call.text, *call.bind(given))
            text = "\n".join(r[0] for r in rows)
            found[plan.name] = (re.findall(r"Task Count: (\d+)", text), text.count("Subplan"))
            # run as the server runs it: a generic plan of the function's INSERT ... SELECT Citus cannot make (it
            # makes each custom, as for the insert statements themselves)
            await conn.execute("RESET plan_cache_mode")
            await conn.fetch(call.text, *call.bind(given))
        owed = await conn.fetchrow(
            """SELECT count(*) AS owed, count(*) FILTER (WHERE m.owed <> (SELECT count(*) FROM deliveries AS d
                   WHERE d.tenant_id = $1 AND d.message_id = m.id)) AS wrong
               FROM messages AS m WHERE m.tenant_id = $1 AND m.owed IS NOT NULL""",
            values["tenant"],
        )
    assert found == dict.fromkeys(found, (["1"], 0))
    # 100 rows each: rows+grouped, uniform+grouped and rows+keyed+grouped new; +to_groups upserts those keys
    assert dict(owed) == {"owed": 300, "wrong": 0}


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


@pytest.mark.usefixtures("on_citus")
async def test_a_jobs_run_leaves_the_pool_delegating_function_calls(database_url: str) -> None:
    """After the gauges' run (its rollup across tenants stops Citus delegating function calls on its connection),
    the pool's connection still sends a routed statement to the tenant's worker: the run's connection is gone."""
    from mq.db.repository import OperationsRepository
    from mq.jobs import GaugeRefresher
    from tests.support.servers import asyncpg_dsn

    async with asyncpg.create_pool(asyncpg_dsn(database_url), min_size=1, max_size=1) as pool:
        async with pool.acquire() as conn:
            values = await _sample(conn)
        statement = REGISTRY["ack[grouped]"]

        async def tasks() -> list[str]:
            rows = await pool.fetch("EXPLAIN (COSTS OFF) " + routed(statement).text, *statement.args(**values))
            return re.findall(r"Task Count: (\d+)", "\n".join(r[0] for r in rows))

        assert await tasks() == ["1"]
        assert (await GaugeRefresher(OperationsRepository(pool)).run_once(wait=True)).ran
        assert await tasks() == ["1"]


#: What the console and the API's operators' routes run on one message or one topic (`mq.queue.repository`), with
#: their arguments after the tenant; outside the registry, so walked here (the requeues are in it).
OPERATOR_STATEMENTS = {
    "retry": (queue_sql.MESSAGE_RETRY, (uuid7(),)),
    "delete": (queue_sql.MESSAGE_DELETE, (uuid7(),)),
    "delete_many": (queue_sql.MESSAGE_DELETE_MANY, ("topic-3", [uuid7()])),
    "detail": (queue_sql.MESSAGE_GET_DETAIL, (uuid7(),)),
    "dlq_pending": (queue_sql.MESSAGE_DLQ_PENDING, ("topic-3.dlq",)),
}


@pytest.mark.usefixtures("on_citus")
async def test_the_operators_actions_run_on_their_tenants_shard(db: asyncpg.Pool[Any]) -> None:
    """A retry, a delete, a message's detail: never refused on the cluster (a clock in a change's CASE is,
    "non-IMMUTABLE functions are not allowed in CASE"), one task each. (The requeues are registered statements,
    routed functions there: `test_data_plane_statements_run_as_one_task` walks them.)"""
    async with db.acquire() as conn:
        tenant = (await _sample(conn))["tenant"]
        found = {}
        for name, (statement, arguments) in OPERATOR_STATEMENTS.items():
            try:
                rows = await conn.fetch("EXPLAIN (COSTS OFF) " + statement, tenant, *arguments)
            except asyncpg.PostgresError as exc:
                found[name] = f"refused: {exc}"
                continue
            plan = "\n".join(r[0] for r in rows)
            found[name] = "in steps" if plan.count("Task Count") > 1 else str(re.findall(r"Task Count: (\d+)", plan))
    assert found == dict.fromkeys(OPERATOR_STATEMENTS, "['1']")


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


@dataclass
class _Traffic:
    """One tenant's producer and consumer against a server: what each request was answered."""

    client: httpx.AsyncClient
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    stored: set[str] = field(default_factory=set)  # payloads answered 201
    maybe: set[str] = field(default_factory=set)  # payloads answered 503 (not stored, or stored as it failed)
    received: dict[str, list[float]] = field(default_factory=dict)  # payload -> when each lease of it was taken
    acked: set[str] = field(default_factory=set)
    slowest: float = 0.0
    running: bool = True

    async def _call(self, what: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        started = time.monotonic()
        r = await self.client.request(method, path, **kwargs)
        self.slowest = max(self.slowest, time.monotonic() - started)
        self.statuses[what, r.status_code] += 1
        if r.status_code == 503:
            assert r.headers.get("retry-after") and r.json()["code"] == "unavailable", r.text
        return r

    async def produce(self) -> None:
        n = 0
        while self.running:
            payload = f"m-{n}"
            n += 1
            r = await self._call("enqueue", "POST", "/api/messages", json={"topic": "t", "payload": b64(payload)})
            assert r.status_code in (201, 503), r.text
            (self.stored if r.status_code == 201 else self.maybe).add(payload)
            await asyncio.sleep(0.02 if r.status_code == 201 else 0.2)

    async def consume(self, *, until_empty: bool = False) -> None:
        while self.running or until_empty:
            body = {"topic": "t", "count": 10, "visibility_timeout_seconds": _VISIBILITY}
            r = await self._call("dequeue", "POST", "/api/messages/dequeue", json=body)
            assert r.status_code in (200, 503), r.text
            got = r.json()["messages"] if r.status_code == 200 else []
            if not got:
                if until_empty:
                    return
                await asyncio.sleep(0.05 if r.status_code == 200 else 0.2)
                continue
            for m in got:
                self.received.setdefault(unb64(m["payload"]).decode(), []).append(time.monotonic())
            acks = [{"id": m["id"], "receipt": m["receipt"]} for m in got]
            r = await self._call("ack", "POST", "/api/messages/ack", json={"acks": acks})
            assert r.status_code in (200, 503), r.text
            if r.status_code == 200:
                acked = {a["id"] for a in acks} - {f["id"] for f in r.json()["failed"]}
                self.acked |= {unb64(m["payload"]).decode() for m in got if m["id"] in acked}


#: The consumers' lease: a lease whose ack was answered 503 comes back after it, never before.
_VISIBILITY = 3


@pytest.mark.usefixtures("on_citus")
async def test_a_stopped_worker_stops_its_own_tenants_alone_and_loses_nothing(
    pg_server_url: str, server_env: dict[str, str]
) -> None:
    """docs/scale-out.md, "A worker's failure": tenants a and b, b's shards on a worker of their own; that worker
    stops (as a crash: immediately) while both enqueue, dequeue and ack. a goes on with no error; b is answered
    503 `unavailable` with Retry-After, never a 500, and no request hangs; after the worker is back, b goes on, and
    each tenant's messages are delivered once each (none twice inside a lease), none lost."""
    if not citus_node.available():
        pytest.skip("needs Debian's Postgres 15 with Citus (../shared/citus/install.sh)")
    with citus_node.citus_node() as node:
        async with new_database(pg_server_url, "skiplock_drill") as url:
            await asyncio.to_thread(migrate, url)  # (the tables' shards on the cluster's two workers)
            name = url.rsplit("/", 1)[1].split("?")[0]
            await _join(node, name, url)
            server = start_server({**server_env, "SKIPLOCK_DATABASE_URL": url})
            try:
                await _fail_and_recover(server, node, url)
            finally:
                stop_server(server)


async def _join(node: citus_node.Node, name: str, url: str) -> None:
    """The node joins this database's cluster (and no other's): the database and the extension on it, registered."""
    on_node = url.replace("127.0.0.1:9700", f"{node.host}:{node.port}").rsplit("/", 1)[0]
    admin = await asyncpg.connect(f"{on_node}/postgres")
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    conn = await asyncpg.connect(f"{on_node}/{name}")
    try:
        await conn.execute("CREATE EXTENSION citus")
    finally:
        await conn.close()
    coordinator = await asyncpg.connect(url)
    try:
        await coordinator.execute("SELECT citus_add_node($1, $2)", node.host, node.port)
    finally:
        await coordinator.close()


async def _fail_and_recover(server: Server, node: citus_node.Node, url: str) -> None:
    clients = {}
    async with httpx.AsyncClient(base_url=server.base_url, auth=ADMIN, timeout=30) as admin:
        for slug in ("drill-a", "drill-b"):
            r = await admin.post("/api/tenants", json={"slug": slug, "name": slug})
            assert r.status_code == 201, r.text
            clients[slug] = httpx.AsyncClient(
                base_url=server.base_url, auth=ADMIN, headers={"X-Tenant": slug}, timeout=30
            )
    db = await asyncpg.connect(url)
    try:
        b = await db.fetchval("SELECT id FROM tenants WHERE slug = 'drill-b'")
        mode = "shard_transfer_mode => 'block_writes'"
        shard = await db.fetchval(f"SELECT isolate_tenant_to_new_shard('messages', $1::bigint, 'CASCADE', {mode})", b)
        [placement] = await db.fetch(_PLACEMENT, b)
        await db.execute(
            f"SELECT citus_move_shard_placement($1::bigint, $2::text, $3::int, $4::text, $5::int, {mode})",
            shard,
            placement["nodename"],
            placement["nodeport"],
            node.host,
            node.port,
        )
        placed = {
            slug: (await db.fetch(_PLACEMENT, await db.fetchval("SELECT id FROM tenants WHERE slug = $1", slug)))[0][
                "nodeport"
            ]
            for slug in clients
        }
    finally:
        await db.close()
    assert placed["drill-b"] == node.port and placed["drill-a"] != node.port
    a, b_ = _Traffic(clients["drill-a"]), _Traffic(clients["drill-b"])
    try:
        tasks = [asyncio.create_task(job()) for t in (a, b_) for job in (t.produce, t.consume)]
        await asyncio.sleep(1.5)
        before = dict(a.statuses)
        node.stop()
        down = time.monotonic()
        await asyncio.sleep(4)
        b_down = Counter(b_.statuses)
        a_during = Counter(a.statuses) - Counter(before)
        node.start()
        await eventually(lambda: b_.statuses["enqueue", 201] > b_down["enqueue", 201] + 5, timeout=30)
        recovered = time.monotonic() - down
        for t in (a, b_):
            t.running = False
        await asyncio.gather(*tasks)
        await asyncio.sleep(_VISIBILITY + 0.5)  # leases whose acks were answered 503 come back
        for t in (a, b_):
            await t.consume(until_empty=True)
    finally:
        for c in clients.values():
            await c.aclose()
    print(
        f"drill: a {dict(a.statuses)}, b {dict(b_.statuses)}, b back after {recovered:.1f} s, "
        f"slowest request a {a.slowest:.2f} s, b {b_.slowest:.2f} s"
    )
    assert all(status < 300 for (_, status) in a_during), a_during  # a saw nothing of it
    assert {status for (_, status) in b_.statuses} <= {200, 201, 503} and b_.statuses["enqueue", 503] > 0
    assert max(a.slowest, b_.slowest) < 20  # no hang: the statement timeout (15 s) at most
    for t in (a, b_):
        assert t.stored <= t.acked <= t.stored | t.maybe  # every message stored is delivered and acked
        for payload, leases in t.received.items():  # none twice inside a lease
            assert all(later - earlier >= _VISIBILITY for earlier, later in itertools.pairwise(leases)), payload
