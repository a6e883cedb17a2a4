"""`make bench`'s PGMQ side (`bench.peers`) against a real Postgres: its SQL installs into a database of its own,
and each operation the bench repeats does what its count says, so a PGMQ release that changed its client fails
here, not in a bench run."""

from __future__ import annotations

from typing import Any

import asyncpg
from pgmq.async_queue import PGMQueue

from bench import peers
from mq.db.engine import asyncpg_dsn


async def test_pgmq_installs_and_each_benched_operation_moves_what_it_counts(empty_database: str) -> None:
    pool: asyncpg.Pool[Any] | None = await asyncpg.create_pool(asyncpg_dsn(empty_database), min_size=1, max_size=2)
    assert pool is not None
    queue = PGMQueue(conn_string=asyncpg_dsn(empty_database), pool_size=2, init_extension=False)
    try:
        await peers.install_pgmq(pool)
        await peers.install_pgmq(pool)  # once: a second call finds the schema
        await queue.init()
        await queue.create_queue(peers.QUEUE)
        assert await peers.send_one(queue) == 1
        assert await peers.send_100(queue) == 100
        assert await peers.read_100_delete(queue) == 100
        assert await peers.read_1_delete(queue) == 1
        assert await peers.read_1_delete(queue) == 0  # all delivered and deleted
        assert await pool.fetchval(f"SELECT count(*) FROM pgmq.q_{peers.QUEUE}") == 0
    finally:
        await queue.close()
        await pool.close()
