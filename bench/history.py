"""`make bench` part `history`: what the message log costs and how it answers, over HTTP.

- Acks on a replayable topic (its tenant's acks take the statement that logs) against the same on a plain topic of
  a tenant without replayable topics (whose acks are the unchanged statement): dequeue 100 + batch ack, and
  dequeue 1 + single ack; interleaved rounds with the server's CPU per request (`bench.harness.compare`). Targets 0.85.
- Log pages at depth: 10,000,000 entries of one topic (SKIPLOCK_BENCH_LOG_ROWS), written straight in; pages of 100
  at the start, the middle and the end, by `from_time` and by cursor, timed over HTTP and by EXPLAIN ANALYZE (the
  server's time). Target < 20 ms.
- Replay of 1,000,000 entries (SKIPLOCK_BENCH_REPLAY_ROWS) against batch enqueue of as many (1,000 per request, in
  `CLIENTS` connections), in SKIPLOCK_BENCH_REPLAY_ROUNDS alternating rounds, with the server's CPU per message.
  Target 0.5.
- Retention: `pg_stat_user_tables` of the log's partitions before and after the archive reaper drops a trimmed
  day: the rows go with their partition, no dead tuples are left behind.

SKIPLOCK_BENCH_HISTORY picks some of them (acks,pages,replay,retention).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import msgspec
import psutil

from bench.groups import fill
from bench.harness import ADMIN, CLIENTS, PAYLOAD, PAYLOAD_B64, ROOT, SECONDS, TENANT, Side, compare
from bench.httpclient import HttpConnection
from mq.history import sql as history_sql
from mq.history.partitions import LogPartitions

LOGGED_TENANT = "bench-history"
PLAIN, LOGGED = "bench-plain", "bench-logged"
LOG_ROWS = int(os.environ.get("SKIPLOCK_BENCH_LOG_ROWS", "10000000"))
REPLAY_ROWS = int(os.environ.get("SKIPLOCK_BENCH_REPLAY_ROWS", "1000000"))
REPLAY_ROUNDS = int(os.environ.get("SKIPLOCK_BENCH_REPLAY_ROUNDS", "3"))
#: Which of the measurements to run (all by default): acks, pages, replay, retention.
HISTORY_PARTS = set(os.environ.get("SKIPLOCK_BENCH_HISTORY", "acks,pages,replay,retention").split(","))
DAY = 86_400

Op = Callable[[HttpConnection], Awaitable[int]]


async def measure_history(
    pool: asyncpg.Pool[Any], base_url: str, tenant_id: int, server_pid: int
) -> list[dict[str, Any]]:
    server = psutil.Process(server_pid)

    def cpu() -> float:
        times = server.cpu_times()
        return float(times.user + times.system)

    logged_id = await pool.fetchval(
        "INSERT INTO tenants (slug, name) VALUES ($1, $1) ON CONFLICT (slug) DO UPDATE SET name = $1 RETURNING id",
        LOGGED_TENANT,
    )
    host, port = base_url.removeprefix("http://").split(":")

    def connections(tenant: str) -> list[HttpConnection]:
        return [HttpConnection(host, int(port), ADMIN, {"X-Tenant": tenant}) for _ in range(CLIENTS)]

    plain_http, logged_http = connections(TENANT), connections(LOGGED_TENANT)
    for c in (*plain_http, *logged_http):
        await c.connect()
    status, _ = await logged_http[0].request("PUT", f"/api/topic-configs/{LOGGED}", {"replayable": True})
    assert status == 200, status

    def consume(topic: str, count: int) -> Op:
        async def op(c: HttpConnection) -> int:
            status, answer = await c.request("POST", "/api/messages/dequeue", {"topic": topic, "count": count})
            assert status == 200, (status, answer)
            messages = answer["messages"]
            if not messages:
                return 0
            if count == 1:
                [m] = messages
                status, _ = await c.request("POST", f"/api/messages/{m['id']}/ack", {"receipt": m["receipt"]})
                assert status == 204, status
                return 1
            acks = [{"id": m["id"], "receipt": m["receipt"]} for m in messages]
            status, _ = await c.request("POST", "/api/messages/ack", {"acks": acks})
            assert status == 200, status
            return len(acks)

        return op

    def backlog(tenant: int, topic: str) -> Callable[[], Awaitable[None]]:
        async def setup() -> None:
            await fill(pool, tenant, topic, int(30_000 * SECONDS))

        return setup

    rows = []
    try:
        baseline = "the same requests on a plain topic of a tenant without replayable topics"
        for key, count in (("history_dequeue_100_ack", 100), ("history_single_ack", 1)):
            if "acks" not in HISTORY_PARTS:
                break
            base = Side(backlog(tenant_id, PLAIN), plain_http, consume(PLAIN, count), cpu)
            measured = Side(backlog(logged_id, LOGGED), logged_http, consume(LOGGED, count), cpu)
            rows.append(await compare(key, 0.85, base, measured, baseline))
        await pool.execute("TRUNCATE messages, deliveries, message_log")
        extras = []
        if "pages" in HISTORY_PARTS:
            extras.append(await _pages(pool, logged_http[0], logged_id))
        if "replay" in HISTORY_PARTS:
            extras.append(await _replay(pool, logged_http, logged_id, cpu))
        if "retention" in HISTORY_PARTS:
            extras.append(await _retention(pool, logged_http[0], logged_id))
    finally:
        for c in (*plain_http, *logged_http):
            await c.close()
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    path = out / f"history-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(extras, indent=2, default=str))
    print(f"  history's pages, replay and retention written to {path.relative_to(ROOT)}")
    return rows


async def _write_log(pool: asyncpg.Pool[Any], tenant_id: int, topic: str, n: int, start: datetime) -> None:
    """`n` entries acked from `start` on, 100 per millisecond (as batch acks of 100 write them)."""
    for first in range(0, n, 500_000):
        await pool.execute(
            """INSERT INTO message_log (tenant_id, topic, acked_at, id, payload, priority, retry_count, created_at)
               SELECT $1, $2, $3::timestamptz + (g / 100) * interval '1 millisecond', gen_random_uuid(), $4, 0, 0,
                      $3::timestamptz
               FROM generate_series($5::int8, $6::int8) AS g""",
            tenant_id,
            topic,
            start,
            PAYLOAD,
            first,
            min(n, first + 500_000) - 1,
        )
    await pool.execute("ANALYZE message_log")


async def _pages(pool: asyncpg.Pool[Any], http: HttpConnection, tenant_id: int) -> dict[str, Any]:
    start = datetime.now(UTC) - timedelta(days=1)
    async with pool.acquire() as conn:
        await LogPartitions(DAY).ensure(conn, now=start.timestamp())
    began = time.perf_counter()
    await _write_log(pool, tenant_id, LOGGED, LOG_ROWS, start)
    print(f"  history: {LOG_ROWS:,} log entries written in {time.perf_counter() - began:.0f} s")
    span = LOG_ROWS / 100 / 1000  # seconds of acked_at
    depths = {"start": 0.0, "middle": 0.5, "end": 0.999}
    timings: dict[str, Any] = {}
    for name, fraction in depths.items():
        at = (start + timedelta(seconds=span * fraction)).isoformat()
        server_ms = []
        http_ms = []
        for _ in range(20):
            t0 = time.perf_counter()
            status, answer = await http.request(
                "GET", f"/api/topics/{LOGGED}/message-log?limit=100&from_time={at.replace('+', '%2B')}"
            )
            http_ms.append((time.perf_counter() - t0) * 1000)
            assert status == 200 and len(answer["items"]) == 100, (status, str(answer)[:200])
            cursor = answer["next_cursor"]
        status, answer = await http.request("GET", f"/api/topics/{LOGGED}/message-log?limit=100&cursor={cursor}")
        assert status == 200 and len(answer["items"]) == 100
        for _ in range(5):
            plan = await pool.fetch(
                "EXPLAIN (ANALYZE, BUFFERS) " + history_sql.PAGE,
                tenant_id,
                LOGGED,
                None,
                datetime(1, 1, 1, tzinfo=UTC),  # a first page: no cursor, the range's start as `from_time`
                _zero(),
                datetime.fromisoformat(at),
                datetime(9999, 1, 1, tzinfo=UTC),
                101,
                None,
            )
            text = "\n".join(r[0] for r in plan)
            server_ms.append(float(text.rsplit("Execution Time: ", 1)[1].split(" ")[0]))
        timings[name] = {
            "http_ms_p50": round(statistics.median(http_ms), 2),
            "http_ms_max": round(max(http_ms), 2),
            "server_ms_p50": round(statistics.median(server_ms), 3),
        }
        print(f"  history page at the {name}: {timings[name]}")
    print("  plan:\n    " + text.replace("\n", "\n    "))
    return {"workload": "history_log_page_at_depth", "target_ms": 20, "entries": LOG_ROWS, "pages": timings}


def _zero() -> uuid.UUID:
    return uuid.UUID(int=0)


async def _replay(
    pool: asyncpg.Pool[Any], http: list[HttpConnection], tenant_id: int, cpu: Callable[[], float]
) -> dict[str, Any]:
    """Rounds of: batch enqueue of REPLAY_ROWS (the baseline), then a replay of as many log entries; the ratio of
    their rates per round, and the server's CPU per message of each."""
    await pool.execute("TRUNCATE messages, message_log")
    topic = f"{LOGGED}-replay"
    status, _ = await http[0].request("PUT", f"/api/topic-configs/{topic}", {"replayable": True})
    assert status == 200
    await _write_log(pool, tenant_id, topic, REPLAY_ROWS, datetime.now(UTC) - timedelta(hours=1))
    # batch enqueue of REPLAY_ROWS in CLIENTS connections, 1,000 per request
    body = msgspec.json.encode({"topic": topic, "messages": [{"payload": PAYLOAD_B64}] * 1000})
    per_client = REPLAY_ROWS // 1000 // len(http)

    async def produce(c: HttpConnection) -> None:
        for _ in range(per_client):
            status, _ = await c.request("POST", "/api/messages/batch", body)
            assert status == 201, status

    async def enqueue() -> int:
        await asyncio.gather(*(produce(c) for c in http))
        return per_client * 1000 * len(http)

    async def replay() -> int:
        status, answer = await http[0].request("POST", f"/api/topics/{topic}/replay", {})
        assert status == 200 and answer["replayed"] == REPLAY_ROWS, (status, answer)
        return REPLAY_ROWS

    async def timed(work: Callable[[], Awaitable[int]]) -> tuple[float, float]:
        """Messages per second, and the server's CPU µs per message."""
        await pool.execute("TRUNCATE messages")
        await pool.execute("CHECKPOINT")
        c0, t0 = cpu(), time.perf_counter()
        n = await work()
        seconds, used = time.perf_counter() - t0, cpu() - c0
        return n / seconds, used / n * 1e6

    rounds = []
    for _ in range(REPLAY_ROUNDS):
        enqueue_rate, enqueue_cpu = await timed(enqueue)
        replay_rate, replay_cpu = await timed(replay)
        rounds.append((replay_rate / enqueue_rate, replay_rate, enqueue_rate, replay_cpu, enqueue_cpu))
        print(
            f"  replay: {REPLAY_ROWS:,} at {replay_rate:,.0f}/s ({replay_cpu:.1f} µs CPU each); batch enqueue "
            f"{enqueue_rate:,.0f}/s ({enqueue_cpu:.1f} µs) = {replay_rate / enqueue_rate:.3f}"
        )
    await pool.execute("TRUNCATE messages, message_log")
    ratios = [r[0] for r in rounds]
    return {
        "workload": "history_replay",
        "target": 0.5,
        "ratio": round(statistics.median(ratios), 3),
        "ratios": [round(r, 3) for r in ratios],
        "replay_per_second": round(statistics.median(r[1] for r in rounds)),
        "batch_enqueue_per_second": round(statistics.median(r[2] for r in rounds)),
        "replay_cpu_us_per_message": round(statistics.median(r[3] for r in rounds), 1),
        "enqueue_cpu_us_per_message": round(statistics.median(r[4] for r in rounds), 1),
        "entries": REPLAY_ROWS,
    }


async def _retention(pool: asyncpg.Pool[Any], http: HttpConnection, tenant_id: int) -> dict[str, Any]:
    """A day of entries two days back, trimmed; the archive reaper drops its partition."""
    old = datetime.now(UTC) - timedelta(days=3)
    async with pool.acquire() as conn:
        await LogPartitions(DAY).ensure(conn, now=old.timestamp())
    await _write_log(pool, tenant_id, LOGGED, 1_000_000, old)
    stats = """SELECT relname, n_live_tup, n_dead_tup, pg_total_relation_size(relid) AS bytes
               FROM pg_stat_user_tables WHERE relname LIKE 'message_log_p%' ORDER BY relname"""
    await pool.execute("ANALYZE message_log")
    before = [dict(r) for r in await pool.fetch(stats)]
    cut = (old + timedelta(days=2)).isoformat().replace("+", "%2B")
    status, trimmed = await http.request("DELETE", f"/api/topics/{LOGGED}/message-log?before={cut}")
    assert status == 200, (status, trimmed)
    t0 = time.perf_counter()
    status, ran = await http.request("POST", "/api/admin/archive-reaper/run", {})
    took = time.perf_counter() - t0
    assert status == 200, (status, ran)
    after = [dict(r) for r in await pool.fetch(stats)]
    print(f"  retention: trimmed {trimmed}, reaper {ran} in {took:.2f} s")
    print(f"    before: {before}\n    after:  {after}")
    return {
        "workload": "history_retention",
        "trimmed": trimmed,
        "reaper": ran,
        "reaper_seconds": round(took, 3),
        "pg_stat_before": before,
        "pg_stat_after": after,
    }
