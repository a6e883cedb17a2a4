"""`python -m bench.strays`: what making strays impossible would cost the enqueue of a topic without groups.

A stray is a message an instance stores as for a topic without consumer groups because its cached config does not
know the topic has some yet (mq/queue/sql.py, "Strays"). Two ways to make them impossible were measured against
the statement stored today, on a topic without groups, at the database level (SQL alone, no server):

- **guarded**: the statement of a topic without groups also reads the topic's groups (an InitPlan probe of
  `consumer_groups`, a one-time filter) and refuses when it finds one, for the caller to retry with the minting
  statement;
- **minting**: every enqueue takes the minting statement of a topic with groups (`_OWED` and a `minted` CTE),
  which owes each new message to whatever groups the topic has.

What the product does instead: strays stay possible in the staleness window, and are told apart by a fact stored
with them (`owed` NULL: never owed to any group), which the group settler reads (docs/semantics.md, "Healing
jobs"). The enqueue pays nothing. Figures in bench/RESULTS.md.

Environment: SKIPLOCK_BENCH_DATABASE_URL (a server's maintenance database; default: an embedded Postgres),
SKIPLOCK_BENCH_SECONDS (4), SKIPLOCK_BENCH_ROUNDS (6), SKIPLOCK_BENCH_CLIENTS (4).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from typing import Any

import asyncpg

from bench.harness import git_commit, postgres_cpu
from mq.db.engine import asyncpg_dsn
from mq.ids import uuid7_batch
from mq.queue.sql.insert import InsertPlan, insert_statement
from tests.support.servers import migrated_database, postgres_server

SECONDS = float(os.environ.get("SKIPLOCK_BENCH_SECONDS", "4"))
ROUNDS = int(os.environ.get("SKIPLOCK_BENCH_ROUNDS", "6"))
CONNECTIONS = int(os.environ.get("SKIPLOCK_BENCH_CLIENTS", "4"))
PAYLOAD = b"x" * 100

REFUSE = """CREATE FUNCTION bench_refuse_grouped() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION USING ERRCODE = 'SKQ05', MESSAGE = 'the topic has consumer groups'; END $$"""
GUARD = """
WHERE (SELECT CASE WHEN EXISTS (SELECT FROM consumer_groups AS g WHERE g.tenant_id = $1 AND g.topic = $2)
              THEN bench_refuse_grouped() ELSE true END)"""
STATEMENTS = {
    "today": insert_statement(InsertPlan(uniform=True)).text,
    "guarded": insert_statement(InsertPlan(uniform=True)).text + GUARD,
    "minting": insert_statement(InsertPlan(uniform=True, grouped=True)).text,
}


def _arguments(side: str, tenant_id: int, rows: int) -> tuple[Any, ...]:
    ids = uuid7_batch(rows)
    listed: Any = ",".join(map(str, ids)) if side == "minting" else ids  # the minting statement's id list is text
    return (tenant_id, "plain", 0, 3, 0.0, 0, listed, [PAYLOAD] * rows, [None] * rows)


async def _round(pool: asyncpg.Pool[Any], side: str, tenant_id: int, rows: int) -> tuple[float, float]:
    """Messages per second and Postgres CPU microseconds per message of one side for SECONDS."""
    statement, stored = STATEMENTS[side], 0
    cpu = postgres_cpu(await pool.fetchval("SELECT pg_backend_pid()"))
    deadline = time.perf_counter() + SECONDS

    async def loop() -> None:
        nonlocal stored
        async with pool.acquire() as conn:
            while time.perf_counter() < deadline:
                await conn.execute(statement, *_arguments(side, tenant_id, rows))
                stored += rows

    started, cpu_before = time.perf_counter(), cpu()
    await asyncio.gather(*(loop() for _ in range(CONNECTIONS)))
    elapsed, used = time.perf_counter() - started, cpu() - cpu_before
    await pool.execute("TRUNCATE messages")
    return stored / elapsed, used / stored * 1e6


async def main() -> None:
    print(f"commit {git_commit()}, {os.cpu_count()} cores, {CONNECTIONS} connections, {ROUNDS} rounds of {SECONDS} s")
    with postgres_server("SKIPLOCK_BENCH_DATABASE_URL") as server_url:
        async with migrated_database(server_url, "skiplock_bench") as url:
            pool = await asyncpg.create_pool(asyncpg_dsn(url), min_size=CONNECTIONS + 1, max_size=CONNECTIONS + 1)
            await pool.execute(REFUSE)
            tenant_id = await pool.fetchval("INSERT INTO tenants (slug, name) VALUES ('bench', 'bench') RETURNING id")
            print("rows per statement | side | msg/s (ratio to today) | Postgres µs per message (ratio)")
            for rows in (8, 100):  # coalesced single enqueues; a batch of 100
                measured: dict[str, list[tuple[float, float]]] = {side: [] for side in STATEMENTS}
                for _ in range(ROUNDS):  # the sides alternate within each round: the same machine weather
                    for side in STATEMENTS:
                        measured[side].append(await _round(pool, side, tenant_id, rows))
                for side, runs in measured.items():
                    rate = statistics.median(r / t[0] for (r, _), t in zip(runs, measured["today"], strict=True))
                    cost = statistics.median(c / t[1] for (_, c), t in zip(runs, measured["today"], strict=True))
                    print(
                        f"{rows:4d} | {side:8s} | {statistics.median(r for r, _ in runs):8.0f} ({rate:.2f}) | "
                        f"{statistics.median(c for _, c in runs):6.2f} ({cost:.2f})"
                    )
            await pool.close()


if __name__ == "__main__":
    asyncio.run(main())
