"""What every bench part shares: the settings from the environment, the raw-SQL baseline's table and statements,
clients and their results, CPU readings of the server and of Postgres, the interleaved comparison of two sides
(`compare`), and starting the API under measure. `bench/run.py` runs the parts (`make bench`); each part is a module
of its own that imports this one, never the runner.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import msgspec
import psutil

from bench.httpclient import HttpConnection
from mq.ids import uuid7_batch
from tests.support.servers import (
    Server,
    start_server,
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
        "sql,pgmq,hot,auth,configs,groups,schemas,inflight,history,client,spark,longpoll,grpc,schedules",
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
    return postmaster_cpu(postmaster)


def postmaster_cpu(postmaster: psutil.Process) -> Callable[[], float]:
    """CPU seconds so far of a Postgres server, by its postmaster: it, its live children and those it reaped."""

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


_DEQUEUE_1 = msgspec.json.encode({"topic": "bench-drain"})


async def api_dequeue_1_ack(c: HttpConnection) -> int:
    """Lease one message of `bench-drain`, ack it by id."""
    status, body = await c.request("POST", "/api/messages/dequeue", _DEQUEUE_1)
    assert status == 200, status
    messages = body["messages"]
    if not messages:
        return 0
    m = messages[0]
    status, _ = await c.request("POST", f"/api/messages/{m['id']}/ack", {"receipt": m["receipt"]})
    assert status == 204, status
    return 1


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
    hundred, thousand = [PAYLOAD] * 100, [PAYLOAD] * 1000
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

    async def raw_insert_1000(c: Any) -> int:
        await c.execute(RAW_INSERT_MANY, thousand)
        return 1000

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
        # (until issue 43 the raw side of batch 1000 was the 100-row insert: ratios recorded before are not these)
        Workload(
            "batch_enqueue_1000", 0.5, empty_tables, raw_insert_1000, empty_tables, api_enqueue_batch(batch_1000, 1000)
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
