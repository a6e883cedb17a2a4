"""Tenant quotas: max_payload_bytes, max_messages (exact under racing producers on two instances), max_topics,
enqueue_rate (a Redis token bucket shared by the instances). A refusal stores nothing."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import asyncpg
import httpx

from tests.integration.helpers import assert_error, b64, dequeue, enqueue
from tests.support.servers import ADMIN, Server
from tests.support.tenants import Tenant


async def set_quotas(admin: httpx.AsyncClient, tenant: Tenant, **quotas: int) -> None:
    r = await admin.patch(f"/api/tenants/{tenant.slug}", json={"quotas": quotas})
    assert r.status_code == 200, r.text


async def live(db: asyncpg.Pool[Any], tenant: Tenant) -> int:
    count: int = await db.fetchval(
        "SELECT count(*) FROM messages WHERE tenant_id = $1 AND status IN ('pending', 'processing')", tenant.id
    )
    return count


async def test_max_payload_bytes_refuses_larger_payloads_and_stores_nothing(client, db, tenant) -> None:  # type: ignore[no-untyped-def]
    await set_quotas(client, tenant, max_payload_bytes=100)
    await enqueue(client, "jobs", b"x" * 100)
    body = assert_error(
        await client.post("/api/messages", json={"topic": "jobs", "payload": b64(b"x" * 101)}), 413, "payload_too_large"
    )
    assert body["details"] == {"quota": "max_payload_bytes", "limit": 100}
    batch = [{"payload": b64(b"a")}, {"payload": b64(b"b" * 101)}, {"payload": b64(b"c")}]
    body = assert_error(
        await client.post("/api/messages/batch", json={"topic": "jobs", "messages": batch}), 413, "payload_too_large"
    )
    assert [d["index"] for d in body["details"]] == [1]
    assert await live(db, tenant) == 1


async def test_max_messages_counts_pending_and_processing_and_frees_on_ack(client, db, tenant) -> None:  # type: ignore[no-untyped-def]
    await set_quotas(client, tenant, max_messages=5)
    for n in range(4):
        await enqueue(client, f"t{n % 2}", b"m")
    too_many = [{"payload": b64(b"x")}, {"payload": b64(b"y")}]
    r = await client.post("/api/messages/batch", json={"topic": "t0", "messages": too_many})
    body = assert_error(r, 429, "quota_exceeded")
    assert body["details"] == {"quota": "max_messages", "limit": 5, "used": 4} and r.headers["Retry-After"] == "1"
    await enqueue(client, "t1", b"fifth")
    leased = await dequeue(client, "t0", count=1)  # processing still counts
    assert_error(await client.post("/api/messages", json={"topic": "t0", "payload": b64(b"6")}), 429, "quota_exceeded")
    assert await live(db, tenant) == 5
    r = await client.post(f"/api/messages/{leased[0]['id']}/ack", json={"receipt": leased[0]["receipt"]})
    assert r.status_code == 204
    await enqueue(client, "t0", b"room again")
    assert await live(db, tenant) == 5


async def test_raising_the_quota_takes_effect_at_once(client, tenant) -> None:  # type: ignore[no-untyped-def]
    await set_quotas(client, tenant, max_messages=1)
    await enqueue(client, "jobs")
    assert_error(await client.post("/api/messages", json={"topic": "jobs", "payload": b64("x")}), 429, "quota_exceeded")
    await set_quotas(client, tenant, max_messages=2)
    await enqueue(client, "jobs")
    await set_quotas(client, tenant)  # no quotas at all
    for _ in range(3):
        await enqueue(client, "jobs")


async def test_racing_producers_on_two_instances_never_exceed_max_messages(  # type: ignore[no-untyped-def]
    server: Server, second_server: Server, client, db, tenant
) -> None:
    cap = 100
    await set_quotas(client, tenant, max_messages=cap)
    accepted = 0
    refused = 0

    async def producer(base_url: str, n: int) -> None:
        nonlocal accepted, refused
        async with httpx.AsyncClient(base_url=base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}, timeout=30) as c:
            for i in range(8):
                # Batches of 40 run as statements of their own, concurrently; singles (keyed or not) and batches of 3
                # share coalesced statements. Two topics, two instances.
                size = (40, 1, 3, 1)[i % 4]  # every producer starts with a batch: 960 rows at once
                if size > 1:
                    items = [{"payload": b64(f"{n}-{i}-{k}")} for k in range(size)]
                    r = await c.post("/api/messages/batch", json={"topic": f"race{n % 2}", "messages": items})
                else:
                    body: dict[str, Any] = {"topic": f"race{n % 2}", "payload": b64(f"{n}-{i}")}
                    if i % 2:
                        body["key"] = f"k-{n}-{i}"
                    r = await c.post("/api/messages", json=body)
                if r.status_code == 201:
                    accepted += size
                else:
                    assert_error(r, 429, "quota_exceeded")
                    refused += 1

    await asyncio.gather(*(producer((server, second_server)[n % 2].base_url, n) for n in range(24)))
    assert refused > 0
    assert accepted == await live(db, tenant)
    assert cap - 40 < accepted <= cap  # full, up to what a last batch could not fit


async def test_max_topics_refuses_a_new_topic_beyond_the_quota(client, db, tenant) -> None:  # type: ignore[no-untyped-def]
    await set_quotas(client, tenant, max_topics=2)
    first = await enqueue(client, "orders")
    await enqueue(client, "billing")
    body = assert_error(
        await client.post("/api/messages", json={"topic": "shipping", "payload": b64("x")}), 403, "quota_exceeded"
    )
    assert body["details"] == {"quota": "max_topics", "limit": 2, "used": 2}
    mixed = {"messages": [{"topic": "orders", "payload": b64("a")}, {"topic": "shipping", "payload": b64("b")}]}
    assert_error(await client.post("/api/messages/batch", json=mixed), 403, "quota_exceeded")
    await enqueue(client, "orders")  # existing topics keep working
    # A dead-letter topic counts with its topic: failing a message into orders.dlq creates no new topic.
    await set_quotas(client, tenant, max_topics=2)
    [leased] = [m for m in await dequeue(client, "orders", count=2) if m["id"] == first]
    for _ in range(10):
        r = await client.post(f"/api/messages/{leased['id']}/nack", json={})
        if r.json()["outcome"] == "dlq":
            break
        [leased] = await dequeue(client, "orders", count=1)
    await enqueue(client, "billing")
    assert_error(await client.post("/api/messages", json={"topic": "x", "payload": b64("x")}), 403, "quota_exceeded")
    assert (
        await db.fetchval(
            "SELECT count(*) FROM messages WHERE tenant_id = $1 AND topic IN ('shipping', 'x')", tenant.id
        )
        == 0
    )


async def test_racing_new_topics_never_exceed_max_topics(  # type: ignore[no-untyped-def]
    server: Server, second_server: Server, client, db, tenant
) -> None:
    await set_quotas(client, tenant, max_topics=3)
    async with httpx.AsyncClient(
        base_url=second_server.base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}, timeout=30
    ) as other:
        items = [{"payload": b64(str(k))} for k in range(40)]  # 40 rows: a statement of its own, not coalesced
        results = await asyncio.gather(
            *(
                (client, other)[n % 2].post("/api/messages/batch", json={"topic": f"new{n}", "messages": items})
                for n in range(12)
            )
        )
    assert sorted(r.status_code for r in results) == [201] * 3 + [403] * 9
    topics = await db.fetchval("SELECT count(DISTINCT topic) FROM messages WHERE tenant_id = $1", tenant.id)
    assert topics == 3


async def test_enqueue_rate_is_a_token_bucket_shared_by_instances(  # type: ignore[no-untyped-def]
    server: Server, second_server: Server, client, tenant
) -> None:
    await set_quotas(client, tenant, enqueue_rate=5)
    async with httpx.AsyncClient(
        base_url=second_server.base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}, timeout=30
    ) as other:
        started = time.monotonic()
        results = []
        for n in range(12):  # alternate instances: they share one bucket of 5 tokens refilling at 5/s
            c = (client, other)[n % 2]
            results.append(await c.post("/api/messages", json={"topic": "metered", "payload": b64("x")}))
        elapsed = time.monotonic() - started
        accepted = sum(r.status_code == 201 for r in results)
        assert 5 <= accepted <= 5 + int(elapsed * 5) + 1
        refused = [r for r in results if r.status_code != 201]
        body = assert_error(refused[0], 429, "rate_limited")
        assert body["details"] == {"quota": "enqueue_rate", "limit": 5} and refused[0].headers["Retry-After"] == "1"
        await asyncio.sleep(1.1)  # a full second's tokens again; a batch larger than the bucket gets through in debt
        items = [{"payload": b64(str(n))} for n in range(8)]
        r = await other.post("/api/messages/batch", json={"topic": "metered", "messages": items})
        assert r.status_code == 201, r.text
        assert_error(
            await client.post("/api/messages", json={"topic": "metered", "payload": b64("x")}), 429, "rate_limited"
        )


async def test_quotas_are_validated(client, tenant) -> None:  # type: ignore[no-untyped-def]
    for bad in ({"enqueue_rate": 0}, {"max_messages": -1}, {"max_topics": 1.5}, {"max_payload_bytes": "1"}):
        r = await client.patch(f"/api/tenants/{tenant.slug}", json={"quotas": bad})
        assert_error(r, 400, "invalid_request")
