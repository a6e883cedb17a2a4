"""`make bench`: Skiplock's HTTP API against raw SQL on the same Postgres, in the same run.

Raw SQL is asyncpg straight on a minimal queue table (`bench_raw`: id, visible_at, payload). The API runs as
`python -m skiplock` on the same Postgres server. Each workload runs CLIENTS concurrent clients for SECONDS per round;
the report gives messages/s, p50/p99 per request and the ratio API / raw SQL. Results go to bench/out/ as JSON.

Environment: SKIPLOCK_BENCH_DATABASE_URL (a server's maintenance DB; default: an embedded Postgres, fsync on),
SKIPLOCK_BENCH_CLIENTS (8), SKIPLOCK_BENCH_SECONDS (3), SKIPLOCK_BENCH_ROUNDS (3), SKIPLOCK_BENCH_PAYLOAD_BYTES
(100), SKIPLOCK_BENCH_PARTS (sql,hot,auth,configs,groups,schemas,inflight,history,client,spark,longpoll,grpc,schedules;
schedules runs last, about 10 minutes, on an API of its own without hosted workers: see bench/schedules.py).
Raw and API rounds alternate, so both see the same machine weather; the ratio is the median of the per-round ratios.

The auth part compares the API with HTTP Basic credentials against the same API whose authentication check is
replaced by a fixed caller (`bench.noauth`, a second server on the same database), request for request. The
configs part compares requests on a capped (max_depth) or throughput-limited topic with the same requests on an
unconfigured topic of the same server.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import platform
import statistics
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import msgspec
import psutil

from bench.httpclient import HttpConnection
from mq.db.engine import asyncpg_dsn
from mq.ids import uuid7_batch
from tests.support.servers import (
    Server,
    migrated_database,
    postgres_server,
    redis_server,
    scratch_dir,
    start_server,
    stop_server,
)

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = int(os.environ.get("SKIPLOCK_BENCH_CLIENTS", "8"))
SECONDS = float(os.environ.get("SKIPLOCK_BENCH_SECONDS", "3"))
ROUNDS = int(os.environ.get("SKIPLOCK_BENCH_ROUNDS", "3"))
PAYLOAD = os.urandom(int(os.environ.get("SKIPLOCK_BENCH_PAYLOAD_BYTES", "100")))
PAYLOAD_B64 = base64.b64encode(PAYLOAD).decode()
ADMIN = ("bench-admin", "bench-admin-password")
# Which comparisons to run: "sql" (the API against raw SQL), "auth" (Basic auth against no check at all),
# "configs" (a capped or throughput-limited topic against an unconfigured one), "client" (the Python client's
# consumer runtime against the bench's own dequeue + batch ack loop, bench/consumer.py), "spark" (the Spark data
# source's job against the bench's batch-enqueue loop, bench/spark.py), "longpoll" (single enqueues at a fixed rate
# to long-polling consumers, end-to-end latency against a raw-SQL LISTEN/NOTIFY loop, bench/longpoll.py).
PARTS = set(
    os.environ.get(
        "SKIPLOCK_BENCH_PARTS",
        "sql,hot,auth,configs,groups,schemas,inflight,history,client,spark,longpoll,grpc,schedules",
    ).split(",")
)
TENANT = "bench"

RAW_SCHEMA = """
CREATE TABLE IF NOT EXISTS bench_raw (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    visible_at timestamptz NOT NULL DEFAULT now(),
    payload bytea NOT NULL
);
CREATE INDEX IF NOT EXISTS bench_raw_visible_idx ON bench_raw (visible_at, id);
TRUNCATE bench_raw;
"""
RAW_INSERT = "INSERT INTO bench_raw (payload) VALUES ($1)"
RAW_INSERT_MANY = "INSERT INTO bench_raw (payload) SELECT unnest($1::bytea[])"
RAW_DEQUEUE = """
WITH c AS (SELECT id FROM bench_raw WHERE visible_at <= now() ORDER BY visible_at, id LIMIT $1
           FOR UPDATE SKIP LOCKED)
UPDATE bench_raw AS r SET visible_at = now() + interval '30 seconds' FROM c WHERE r.id = c.id
RETURNING r.id, r.payload"""
RAW_DELETE = "DELETE FROM bench_raw WHERE id = ANY($1::bigint[])"


@dataclass
class Result:
    name: str
    messages: int = 0
    requests: int = 0
    seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list, repr=False)

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds else 0.0

    def percentile(self, p: float) -> float:
        if not self.latencies_ms:
            return 0.0
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "messages": self.messages,
            "requests": self.requests,
            "seconds": round(self.seconds, 3),
            "messages_per_s": round(self.rate, 1),
            "p50_ms": round(self.percentile(50), 3),
            "p99_ms": round(self.percentile(99), 3),
        }


async def run_clients(
    name: str, clients: list[Any], op: Callable[[Any], Awaitable[int]], seconds: float = SECONDS
) -> Result:
    """Each client loops `op` (returns messages handled; 0 ends that client) until the time is up."""
    result = Result(name)
    deadline = time.perf_counter() + seconds

    async def loop(client: Any) -> None:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            n = await op(client)
            if n == 0:
                return
            result.latencies_ms.append((time.perf_counter() - started) * 1000)
            result.messages += n
            result.requests += 1

    started = time.perf_counter()
    await asyncio.gather(*(loop(c) for c in clients))
    result.seconds = time.perf_counter() - started
    return result


def cpu_seconds(pid: int) -> Callable[[], float]:
    """A reader of the CPU seconds so far (user + system) of a server process and its live child processes (the
    server processes of `SKIPLOCK_WORKERS` > 1), for CPU per request or message."""
    process = psutil.Process(pid)

    def read() -> float:
        times = process.cpu_times()
        total = times.user + times.system
        for child in process.children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                times = child.cpu_times()
                total += times.user + times.system
        return float(total)

    return read


def postgres_cpu(backend_pid: int) -> Callable[[], float]:
    """CPU seconds of the Postgres server so far: the postmaster, its live children and the children it reaped."""
    postmaster = psutil.Process(backend_pid).parent()
    assert postmaster is not None

    def read() -> float:
        own = postmaster.cpu_times()
        total = own.user + own.system + own.children_user + own.children_system
        for child in postmaster.children():
            with contextlib.suppress(psutil.NoSuchProcess):
                times = child.cpu_times()
                total += times.user + times.system
        return float(total)

    return read


#: Postgres' CPU seconds so far (`postgres_cpu`), set once the bench's pool is open: every comparison reports
#: Postgres' CPU per message of both sides beside the servers'.
POSTGRES_CPU: list[Callable[[], float]] = []


async def connected(base_url: str, tenant: str = TENANT, n: int = CLIENTS) -> list[HttpConnection]:
    """`n` connections to the API, each as the admin addressing `tenant`."""
    host, port = base_url.removeprefix("http://").split(":")
    http = [HttpConnection(host, int(port), ADMIN, {"X-Tenant": tenant}) for _ in range(n)]
    for c in http:
        await c.connect()
    return http


def batch_body(n: int, topic: str = "bench-batch") -> bytes:
    return msgspec.json.encode({"topic": topic, "messages": [{"payload": PAYLOAD_B64}] * n})


def api_enqueue_batch(body: bytes, n: int) -> Callable[[HttpConnection], Awaitable[int]]:
    """The bench's producer loop: one prebuilt batch of `n` messages per request."""

    async def op(c: HttpConnection) -> int:
        status, _ = await c.request("POST", "/api/messages/batch", body)
        assert status == 201, status
        return n

    return op


_DEQUEUE_100 = msgspec.json.encode({"topic": "bench-drain", "count": 100})


async def dequeue_100_ack(c: HttpConnection) -> int:
    """The bench's consumer loop: lease 100 messages of `bench-drain`, ack them in one request."""
    status, body = await c.request("POST", "/api/messages/dequeue", _DEQUEUE_100)
    assert status == 200, status
    messages = body["messages"]
    if not messages:
        return 0
    acks = [{"id": m["id"], "receipt": m["receipt"]} for m in messages]
    status, _ = await c.request("POST", "/api/messages/ack", {"acks": acks})
    assert status == 200, status
    return len(messages)


async def prefill(pool: asyncpg.Pool[Any], tenant_id: int, topic: str, n: int) -> None:
    """Empty the messages table, then `n` pending messages in `topic`, written straight into it."""
    await pool.execute("TRUNCATE messages")
    for start in range(0, n, 10_000):
        await pool.execute(
            """INSERT INTO messages (id, tenant_id, topic, payload, max_retries)
               SELECT u, $1, $2, $3, 3 FROM unnest($4::uuid[]) AS u""",
            tenant_id,
            topic,
            PAYLOAD,
            uuid7_batch(min(10_000, n - start)),
        )
    await pool.execute("VACUUM ANALYZE messages")


# --- workloads ----------------------------------------------------------------------------------------------


@dataclass
class Workload:
    """One line of the report: the same work done by raw SQL and by the API, each preceded by its setup."""

    key: str
    target: float
    raw_setup: Callable[[], Awaitable[None]]
    raw_op: Callable[[Any], Awaitable[int]]
    api_setup: Callable[[], Awaitable[None]]
    api_op: Callable[[HttpConnection], Awaitable[int]]


def workloads(pool: asyncpg.Pool[Any], tenant_id: int) -> list[Workload]:
    hundred = [PAYLOAD] * 100
    single = msgspec.json.encode({"topic": "bench-single", "payload": PAYLOAD_B64})

    batch_100, batch_1000 = batch_body(100), batch_body(1000)

    async def nothing() -> None:
        return None

    async def empty_tables() -> None:
        await pool.execute("TRUNCATE bench_raw, messages")

    async def raw_insert_one(c: Any) -> int:
        await c.execute(RAW_INSERT, PAYLOAD)
        return 1

    async def raw_insert_100(c: Any) -> int:
        await c.execute(RAW_INSERT_MANY, hundred)
        return 100

    def raw_dequeue_delete(n: int) -> Callable[[Any], Awaitable[int]]:
        async def op(c: Any) -> int:
            rows = await c.fetch(RAW_DEQUEUE, n)
            if not rows:
                return 0
            await c.execute(RAW_DELETE, [r["id"] for r in rows])
            return len(rows)

        return op

    async def api_enqueue_one(c: HttpConnection) -> int:
        status, _ = await c.request("POST", "/api/messages", single)
        assert status == 201, status
        return 1

    dequeue_1 = msgspec.json.encode({"topic": "bench-drain"})

    async def api_dequeue_1_ack(c: HttpConnection) -> int:
        status, body = await c.request("POST", "/api/messages/dequeue", dequeue_1)
        assert status == 200, status
        messages = body["messages"]
        if not messages:
            return 0
        m = messages[0]
        status, _ = await c.request("POST", f"/api/messages/{m['id']}/ack", {"receipt": m["receipt"]})
        assert status == 204, status
        return 1

    def prefilled_raw(n: int) -> Callable[[], Awaitable[None]]:
        async def setup() -> None:
            await empty_tables()
            for _ in range(n // 10_000):
                await pool.execute(RAW_INSERT_MANY, [PAYLOAD] * 10_000)
            await pool.execute("VACUUM ANALYZE bench_raw")

        return setup

    def prefilled_api(n: int) -> Callable[[], Awaitable[None]]:
        async def setup() -> None:
            await empty_tables()
            await prefill(pool, tenant_id, "bench-drain", n)

        return setup

    # Enough messages that no drain runs dry within SECONDS on this class of machine.
    drain_raw, drain_api = int(60_000 * SECONDS), int(30_000 * SECONDS)
    return [
        Workload("single_enqueue", 0.4, empty_tables, raw_insert_one, empty_tables, api_enqueue_one),
        Workload(
            "batch_enqueue_100", 0.5, empty_tables, raw_insert_100, empty_tables, api_enqueue_batch(batch_100, 100)
        ),
        # The raw side of batch 1000 is the 100-row insert: the API's larger batch is measured against it.
        Workload(
            "batch_enqueue_1000", 0.5, empty_tables, raw_insert_100, empty_tables, api_enqueue_batch(batch_1000, 1000)
        ),
        Workload(
            "dequeue_100_ack",
            0.5,
            prefilled_raw(drain_raw),
            raw_dequeue_delete(100),
            prefilled_api(drain_api),
            dequeue_100_ack,
        ),
        Workload(
            "dequeue_1_ack",
            0.4,
            prefilled_raw(drain_raw // 10),
            raw_dequeue_delete(1),
            prefilled_api(drain_api // 10),
            api_dequeue_1_ack,
        ),
    ]


@dataclass
class Side:
    """One side of a comparison: what runs before each round, the clients, and what each client repeats."""

    setup: Callable[[], Awaitable[None]]
    clients: list[Any]
    op: Callable[[Any], Awaitable[int]]
    #: The server's CPU seconds so far, when the side is an API server worth measuring (psutil).
    cpu: Callable[[], float] | None = None


async def compare(
    key: str,
    target: float,
    base: Side,
    measured: Side,
    baseline: str | None = None,
    rounds: int = ROUNDS,
    seconds: float = SECONDS,
) -> dict[str, Any]:
    """`rounds` interleaved rounds of `base` and `measured`, `seconds` each; the ratio is the median of
    measured/base per round.
    Odd rounds run `measured` first: whatever the first side leaves behind (autovacuum of its rows, a checkpoint
    of its WAL) does not always fall on the same side."""
    results: tuple[list[Result], list[Result]] = ([], [])
    cpu_us, pg_us = [0.0, 0.0], [0.0, 0.0]
    pg = POSTGRES_CPU[0] if POSTGRES_CPU else None
    ratios = []
    for round_number in range(rounds):
        order = ((0, base), (1, measured)) if round_number % 2 == 0 else ((1, measured), (0, base))
        for n, side in order:
            await side.setup()
            before = side.cpu() if side.cpu else 0.0
            pg_before = pg() if pg else 0.0
            results[n].append(await run_clients(key, side.clients, side.op, seconds))
            cpu_us[n] += ((side.cpu() - before) * 1e6) if side.cpu else 0.0
            pg_us[n] += ((pg() - pg_before) * 1e6) if pg else 0.0
        ratios.append(results[1][-1].rate / results[0][-1].rate if results[0][-1].rate else 0.0)
    row: dict[str, Any] = {
        "workload": key,
        "target": target,
        "raw": merged(results[0]),
        "api": merged(results[1]),
        "ratio": round(statistics.median(ratios), 3),
        "ratios": [round(r, 3) for r in ratios],
    }
    if baseline:
        row["baseline"] = baseline
    if base.cpu and measured.cpu:
        per_request = [cpu_us[n] / max(1, sum(r.requests for r in results[n])) for n in (0, 1)]
        row["server_cpu_us_per_request"] = {
            "measured": round(per_request[1], 1),
            "baseline": round(per_request[0], 1),
            "ratio": round(per_request[0] / per_request[1], 3),
        }
    messages = [max(1, sum(r.messages for r in results[n])) for n in (0, 1)]
    row["cpu_us_per_message"] = {
        "server": {
            "baseline": round(cpu_us[0] / messages[0], 1) if base.cpu else None,
            "measured": round(cpu_us[1] / messages[1], 1) if measured.cpu else None,
        },
        "postgres": {
            "baseline": round(pg_us[0] / messages[0], 1) if pg else None,
            "measured": round(pg_us[1] / messages[1], 1) if pg else None,
        },
    }
    print(
        f"  {key}: ratios {row['ratios']}"
        + (f", CPU/request {row['server_cpu_us_per_request']}" if base.cpu else "")
        + f", CPU/message {row['cpu_us_per_message']}"
    )
    return row


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


def merged(results: list[Result]) -> Result:
    out = Result(results[0].name)
    for r in results:
        out.messages += r.messages
        out.requests += r.requests
        out.seconds += r.seconds
        out.latencies_ms.extend(r.latencies_ms)
    return out


# --- orchestration -------------------------------------------------------------------------------------------


def start_api(
    database_url: str,
    redis_url: str,
    data_dir: Path,
    module: str = "skiplock",
    run_workers: bool | None = None,
    env: dict[str, str] | None = None,
) -> Server:
    """`python -m skiplock` (or the auth-less `bench.noauth`) on the benchmark's database; `run_workers`: whether
    it runs the workers' jobs too (None: SKIPLOCK_BENCH_API_WORKERS, true by default)."""
    hosted = os.environ.get("SKIPLOCK_BENCH_API_WORKERS", "true") if run_workers is None else str(run_workers)
    settings = {
        "SKIPLOCK_DATABASE_URL": database_url,
        "SKIPLOCK_REDIS_URL": redis_url,
        "SKIPLOCK_ADMIN_USERNAME": ADMIN[0],
        "SKIPLOCK_ADMIN_PASSWORD": ADMIN[1],
        "SKIPLOCK_DEFAULT_TENANT": TENANT,
        "SKIPLOCK_DB_POOL_MAX_SIZE": "16",
        "SKIPLOCK_WORKERS": os.environ.get("SKIPLOCK_BENCH_WORKERS", "1"),
        # The API runs the workers' jobs too, as `make run` does; SKIPLOCK_BENCH_API_WORKERS=false runs it alone,
        # as a deployment does (part `schedules` fires from a worker process of its own)
        "SKIPLOCK_RUN_WORKERS": hosted.lower(),
    }
    # Settings to try, as `SKIPLOCK_BENCH_SERVER_ENV="SKIPLOCK_HOT_ROUTES=false,SKIPLOCK_WORKERS=2"`
    for pair in filter(None, os.environ.get("SKIPLOCK_BENCH_SERVER_ENV", "").split(",")):
        name, _, value = pair.partition("=")
        settings[name.strip()] = value.strip()
    return start_server({**settings, **(env or {})}, data_dir=data_dir, command=("-m", module))


def git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


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
        if "auth" in PARTS:
            rows += await measure_auth(pool, api.base_url, noauth.base_url, (api.process.pid, noauth.process.pid))
        if "configs" in PARTS:
            rows += await measure_topic_configs(pool, api.base_url, tenant_id, api.process.pid)
        if "groups" in PARTS:
            from bench.groups import measure_groups  # noqa: PLC0415 - it imports this module

            rows += await measure_groups(pool, api.base_url, tenant_id, api.process.pid)
        if "inflight" in PARTS:
            from bench.inflight import measure_inflight  # noqa: PLC0415 - it imports this module

            rows += await measure_inflight(pool, api.base_url, tenant_id, api.process.pid)
        if "schemas" in PARTS:
            from bench.schemas import measure_schemas  # noqa: PLC0415 - it imports this module

            rows += await measure_schemas(pool, api.base_url, tenant_id, api.process.pid)
        if "history" in PARTS:
            from bench.history import measure_history  # noqa: PLC0415 - it imports this module

            rows += await measure_history(pool, api.base_url, tenant_id, api.process.pid)
        if "client" in PARTS:
            from bench.consumer import measure_consumer  # noqa: PLC0415 - it imports this module

            rows.append(await measure_consumer(pool, api.base_url, tenant_id, api.process.pid))
        if "spark" in PARTS:
            from bench.spark import measure_spark  # noqa: PLC0415 - it imports this module

            rows.append(await measure_spark(pool, api.base_url, tenant_id, api.process.pid))
        if "hot" in PARTS:
            from bench.hotroutes import measure_hot_routes  # noqa: PLC0415 - it imports this module

            urls = (database_url, redis_url, scratch / "data-framework")
            rows += await measure_hot_routes(pool, api.base_url, tenant_id, api.process.pid, urls)
        if "longpoll" in PARTS:
            from bench.longpoll import measure_longpoll  # noqa: PLC0415 - it imports this module

            rows.append(await measure_longpoll(pool, database_url, api.base_url, api.process.pid))
        if "grpc" in PARTS:
            from bench.grpc import measure_grpc  # noqa: PLC0415 - it imports this module

            rows += await measure_grpc(pool, api.base_url, api.grpc_address, tenant_id, api.process.pid)
        if "schedules" in PARTS:  # last, on an API without hosted workers: a worker process of its own fires
            from bench.schedules import measure_schedules  # noqa: PLC0415 - it imports this module

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
        "the auth check (raw columns: without); for capped_* and limited_*, configured / unconfigured topic (raw "
        "columns: unconfigured); for consumer_runtime, the client's consumer / the bench's dequeue 100 + ack loop "
        "(raw columns: the loop); for spark_job, rows/s of the Spark job / msg/s of the batch-enqueue loop (raw "
        "columns: the loop); for longpoll_*, raw p50 / API p50 of end-to-end latency at a fixed rate (msg/s: "
        "delivered; latencies: end to end). msg/s and latencies pool all rounds"
    )
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

    # The module the parts import, not this `__main__` copy of it: one POSTGRES_CPU for all.
    from bench import run  # noqa: PLW0406

    uvloop.run(run.main())
