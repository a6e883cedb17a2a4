"""`make bench-versus REV=<commit>`: the server at another commit against this checkout's, head to head.

Both servers run on one database (migrated by this checkout: the other commit must share its schema), each with
CLIENTS connections; rounds of single enqueues (or batches of SKIPLOCK_VERSUS_BATCH messages) alternate which server
goes first; the report gives the per-round
throughput ratio (this / other) and each server's CPU per request (psutil), the steadier measure on a noisy machine.
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

from bench import run
from bench.httpclient import HttpConnection
from mq.db.engine import asyncpg_dsn
from tests.support import servers

ROUNDS = int(os.environ.get("SKIPLOCK_BENCH_ROUNDS", "10"))
SECONDS = float(os.environ.get("SKIPLOCK_BENCH_SECONDS", "5"))
BATCH = int(os.environ.get("SKIPLOCK_VERSUS_BATCH", "1"))


def _start_from(checkout: Path, database_url: str, redis_url: str, data: Path) -> servers.Server:
    """`python -m skiplock` run from `checkout` (its folder comes first on the module path)."""
    saved = servers.ROOT
    servers.ROOT = checkout
    try:
        return run.start_api(database_url, redis_url, data)
    finally:
        servers.ROOT = saved


async def versus(other: Path) -> None:
    scratch = servers.scratch_dir("skiplock-versus-")
    path, body = "/api/messages", msgspec.json.encode({"topic": "versus", "payload": run.PAYLOAD_B64})
    if BATCH > 1:
        items = [{"payload": run.PAYLOAD_B64}] * BATCH
        path, body = "/api/messages/batch", msgspec.json.encode({"topic": "versus", "messages": items})

    async def enqueue(c: HttpConnection) -> int:
        status, _ = await c.request("POST", path, body)
        assert status == 201, status
        return BATCH

    with servers.postgres_server("SKIPLOCK_BENCH_DATABASE_URL") as url, servers.redis_server() as redis_url:
        async with servers.migrated_database(url, "skiplock_versus") as database_url:
            started = [
                _start_from(other, database_url, redis_url, scratch / "other"),
                _start_from(run.ROOT, database_url, redis_url, scratch / "this"),
            ]
            pool = await asyncpg.create_pool(asyncpg_dsn(database_url), min_size=1, max_size=2)
            assert pool is not None
            sides: list[tuple[list[HttpConnection], Any]] = []
            for server in started:
                host, port = server.base_url.removeprefix("http://").split(":")
                conns = [
                    HttpConnection(host, int(port), run.ADMIN, {"X-Tenant": run.TENANT}) for _ in range(run.CLIENTS)
                ]
                for c in conns:
                    await c.connect()
                sides.append((conns, psutil.Process(server.process.pid)))
            cpu, requests, ratios = [0.0, 0.0], [0, 0], []
            try:
                for round_number in range(ROUNDS):
                    rates = [0.0, 0.0]
                    for n in (0, 1) if round_number % 2 == 0 else (1, 0):
                        await pool.execute("TRUNCATE messages")
                        conns, process = sides[n]
                        before = sum(process.cpu_times()[:2])
                        result = await run.run_clients("versus", conns, enqueue, SECONDS)
                        cpu[n] += sum(process.cpu_times()[:2]) - before
                        requests[n] += result.requests
                        rates[n] = result.rate
                    ratios.append(rates[1] / rates[0])
            finally:
                await pool.close()
                for server in started:
                    servers.stop_server(server)
    workload = "single enqueue" if BATCH == 1 else f"batch enqueue of {BATCH}"
    print(f"{workload}, this / other: per round {[round(r, 3) for r in ratios]}")
    print(f"median {statistics.median(ratios):.3f}")
    print(
        f"server CPU per request: other {cpu[0] / requests[0] * 1e6:.1f} us, this {cpu[1] / requests[1] * 1e6:.1f} us"
    )


def main() -> None:
    rev = os.environ.get("REV")
    if not rev:
        raise SystemExit("REV=<commit> names the other side")
    with tempfile.TemporaryDirectory(prefix="skiplock-rev-") as folder:
        other = Path(folder) / "checkout"
        subprocess.run(["git", "worktree", "add", "--detach", str(other), rev], cwd=run.ROOT, check=True)
        try:
            asyncio.run(versus(other))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=run.ROOT, check=True)


if __name__ == "__main__":
    main()
