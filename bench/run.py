"""`make bench`: Skiplock's HTTP API against raw SQL on the same Postgres, in the same run.

Raw SQL is asyncpg straight on a minimal queue table (`bench_raw`: id, visible_at, payload). The API runs as
`python -m api` on the same Postgres server. Each workload runs CLIENTS concurrent clients for SECONDS; the
report gives messages/s, p50/p99 per request and the ratio API / raw SQL. Results go to bench/out/ as JSON.

Environment: SKIPLOCK_BENCH_DATABASE_URL (a server's maintenance DB; default: an embedded Postgres, fsync on),
SKIPLOCK_BENCH_CLIENTS (8), SKIPLOCK_BENCH_SECONDS (5), SKIPLOCK_BENCH_PAYLOAD_BYTES (100).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from bench.httpclient import HttpConnection
from mq.db.embedded import EmbeddedPostgres, EmbeddedRedis, free_port
from mq.db.engine import asyncpg_dsn, migrate
from mq.ids import uuid7_batch

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = int(os.environ.get("SKIPLOCK_BENCH_CLIENTS", "8"))
SECONDS = float(os.environ.get("SKIPLOCK_BENCH_SECONDS", "5"))
PAYLOAD = os.urandom(int(os.environ.get("SKIPLOCK_BENCH_PAYLOAD_BYTES", "100")))
PAYLOAD_B64 = base64.b64encode(PAYLOAD).decode()
ADMIN = ("bench-admin", "bench-admin-password")
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


# --- raw SQL -------------------------------------------------------------------------------------------------


async def raw_suite(pool: asyncpg.Pool[Any]) -> dict[str, Result]:
    await pool.execute(RAW_SCHEMA)
    conns = [await pool.acquire() for _ in range(CLIENTS)]
    hundred = [PAYLOAD] * 100
    results: dict[str, Result] = {}
    try:

        async def insert_one(c: Any) -> int:
            await c.execute(RAW_INSERT, PAYLOAD)
            return 1

        async def insert_100(c: Any) -> int:
            await c.execute(RAW_INSERT_MANY, hundred)
            return 100

        def dequeue_delete(n: int) -> Callable[[Any], Awaitable[int]]:
            async def op(c: Any) -> int:
                rows = await c.fetch(RAW_DEQUEUE, n)
                if not rows:
                    return 0
                await c.execute(RAW_DELETE, [r["id"] for r in rows])
                return len(rows)

            return op

        results["single_enqueue"] = await run_clients("raw insert 1", conns, insert_one)
        results["batch_enqueue_100"] = await run_clients("raw insert 100", conns, insert_100)
        results["batch_enqueue_1000"] = results["batch_enqueue_100"]
        await prefill_raw(pool, 400_000)
        results["dequeue_100_ack"] = await run_clients("raw dequeue 100 + delete", conns, dequeue_delete(100))
        await pool.execute("TRUNCATE bench_raw")
        await prefill_raw(pool, 40_000)
        results["dequeue_1_ack"] = await run_clients("raw dequeue 1 + delete", conns, dequeue_delete(1))
    finally:
        for c in conns:
            await pool.release(c)
    return results


async def prefill_raw(pool: asyncpg.Pool[Any], n: int) -> None:
    chunk = [PAYLOAD] * 10_000
    for _ in range(n // len(chunk)):
        await pool.execute(RAW_INSERT_MANY, chunk)
    await pool.execute("VACUUM ANALYZE bench_raw")


# --- HTTP API ------------------------------------------------------------------------------------------------


async def api_suite(base_url: str, pool: asyncpg.Pool[Any], tenant_id: int) -> dict[str, Result]:
    host, port = base_url.removeprefix("http://").split(":")
    conns = [HttpConnection(host, int(port), ADMIN, {"X-Tenant": TENANT}) for _ in range(CLIENTS)]
    for c in conns:
        await c.connect()
    results: dict[str, Result] = {}
    single = {"topic": "bench-single", "payload": PAYLOAD_B64}

    def batch(n: int) -> dict[str, Any]:
        return {"topic": "bench-batch", "messages": [{"payload": PAYLOAD_B64}] * n}

    batch_100, batch_1000 = batch(100), batch(1000)

    async def enqueue_one(c: HttpConnection) -> int:
        status, _ = await c.request("POST", "/api/messages", single)
        assert status == 201, status
        return 1

    def enqueue_batch(body: dict[str, Any], n: int) -> Callable[[HttpConnection], Awaitable[int]]:
        async def op(c: HttpConnection) -> int:
            status, _ = await c.request("POST", "/api/messages/batch", body)
            assert status == 201, status
            return n

        return op

    async def dequeue_100_ack(c: HttpConnection) -> int:
        status, body = await c.request("POST", "/api/messages/dequeue", {"topic": "bench-drain", "count": 100})
        assert status == 200, status
        messages = body["messages"]
        if not messages:
            return 0
        acks = [{"id": m["id"], "receipt": m["receipt"]} for m in messages]
        status, _ = await c.request("POST", "/api/messages/ack", {"acks": acks})
        assert status == 200, status
        return len(messages)

    async def dequeue_1_ack(c: HttpConnection) -> int:
        status, body = await c.request("POST", "/api/messages/dequeue", {"topic": "bench-drain-1"})
        assert status == 200, status
        messages = body["messages"]
        if not messages:
            return 0
        m = messages[0]
        status, _ = await c.request("POST", f"/api/messages/{m['id']}/ack", {"receipt": m["receipt"]})
        assert status == 204, status
        return 1

    try:
        results["single_enqueue"] = await run_clients("api enqueue 1", conns, enqueue_one)
        results["batch_enqueue_100"] = await run_clients("api batch 100", conns, enqueue_batch(batch_100, 100))
        results["batch_enqueue_1000"] = await run_clients("api batch 1000", conns, enqueue_batch(batch_1000, 1000))
        await pool.execute("TRUNCATE messages")
        await prefill_api(pool, tenant_id, "bench-drain", 300_000)
        results["dequeue_100_ack"] = await run_clients("api dequeue 100 + batch ack", conns, dequeue_100_ack)
        await pool.execute("TRUNCATE messages")
        await prefill_api(pool, tenant_id, "bench-drain-1", 30_000)
        results["dequeue_1_ack"] = await run_clients("api dequeue 1 + ack", conns, dequeue_1_ack)
    finally:
        for c in conns:
            await c.close()
    return results


async def prefill_api(pool: asyncpg.Pool[Any], tenant_id: int, topic: str, n: int) -> None:
    chunk = 10_000
    for _ in range(n // chunk):
        await pool.execute(
            """INSERT INTO messages (id, tenant_id, topic, payload, max_retries)
               SELECT u, $1, $2, $3, 3 FROM unnest($4::uuid[]) AS u""",
            tenant_id,
            topic,
            PAYLOAD,
            uuid7_batch(chunk),
        )
    await pool.execute("VACUUM ANALYZE messages")


# --- orchestration -------------------------------------------------------------------------------------------


def start_api(database_url: str, redis_url: str, data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SKIPLOCK_")},
        "SKIPLOCK_DATABASE_URL": database_url,
        "SKIPLOCK_REDIS_URL": redis_url,
        "SKIPLOCK_PORT": str(port),
        "SKIPLOCK_ADMIN_USERNAME": ADMIN[0],
        "SKIPLOCK_ADMIN_PASSWORD": ADMIN[1],
        "SKIPLOCK_DEFAULT_TENANT": TENANT,
        "SKIPLOCK_LOG_LEVEL": "warning",
        "SKIPLOCK_DATA_DIR": str(data_dir),
        "SKIPLOCK_DB_POOL_MAX_SIZE": "16",
    }
    proc = subprocess.Popen([sys.executable, "-m", "api"], cwd=ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("API did not become ready")


def git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


async def main() -> None:
    scratch = Path(tempfile.mkdtemp(prefix="skiplock-bench-"))
    scratch.chmod(0o755)
    servers: list[Any] = []
    server_url = os.environ.get("SKIPLOCK_BENCH_DATABASE_URL")
    if not server_url:
        pg = EmbeddedPostgres(scratch / "pg", database="postgres")
        server_url = pg.start()
        servers.append(pg)
    redis = EmbeddedRedis(scratch / "redis")
    redis_url = redis.start()
    servers.append(redis)
    db_name = f"skiplock_bench_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(asyncpg_dsn(server_url))
    await admin.execute(f'CREATE DATABASE "{db_name}"')
    database_url = asyncpg_dsn(server_url).rsplit("/", 1)[0] + "/" + db_name
    await asyncio.to_thread(migrate, database_url)
    proc, base = start_api(database_url, redis_url, scratch / "data")
    pool = await asyncpg.create_pool(asyncpg_dsn(database_url), min_size=CLIENTS + 2, max_size=CLIENTS + 4)
    assert pool is not None
    try:
        tenant_id = await pool.fetchval("SELECT id FROM tenants WHERE slug = $1", TENANT)
        raw = await raw_suite(pool)
        api = await api_suite(base, pool, tenant_id)
    finally:
        await pool.close()
        proc.terminate()
        proc.wait(30)
        await admin.execute(f'DROP DATABASE "{db_name}" WITH (FORCE)')
        await admin.close()
        for server in reversed(servers):
            server.stop()
    report(raw, api)


TARGETS = {
    "single_enqueue": 0.4,
    "batch_enqueue_100": 0.5,
    "batch_enqueue_1000": 0.5,
    "dequeue_100_ack": 0.5,
    "dequeue_1_ack": 0.4,
}


def report(raw: dict[str, Result], api: dict[str, Result]) -> None:
    rows = []
    print(
        f"\nSkiplock bench: {CLIENTS} clients, {SECONDS:.0f} s per workload, {len(PAYLOAD)} B payloads, "
        f"commit {git_commit()}, {platform.node()} ({os.cpu_count()} cores)\n"
    )
    header = (
        f"{'workload':<20} {'raw msg/s':>10} {'raw p50':>8} {'raw p99':>8} {'api msg/s':>10} "
        f"{'api p50':>8} {'api p99':>8} {'ratio':>6} {'target':>6}"
    )
    print(header)
    print("-" * len(header))
    for key, target in TARGETS.items():
        r, a = raw[key], api[key]
        ratio = a.rate / r.rate if r.rate else 0.0
        mark = "ok" if ratio >= target else "MISS"
        print(
            f"{key:<20} {r.rate:>10.0f} {r.percentile(50):>7.2f}ms {r.percentile(99):>7.2f}ms {a.rate:>10.0f} "
            f"{a.percentile(50):>7.2f}ms {a.percentile(99):>7.2f}ms {ratio:>6.2f} {target:>4.2f} {mark}"
        )
        rows.append(
            {"workload": key, "raw": r.summary(), "api": a.summary(), "ratio": round(ratio, 3), "target": target}
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
                "payload_bytes": len(PAYLOAD),
                "cpus": os.cpu_count(),
                "results": rows,
            },
            indent=2,
        )
    )
    print(f"\nwritten to {path.relative_to(ROOT)}")
    _ = asdict  # results are plain dataclasses; asdict kept for ad-hoc inspection


if __name__ == "__main__":
    import uvloop

    uvloop.run(main())
