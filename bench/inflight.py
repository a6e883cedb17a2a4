"""`make bench` part `inflight`: what a concurrency limit costs, over HTTP. Dequeue 100 + batch ack on a topic with
`max_inflight` (1,000: room for every client's 100, so the cost of counting is measured, not the limit's
throttling) against the same on a topic without one, of the same tenant, from a backlog larger than a round
drains; interleaved rounds with the server's CPU per request. Target (issue 30): >= 0.7.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from bench.groups import fill
from bench.harness import SECONDS, Side, compare, connected, cpu_seconds
from bench.httpclient import HttpConnection

PLAIN, LIMITED = "bench-plain", "bench-limited-inflight"
LIMIT = 1000


async def measure_inflight(
    pool: asyncpg.Pool[Any], base_url: str, tenant_id: int, server_pid: int
) -> list[dict[str, Any]]:
    cpu = cpu_seconds(server_pid)
    http = await connected(base_url)
    status, answer = await http[0].request("PUT", f"/api/topic-configs/{LIMITED}", {"max_inflight": LIMIT})
    assert status == 200, (status, answer)

    def consume(topic: str) -> Callable[[HttpConnection], Awaitable[int]]:
        async def op(c: HttpConnection) -> int:
            status, answer = await c.request("POST", "/api/messages/dequeue", {"topic": topic, "count": 100})
            assert status == 200, (status, answer)
            if not answer["messages"]:
                return 0
            acks = [{"id": m["id"], "receipt": m["receipt"]} for m in answer["messages"]]
            status, _ = await c.request("POST", "/api/messages/ack", {"acks": acks})
            assert status == 200, status
            return len(acks)

        return op

    def backlog(topic: str) -> Callable[[], Awaitable[None]]:
        async def setup() -> None:
            await pool.execute("TRUNCATE inflight_leases, inflight_ended, inflight_reservations")
            await pool.execute("UPDATE inflight_counts SET leased = 0")
            await fill(pool, tenant_id, topic, int(30_000 * SECONDS))

        return setup

    try:
        base = Side(backlog(PLAIN), http, consume(PLAIN), cpu)
        measured = Side(backlog(LIMITED), http, consume(LIMITED), cpu)
        row = await compare("inflight_dequeue_100_ack", 0.7, base, measured, "the same on a topic without a limit")
    finally:
        for c in http:
            await c.close()
    return [row]
