"""`make bench` part `schedules`: 100,000 schedules across 1,000 tenants, firing every minute (SKIPLOCK_BENCH_
SCHEDULES), fired by a `skiplock worker` process of their own.

- Ticks/s: every schedule made due at once (the minute's boundary, the worst case), the time until all their
  ticks are stored (at most 60 s; then the ticks stored by then).
- The data plane while they fire: interleaved rounds (`bench.harness.compare`) of single enqueue and of dequeue 100 +
  batch ack over HTTP, on the benchmark's tenant, with no schedule due (the baseline) and with all of them made
  due at the start of the round (the measured side): the burst, the worst seconds of each minute.
- The data plane over whole minutes: the same single enqueues in rounds of 60 s (SKIPLOCK_BENCH_SCHEDULES_MINUTES
  rounds, 3), all schedules due at each measured round's start, as every minute brings. Target (issue 30): the
  data plane is not slowed.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import msgspec

from bench.groups import fill
from bench.harness import PAYLOAD_B64, ROOT, SECONDS, Side, compare, connected, cpu_seconds
from bench.httpclient import HttpConnection
from tests.support.servers import scratch_dir

SCHEDULES = int(os.environ.get("SKIPLOCK_BENCH_SCHEDULES", "100000"))
#: Seconds the ticks/s are counted over at most.
WINDOW = 60.0
TENANTS = 1000
MINUTES = int(os.environ.get("SKIPLOCK_BENCH_SCHEDULES_MINUTES", "3"))
PLAIN = "bench-plain"

Op = Callable[[HttpConnection], Awaitable[int]]


async def measure_schedules(
    pool: asyncpg.Pool[Any], base_url: str, tenant_id: int, server_pid: int, database_url: str
) -> list[dict[str, Any]]:
    cpu = cpu_seconds(server_pid)
    await _create(pool)
    worker = _start_worker(database_url)
    http: list[HttpConnection] = []
    rows: list[dict[str, Any]] = []
    try:
        ticks = await _ticks_per_second(pool)
        # Connected after the 20 s window: a connection that sends no request for 10 s is answered 408 and closed
        # (api.http_protocol), and the bench's client would read that 408 as its first answer.
        http = await connected(base_url)
        out = ROOT / "bench" / "out"
        out.mkdir(exist_ok=True)
        (out / f"schedules-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(json.dumps(ticks, indent=2))

        async def quiet() -> None:
            await pool.execute("UPDATE schedules SET next_run_at = now() + interval '1 day'")
            await pool.execute("DELETE FROM messages WHERE topic = 'ticks'")

        async def firing() -> None:
            await pool.execute("DELETE FROM messages WHERE topic = 'ticks'")
            await pool.execute("UPDATE schedules SET next_run_at = date_trunc('minute', now())")

        def with_backlog(setup: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
            async def both() -> None:
                await setup()
                await fill(pool, tenant_id, PLAIN, int(30_000 * SECONDS))

            return both

        single = msgspec.json.encode({"topic": PLAIN, "payload": PAYLOAD_B64})

        async def enqueue(c: HttpConnection) -> int:
            status, _ = await c.request("POST", "/api/messages", single)
            assert status == 201, status
            return 1

        async def consume(c: HttpConnection) -> int:
            status, answer = await c.request("POST", "/api/messages/dequeue", {"topic": PLAIN, "count": 100})
            assert status == 200, status
            if not answer["messages"]:
                return 0
            acks = [{"id": m["id"], "receipt": m["receipt"]} for m in answer["messages"]]
            status, _ = await c.request("POST", "/api/messages/ack", {"acks": acks})
            assert status == 200, status
            return len(acks)

        baseline = "the same requests while no schedule is due"
        for key, op, base_setup, setup in (
            ("schedules_firing_single_enqueue", enqueue, quiet, firing),
            ("schedules_firing_dequeue_100_ack", consume, with_backlog(quiet), with_backlog(firing)),
        ):
            rows.append(await compare(key, 0.9, Side(base_setup, http, op, cpu), Side(setup, http, op, cpu), baseline))
        if MINUTES:
            key = "schedules_minute_single_enqueue"
            base, measured = Side(quiet, http, enqueue, cpu), Side(firing, http, enqueue, cpu)
            rows.append(await compare(key, 0.9, base, measured, f"{baseline}, 60 s rounds", MINUTES, 60.0))
    finally:
        for c in http:
            await c.close()
        worker.terminate()
        worker.wait(30)
        await pool.execute("DELETE FROM schedules")
    return rows


async def _create(pool: asyncpg.Pool[Any]) -> None:
    """1,000 tenants with SCHEDULES / 1,000 schedules each, every minute, none due yet."""
    await pool.execute(
        """INSERT INTO tenants (slug, name) SELECT 'sched-' || n, 'sched-' || n FROM generate_series(1, $1) AS n
           ON CONFLICT (slug) DO NOTHING""",
        TENANTS,
    )
    await pool.execute(
        """INSERT INTO schedules (tenant_id, name, topic, cron, timezone, payload, next_run_at)
           SELECT t.id, 'every-minute-' || n, 'ticks', '* * * * *', 'UTC', '\\x7b7d', now() + interval '1 day'
           FROM tenants AS t CROSS JOIN generate_series(1, $1) AS n WHERE t.slug LIKE 'sched-%'
           ON CONFLICT DO NOTHING""",
        SCHEDULES // TENANTS,
    )
    await pool.execute("VACUUM ANALYZE schedules")


def _start_worker(database_url: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKIPLOCK_")}
    env.update(
        {
            "SKIPLOCK_DATABASE_URL": database_url,
            "SKIPLOCK_EXPIRY_REAPER_INTERVAL_SECONDS": "3600",
            "SKIPLOCK_GAUGES_INTERVAL_SECONDS": "3600",
            "SKIPLOCK_ARCHIVE_REAPER_INTERVAL_SECONDS": "3600",
        }
    )
    out = (scratch_dir("skiplock-bench-") / "worker.log").open("wb")
    return subprocess.Popen([sys.executable, "-m", "workers"], cwd=ROOT, env=env, stdout=out, stderr=out)


async def _ticks_per_second(pool: asyncpg.Pool[Any]) -> dict[str, Any]:
    await pool.execute("DELETE FROM messages WHERE topic = 'ticks'")
    started = time.perf_counter()
    await pool.execute("UPDATE schedules SET next_run_at = date_trunc('minute', now())")
    made_due = time.perf_counter() - started
    started = time.perf_counter()
    stored = 0
    while stored < SCHEDULES and time.perf_counter() - started < WINDOW:  # every schedule due at the start
        await asyncio.sleep(0.1)
        stored = await pool.fetchval("SELECT count(*) FROM messages WHERE topic = 'ticks'")
    seconds = time.perf_counter() - started
    twice = await pool.fetchval(
        """SELECT count(*) - count(DISTINCT (tenant_id, metadata->>'skiplock_schedule', metadata->>'skiplock_tick'))
           FROM messages WHERE topic = 'ticks'"""
    )
    rate = stored / seconds
    print(f"  schedules: {stored:,} ticks stored in {seconds:.1f} s = {rate:,.0f} ticks/s, one worker ({twice} twice)")
    return {
        "workload": "schedules_ticks",
        "target": None,
        "schedules": SCHEDULES,
        "tenants": TENANTS,
        "ticks": stored,
        "seconds": round(seconds, 2),
        "ticks_per_second": round(rate),
        "made_due_in_seconds": round(made_due, 2),
        "ticks_twice": twice,
    }
