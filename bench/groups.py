"""`make bench` part `groups`: what consumer groups cost over HTTP, against the same requests on a topic without them.

One server; a topic with 3 groups and a plain topic of the same tenant; interleaved rounds (`bench.harness.compare`)
with the server's CPU per request on each side. Workloads: single enqueue, batch enqueue of 100, and dequeue 100 +
batch ack, each client consuming as one of the groups (a group's messages count, as the plain topic's do) from a
backlog larger than a round drains. Also the storage per (message, group): `pg_total_relation_size('deliveries')`
over its rows after the backlog's fill. Targets (issue 28): 0.8, 0.5 and 0.7.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import msgspec

from bench.harness import PAYLOAD, PAYLOAD_B64, SECONDS, Side, compare, connected, cpu_seconds
from bench.httpclient import HttpConnection
from mq.ids import uuid7_batch

GROUPS = ("billing", "shipping", "audit")
PLAIN, GROUPED = "bench-plain", "bench-grouped"

Op = Callable[[HttpConnection], Awaitable[int]]


async def measure_groups(
    pool: asyncpg.Pool[Any], base_url: str, tenant_id: int, server_pid: int
) -> list[dict[str, Any]]:
    cpu = cpu_seconds(server_pid)
    http = await connected(base_url)
    for name in GROUPS:
        status, _ = await http[0].request("POST", f"/api/topics/{GROUPED}/consumer-groups", {"consumer_group": name})
        assert status in (201, 409), status

    def enqueue(topic: str, rows: int) -> Op:
        if rows == 1:
            path, body = "/api/messages", msgspec.json.encode({"topic": topic, "payload": PAYLOAD_B64})
        else:
            items = [{"payload": PAYLOAD_B64}] * rows
            path, body = "/api/messages/batch", msgspec.json.encode({"topic": topic, "messages": items})

        async def op(c: HttpConnection) -> int:
            status, _ = await c.request("POST", path, body)
            assert status == 201, status
            return rows

        return op

    def consume(topic: str) -> Op:
        """Dequeue 100 and ack them in one batch; on the grouped topic each connection is one group's consumer."""
        group_of = {id(c): GROUPS[n % len(GROUPS)] for n, c in enumerate(http)} if topic == GROUPED else {}

        async def op(c: HttpConnection) -> int:
            group = group_of.get(id(c))
            extra = {"consumer_group": group} if group else {}
            status, answer = await c.request("POST", "/api/messages/dequeue", {"topic": topic, "count": 100, **extra})
            assert status == 200, (status, answer)
            if not answer["messages"]:
                return 0
            acks = [{"id": m["id"], "receipt": m["receipt"], **extra} for m in answer["messages"]]
            status, _ = await c.request("POST", "/api/messages/ack", {"acks": acks})
            assert status == 200, status
            return len(acks)

        return op

    async def empty() -> None:
        await pool.execute("TRUNCATE messages, deliveries")

    def backlog(topic: str) -> Callable[[], Awaitable[None]]:
        async def setup() -> None:
            await fill(pool, tenant_id, topic, int(30_000 * SECONDS))

        return setup

    pairs: list[tuple[str, float, Callable[[], Awaitable[None]], Op, Callable[[], Awaitable[None]], Op]] = [
        ("groups_single_enqueue", 0.8, empty, enqueue(PLAIN, 1), empty, enqueue(GROUPED, 1)),
        ("groups_batch_enqueue_100", 0.5, empty, enqueue(PLAIN, 100), empty, enqueue(GROUPED, 100)),
        ("groups_dequeue_100_ack", 0.7, backlog(PLAIN), consume(PLAIN), backlog(GROUPED), consume(GROUPED)),
    ]
    rows = []
    try:
        baseline = "the same requests on a topic without groups"
        for key, target, base_setup, base_op, setup, op in pairs:
            base, measured = Side(base_setup, http, base_op, cpu), Side(setup, http, op, cpu)
            rows.append(await compare(key, target, base, measured, baseline))
        await fill(pool, tenant_id, GROUPED, 100_000)
        size = await pool.fetchval("SELECT pg_total_relation_size('deliveries')")
        count = await pool.fetchval("SELECT count(*) FROM deliveries")
        rows[-1]["storage_bytes_per_delivery"] = round(size / max(1, count))
        print(f"  storage: {size / max(1, count):.0f} bytes per (message, group), heap and indexes")
    finally:
        for c in http:
            await c.close()
    return rows


async def fill(pool: asyncpg.Pool[Any], tenant_id: int, topic: str, n: int) -> None:
    """Empty the tables, then `n` pending messages in `topic` written straight in; on the grouped topic each owed
    to every group, with its deliveries."""
    await pool.execute("TRUNCATE messages, deliveries")
    grouped = topic == GROUPED
    for start in range(0, n, 10_000):
        ids = uuid7_batch(min(10_000, n - start))
        await pool.execute(
            """INSERT INTO messages (id, tenant_id, topic, payload, max_retries, owed)
               SELECT u, $1, $2, $3, 3, $5 FROM unnest($4::uuid[]) AS u""",
            tenant_id,
            topic,
            PAYLOAD,
            ids,
            len(GROUPS) if grouped else None,
        )
        if grouped:
            await pool.execute(
                """INSERT INTO deliveries (tenant_id, group_id, message_id, priority, available_at)
                   SELECT $1, g.id, u, 0, now() FROM unnest($3::uuid[]) AS u
                   CROSS JOIN consumer_groups AS g WHERE g.tenant_id = $1 AND g.topic = $2""",
                tenant_id,
                topic,
                ids,
            )
    await pool.execute("VACUUM ANALYZE messages, deliveries")
