"""`make bench-lease`: Postgres' CPU per message of the data plane's statements, one connection, no server.

Each form leases a backlog of messages and acks them, `SKIPLOCK_LEASE_COUNT` (100) per dequeue, on one connection
until the topic is empty; the figure is the backend's CPU time (and every Postgres process's) per message, which
the server's own CPU, HTTP and the clients' do not blur. The forms, in interleaved rounds on one database:
- **raw**: the bench's raw loop (`bench.harness`: UPDATE ... SKIP LOCKED on a 3-column table, DELETE by id);
- **uncapped**: the dequeue with `LIMIT $count` (`dequeue[plain]`, planned again at each execution) and the ack;
- **capped**: what the server runs (`dequeue[plain]:<cap>`, one generic plan kept per prepared statement).
Environment: SKIPLOCK_LEASE_ROWS (backlog per round, 30,000), SKIPLOCK_LEASE_ROUNDS (5), SKIPLOCK_LEASE_COUNT,
SKIPLOCK_BENCH_DATABASE_URL (a server's maintenance DB; default: an embedded Postgres).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import psutil

from bench import harness
from mq.db.statements import Statement
from mq.ids import uuid7
from mq.queue.sql import dequeue, insert, settle
from mq.queue.types import PLAIN
from tests.support.servers import migrated_database, postgres_server

ROWS = int(os.environ.get("SKIPLOCK_LEASE_ROWS", "30000"))
ROUNDS = int(os.environ.get("SKIPLOCK_LEASE_ROUNDS", "5"))
COUNT = int(os.environ.get("SKIPLOCK_LEASE_COUNT", "100"))
TOPIC = "lease"
PAYLOAD = b"x" * 100

Step = Callable[["asyncpg.Connection[Any]"], Awaitable[int]]
Fill = Callable[["asyncpg.Connection[Any]"], Awaitable[None]]


async def fill_messages(conn: asyncpg.Connection[Any]) -> None:
    statement = insert.insert_statement(insert.InsertPlan(uniform=True))
    await conn.execute("TRUNCATE messages")
    for _ in range(ROWS // 1000):
        ids = [uuid7() for _ in range(1000)]
        values = {"tenant": 1, "topic": TOPIC, "priority": 0, "max_retries": 3, "delay": 0.0, "ttl": 0, "ids": ids}
        await conn.execute(statement.text, *statement.args(payloads=[PAYLOAD] * 1000, metadata=[None] * 1000, **values))
    await conn.execute("VACUUM ANALYZE messages")


async def fill_raw(conn: asyncpg.Connection[Any]) -> None:
    await conn.execute("TRUNCATE bench_raw")
    for _ in range(ROWS // 1000):
        await conn.execute(harness.RAW_INSERT_MANY, [PAYLOAD] * 1000)
    await conn.execute("VACUUM ANALYZE bench_raw")


async def raw_step(conn: asyncpg.Connection[Any]) -> int:
    rows = await conn.fetch(harness.RAW_DEQUEUE, COUNT)
    if rows:
        await conn.execute(harness.RAW_DELETE, [r["id"] for r in rows])
    return len(rows)


def lease_step(lease: Statement, ack: Statement) -> Step:
    values = {
        "tenant": 1,
        "topic": TOPIC,
        "dlq_default": True,
        "count": COUNT,
        "visibility": 30.0,
        "secret": secrets.token_hex(16),
        "consumer": "bench",
    }
    arguments = lease.bind(values)

    async def step(conn: asyncpg.Connection[Any]) -> int:
        rows = await conn.fetch(lease.text, *arguments)
        if rows:
            ids, receipts = ",".join(r["id"] for r in rows), ",".join(r["receipt"] for r in rows)
            await conn.execute(ack.text, *ack.args(tenant=1, ids=ids, receipts=receipts))
        return len(rows)

    return step


def forms() -> dict[str, tuple[Fill, Step]]:
    ack = settle.ack_statement(PLAIN)
    return {
        "raw": (fill_raw, raw_step),
        "uncapped": (fill_messages, lease_step(dequeue.dequeue_statement(PLAIN), ack)),
        "capped": (fill_messages, lease_step(dequeue.dequeue_statement(PLAIN, count=COUNT), ack)),
    }


def postgres_cpu() -> float:
    total = 0.0
    for process in psutil.process_iter(["name"]):
        try:
            if (process.info["name"] or "").startswith("postgres"):
                times = process.cpu_times()
                total += times.user + times.system
        except psutil.Error:
            continue
    return total


async def drain(conn: asyncpg.Connection[Any], step: Step) -> tuple[float, float, float]:
    """Backend CPU, all of Postgres' CPU and wall time per message (µs), draining the backlog."""
    backend = psutil.Process(await conn.fetchval("SELECT pg_backend_pid()"))
    mine, everyone, started, done = sum(backend.cpu_times()[:2]), postgres_cpu(), time.perf_counter(), 0
    while taken := await step(conn):
        done += taken
    wall = time.perf_counter() - started
    mine, everyone = sum(backend.cpu_times()[:2]) - mine, postgres_cpu() - everyone
    return mine / done * 1e6, everyone / done * 1e6, wall / done * 1e6


async def main() -> None:
    with postgres_server("SKIPLOCK_BENCH_DATABASE_URL") as server_url:
        async with migrated_database(server_url, "skiplock_lease") as url:
            conn = await asyncpg.connect(url)
            try:
                await conn.execute("INSERT INTO tenants (slug, name) VALUES ('bench', 'bench')")
                await conn.execute(harness.RAW_SCHEMA)
                results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in forms()}
                for _ in range(ROUNDS):
                    for name, (fill, step) in forms().items():
                        await fill(conn)
                        results[name].append(await drain(conn, step))
            finally:
                await conn.close()
    print(f"Lease bench: {ROWS} messages, {COUNT} per dequeue + one ack, {ROUNDS} rounds, one connection")
    print("form       backend µs/msg   Postgres µs/msg   wall µs/msg   Postgres / raw")
    raw = statistics.median(r[1] for r in results["raw"])
    for name, rounds in results.items():
        backend, everyone, wall = (statistics.median(r[i] for r in rounds) for i in range(3))
        print(f"{name:<10} {backend:>14.1f} {everyone:>17.1f} {wall:>13.1f} {everyone / raw:>16.2f}")


if __name__ == "__main__":
    asyncio.run(main())
