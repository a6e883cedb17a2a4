"""`make bench-citus`: Skiplock on the Citus cluster of `../shared/citus` beside Skiplock on one Postgres with the
same settings (`cluster.sh plain-start`: Postgres 15 on 9710, fsync off as the cluster's nodes), in the same run.

Each workload (the API's own from `bench.harness.workloads`) runs on both in interleaved rounds. Besides msg/s,
per message: the API server's CPU, each Postgres node's CPU (the plain server; the coordinator and the workers),
and the transactions each node ran (pg_stat_database: a statement outside a transaction is one, so on a worker
it counts the tasks the coordinator sent it). On one 2-core machine three Postgres servers cannot show scale; what
they show is what a message costs each node, which is what decides how far more workers go: with N workers of
the coordinator's size, and the API on cores of its own, the cluster carries about min(N / worker µs, 1 /
coordinator µs) messages per µs of CPU (docs/scale-out.md, "Scale, measured").

Environment: SKIPLOCK_BENCH_SECONDS (3), SKIPLOCK_BENCH_ROUNDS (3), SKIPLOCK_BENCH_CLIENTS (8),
SKIPLOCK_BENCH_CITUS_WORKLOADS (single_enqueue,grouped_enqueue,batch_enqueue_100,dequeue_100_ack,dequeue_1_ack):
`grouped_enqueue` is single enqueues to a topic of two consumer groups (each message stored and two deliveries
minted), the insert with the most steps.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import msgspec
import psutil

from bench.harness import (
    CLIENTS,
    PAYLOAD_B64,
    RAW_SCHEMA,
    ROOT,
    ROUNDS,
    SECONDS,
    TENANT,
    Workload,
    connected,
    cpu_seconds,
    git_commit,
    postmaster_cpu,
    run_clients,
    start_api,
    workloads,
)
from mq.db.engine import asyncpg_dsn
from tests.support.servers import database_url_on, migrated_database, redis_server, scratch_dir, stop_server

SERVERS = {
    "postgres": "postgresql://postgres@127.0.0.1:9710/postgres",
    "citus": "postgresql://postgres@127.0.0.1:9700/postgres",
}
WORKLOADS = os.environ.get(
    "SKIPLOCK_BENCH_CITUS_WORKLOADS", "single_enqueue,grouped_enqueue,batch_enqueue_100,dequeue_100_ack,dequeue_1_ack"
).split(",")
GROUPED_TOPIC = "bench-grouped"


def grouped_enqueue(pool: asyncpg.Pool[Any], http: list[Any]) -> Workload:
    """Single enqueues to a topic with two consumer groups (made through the API once, so every instance's cache
    knows the topic is grouped); each round starts from empty tables."""
    body = msgspec.json.encode({"topic": GROUPED_TOPIC, "payload": PAYLOAD_B64})

    async def setup() -> None:
        await pool.execute("TRUNCATE bench_raw, messages, deliveries")
        if not await pool.fetchval("SELECT count(*) FROM consumer_groups WHERE topic = $1", GROUPED_TOPIC):
            for name in ("one", "two"):
                status, _ = await http[0].request(
                    "POST", f"/api/topics/{GROUPED_TOPIC}/consumer-groups", {"consumer_group": name}
                )
                assert status == 201, status

    async def enqueue(c: Any) -> int:
        status, _ = await c.request("POST", "/api/messages", body)
        assert status == 201, status
        return 1

    async def nothing(_: Any) -> int:
        return 0

    return Workload("grouped_enqueue", 0.0, setup, nothing, setup, enqueue)


@dataclass
class Node:
    """One Postgres server of a backend: its role, its postmaster's CPU, and its database's transactions."""

    role: str
    port: int
    cpu: Callable[[], float]
    url: str


@dataclass
class Figures:
    messages: int = 0
    seconds: float = 0.0
    server_cpu: float = 0.0
    node_cpu: dict[str, float] = field(default_factory=dict)
    node_xacts: dict[str, float] = field(default_factory=dict)
    rates: list[float] = field(default_factory=list)


def _postmaster(port: int) -> psutil.Process:
    for connection in psutil.net_connections(kind="tcp"):
        if connection.status == psutil.CONN_LISTEN and connection.laddr.port == port and connection.pid:
            return psutil.Process(connection.pid)
    raise RuntimeError(f"no Postgres listens on {port}: ../shared/citus/cluster.sh start, then plain-start")


async def _nodes(database_url: str) -> list[Node]:
    conn = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        port = await conn.fetchval("SELECT inet_server_port()")
        citus = await conn.fetchval("SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')")
        workers = (
            [r[0] for r in await conn.fetch("SELECT nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY 1")]
            if citus
            else []
        )
    finally:
        await conn.close()
    name = asyncpg_dsn(database_url).rsplit("/", 1)[1]
    nodes = [Node("coordinator" if citus else "postgres", port, postmaster_cpu(_postmaster(port)), database_url)]
    for n, worker in enumerate(workers, start=1):
        url = database_url_on(f"postgresql://postgres@127.0.0.1:{worker}/postgres", name)
        nodes.append(Node(f"worker {n}", worker, postmaster_cpu(_postmaster(worker)), url))
    return nodes


async def _xacts(node: Node) -> float:
    conn = await asyncpg.connect(asyncpg_dsn(node.url))
    try:
        value = await conn.fetchval(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"
        )
        return float(value)
    finally:
        await conn.close()


@dataclass
class Backend:
    name: str
    nodes: list[Node]
    server_cpu: Callable[[], float]
    http: list[Any]
    work: dict[str, Workload]
    figures: dict[str, Figures] = field(default_factory=dict)

    async def round(self, key: str) -> None:
        w = self.work[key]
        await w.api_setup()
        await asyncio.sleep(1.5)  # (the setup's transactions reach pg_stat_database)
        xacts = {n.role: await _xacts(n) for n in self.nodes}
        cpu = {n.role: n.cpu() for n in self.nodes}
        server = self.server_cpu()
        result = await run_clients(key, self.http, w.api_op, SECONDS)
        server = self.server_cpu() - server
        cpu = {n.role: n.cpu() - cpu[n.role] for n in self.nodes}
        await asyncio.sleep(1.5)  # (the backends report their counts once idle)
        xacts = {n.role: await _xacts(n) - xacts[n.role] - 1 for n in self.nodes}  # (less the reading's own)
        f = self.figures.setdefault(key, Figures())
        f.messages += result.messages
        f.seconds += result.seconds
        f.server_cpu += server
        f.rates.append(result.rate)
        for role in cpu:
            f.node_cpu[role] = f.node_cpu.get(role, 0.0) + cpu[role]
            f.node_xacts[role] = f.node_xacts.get(role, 0.0) + xacts[role]


async def main() -> None:
    scratch = scratch_dir("skiplock-bench-citus-")
    with redis_server("SKIPLOCK_BENCH_REDIS_URL") as redis_url, contextlib.ExitStack() as servers:
        async with contextlib.AsyncExitStack() as stack:
            backends = []
            for name, server_url in SERVERS.items():
                database_url = await stack.enter_async_context(migrated_database(server_url, "skiplock_bench"))
                api = start_api(database_url, redis_url, scratch / name)
                servers.callback(stop_server, api)
                pool = await asyncpg.create_pool(asyncpg_dsn(database_url), min_size=2, max_size=CLIENTS + 2)
                assert pool is not None
                stack.push_async_callback(pool.close)
                await pool.execute(RAW_SCHEMA)  # (the workloads' setups empty the raw loop's table too)
                tenant_id = await pool.fetchval("SELECT id FROM tenants WHERE slug = $1", TENANT)
                http = await connected(api.base_url)
                every = [*workloads(pool, tenant_id), grouped_enqueue(pool, http)]
                work = {w.key: w for w in every if w.key in WORKLOADS}
                backends.append(Backend(name, await _nodes(database_url), cpu_seconds(api.process.pid), http, work))
            for key in WORKLOADS:
                for round_number in range(ROUNDS):
                    for backend in backends if round_number % 2 == 0 else reversed(backends):
                        await backend.round(key)
            _report(backends)


def _report(backends: list[Backend]) -> None:
    plain, citus = backends
    print(
        f"\nSkiplock on Citus beside one Postgres: {CLIENTS} clients, {ROUNDS} interleaved rounds of {SECONDS:g} s, "
        f"commit {git_commit()}, {os.cpu_count()} cores\n"
    )
    head = "workload             one PG msg/s  Citus msg/s  ratio   server µs/msg PG/Citus   Postgres µs/msg"
    print(head + "   xacts/msg (PG | coordinator, workers)   N where the coordinator limits")
    rows = []
    for key in WORKLOADS:
        p, c = plain.figures[key], citus.figures[key]
        ratio = statistics.median(b / a for a, b in zip(p.rates, c.rates, strict=True) if a)
        per = {"plain": p, "citus": c}
        us = {name: {role: cpu / f.messages * 1e6 for role, cpu in f.node_cpu.items()} for name, f in per.items()}
        xacts = {name: {role: n / f.messages for role, n in f.node_xacts.items()} for name, f in per.items()}
        coordinator = us["citus"]["coordinator"]
        workers = sum(v for role, v in us["citus"].items() if role != "coordinator")
        limit = workers / coordinator if coordinator else float("inf")
        row: dict[str, Any] = {
            "workload": key,
            "postgres_rate": p.messages / p.seconds,
            "citus_rate": c.messages / c.seconds,
            "ratio": ratio,
            "server_us": {"postgres": p.server_cpu / p.messages * 1e6, "citus": c.server_cpu / c.messages * 1e6},
            "node_us": us,
            "xacts_per_message": xacts,
            "coordinator_limits_at_workers": limit,
        }
        rows.append(row)
        citus_us = ", ".join(f"{role} {v:.1f}" for role, v in us["citus"].items())
        citus_x = ", ".join(f"{v:.2f}" for v in xacts["citus"].values())
        print(
            f"{key:<20} {row['postgres_rate']:>12,.0f} {row['citus_rate']:>12,.0f} {ratio:>6.2f}   "
            f"{row['server_us']['postgres']:>8.1f} / {row['server_us']['citus']:<8.1f}  "
            f"PG {us['plain']['postgres']:.1f} | {citus_us}   "
            f"{xacts['plain']['postgres']:.2f} | {citus_x}   {limit:.1f}"
        )
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    path = out / "bench-citus.json"
    path.write_text(json.dumps({"commit": git_commit(), "rows": rows}, indent=2))
    print(f"written to {path.relative_to(ROOT)}")


if __name__ == "__main__":
    asyncio.run(main())
