"""Messages already waiting, for the scale-with-work runs (`PREFILL=10000000 make loadtest-load`).

`loadtests/run.py` calls `prefill` before k6 starts when PREFILL is set: PREFILL pending messages spread evenly
over PREFILL_TENANTS tenants (slugs `prefill-<n>`) and PREFILL_TOPICS topics, written by INSERT ... SELECT in
chunks of a million rows (each its own transaction), then VACUUM ANALYZE and CHECKPOINT. The tenants are made in
SQL: they are the load's backdrop, never signed in to. After k6, `plans` EXPLAINs the hot statements on one
prefilled topic, so the plans at two sizes can be compared (`make explain` style).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import asyncpg

from mq.queue import sql
from mq.queue.sql.dequeue import dequeue_statement
from mq.queue.sql.settle import ack_statement
from mq.queue.types import DeliveryPlan

CHUNK = 1_000_000
PAYLOAD_BYTES = 256
DEQUEUE = dequeue_statement(DeliveryPlan())
ACK = ack_statement(DeliveryPlan())  # (tenant, ids, receipts)


def _dequeue_args(tenant: int, limit: int) -> tuple[Any, ...]:
    return DEQUEUE.args(
        tenant=tenant,
        topic="prefill-0",
        count=limit,
        visibility=30.0,
        secret="0" * 32,
        dlq_default=True,
        consumer="prefill",
    )


# Ids are UUIDv7-shaped and ascending (timestamp 0: they sort before any id the server makes), so the primary key
# is appended to, as it is by real enqueues.
FILL = f"""
INSERT INTO messages (id, tenant_id, topic, payload, status, max_retries, available_at, created_at)
SELECT ('00000000-0000-7000-8' || lpad(to_hex(g), 15, '0'))::uuid,
       t.ids[1 + g % $3],
       'prefill-' || (g % $4 / $3),
       decode(repeat('ab', {PAYLOAD_BYTES}), 'hex'),
       'pending', 3, now() - interval '1 hour', now() - interval '1 hour'
FROM generate_series($1::bigint, $2::bigint - 1) AS g,
     (SELECT array_agg(id ORDER BY id) AS ids FROM tenants WHERE slug LIKE 'prefill-%') AS t
"""


async def prefill(database_url: str, messages: int, tenants: int, topics: int) -> dict[str, Any]:
    """Write `messages` pending messages over `tenants` tenants and `topics` topics in all; returns what it did."""
    if topics % tenants:
        raise SystemExit(f"PREFILL_TOPICS={topics} must be a multiple of PREFILL_TENANTS={tenants}")
    started = time.monotonic()
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(
            "INSERT INTO tenants (slug, name) SELECT 'prefill-' || n, 'prefill ' || n FROM generate_series(1, $1) n "
            "ON CONFLICT DO NOTHING",
            tenants,
        )
        for start in range(0, messages, CHUNK):
            await conn.execute(FILL, start, min(messages, start + CHUNK), tenants, topics)
            print(f"  prefill: {min(messages, start + CHUNK):,} of {messages:,} ({time.monotonic() - started:.0f} s)")
        await conn.execute("VACUUM ANALYZE messages")
        # The bulk write leaves gigabytes of dirty pages; flushed by the next checkpoint, they would be measured as
        # the load's. CHECKPOINT needs a superuser (or pg_checkpoint): without one, the run starts a checkpoint later.
        with contextlib.suppress(asyncpg.InsufficientPrivilegeError):
            await conn.execute("CHECKPOINT")
        size = await conn.fetchval("SELECT pg_total_relation_size('messages')")
    finally:
        await conn.close()
    return {
        "messages": messages,
        "tenants": tenants,
        "topics": topics,
        "seconds": round(time.monotonic() - started, 1),
        "messages_total_bytes": size,
    }


async def plans(database_url: str) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the hot statements on the first prefilled topic, each rolled back."""
    conn = await asyncpg.connect(database_url)
    out: list[str] = []

    async def explain(name: str, statement: str, *args: Any, lease_first: int = 0) -> None:
        transaction = conn.transaction()
        await transaction.start()
        try:
            if lease_first:  # an ack needs leased messages: lease them in the same (rolled back) transaction
                rows = await conn.fetch(DEQUEUE.text, *_dequeue_args(args[0], lease_first))
                args = (args[0], ",".join(str(r["id"]) for r in rows), "")
            explained = await conn.fetch("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + statement, *args)
        finally:
            await transaction.rollback()
        out.append(f"\n=== {name}")
        out.extend(row[0] for row in explained)

    try:
        tenant = await conn.fetchval("SELECT min(id) FROM tenants WHERE slug LIKE 'prefill-%'")
        depth = await conn.fetchval(
            "SELECT count(*) FROM messages WHERE tenant_id = $1 AND topic = 'prefill-0' AND status = 'pending'", tenant
        )
        out.append(f"tenant {tenant}, topic prefill-0: {depth} pending")
        for limit in (1, 100, 1000):
            await explain(
                f"message_dequeue {limit}",
                DEQUEUE.text,
                *_dequeue_args(tenant, limit),
            )
        await explain("ack[plain] 100", ACK.text, tenant, lease_first=100)
        await explain("message_next_available", sql.MESSAGE_NEXT_AVAILABLE, tenant, "prefill-0")
    finally:
        await conn.close()
    return "\n".join(out)


if __name__ == "__main__":  # python -m loadtests.prefill N: against SKIPLOCK_DATABASE_URL (a migrated database)
    import asyncio
    import os
    import sys

    url = os.environ["SKIPLOCK_DATABASE_URL"].replace("postgresql+asyncpg://", "postgresql://")
    tenant_count, topic_count = (
        int(os.environ.get("PREFILL_TENANTS", "100")),
        int(os.environ.get("PREFILL_TOPICS", "10000")),
    )
    print(asyncio.run(prefill(url, int(sys.argv[1]), tenant_count, topic_count)))
