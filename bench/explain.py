"""`make explain`: EXPLAIN (ANALYZE, BUFFERS) of every hot statement on a table of 1,000,000 messages.

The table holds two tenants with 10 topics each; per topic a mix of pending, delayed, processing (some with
expired leases), failed and keyed messages, so that the plans face what a busy deployment has. Statements that
change rows run inside a transaction that is rolled back, so each sees the same table.
Environment: SKIPLOCK_BENCH_DATABASE_URL (a server's maintenance DB; default: an embedded Postgres).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import uuid
from datetime import UTC, datetime
from typing import Any

import asyncpg

from mq.db.statements import REGISTRY, Statement
from mq.ids import uuid7
from mq.queue import sql
from mq.queue.sql import dequeue as _dequeue  # noqa: F401  (its statements join the registry)
from mq.queue.sql import settle as _settle  # noqa: F401  (the same)
from mq.topics import sql as topics_sql
from tests.support.servers import migrated_database, postgres_server

ZERO, ALL_ONES = uuid.UUID(int=0), uuid.UUID(int=(1 << 128) - 1)
ROWS = int(os.environ.get("SKIPLOCK_EXPLAIN_ROWS", "1000000"))

FILL = """
INSERT INTO messages (id, tenant_id, topic, key, payload, status, priority, max_retries, available_at, expires_at,
                      receipt, created_at)
SELECT gen_random_uuid(), 1 + (g % 2), 'topic-' || (g % 20 / 2), CASE WHEN g % 10 = 0 THEN 'key-' || g END,
       '\\x00'::bytea, s.status, CASE WHEN g % 50 = 0 THEN 5 ELSE 0 END, 3,
       CASE s.status WHEN 'processing' THEN now() + CASE WHEN g % 3 = 0 THEN -interval '1 min' ELSE interval '5 min' END
                     WHEN 'pending' THEN now() + CASE WHEN g % 7 = 0 THEN interval '1 hour' ELSE -interval '1 min' END
                     ELSE now() END,
       CASE WHEN g % 11 = 0 THEN now() + interval '1 day' END,
       CASE s.status WHEN 'processing' THEN gen_random_uuid() END,
       now() - (g || ' ms')::interval
FROM generate_series(1, $1) AS g,
     LATERAL (SELECT CASE WHEN g % 10 < 6 THEN 'pending' WHEN g % 10 < 8 THEN 'processing'
                          WHEN g % 10 < 9 THEN 'failed' ELSE 'expired' END AS status) AS s
"""


async def explain(conn: asyncpg.Connection[Any], name: str, statement: str, *args: Any) -> None:
    tr = conn.transaction()
    await tr.start()
    try:
        rows = await conn.fetch("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + statement, *args)
    finally:
        await tr.rollback()
    print(f"\n=== {name}")
    for row in rows:
        print(row[0])


# The values of the registered statements' named parameters (`mq.db.statements.REGISTRY`) here: tenant 1's
# topic-3, or, for a grouped plan, a consumer group owed each message of topic-4.
SAMPLE = {
    "tenant": 1,
    "topic": "topic-3",
    "group": 0,
    "count": 100,
    "visibility": 30.0,
    "secret": "0" * 32,
    "dlq_default": True,
    "consumer": "bench",
    "default_max_retries": 3,
    "default_ttl": 0,
    "groups": None,
}
GROUP_SETUP = """
WITH g AS (
    INSERT INTO consumer_groups (tenant_id, topic, name, start) VALUES (1, 'topic-4', 'bench', 'earliest')
    RETURNING id
), owed AS (
    INSERT INTO deliveries (tenant_id, group_id, message_id, priority, available_at, expires_at)
    SELECT 1, g.id, m.id, m.priority, now() - interval '1 minute', m.expires_at FROM g, messages AS m
    WHERE m.tenant_id = 1 AND m.topic = 'topic-4'
)
SELECT id FROM g"""
RESERVE = "INSERT INTO inflight_reservations (tenant_id, topic, group_id, n) VALUES ($1, $2, $3, $4) RETURNING id"


def insert_sample(name: str) -> dict[str, Any]:
    """An insert's 100 rows (keyed ones new keys) into topic-3, or topic-4 (its consumer group's) when grouped;
    capped ones through a tenant gate of room enough."""
    rows, grouped = 100, "grouped" in name
    topic = "topic-4" if grouped else "topic-3"
    ids = [uuid7() for _ in range(rows)]
    return {
        "ids": ",".join(map(str, ids)) if grouped and name.startswith("insert[uniform") else ids,
        "topic": topic,
        "topics": [topic] * rows,
        "keys": [f"key-new-{n}" for n in range(rows)] if "keyed" in name else [None] * rows,
        "payloads": [b"x"] * rows,
        "metadata": [None] * rows,
        "priority": 0,
        "priorities": [0] * rows,
        "max_retries": 3 if name.startswith("insert[uniform") else [3] * rows,
        "delay": 0.0,
        "delays": [0.0] * rows,
        "ttl": 0,
        "ttls": [0] * rows,
        "groups": [None] * rows,
        "expire_default": False,
        "admit_scopes": [""],
        "admit_rows": [rows],
        "admit_caps": [10**9],
        "admit_max_topics": None,
        "admit_topics": [],
    }


def by_id_values(leases: list[asyncpg.Record], leased: asyncpg.Record) -> dict[str, Any]:
    """The values of the statements that name messages by id: an ack of `leases` (as text lists), a nack and an
    extend of `leased`, a group's (`bench`) and a dead-lettered copy's."""
    return {
        "ids": ",".join(str(r["id"]) for r in leases),
        "receipts": ",".join(str(r["receipt"]) for r in leases),
        "message": leased["id"],
        "receipt": leased["receipt"],
        "group_name": "bench",
        "error": "e",
        "delay": None,
        "backoff_default": [1],
        "copy_id": uuid7(),
        "metadata": None,
        "seconds": 30.0,
    }


async def with_reservation(conn: asyncpg.Connection[Any], statement: Statement, values: dict[str, Any]) -> None:
    """A statement that claims a reservation gets one of its count; the reservation's own statement a new id."""
    if "reservation" not in statement.parameters:
        return
    if statement.name.startswith("inflight_reserve"):
        values["reservation"] = secrets.randbits(63)
    else:
        values["reservation"] = await conn.fetchval(
            RESERVE, values["tenant"], values["topic"], values["group"], values["count"]
        )


async def explain_registry(conn: asyncpg.Connection[Any], leased: asyncpg.Record) -> None:
    """Every registered statement, by name, with its plan (a limited dequeue with a reservation of its count; an
    ack of 100 leased messages; a nack and an extend of one)."""
    group = await conn.fetchval(GROUP_SETUP)
    await conn.execute("ANALYZE deliveries")
    leases = await conn.fetch(
        "SELECT id, receipt FROM messages WHERE tenant_id = 1 AND status = 'processing' LIMIT 100"
    )
    by_id = by_id_values(leases, leased)
    for name, statement in sorted(REGISTRY.items()):
        if "routed]" in name:
            continue  # a call of a function only Citus has (`mq.db.routed`): its statement is listed as itself
        if "]:" in name and not name.endswith("]:128"):
            continue  # a dequeue under a cap (`mq.queue.sql.dequeue.CAPS`): the cap of 100 stands for them all
        values: dict[str, Any] = {**SAMPLE, **by_id}
        if name.startswith("dequeue[") and "grouped" in name:
            values.update(group=group, topic="topic-4")
        if name.startswith("insert["):
            values.update(insert_sample(name))
        tr = conn.transaction()
        await tr.start()
        try:
            await with_reservation(conn, statement, values)
            rows = await conn.fetch(
                "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + statement.text, *statement.args(**values)
            )
        finally:
            await tr.rollback()
        shown = ", ".join(f"{p}={str(values[p])[:40]}" for p in statement.parameters)
        print(f"\n=== {name} ({shown})")
        for row in rows:
            print(row[0])


async def main() -> None:
    with postgres_server("SKIPLOCK_BENCH_DATABASE_URL") as server_url:
        async with migrated_database(server_url, "skiplock_explain") as url:
            await explain_all(url)


async def explain_all(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("INSERT INTO tenants (slug, name) VALUES ('a', 'a'), ('b', 'b')")
        await conn.execute(FILL, ROWS)
        await conn.execute("VACUUM ANALYZE messages")
        pending = await conn.fetchval(
            "SELECT id FROM messages WHERE tenant_id = 1 AND topic = 'topic-3' AND status = 'pending' LIMIT 1"
        )
        leased = await conn.fetchrow(
            "SELECT id, receipt FROM messages WHERE tenant_id = 1 AND status = 'processing' LIMIT 1"
        )
        print(
            f"{ROWS} messages; per status:",
            {r["status"]: r["count"] for r in await conn.fetch("SELECT status, count(*) FROM messages GROUP BY 1")},
        )
        assert leased is not None
        await explain_registry(conn, leased)
        await explain(conn, "message_next_available", sql.MESSAGE_NEXT_AVAILABLE, 1, "topic-3")
        everything = sorted(topics_sql.KNOWN_STATUSES)
        await explain(
            conn,
            "message_browse (topic, all statuses)",
            topics_sql.message_browse(everything, topic=True, key=False),
            1,
            "topic-3",
            50,
            0,
        )
        await explain(
            conn,
            "message_browse (topic, failed)",
            topics_sql.message_browse(["failed"], topic=True, key=False),
            1,
            "topic-3",
            50,
            0,
        )
        await explain(conn, "message_purge (topic, expired)", topics_sql.message_purge(["expired"]), 1, "topic-3")
        await explain(
            conn, "message_delete_by_key", topics_sql.message_delete_by_key(everything), 1, "topic-3", "key-40"
        )
        await explain(conn, "message_get", sql.MESSAGE_GET, 1, pending)
        await explain(conn, "topic_summary", topics_sql.TOPIC_SUMMARY, 1)
        # The console's pages, from each end of the list (mq/topics/sql.py): windows of one index range each.
        first, last = (10, datetime.min.replace(tzinfo=UTC), ZERO), (-1, datetime.max.replace(tzinfo=UTC), ALL_ONES)
        no_filter: list[str] = []
        await explain(
            conn, "live_page", topics_sql.live_page(no_filter, key_at=0, metadata_at=0), 1, "topic-3", *first, 50, 50
        )
        reverse = topics_sql.live_page(no_filter, key_at=0, metadata_at=0, reverse=True)
        await explain(conn, "live_page reversed", reverse, 1, "topic-3", *last, 50, 50)
        await explain(
            conn, "done_page", topics_sql.done_page(no_filter, key_at=0, metadata_at=0), 1, "topic-3", ALL_ONES, 50, 50
        )
        reverse = topics_sql.done_page(no_filter, key_at=0, metadata_at=0, reverse=True)
        await explain(conn, "done_page reversed", reverse, 1, "topic-3", ZERO, 50, 50)
    finally:
        await conn.close()


if __name__ == "__main__":
    asyncio.run(main())
