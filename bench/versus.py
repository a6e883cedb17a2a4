"""`make bench-versus REV=<commit>`: the server at another commit against this checkout's, head to head.

Both servers run on one database (migrated by this checkout: the other commit must share its schema), each with
CLIENTS connections; rounds of single enqueues (or batches of SKIPLOCK_VERSUS_BATCH messages; or, with
SKIPLOCK_VERSUS_OP=consume, the bench's consumer loop of dequeue 100 + batch ack on a prefilled topic, or consume1,
dequeue 1 + ack) alternate which
server goes first; SKIPLOCK_VERSUS_GROUPS=<n> gives the enqueues' topic n consumer groups (each message stored with
its n deliveries: the grouped insert); the report gives the per-round throughput ratio (this / other) and each
server's and Postgres' CPU per message (psutil), the steadier measures on a noisy machine.
The other commit is checked out in a temporary git worktree and removed afterwards.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import asyncpg
import msgspec
import psutil

from bench import harness
from bench.httpclient import HttpConnection
from mq.db.engine import asyncpg_dsn
from tests.support import servers

ROUNDS = int(os.environ.get("SKIPLOCK_BENCH_ROUNDS", "10"))
SECONDS = float(os.environ.get("SKIPLOCK_BENCH_SECONDS", "5"))
BATCH = int(os.environ.get("SKIPLOCK_VERSUS_BATCH", "1"))
OP = os.environ.get("SKIPLOCK_VERSUS_OP", "enqueue")
#: messages prefilled before each consume round (more than a round drains)
PREFILL = int(os.environ.get("SKIPLOCK_VERSUS_PREFILL", "150000"))
GROUPS = int(os.environ.get("SKIPLOCK_VERSUS_GROUPS", "0"))


def _start_from(checkout: Path, database_url: str, redis_url: str, data: Path) -> servers.Server:
    """`python -m skiplock` run from `checkout` (its folder comes first on the module path)."""
    saved = servers.ROOT
    servers.ROOT = checkout
    try:
        return harness.start_api(database_url, redis_url, data)
    finally:
        servers.ROOT = saved


async def versus(other: Path) -> None:
    scratch = servers.scratch_dir("skiplock-versus-")
    path, body = "/api/messages", msgspec.json.encode({"topic": "versus", "payload": harness.PAYLOAD_B64})
    if BATCH > 1:
        items = [{"payload": harness.PAYLOAD_B64}] * BATCH
        path, body = "/api/messages/batch", msgspec.json.encode({"topic": "versus", "messages": items})

    async def enqueue(c: HttpConnection) -> int:
        status, _ = await c.request("POST", path, body)
        assert status == 201, status
        return BATCH

    with servers.postgres_server("SKIPLOCK_BENCH_DATABASE_URL") as url, servers.redis_server() as redis_url:
        async with servers.migrated_database(url, "skiplock_versus") as database_url:
            started = [
                _start_from(other, database_url, redis_url, scratch / "other"),
                _start_from(harness.ROOT, database_url, redis_url, scratch / "this"),
            ]
            pool = await asyncpg.create_pool(asyncpg_dsn(database_url), min_size=1, max_size=2)
            assert pool is not None
            tenant_id = await pool.fetchval("SELECT id FROM tenants WHERE slug = $1", harness.TENANT)
            postgres = harness.postgres_cpu(await pool.fetchval("SELECT pg_backend_pid()"))
            work, workload = enqueue, "single enqueue" if BATCH == 1 else f"batch enqueue of {BATCH}"
            if OP == "consume":
                work, workload = harness.dequeue_100_ack, "dequeue 100 + batch ack"
            elif OP == "consume1":
                work, workload = harness.api_dequeue_1_ack, "dequeue 1 + ack"
            sides: list[tuple[list[HttpConnection], Any]] = []
            for server in started:
                host, port = server.base_url.removeprefix("http://").split(":")
                conns = [
                    HttpConnection(host, int(port), harness.ADMIN, {"X-Tenant": harness.TENANT})
                    for _ in range(harness.CLIENTS)
                ]
                for c in conns:
                    await c.connect()
                sides.append((conns, psutil.Process(server.process.pid)))
            for n in range(GROUPS):  # through one server; the other's cache hears of them (its invalidations)
                status, _ = await sides[0][0][0].request(
                    "POST", "/api/topics/versus/consumer-groups", {"consumer_group": f"group-{n}"}
                )
                assert status == 201, status
            if GROUPS:
                await asyncio.sleep(2)
                workload += f" to a topic of {GROUPS} consumer groups"
            cpu, database, messages, ratios = [0.0, 0.0], [0.0, 0.0], [0, 0], []
            try:
                for round_number in range(ROUNDS):
                    rates = [0.0, 0.0]
                    for n in (0, 1) if round_number % 2 == 0 else (1, 0):
                        if OP.startswith("consume"):
                            await harness.prefill(pool, tenant_id, "bench-drain", PREFILL)
                        else:
                            await pool.execute("TRUNCATE messages, deliveries")
                        conns, process = sides[n]
                        before, database_before = sum(process.cpu_times()[:2]), postgres()
                        result = await harness.run_clients("versus", conns, work, SECONDS)
                        cpu[n] += sum(process.cpu_times()[:2]) - before
                        database[n] += postgres() - database_before
                        messages[n] += result.messages
                        rates[n] = result.rate
                    ratios.append(rates[1] / rates[0])
            finally:
                await pool.close()
                for server in started:
                    servers.stop_server(server)
    print(f"{workload}, this / other: per round {[round(r, 3) for r in ratios]}")
    print(f"median {statistics.median(ratios):.3f}")
    for name, seconds in (("server", cpu), ("Postgres", database)):
        other_us, this_us = (seconds[n] / messages[n] * 1e6 for n in (0, 1))
        print(f"{name} CPU per message: other {other_us:.1f} us, this {this_us:.1f} us")


def main() -> None:
    rev = os.environ.get("REV")
    if not rev:
        raise SystemExit("REV=<commit> names the other side")
    with tempfile.TemporaryDirectory(prefix="skiplock-rev-") as folder:
        other = Path(folder) / "checkout"
        subprocess.run(["git", "worktree", "add", "--detach", str(other), rev], cwd=harness.ROOT, check=True)
        try:
            asyncio.run(versus(other))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=harness.ROOT, check=True)


if __name__ == "__main__":
    main()
