"""`make bench`: Skiplock's HTTP API against raw SQL on the same Postgres, in the same run.

Raw SQL is asyncpg straight on a minimal queue table (`bench_raw`: id, visible_at, payload). The API runs as
`python -m skiplock` on the same Postgres server. Each workload runs CLIENTS concurrent clients for SECONDS per round;
the report gives messages/s, p50/p99 per request and the ratio API / raw SQL. Results go to bench/out/ as JSON.

Environment: SKIPLOCK_BENCH_DATABASE_URL (a server's maintenance DB; default: an embedded Postgres, fsync on),
SKIPLOCK_BENCH_CLIENTS (8), SKIPLOCK_BENCH_SECONDS (3), SKIPLOCK_BENCH_ROUNDS (3), SKIPLOCK_BENCH_PAYLOAD_BYTES
(100), SKIPLOCK_BENCH_PARTS (sql,pgmq,hot,auth,configs,groups,schemas,inflight,history,client,spark,longpoll,grpc,
schedules; pgmq: PGMQ's client against the same raw loop, `bench.peers`; schedules runs last, about 10 minutes, on
an API of its own without hosted workers: see bench/schedules.py).
Raw and API rounds alternate, so both see the same machine weather; the ratio is the median of the per-round ratios.

The auth part compares the API with HTTP Basic credentials against the same API whose authentication check is
replaced by a fixed caller (`bench.noauth`, a second server on the same database), request for request. The
configs part compares requests on a capped (max_depth) or throughput-limited topic with the same requests on an
unconfigured topic of the same server.
"""

from __future__ import annotations

import json
import os
import platform
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import msgspec
import psutil

from bench.consumer import measure_consumer
from bench.groups import measure_groups
from bench.grpc import measure_grpc
from bench.harness import (
    ADMIN,
    CLIENTS,
    PARTS,
    PAYLOAD,
    PAYLOAD_B64,
    POSTGRES_CPU,
    RAW_SCHEMA,
    ROOT,
    ROUNDS,
    SECONDS,
    TENANT,
    Side,
    compare,
    connected,
    cpu_seconds,
    git_commit,
    postgres_cpu,
    prefill,
    start_api,
    workloads,
)
from bench.history import measure_history
from bench.hotroutes import measure_hot_routes
from bench.httpclient import HttpConnection
from bench.inflight import measure_inflight
from bench.longpoll import measure_longpoll
from bench.peers import measure_pgmq
from bench.schedules import measure_schedules
from bench.schemas import measure_schemas
from bench.spark import measure_spark
from mq.db.engine import asyncpg_dsn
from tests.support.servers import (
    migrated_database,
    postgres_server,
    redis_server,
    scratch_dir,
    stop_server,
)


async def measure(pool: asyncpg.Pool[Any], base_url: str, tenant_id: int, server_pid: int) -> list[dict[str, Any]]:
    """Every workload in ROUNDS interleaved raw/API rounds: both sides see the same machine weather."""
    await pool.execute(RAW_SCHEMA)
    http = await connected(base_url)
    sql = [await pool.acquire() for _ in range(CLIENTS)]
    cpu = cpu_seconds(server_pid)
    rows = []
    try:
        for w in workloads(pool, tenant_id):
            rows.append(
                await compare(w.key, w.target, Side(w.raw_setup, sql, w.raw_op), Side(w.api_setup, http, w.api_op, cpu))
            )
    finally:
        for c in sql:
            await pool.release(c)
        for h in http:
            await h.close()
    return rows


async def measure_auth(
    pool: asyncpg.Pool[Any], base_url: str, noauth_url: str, pids: tuple[int, int]
) -> list[dict[str, Any]]:
    """The same requests with HTTP Basic credentials (one tenant admin per client, as separate services would
    be) and against the same API without the authentication check (`bench.noauth`), in interleaved rounds.
    Besides throughput, each server's CPU time per request (psutil): the steadier measure on a noisy machine."""
    servers = [psutil.Process(pid) for pid in pids]

    def cpu(n: int) -> float:
        times = servers[n].cpu_times()
        return float(times.user + times.system)

    host, port = base_url.removeprefix("http://").split(":")
    _, noauth_port = noauth_url.removeprefix("http://").split(":")
    users = []
    async with httpx.AsyncClient(base_url=base_url, auth=ADMIN, headers={"X-Tenant": TENANT}) as admin:
        for n in range(CLIENTS):
            user = (f"bench-producer-{n}-{uuid.uuid4().hex[:6]}", f"bench-password-{uuid.uuid4().hex}")
            r = await admin.post("/api/users", json={"username": user[0], "password": user[1], "role": "tenant_admin"})
            assert r.status_code == 201, r.text
            users.append((r.json()["username"], user[1]))  # a tenant's usernames are `<name>@<tenant>`
    basic = [HttpConnection(host, int(port), user, {}) for user in users]
    unchecked = [HttpConnection(host, int(noauth_port), user, {}) for user in users]
    for c in basic + unchecked:
        await c.connect()
    single = msgspec.json.encode({"topic": "bench-auth", "payload": PAYLOAD_B64})
    empty = msgspec.json.encode({"topic": "bench-auth-empty"})

    async def enqueue_one(c: HttpConnection) -> int:
        status, _ = await c.request("POST", "/api/messages", single)
        assert status == 201, status
        return 1

    async def dequeue_empty(c: HttpConnection) -> int:
        status, _ = await c.request("POST", "/api/messages/dequeue", empty)
        assert status == 200, status
        return 1

    for c in basic + unchecked:  # each credential is verified once (argon2), then served from the cache
        await dequeue_empty(c)

    async def truncate() -> None:
        await pool.execute("TRUNCATE messages")

    rows = []
    try:
        for key, op in (("auth_single_enqueue", enqueue_one), ("auth_dequeue_empty", dequeue_empty)):
            unchecked_side = Side(truncate, unchecked, op, lambda: cpu(1))
            basic_side = Side(truncate, basic, op, lambda: cpu(0))
            rows.append(await compare(key, 0.9, unchecked_side, basic_side, "the same API without the auth check"))
    finally:
        for c in basic + unchecked:
            await c.close()
    return rows


async def measure_topic_configs(
    pool: asyncpg.Pool[Any], base_url: str, tenant_id: int, server_pid: int
) -> list[dict[str, Any]]:
    """What a topic config costs: the same requests on a topic with a max_depth (never reached) or a
    throughput_limit (far above the achievable rate) and on an unconfigured topic, in interleaved rounds; with the
    server's CPU time per request on each side."""
    cpu = cpu_seconds(server_pid)
    http = await connected(base_url)
    for topic, config in (
        ("bench-capped", {"max_depth": 1_000_000_000}),
        ("bench-limited", {"throughput_limit": 1_000_000}),
    ):
        status, _ = await http[0].request("PUT", f"/api/topic-configs/{topic}", config)
        assert status == 200, status

    def enqueue_one(topic: str) -> Callable[[HttpConnection], Awaitable[int]]:
        body = msgspec.json.encode({"topic": topic, "payload": PAYLOAD_B64})

        async def op(c: HttpConnection) -> int:
            status, _ = await c.request("POST", "/api/messages", body)
            assert status == 201, status
            return 1

        return op

    def enqueue_100(topic: str) -> Callable[[HttpConnection], Awaitable[int]]:
        body = msgspec.json.encode({"topic": topic, "messages": [{"payload": PAYLOAD_B64}] * 100})

        async def op(c: HttpConnection) -> int:
            status, _ = await c.request("POST", "/api/messages/batch", body)
            assert status == 201, status
            return 100

        return op

    def dequeue_100_ack(topic: str) -> Callable[[HttpConnection], Awaitable[int]]:
        body = msgspec.json.encode({"topic": topic, "count": 100})

        async def op(c: HttpConnection) -> int:
            status, answer = await c.request("POST", "/api/messages/dequeue", body)
            assert status == 200, status
            if not answer["messages"]:
                return 0
            acks = [{"id": m["id"], "receipt": m["receipt"]} for m in answer["messages"]]
            status, _ = await c.request("POST", "/api/messages/ack", {"acks": acks})
            assert status == 200, status
            return len(acks)

        return op

    async def empty() -> None:
        await pool.execute("TRUNCATE messages")

    def prefilled(topic: str) -> Callable[[], Awaitable[None]]:
        async def setup() -> None:
            # more than either side can drain in a round (~30k msg/s here)
            await prefill(pool, tenant_id, topic, int(60_000 * SECONDS))

        return setup

    pairs = [
        ("capped_single_enqueue", empty, enqueue_one("bench-plain"), empty, enqueue_one("bench-capped")),
        ("capped_batch_enqueue_100", empty, enqueue_100("bench-plain"), empty, enqueue_100("bench-capped")),
        (
            "limited_dequeue_100_ack",
            prefilled("bench-plain"),
            dequeue_100_ack("bench-plain"),
            prefilled("bench-limited"),
            dequeue_100_ack("bench-limited"),
        ),
    ]
    rows = []
    try:
        for key, base_setup, base_op, setup, op in pairs:
            baseline = "the same requests on an unconfigured topic"
            rows.append(
                await compare(key, 0.9, Side(base_setup, http, base_op, cpu), Side(setup, http, op, cpu), baseline)
            )
    finally:
        for c in http:
            await c.close()
    return rows


async def main() -> None:
    scratch = scratch_dir("skiplock-bench-")
    with (
        postgres_server("SKIPLOCK_BENCH_DATABASE_URL") as server_url,
        redis_server("SKIPLOCK_BENCH_REDIS_URL") as redis_url,
    ):
        async with migrated_database(server_url, "skiplock_bench") as database_url:
            rows = await _measure_all(database_url, redis_url, scratch)
    report(rows)


async def _measure_all(database_url: str, redis_url: str, scratch: Path) -> list[dict[str, Any]]:
    api = start_api(database_url, redis_url, scratch / "data")
    noauth = start_api(database_url, redis_url, scratch / "data", module="bench.noauth")
    pool = await asyncpg.create_pool(asyncpg_dsn(database_url), min_size=CLIENTS + 2, max_size=CLIENTS + 4)
    assert pool is not None
    try:
        tenant_id = await pool.fetchval("SELECT id FROM tenants WHERE slug = $1", TENANT)
        POSTGRES_CPU[:] = [postgres_cpu(await pool.fetchval("SELECT pg_backend_pid()"))]
        rows = await measure(pool, api.base_url, tenant_id, api.process.pid) if "sql" in PARTS else []
        if "pgmq" in PARTS:
            rows += await measure_pgmq(pool, database_url, tenant_id)
        if "auth" in PARTS:
            rows += await measure_auth(pool, api.base_url, noauth.base_url, (api.process.pid, noauth.process.pid))
        if "configs" in PARTS:
            rows += await measure_topic_configs(pool, api.base_url, tenant_id, api.process.pid)
        if "groups" in PARTS:
            rows += await measure_groups(pool, api.base_url, tenant_id, api.process.pid)
        if "inflight" in PARTS:
            rows += await measure_inflight(pool, api.base_url, tenant_id, api.process.pid)
        if "schemas" in PARTS:
            rows += await measure_schemas(pool, api.base_url, tenant_id, api.process.pid)
        if "history" in PARTS:
            rows += await measure_history(pool, api.base_url, tenant_id, api.process.pid)
        if "client" in PARTS:
            rows.append(await measure_consumer(pool, api.base_url, tenant_id, api.process.pid))
        if "spark" in PARTS:
            rows.append(await measure_spark(pool, api.base_url, tenant_id, api.process.pid))
        if "hot" in PARTS:
            urls = (database_url, redis_url, scratch / "data-framework")
            rows += await measure_hot_routes(pool, api.base_url, tenant_id, api.process.pid, urls)
        if "longpoll" in PARTS:
            rows += await measure_longpoll(pool, database_url, api.base_url, api.process.pid)
        if "grpc" in PARTS:
            rows += await measure_grpc(pool, api.base_url, api.grpc_address, tenant_id, api.process.pid)
        if "schedules" in PARTS:  # last, on an API without hosted workers: a worker process of its own fires
            stop_server(api)
            api = start_api(database_url, redis_url, scratch / "data", run_workers=False)
            rows += await measure_schedules(pool, api.base_url, tenant_id, api.process.pid, database_url)
    finally:
        await pool.close()
        stop_server(api)
        stop_server(noauth)
    return rows


def _cpu_columns(row: dict[str, Any]) -> str:
    """The row's CPU per message: the measured server's, and Postgres' for both sides (blank where not measured)."""
    cpu = row.get("cpu_us_per_message")
    if not cpu:
        return ""
    server, pg = cpu["server"], cpu["postgres"]

    def us(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    return f"{us(server['measured']):>8} {us(pg['baseline']):>8}/{us(pg['measured'])}"


#: Issue 43's targets for Postgres' CPU per message, Skiplock / the raw loop, by workload.
POSTGRES_TARGETS = {"single_enqueue": 0.4, "batch_enqueue_100": 0.85, "dequeue_100_ack": 0.85, "dequeue_1_ack": 0.55}


def postgres_per_message(rows: list[dict[str, Any]]) -> None:
    """Postgres' CPU per message of the raw loop, Skiplock and PGMQ, workload by workload (where the run measured
    them), with Skiplock / raw against its target and both end-to-end ratios to the raw loop."""
    by_name = {row["workload"]: row for row in rows}
    keys = [*POSTGRES_TARGETS, *(k for k in by_name if k.startswith("longpoll_"))]
    lines = []
    for key in keys:
        ours, theirs = by_name.get(key), by_name.get(f"pgmq_{key}")
        if ours is None or not ours.get("cpu_us_per_message"):
            continue
        pg = ours["cpu_us_per_message"]["postgres"]
        raw_us, our_us = pg["baseline"], pg["measured"]
        pgmq_us = theirs["cpu_us_per_message"]["postgres"]["measured"] if theirs else None
        share = our_us / raw_us if raw_us and our_us is not None else None
        target = POSTGRES_TARGETS.get(key)
        nan = float("nan")
        lines.append(
            f"{key:<20} {raw_us or 0:>8.1f} {our_us or 0:>9.1f} {nan if pgmq_us is None else pgmq_us:>8.1f}"
            f" {share or 0:>12.2f} {'<= ' + str(target) if target else '-':>8} {ours['ratio']:>10.2f}"
            f" {theirs['ratio'] if theirs else nan:>10.2f}"
        )
    if not lines:
        return
    header = (
        f"{'workload':<20} {'raw':>8} {'Skiplock':>9} {'PGMQ':>8} {'Skiplock/raw':>12} {'target':>8}"
        f" {'Skiplock e2e':>10} {'PGMQ e2e':>10}"
    )
    print(
        "\nPostgres CPU µs per message (and end to end: Skiplock / raw, PGMQ / raw; long polls: raw p50 / p50)\n"
        + header
    )
    print("-" * len(header))
    print("\n".join(lines))


def report(rows: list[dict[str, Any]]) -> None:
    print(
        f"\nSkiplock bench: {CLIENTS} clients, {ROUNDS} interleaved rounds of {SECONDS:.0f} s per side, "
        f"{len(PAYLOAD)} B payloads, commit {git_commit()}, {platform.node()} ({os.cpu_count()} cores)\n"
    )
    header = (
        f"{'workload':<20} {'raw msg/s':>10} {'raw p50':>8} {'raw p99':>8} {'api msg/s':>10} "
        f"{'api p50':>8} {'api p99':>8} {'ratio':>6} {'target':>6}      CPU µs/msg: server, Postgres raw/api"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        r, a = row["raw"], row["api"]
        mark = "ok" if row["ratio"] >= row["target"] else "MISS"
        print(
            f"{row['workload']:<20} {r.rate:>10.0f} {r.percentile(50):>6.2f}ms {r.percentile(99):>6.2f}ms "
            f"{a.rate:>10.0f} {a.percentile(50):>6.2f}ms {a.percentile(99):>6.2f}ms {row['ratio']:>6.2f} "
            f"{row['target']:>6.2f} {mark:<4} {_cpu_columns(row)}"
        )
    print(
        "\nratio: median over the rounds of API msg/s / raw msg/s; for auth_*, Basic auth / the same API without "
        "the auth check (raw columns: without); for pgmq_*, PGMQ's asyncio client / raw SQL (api columns: PGMQ; "
        "set beside the same workload's Skiplock / raw above); for capped_* and limited_*, configured / "
        "unconfigured topic (raw columns: unconfigured); for consumer_runtime, the client's consumer / the "
        "bench's dequeue 100 + ack loop (raw columns: the loop); for spark_job, rows/s of the Spark job / msg/s "
        "of the batch-enqueue loop (raw columns: the loop); for longpoll_*, raw p50 / API p50 of end-to-end "
        "latency at a fixed rate (msg/s: delivered; latencies: end to end). msg/s and latencies pool all rounds"
    )
    postgres_per_message(rows)
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    path = out / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(
        json.dumps(
            {
                "commit": git_commit(),
                "clients": CLIENTS,
                "seconds": SECONDS,
                "rounds": ROUNDS,
                "payload_bytes": len(PAYLOAD),
                "cpus": os.cpu_count(),
                "results": [{**row, "raw": row["raw"].summary(), "api": row["api"].summary()} for row in rows],
            },
            indent=2,
        )
    )
    print(f"written to {path.relative_to(ROOT)}")


if __name__ == "__main__":
    import uvloop

    uvloop.run(main())
