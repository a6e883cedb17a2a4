"""`make bench`, part `pgmq`: PGMQ beside the raw loop, on the same Postgres, in the same run as Skiplock's rows.

PGMQ (https://github.com/pgmq/pgmq) is a queue of SQL functions in Postgres, no server. The `pgmq` package from PyPI
carries its SQL (installed here as plain SQL, no extension: `pgmq.install.get_embedded_install_sql`) and an asyncio
client on asyncpg (`pgmq.async_queue.PGMQueue`), which the clients call as an application would: `send`,
`send_batch`, `read`/`read_batch`, `delete`/`delete_batch`. Each workload is Skiplock's (`bench.harness.workloads`:
the same raw loop, the same clients, rounds and payload) with PGMQ in the API's place; its message is the JSON a
PGMQ user sends, the payload as base64 text (PGMQ stores JSON only). The ratio is PGMQ / raw, so set beside the
`sql` part's Skiplock / raw of the same run it says who is ahead; so does Postgres' CPU per message, measured on
both sides (PGMQ has no server of its own: its server column is blank).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from pgmq.async_queue import PGMQueue
from pgmq.install import get_embedded_install_sql

from bench.harness import CLIENTS, PAYLOAD_B64, RAW_SCHEMA, SECONDS, Side, compare, workloads
from mq.db.engine import asyncpg_dsn

QUEUE = "bench_pgmq"
#: The workloads measured against PGMQ, by Skiplock's key.
KEYS = ("single_enqueue", "batch_enqueue_100", "dequeue_100_ack", "dequeue_1_ack")
#: What a PGMQ user sends for one of the bench's messages.
MESSAGE = {"payload": PAYLOAD_B64}


async def install_pgmq(pool: asyncpg.Pool[Any]) -> None:
    """PGMQ's SQL into the database, once (plain SQL: its schema `pgmq`, no extension)."""
    if not await pool.fetchval("SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = 'pgmq')"):
        await pool.execute(get_embedded_install_sql())


async def send_one(q: PGMQueue) -> int:
    await q.send(QUEUE, MESSAGE)
    return 1


_HUNDRED = [MESSAGE] * 100


async def send_100(q: PGMQueue) -> int:
    await q.send_batch(QUEUE, _HUNDRED)
    return 100


async def read_100_delete(q: PGMQueue) -> int:
    messages = await q.read_batch(QUEUE, vt=30, batch_size=100)
    if not messages:
        return 0
    await q.delete_batch(QUEUE, [m.msg_id for m in messages])
    return len(messages)


async def read_1_delete(q: PGMQueue) -> int:
    messages = await q.read_batch(QUEUE, vt=30, batch_size=1)
    if not messages:
        return 0
    await q.delete(QUEUE, messages[0].msg_id)
    return 1


async def measure_pgmq(pool: asyncpg.Pool[Any], database_url: str, tenant_id: int) -> list[dict[str, Any]]:
    """PGMQ's asyncio client against the raw loop, workload by workload, in interleaved rounds."""
    await pool.execute(RAW_SCHEMA)
    await install_pgmq(pool)
    queue = PGMQueue(conn_string=asyncpg_dsn(database_url), pool_size=CLIENTS, init_extension=False)
    await queue.init()
    table = f"pgmq.q_{QUEUE}"
    raw = {w.key: w for w in workloads(pool, tenant_id)}
    sql = [await pool.acquire() for _ in range(CLIENTS)]
    try:
        await queue.create_queue(QUEUE)

        async def empty() -> None:
            await pool.execute(f"TRUNCATE {table}")

        def prefilled(n: int) -> Callable[[], Awaitable[None]]:
            async def setup() -> None:
                await empty()
                await pool.execute(
                    f"INSERT INTO {table} (vt, message) SELECT now(), $1::jsonb FROM generate_series(1, $2)",
                    json.dumps(MESSAGE),
                    n,
                )
                await pool.execute(f"VACUUM ANALYZE {table}")

            return setup

        # as many messages as Skiplock's drains get (`bench.harness.workloads`)
        drain = int(30_000 * SECONDS)
        sides = {
            "single_enqueue": (empty, send_one),
            "batch_enqueue_100": (empty, send_100),
            "dequeue_100_ack": (prefilled(drain), read_100_delete),
            "dequeue_1_ack": (prefilled(drain // 10), read_1_delete),
        }
        clients = [queue] * CLIENTS  # one client, its pool of CLIENTS connections, called by CLIENTS tasks at once
        rows = []
        for key in KEYS:
            w = raw[key]
            setup, op = sides[key]
            row = await compare(
                f"pgmq_{key}", w.target, Side(w.raw_setup, sql, w.raw_op), Side(setup, clients, op), "raw SQL"
            )
            rows.append(row)
        return rows
    finally:
        for c in sql:
            await pool.release(c)
        await queue.close()
