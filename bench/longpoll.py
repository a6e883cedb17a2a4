"""The long-poll part of `make bench`: single enqueues at a fixed rate, consumers waiting in long polls.

RATE messages/s are enqueued one at a time by 2 producers, each on its own schedule (a producer that falls behind
sends at once, so the rate it held is reported); 4 consumers wait for up to 10 messages at a time and acknowledge
what they got in one request. The raw-SQL loop does the same on `bench_raw`: producers INSERT and NOTIFY in one
statement, consumers LISTEN and on each notification (or every second) lease up to 10 with FOR UPDATE SKIP LOCKED
and delete them, until a lease comes back empty. PGMQ (`bench.peers`) does the same with its own means: `pgmq.send`
with its insert notifications on (`pgmq.enable_notify_insert`, no throttle), consumers LISTEN on its channel and
`pgmq.read` up to 10, `pgmq.delete` them, until a read comes back empty; its ratio is raw p50 / PGMQ p50.

Each message carries its producer's send time (one process: one clock), so the latency is end to end, from the
enqueue's start to its delivery. Per side and round: the send rate held, p50 and p99 of that latency, and CPU per
delivered message of the server and of Postgres (the postmaster, its live backends and those it reaped), and
Postgres transactions per message (every statement here is its own transaction). The ratio is raw p50 / API p50
(1.0: as fast as raw SQL; the issue's target is 0.5, within 2x).

Environment: SKIPLOCK_BENCH_LONGPOLL_RATE (500), SKIPLOCK_BENCH_LONGPOLL_SECONDS (10 per side and round; rounds
are SKIPLOCK_BENCH_ROUNDS).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import statistics
import struct
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import asyncpg
import msgspec

from bench import peers
from bench.harness import ADMIN, RAW_DELETE, RAW_DEQUEUE, RAW_SCHEMA, ROUNDS, TENANT, Result, cpu_seconds, postgres_cpu
from bench.httpclient import HttpConnection
from mq.db.engine import asyncpg_dsn

RATE = float(os.environ.get("SKIPLOCK_BENCH_LONGPOLL_RATE", "500"))
SECONDS = float(os.environ.get("SKIPLOCK_BENCH_LONGPOLL_SECONDS", "10"))
PRODUCERS, CONSUMERS, BATCH = 2, 4, 10
TOPIC = "bench-longpoll"
CHANNEL = "bench_longpoll"
TARGET = 0.5
#: After the producers stop, how long the consumers may take to receive what was sent.
DRAIN_SECONDS = 5.0

RAW_INSERT_NOTIFY = f"WITH i AS (INSERT INTO bench_raw (payload) VALUES ($1)) SELECT pg_notify('{CHANNEL}', '')"
_DEQUEUE = msgspec.json.encode({"topic": TOPIC, "count": BATCH, "wait_seconds": 5, "visibility_timeout_seconds": 30})
_STAMP = struct.Struct(">q")
PGMQ_QUEUE = "bench_longpoll"
PGMQ_CHANNEL = f"pgmq.q_{PGMQ_QUEUE}.INSERT"
PGMQ_SEND = "SELECT * FROM pgmq.send($1, $2::jsonb)"
PGMQ_READ = "SELECT msg_id, message::text FROM pgmq.read($1, 30, $2)"
PGMQ_DELETE = "SELECT * FROM pgmq.delete($1, $2::bigint[])"


def _stamp() -> bytes:
    return _STAMP.pack(time.perf_counter_ns()) + b"x" * 92  # 100 bytes, as the bench's other payloads


def _latency_ms(payload: bytes) -> float:
    sent: int = _STAMP.unpack_from(payload)[0]
    return (time.perf_counter_ns() - sent) / 1e6


class _Run:
    """What one side did in one round."""

    def __init__(self) -> None:
        self.sent = 0
        self.received = 0
        self.latencies_ms: list[float] = []
        self.stop_sending = asyncio.Event()
        self.finished = asyncio.Event()  # the round is over: consumers stop after what they are doing

    def delivered(self, payloads: list[bytes]) -> None:
        self.received += len(payloads)
        self.latencies_ms.extend(_latency_ms(p) for p in payloads)


async def _produce(run: _Run, send: Callable[[bytes], Coroutine[Any, Any, None]], rate: float, offset: float) -> None:
    started = time.perf_counter() + offset / rate
    n = 0
    while not run.stop_sending.is_set():
        delay = started + n / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        await send(_stamp())
        run.sent += 1
        n += 1


async def _round(
    producers: list[Callable[[bytes], Coroutine[Any, Any, None]]],
    consumers: list[Callable[[_Run], Coroutine[Any, Any, None]]],
) -> tuple[_Run, float]:
    """Producers for SECONDS, then until the consumers have received everything (or DRAIN_SECONDS)."""
    run = _Run()
    consuming = [asyncio.create_task(consume(run)) for consume in consumers]
    started = time.perf_counter()
    producing = [asyncio.create_task(_produce(run, send, RATE / len(producers), n)) for n, send in enumerate(producers)]
    await asyncio.sleep(SECONDS)
    run.stop_sending.set()
    await asyncio.gather(*producing)
    elapsed = time.perf_counter() - started
    deadline = time.perf_counter() + DRAIN_SECONDS
    while run.received < run.sent and time.perf_counter() < deadline:  # noqa: ASYNC110 - a poll of counters
        await asyncio.sleep(0.01)
    run.finished.set()
    # A consumer stops at its next turn; one waiting in a long poll is cancelled (its connection is its own). A
    # cancelled asyncpg query would leave the raw side's connection unusable for the next round.
    _, waiting = await asyncio.wait(consuming, timeout=1.5)
    for task in waiting:
        task.cancel()
    for task in consuming:
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await task
    return run, elapsed


async def measure_longpoll(
    pool: asyncpg.Pool[Any], database_url: str, base_url: str, server_pid: int
) -> list[dict[str, Any]]:
    await pool.execute(RAW_SCHEMA)
    host, port = base_url.removeprefix("http://").split(":")
    headers = {"X-Tenant": TENANT}
    backend = await pool.fetchval("SELECT pg_backend_pid()")
    pg_cpu, server_cpu = postgres_cpu(backend), cpu_seconds(server_pid)

    async def transactions() -> int:
        value: int = await pool.fetchval(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"
        )
        return value

    # --- raw SQL ---
    dsn = asyncpg_dsn(database_url)
    raw_producer_conns = [await asyncpg.connect(dsn) for _ in range(PRODUCERS)]
    raw_consumer_conns = [await asyncpg.connect(dsn) for _ in range(CONSUMERS)]

    def raw_producer(conn: asyncpg.Connection[Any]) -> Callable[[bytes], Coroutine[Any, Any, None]]:
        async def send(payload: bytes) -> None:
            await conn.execute(RAW_INSERT_NOTIFY, payload)

        return send

    def raw_consumer(conn: asyncpg.Connection[Any]) -> Callable[[_Run], Coroutine[Any, Any, None]]:
        async def consume(run: _Run) -> None:
            woken = asyncio.Event()

            def wake(*_: Any) -> None:
                woken.set()

            await conn.add_listener(CHANNEL, wake)
            try:
                while not run.finished.is_set():
                    woken.clear()
                    while rows := await conn.fetch(RAW_DEQUEUE, BATCH):
                        run.delivered([r["payload"] for r in rows])
                        await conn.execute(RAW_DELETE, [r["id"] for r in rows])
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(woken.wait(), 0.5)
            finally:
                await conn.remove_listener(CHANNEL, wake)

        return consume

    # --- PGMQ ---
    await peers.install_pgmq(pool)
    await pool.execute("SELECT pgmq.create($1)", PGMQ_QUEUE)  # (a queue that exists is left as it is)
    await pool.execute("SELECT pgmq.enable_notify_insert($1, 0)", PGMQ_QUEUE)
    pgmq_producer_conns = [await asyncpg.connect(dsn) for _ in range(PRODUCERS)]
    pgmq_consumer_conns = [await asyncpg.connect(dsn) for _ in range(CONSUMERS)]

    def pgmq_producer(conn: asyncpg.Connection[Any]) -> Callable[[bytes], Coroutine[Any, Any, None]]:
        async def send(payload: bytes) -> None:
            await conn.execute(PGMQ_SEND, PGMQ_QUEUE, msgspec.json.encode({"payload": payload}).decode())

        return send

    def pgmq_consumer(conn: asyncpg.Connection[Any]) -> Callable[[_Run], Coroutine[Any, Any, None]]:
        async def consume(run: _Run) -> None:
            woken = asyncio.Event()

            def wake(*_: Any) -> None:
                woken.set()

            await conn.add_listener(PGMQ_CHANNEL, wake)
            try:
                while not run.finished.is_set():
                    woken.clear()
                    while rows := await conn.fetch(PGMQ_READ, PGMQ_QUEUE, BATCH):
                        run.delivered([base64.b64decode(msgspec.json.decode(r["message"])["payload"]) for r in rows])
                        await conn.execute(PGMQ_DELETE, PGMQ_QUEUE, [r["msg_id"] for r in rows])
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(woken.wait(), 0.5)
            finally:
                await conn.remove_listener(PGMQ_CHANNEL, wake)

        return consume

    # --- the API ---
    api_producers = [HttpConnection(host, int(port), ADMIN, headers) for _ in range(PRODUCERS)]

    async def reconnect() -> None:
        """Fresh connections for each API round: the server closes one idle for 10 s (408) during a raw round."""
        for c in api_producers:
            await c.close()
            await c.connect()

    def api_producer(c: HttpConnection) -> Callable[[bytes], Coroutine[Any, Any, None]]:
        async def send(payload: bytes) -> None:
            body = msgspec.json.encode({"topic": TOPIC, "payload": payload})
            status, _ = await c.request("POST", "/api/messages", body)
            assert status == 201, status

        return send

    async def api_consume(run: _Run) -> None:
        c = HttpConnection(host, int(port), ADMIN, headers)
        await c.connect()
        try:
            while not run.finished.is_set():
                status, body = await c.request("POST", "/api/messages/dequeue", _DEQUEUE)
                assert status == 200, status
                messages = body["messages"]
                if not messages:
                    continue
                run.delivered([base64.b64decode(m["payload"]) for m in messages])
                acks = [{"id": m["id"], "receipt": m["receipt"]} for m in messages]
                status, _ = await c.request("POST", "/api/messages/ack", {"acks": acks})
                assert status == 200, status
        finally:
            await c.close()

    async def nothing() -> None:
        return None

    sides: dict[str, tuple[Callable[[], Awaitable[None]], list[Any], list[Any], Callable[[], float] | None]] = {
        "raw": (
            nothing,
            [raw_producer(c) for c in raw_producer_conns],
            [raw_consumer(c) for c in raw_consumer_conns],
            None,
        ),
        "api": (reconnect, [api_producer(c) for c in api_producers], [api_consume] * CONSUMERS, server_cpu),
        "pgmq": (
            nothing,
            [pgmq_producer(c) for c in pgmq_producer_conns],
            [pgmq_consumer(c) for c in pgmq_consumer_conns],
            None,
        ),
    }
    results: dict[str, list[tuple[_Run, float, float, float, int]]] = {"raw": [], "api": [], "pgmq": []}
    try:
        for round_number in range(ROUNDS):
            order = ("raw", "api", "pgmq") if round_number % 2 == 0 else ("pgmq", "api", "raw")
            for name in order:
                prepare, producers, consumers, side_cpu = sides[name]
                await pool.execute(f"TRUNCATE bench_raw, messages, pgmq.q_{PGMQ_QUEUE}")
                await prepare()
                pg_before, side_before, xacts_before = pg_cpu(), side_cpu() if side_cpu else 0.0, await transactions()
                run, elapsed = await _round(producers, consumers)
                xacts = await transactions() - xacts_before
                side_seconds = (side_cpu() - side_before) if side_cpu else 0.0
                results[name].append((run, elapsed, pg_cpu() - pg_before, side_seconds, xacts))
                print(
                    f"  longpoll {name}: sent {run.sent / elapsed:.0f}/s, received {run.received}/{run.sent}, "
                    f"p50 {statistics.median(run.latencies_ms or [0]):.2f} ms"
                )
    finally:
        for conn in [*raw_producer_conns, *raw_consumer_conns, *pgmq_producer_conns, *pgmq_consumer_conns]:
            await conn.close()
        for c in api_producers:
            await c.close()
    return _row(results)


def _row(results: dict[str, list[tuple[_Run, float, float, float, int]]]) -> list[dict[str, Any]]:
    """Two rows of the report: the API against the raw loop (`longpoll_500`), and PGMQ against it
    (`pgmq_longpoll_500`, its api columns PGMQ's)."""
    merged: dict[str, Result] = {}
    per_message: dict[str, dict[str, float]] = {}
    for name, runs in results.items():
        result = Result(f"longpoll_{name}")
        for run, elapsed, _, _, _ in runs:
            result.messages += run.received
            result.requests += run.sent
            result.seconds += elapsed
            result.latencies_ms.extend(run.latencies_ms)
        merged[name] = result
        received = max(1, sum(r[0].received for r in runs))
        per_message[name] = {
            "send_rate": round(sum(r[0].sent for r in runs) / sum(r[1] for r in runs), 1),
            "postgres_cpu_us_per_message": round(sum(r[2] for r in runs) * 1e6 / received, 1),
            "server_cpu_us_per_message": round(sum(r[3] for r in runs) * 1e6 / received, 1),
            "transactions_per_message": round(sum(r[4] for r in runs) / received, 2),
            "lost": sum(r[0].sent - r[0].received for r in runs),
        }
    rows = []
    for name, workload in (("api", f"longpoll_{RATE:.0f}"), ("pgmq", f"pgmq_longpoll_{RATE:.0f}")):
        ratios = [
            statistics.median(raw[0].latencies_ms) / statistics.median(side[0].latencies_ms)
            for raw, side in zip(results["raw"], results[name], strict=True)
            if raw[0].latencies_ms and side[0].latencies_ms
        ]
        rows.append(
            {
                "workload": workload,
                "target": TARGET,
                "raw": merged["raw"],
                "api": merged[name],
                "ratio": round(statistics.median(ratios), 3) if ratios else 0.0,
                "ratios": [round(r, 3) for r in ratios],
                "baseline": "raw p50 / API p50 of end-to-end latency at a fixed rate"
                if name == "api"
                else "raw p50 / PGMQ p50 of end-to-end latency at a fixed rate",
                "per_message": {"raw": per_message["raw"], name: per_message[name]},
                "cpu_us_per_message": {
                    "server": {"measured": per_message[name]["server_cpu_us_per_message"] if name == "api" else None},
                    "postgres": {
                        "baseline": per_message["raw"]["postgres_cpu_us_per_message"],
                        "measured": per_message[name]["postgres_cpu_us_per_message"],
                    },
                },
            }
        )
        print(f"  {workload}: p50 ratios {rows[-1]['ratios']}, per message {rows[-1]['per_message']}")
    return rows
