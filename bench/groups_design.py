"""`python -m bench.groups_design`: the two designs for consumer groups, their hot statements side by side.

A prototype at the database level, before the data plane is built (issue 28: "measure before you choose"). One
topic holds 1,000,000 waiting messages and has 3 groups; a plain topic of the same tenant holds as many. Each
workload runs on CONNECTIONS connections for SECONDS per round, ROUNDS rounds alternating the sides; the report
gives messages/s, the ratio to the same work on the plain topic, EXPLAIN (ANALYZE, BUFFERS) of each statement, and
the storage per message and group.

- **rows**: a delivery row per (message, group), minted by the enqueue statement from the topic's groups; the
  message keeps a count of the groups that owe it (`owed`). A group's dequeue leases its delivery rows (SKIP
  LOCKED over an index in queue order); its ack deletes them, counts the message down, and deletes the message
  when the count reaches 0 (in a function: each statement of it sees what committed before it started, so two
  groups acking a message's last deliveries at once cannot both miss the other's ack).
- **cursor**: each group keeps a position in the topic (Kafka's offset) and lease rows only for what it has in
  flight; the enqueue writes the message alone. Its dequeue reads after the position in id order, so it cannot
  keep the data plane's order (priority, then available_at) nor delays, and a message whose transaction commits
  after a later id was read is passed for good; it is measured for its cost only.

Environment: SKIPLOCK_BENCH_DATABASE_URL (a server's maintenance database; default: an embedded Postgres),
SKIPLOCK_GROUPS_ROWS (1000000), SKIPLOCK_BENCH_SECONDS (3), SKIPLOCK_BENCH_ROUNDS (3), SKIPLOCK_BENCH_CLIENTS (4).
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

from bench.explain import explain
from mq.db.engine import asyncpg_dsn
from mq.ids import uuid7_batch
from mq.queue.sql.dequeue import dequeue_statement
from mq.queue.sql.insert import InsertPlan, insert_statement
from mq.queue.sql.settle import ack_statement
from mq.queue.types import DeliveryPlan
from tests.support.servers import migrated_database, postgres_server

ROWS = int(os.environ.get("SKIPLOCK_GROUPS_ROWS", "1000000"))
SECONDS = float(os.environ.get("SKIPLOCK_BENCH_SECONDS", "3"))
ROUNDS = int(os.environ.get("SKIPLOCK_BENCH_ROUNDS", "3"))
CONNECTIONS = int(os.environ.get("SKIPLOCK_BENCH_CLIENTS", "4"))
GROUPS = 3
DEQUEUE = dequeue_statement(DeliveryPlan())
ACK = ack_statement(DeliveryPlan())
PAYLOAD = b"x" * 100

SCHEMA = """
ALTER TABLE messages ADD COLUMN owed int2;
CREATE TABLE proto_groups (id int8 PRIMARY KEY, tenant_id int8 NOT NULL, topic text NOT NULL, name text NOT NULL);
CREATE INDEX proto_groups_topic_idx ON proto_groups (tenant_id, topic);
-- rows: one per (message, group) it owes
CREATE TABLE proto_deliveries (
    group_id int8 NOT NULL, message_id uuid NOT NULL, status text NOT NULL DEFAULT 'pending',
    priority int2 NOT NULL DEFAULT 0, available_at timestamptz NOT NULL DEFAULT now(), expires_at timestamptz,
    retry_count int4 NOT NULL DEFAULT 0, receipt uuid, leased_by text,
    PRIMARY KEY (group_id, message_id)
);
CREATE INDEX proto_deliveries_dequeue_idx ON proto_deliveries (group_id, priority DESC, available_at)
    WHERE status IN ('pending', 'processing');
CREATE FUNCTION proto_ack(g int8, ids uuid[]) RETURNS int LANGUAGE plpgsql AS $$
DECLARE done uuid[]; n int;
BEGIN
    WITH d AS (DELETE FROM proto_deliveries WHERE group_id = g AND message_id = ANY(ids) AND status = 'processing'
               RETURNING message_id),
         u AS (UPDATE messages AS m SET owed = m.owed - 1 FROM d WHERE m.id = d.message_id RETURNING m.id, m.owed)
    SELECT array_agg(id) FILTER (WHERE owed = 0), count(*) INTO done, n FROM u;
    IF done IS NOT NULL THEN
        DELETE FROM messages WHERE id = ANY(done) AND owed = 0;
    END IF;
    RETURN n;
END $$;
-- rows, narrow: no primary key; what is leased is found through a partial index written only by the lease
CREATE TABLE proto_narrow (
    group_id int8 NOT NULL, message_id uuid NOT NULL, status int2 NOT NULL DEFAULT 0,
    priority int2 NOT NULL DEFAULT 0, available_at timestamptz NOT NULL DEFAULT now(), expires_at timestamptz,
    retry_count int2 NOT NULL DEFAULT 0, receipt uuid, leased_by text
);
CREATE INDEX proto_narrow_dequeue_idx ON proto_narrow (group_id, priority DESC, available_at, message_id);
CREATE INDEX proto_narrow_leased_idx ON proto_narrow (group_id, message_id) WHERE status = 1;
CREATE FUNCTION proto_ack_narrow(g int8, ids uuid[]) RETURNS int LANGUAGE plpgsql AS $$
DECLARE done uuid[]; n int;
BEGIN
    WITH d AS (DELETE FROM proto_narrow WHERE group_id = g AND message_id = ANY(ids) AND status = 1
               RETURNING message_id),
         u AS (UPDATE messages AS m SET owed = m.owed - 1 FROM d WHERE m.id = d.message_id RETURNING m.id, m.owed)
    SELECT array_agg(id) FILTER (WHERE owed = 0), count(*) INTO done, n FROM u;
    IF done IS NOT NULL THEN
        DELETE FROM messages WHERE id = ANY(done) AND owed = 0;
    END IF;
    RETURN n;
END $$;
-- cursor: a position per group, lease rows for what is in flight
CREATE TABLE proto_cursors (group_id int8 PRIMARY KEY, position uuid NOT NULL);
CREATE TABLE proto_leases (
    group_id int8 NOT NULL, message_id uuid NOT NULL, available_at timestamptz NOT NULL, retry_count int4 NOT NULL,
    receipt uuid NOT NULL, PRIMARY KEY (group_id, message_id)
);
"""

FILL = """
INSERT INTO messages (id, tenant_id, topic, payload, max_retries, owed)
SELECT gen_random_uuid(), 1, $2, '\\x00'::bytea, 3, $3 FROM generate_series(1, $1)
"""
FILL_DELIVERIES = """
INSERT INTO proto_deliveries (group_id, message_id, priority, available_at)
SELECT g.id, m.id, m.priority, m.available_at FROM messages AS m CROSS JOIN proto_groups AS g
WHERE m.tenant_id = 1 AND m.topic = 'grouped' AND g.topic = 'grouped'
"""

# rows: the message and its deliveries, one statement; the groups read in it (a group created a moment ago counts)
ENQUEUE_ROWS = """
WITH m AS (
    INSERT INTO messages (id, tenant_id, topic, payload, metadata, priority, max_retries, available_at, owed)
    SELECT u.id, $1, $2, u.payload, NULL, 0, 3, now(),
           (SELECT count(*) FROM proto_groups AS g WHERE g.tenant_id = $1 AND g.topic = $2)
    FROM unnest($3::uuid[], $4::bytea[]) AS u(id, payload)
    RETURNING id, priority, available_at, expires_at
)
INSERT INTO proto_deliveries (group_id, message_id, priority, available_at, expires_at)
SELECT g.id, m.id, m.priority, m.available_at, m.expires_at
FROM m CROSS JOIN proto_groups AS g WHERE g.tenant_id = $1 AND g.topic = $2"""

DEQUEUE_ROWS = """
WITH picked AS (
    SELECT message_id FROM proto_deliveries
    WHERE group_id = $1 AND status IN ('pending', 'processing') AND available_at <= now()
      AND (expires_at IS NULL OR expires_at > now())
    ORDER BY priority DESC, available_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), leased AS (
    UPDATE proto_deliveries AS d
    SET status = 'processing', available_at = now() + interval '30 seconds',
        receipt = md5($3 || d.message_id::text)::uuid, leased_by = 'bench'
    FROM picked AS p WHERE d.group_id = $1 AND d.message_id = p.message_id
    RETURNING d.message_id, d.receipt, d.retry_count
)
SELECT m.id::text AS id, m.topic, m.payload, l.receipt::text AS receipt, l.retry_count
FROM leased AS l JOIN messages AS m ON m.id = l.message_id"""

ACK_ROWS = "SELECT proto_ack($1, string_to_array($2, ',')::uuid[])"

ENQUEUE_NARROW = ENQUEUE_ROWS.replace("proto_deliveries", "proto_narrow")
# The lease finds its rows again by their tuple id: the narrow table has no key
DEQUEUE_NARROW = """
WITH picked AS (
    SELECT ctid FROM proto_narrow
    WHERE group_id = $1 AND available_at <= now() AND (expires_at IS NULL OR expires_at > now())
    ORDER BY priority DESC, available_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), leased AS (
    UPDATE proto_narrow AS d
    SET status = 1, available_at = now() + interval '30 seconds',
        receipt = md5($3 || d.message_id::text)::uuid, leased_by = 'bench'
    FROM picked AS p WHERE d.ctid = p.ctid
    RETURNING d.message_id, d.receipt, d.retry_count
)
SELECT m.id::text AS id, m.topic, m.payload, l.receipt::text AS receipt, l.retry_count
FROM leased AS l JOIN messages AS m ON m.id = l.message_id"""
ACK_NARROW = "SELECT proto_ack_narrow($1, string_to_array($2, ',')::uuid[])"
FILL_NARROW = FILL_DELIVERIES.replace("proto_deliveries", "proto_narrow").replace("'grouped'", "'narrow'")

GROUPS_OF = "SELECT id FROM proto_groups WHERE tenant_id = $1 AND topic = $2 FOR KEY SHARE"

# (the statement's parameters in order: tenant, topic, priority, max_retries, delay, ttl, ids, payloads, metadata)
ENQUEUE_PLAIN = insert_statement(InsertPlan(uniform=True)).text

# cursor: read after the group's position in id order (index (tenant_id, topic, id), built for this side only)
DEQUEUE_CURSOR = """
WITH c AS (SELECT position FROM proto_cursors WHERE group_id = $1 FOR UPDATE),
next AS (
    SELECT m.id, m.topic, m.payload FROM messages AS m, c
    WHERE m.tenant_id = 1 AND m.topic = 'grouped' AND m.id > c.position ORDER BY m.id LIMIT $2
), moved AS (
    UPDATE proto_cursors SET position = (SELECT id FROM next ORDER BY id DESC LIMIT 1)
    WHERE group_id = $1 AND EXISTS (SELECT FROM next)
), leased AS (
    INSERT INTO proto_leases (group_id, message_id, available_at, retry_count, receipt)
    SELECT $1, n.id, now() + interval '30 seconds', 0, md5($3 || n.id::text)::uuid FROM next AS n
    RETURNING message_id, receipt
)
SELECT n.id::text AS id, n.topic, n.payload, l.receipt::text AS receipt FROM next AS n JOIN leased AS l
ON l.message_id = n.id"""
ACK_CURSOR = "DELETE FROM proto_leases WHERE group_id = $1 AND message_id = ANY(string_to_array($2, ',')::uuid[])"

Work = Callable[["asyncpg.Connection[Any]"], Awaitable[int]]


async def timed(pool: asyncpg.Pool[Any], work: Work) -> float:
    """Messages per second of `work` (returns messages per call) on CONNECTIONS connections for SECONDS."""
    done = 0
    stop = time.perf_counter() + SECONDS

    async def one() -> None:
        nonlocal done
        async with pool.acquire() as conn:
            while time.perf_counter() < stop:
                done += await work(conn)  # type: ignore[arg-type]  # a pooled connection proxies one

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(CONNECTIONS)))
    return done / (time.perf_counter() - started)


def enqueue_plain(rows: int) -> Work:
    async def work(conn: asyncpg.Connection[Any]) -> int:
        await conn.execute(ENQUEUE_PLAIN, 1, "plain", 0, 3, 0.0, 0, uuid7_batch(rows), [PAYLOAD] * rows, [None] * rows)
        return rows

    return work


def enqueue_grouped(rows: int, statement: str) -> Work:
    topic = "narrow" if statement is ENQUEUE_NARROW else "grouped"

    async def work(conn: asyncpg.Connection[Any]) -> int:
        if statement is not ENQUEUE_PLAIN:
            await conn.execute(statement, 1, topic, uuid7_batch(rows), [PAYLOAD] * rows)
        else:  # the cursor side writes the message alone
            await conn.execute(
                ENQUEUE_PLAIN, 1, "grouped", 0, 3, 0.0, 0, uuid7_batch(rows), [PAYLOAD] * rows, [None] * rows
            )
        return rows

    return work


def enqueue_copied(rows: int) -> Work:
    """The rows design by COPY: the topic's groups (locked against deletion), the messages, their deliveries."""

    async def work(conn: asyncpg.Connection[Any]) -> int:
        ids = uuid7_batch(rows)
        async with conn.transaction():
            groups = [r["id"] for r in await conn.fetch(GROUPS_OF, 1, "grouped")]
            await conn.copy_records_to_table(
                "messages",
                records=[(i, 1, "grouped", PAYLOAD, 0, 3, len(groups)) for i in ids],
                columns=["id", "tenant_id", "topic", "payload", "priority", "max_retries", "owed"],
            )
            await conn.copy_records_to_table(
                "proto_deliveries", records=[(g, i) for i in ids for g in groups], columns=["group_id", "message_id"]
            )
        return rows

    return work


def enqueue_plain_copy(rows: int) -> Work:
    async def work(conn: asyncpg.Connection[Any]) -> int:
        await conn.copy_records_to_table(
            "messages",
            records=[(i, 1, "plain", PAYLOAD, 0, 3) for i in uuid7_batch(rows)],
            columns=["id", "tenant_id", "topic", "payload", "priority", "max_retries"],
        )
        return rows

    return work


def consume_plain(count: int) -> Work:
    async def work(conn: asyncpg.Connection[Any]) -> int:
        arguments = DEQUEUE.args(
            tenant=1,
            topic="plain",
            count=count,
            visibility=30.0,
            secret=secrets.token_hex(16),
            dlq_default=True,
            consumer="bench",
        )
        rows = await conn.fetch(DEQUEUE.text, *arguments)
        if rows:
            await conn.fetch(ACK.text, *ACK.args(tenant=1, ids=",".join(r["id"] for r in rows), receipts=""))
        return len(rows)

    return work


def consume_grouped(count: int, dequeue: str, ack: str) -> Work:
    """Each call consumes a batch for every group in turn; each group's messages count, as a plain topic's do (the
    issue's measure: a group's dequeue + ack against the same on a plain topic)."""

    async def work(conn: asyncpg.Connection[Any]) -> int:
        n = 0
        first = GROUPS + 1 if dequeue is DEQUEUE_NARROW else 1
        for group in range(first, first + GROUPS):
            rows = await conn.fetch(dequeue, group, count, secrets.token_hex(16))
            if rows:
                await conn.execute(ack, group, ",".join(r["id"] for r in rows))
            n += len(rows)
        return n

    return work


async def sizes(conn: asyncpg.Connection[Any]) -> None:
    narrow = await conn.fetchval("SELECT pg_total_relation_size('proto_narrow')")
    print(
        f"narrow rows: {narrow / await conn.fetchval('SELECT count(*) FROM proto_narrow'):.0f} B per (message, group)"
    )
    deliveries = await conn.fetchval("SELECT count(*) FROM proto_deliveries")
    heap = await conn.fetchval("SELECT pg_relation_size('proto_deliveries')")
    indexes = await conn.fetchval("SELECT pg_indexes_size('proto_deliveries')")
    print(
        f"\nrows: {deliveries} delivery rows, heap {heap / deliveries:.0f} B and indexes {indexes / deliveries:.0f} B "
        f"per (message, group): {(heap + indexes) / deliveries:.0f} B"
    )
    messages = await conn.fetchval("SELECT count(*) FROM messages")
    heap = await conn.fetchval("SELECT pg_relation_size('messages')")
    print(f"messages: {messages} rows, heap {heap / messages:.0f} B per message (100-byte payloads here: 1 B)")


async def compare(pool: asyncpg.Pool[Any], name: str, plain: Work, grouped: Work) -> None:
    ratios: list[float] = []
    rates: tuple[list[float], list[float]] = ([], [])
    for round_number in range(ROUNDS):
        sides = [(0, plain), (1, grouped)]
        if round_number % 2:
            sides.reverse()
        rate = [0.0, 0.0]
        for n, work in sides:
            rate[n] = await timed(pool, work)
            rates[n].append(rate[n])
        ratios.append(rate[1] / rate[0])
    print(
        f"{name}: plain {statistics.median(rates[0]):,.0f}/s, grouped {statistics.median(rates[1]):,.0f}/s, "
        f"ratio {statistics.median(ratios):.2f} (rounds {' '.join(f'{r:.2f}' for r in ratios)})"
    )


async def measure(url: str) -> None:
    conn = await asyncpg.connect(asyncpg_dsn(url))
    await conn.execute("INSERT INTO tenants (slug, name) VALUES ('a', 'a')")
    await conn.execute(SCHEMA)
    await conn.executemany(
        "INSERT INTO proto_groups VALUES ($1, 1, $2, $3)",
        [(g, "grouped" if g <= GROUPS else "narrow", f"g{g}") for g in range(1, 2 * GROUPS + 1)],
    )
    print(f"filling: {ROWS} waiting messages in 'grouped' and 'narrow' ({GROUPS} groups each) and in 'plain'")
    await conn.execute(FILL, ROWS, "grouped", GROUPS)
    await conn.execute(FILL, ROWS, "narrow", GROUPS)
    await conn.execute(FILL, ROWS, "plain", None)
    await conn.execute(FILL_DELIVERIES)
    await conn.execute(FILL_NARROW)
    await conn.execute("VACUUM ANALYZE")
    await sizes(conn)
    pool = await asyncpg.create_pool(asyncpg_dsn(url), min_size=CONNECTIONS, max_size=CONNECTIONS)
    assert pool is not None
    print(f"\n{CONNECTIONS} connections, {ROUNDS} rounds of {SECONDS} s; rows design")
    await compare(pool, "single enqueue", enqueue_plain(1), enqueue_grouped(1, ENQUEUE_ROWS))
    await compare(pool, "batch enqueue 100", enqueue_plain(100), enqueue_grouped(100, ENQUEUE_ROWS))
    await compare(pool, "batch enqueue 100, both by COPY", enqueue_plain_copy(100), enqueue_copied(100))
    await compare(pool, "narrow rows: single enqueue", enqueue_plain(1), enqueue_grouped(1, ENQUEUE_NARROW))
    await compare(pool, "narrow rows: batch enqueue 100", enqueue_plain(100), enqueue_grouped(100, ENQUEUE_NARROW))
    for count in (100, 10):
        name = f"dequeue {count} + ack, per group"
        await compare(pool, name, consume_plain(count), consume_grouped(count, DEQUEUE_ROWS, ACK_ROWS))
    for count in (100, 10):
        name = f"narrow rows: dequeue {count} + ack, per group"
        await compare(pool, name, consume_plain(count), consume_grouped(count, DEQUEUE_NARROW, ACK_NARROW))
    ids, payloads = uuid7_batch(100), [PAYLOAD] * 100
    await explain(conn, "rows: enqueue 100 into a topic with 3 groups", ENQUEUE_ROWS, 1, "grouped", ids, payloads)
    await explain(conn, "rows: dequeue 100 for a group", DEQUEUE_ROWS, 1, 100, "0" * 32)
    leased = await conn.fetch(DEQUEUE_ROWS, 2, 100, "1" * 32)
    await explain(conn, "rows: ack 100 for a group", ACK_ROWS, 2, ",".join(r["id"] for r in leased))
    await explain(conn, "narrow rows: enqueue 100", ENQUEUE_NARROW, 1, "narrow", uuid7_batch(100), payloads)
    await explain(conn, "narrow rows: dequeue 100 for a group", DEQUEUE_NARROW, GROUPS + 1, 100, "0" * 32)
    leased = await conn.fetch(DEQUEUE_NARROW, GROUPS + 2, 100, "1" * 32)
    ack = "DELETE FROM proto_narrow WHERE group_id = $1 AND message_id = ANY(string_to_array($2, ',')::uuid[])"
    ack += " AND status = 1"
    await explain(conn, "narrow rows: the ack's delete, 100", ack, GROUPS + 2, ",".join(r["id"] for r in leased))

    print("\ncursor design (an index (tenant_id, topic, id) on messages, which plain topics would pay for too)")
    await conn.execute("CREATE INDEX proto_messages_id_idx ON messages (tenant_id, topic, id)")
    start = "00000000-0000-0000-0000-000000000000"
    await conn.executemany("INSERT INTO proto_cursors VALUES ($1, $2)", [(g, start) for g in range(1, GROUPS + 1)])
    await conn.execute("VACUUM ANALYZE")
    await compare(pool, "single enqueue", enqueue_plain(1), enqueue_grouped(1, ENQUEUE_PLAIN))
    await compare(pool, "batch enqueue 100", enqueue_plain(100), enqueue_grouped(100, ENQUEUE_PLAIN))
    await compare(
        pool, "dequeue 100 + ack, per group", consume_plain(100), consume_grouped(100, DEQUEUE_CURSOR, ACK_CURSOR)
    )
    await explain(conn, "cursor: dequeue 100 for a group", DEQUEUE_CURSOR, 1, 100, "0" * 32)
    await pool.close()
    await conn.close()


async def main() -> None:
    with postgres_server("SKIPLOCK_BENCH_DATABASE_URL") as server_url:
        async with migrated_database(server_url, "skiplock_groups") as url:
            await measure(url)


if __name__ == "__main__":
    asyncio.run(main())
