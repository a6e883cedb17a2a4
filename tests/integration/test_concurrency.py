"""Many real clients racing: each message delivered once inside its visibility window, none lost."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import httpx

from tests.integration.helpers import b64

MESSAGES = 3000
CONSUMERS = 16
PRODUCERS = 4


async def test_racing_producers_and_consumers_deliver_each_message_exactly_once(make_client, tenant) -> None:  # type: ignore[no-untyped-def]
    clients = [make_client(headers={"X-Tenant": tenant.slug}) for _ in range(PRODUCERS + CONSUMERS)]
    produced: list[str] = []
    delivered: Counter[str] = Counter()
    done_producing = asyncio.Event()

    async def produce(c: httpx.AsyncClient, worker: int) -> None:
        # Chunks of 10 messages, dealt round-robin to producers; even chunks go as one batch, odd ones singly.
        for chunk in range(worker, MESSAGES // 10, PRODUCERS):
            payloads = [b64(f"{chunk}-{i}") for i in range(10)]
            if chunk % 2 == 0:
                r = await c.post(
                    "/api/messages/batch", json={"topic": "race", "messages": [{"payload": p} for p in payloads]}
                )
                assert r.status_code == 201, r.text
                produced.extend(r.json()["ids"])
            else:
                for p in payloads:
                    r = await c.post("/api/messages", json={"topic": "race", "payload": p})
                    assert r.status_code == 201, r.text
                    produced.append(r.json()["id"])

    async def consume(c: httpx.AsyncClient) -> None:
        idle = 0
        while idle < 3:
            r = await c.post(
                "/api/messages/dequeue",
                json={"topic": "race", "count": 7, "visibility_timeout_seconds": 120, "wait_seconds": 0.5},
            )
            assert r.status_code == 200, r.text
            got = r.json()["messages"]
            if not got:
                idle = idle + 1 if done_producing.is_set() else 0
                continue
            idle = 0
            for m in got:
                delivered[m["id"]] += 1
            acks = [{"id": m["id"], "receipt": m["receipt"]} for m in got]
            if len(acks) % 2:
                for a in acks:
                    assert (
                        await c.post(f"/api/messages/{a['id']}/ack", json={"receipt": a["receipt"]})
                    ).status_code == 204
            else:
                r = await c.post("/api/messages/ack", json={"acks": acks})
                assert r.json() == {"acked": len(acks), "failed": []}

    consumers = [asyncio.create_task(consume(c)) for c in clients[PRODUCERS:]]
    await asyncio.gather(*(produce(c, i) for i, c in enumerate(clients[:PRODUCERS])))
    done_producing.set()
    await asyncio.wait_for(asyncio.gather(*consumers), 120)

    assert len(produced) == len(set(produced)) == MESSAGES
    assert set(delivered) == set(produced), "a message was lost"
    assert max(delivered.values()) == 1, "a message was delivered twice inside its visibility window"


async def test_concurrent_upserts_of_one_key_leave_one_pending_message(make_client, tenant, db) -> None:  # type: ignore[no-untyped-def]
    clients = [make_client(headers={"X-Tenant": tenant.slug}) for _ in range(16)]

    async def upsert(c: httpx.AsyncClient, n: int) -> str:
        r = await c.post("/api/messages", json={"topic": "k", "key": "hot", "payload": b64(str(n))})
        assert r.status_code == 201, r.text
        return str(r.json()["id"])

    ids = await asyncio.gather(*(upsert(c, n) for n in range(5) for c in clients))
    assert len(set(ids)) == 1
    assert await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1", tenant.id) == 1


async def test_racing_keyed_batches_leave_one_pending_message_per_key(make_client, tenant, db) -> None:  # type: ignore[no-untyped-def]
    # Batches of 50 run their own statements side by side (they are not coalesced): their upserts of the same
    # 40 keys race in Postgres, and every key must still end as one pending message holding some batch's content.
    clients = [make_client(headers={"X-Tenant": tenant.slug}) for _ in range(16)]

    async def batch(c: httpx.AsyncClient, n: int) -> list[str]:
        # Each batch names the keys in its own order: upserts that lock keys in different orders must not deadlock.
        order = random.Random(n * 100 + id(c)).sample(range(50), 50)
        items = [{"key": f"k{i % 40}", "payload": b64(f"{n}-{i}")} for i in order]
        r = await c.post("/api/messages/batch", json={"topic": "kb", "messages": items})
        assert r.status_code == 201, r.text
        return list(r.json()["ids"])

    results = await asyncio.gather(*(batch(c, n) for n in range(3) for c in clients))
    assert all(len(set(ids)) == 40 for ids in results)
    rows = await db.fetch("SELECT key, id FROM messages WHERE tenant_id = $1 AND topic = 'kb'", tenant.id)
    assert len(rows) == 40 and len({r["key"] for r in rows}) == 40
    stored = {str(r["id"]) for r in rows}
    assert all(set(ids) == stored for ids in results)  # every batch got the one message of each key


async def test_simultaneous_dequeues_share_out_the_queue(make_client, tenant) -> None:  # type: ignore[no-untyped-def]
    seed = make_client(headers={"X-Tenant": tenant.slug})
    items = [{"payload": b64(str(i)), "priority": i % 3} for i in range(25)]
    assert (await seed.post("/api/messages/batch", json={"topic": "share", "messages": items})).status_code == 201
    clients = [make_client(headers={"X-Tenant": tenant.slug}) for _ in range(10)]
    responses = await asyncio.gather(
        *(c.post("/api/messages/dequeue", json={"topic": "share", "count": 3}) for c in clients)
    )
    batches = [r.json()["messages"] for r in responses]
    assert all(len(b) <= 3 for b in batches)
    ids = [m["id"] for b in batches for m in b]
    assert len(ids) == len(set(ids)) == 25
    for b in batches:
        assert [m["priority"] for m in b] == sorted((m["priority"] for m in b), reverse=True)


async def test_large_dequeues_while_another_tenant_is_active_deliver_each_message_once(  # type: ignore[no-untyped-def]
    make_client, db, tenant
) -> None:
    """With another tenant active, a dequeue of more than 100 answers at most 100 (mq/queue/shared.py): racing
    large dequeues still deliver every message once, highest priority first within each."""
    other = await db.fetchval("INSERT INTO tenants (slug, name) VALUES ($1, $1) RETURNING slug", f"o-{tenant.slug}")
    busy = make_client(headers={"X-Tenant": other})
    c = make_client(headers={"X-Tenant": tenant.slug})
    for priority in (0, 5):
        for _ in range(3):
            r = await c.post(
                "/api/messages/batch",
                json={"topic": "turns", "messages": [{"payload": b64("x"), "priority": priority}] * 200},
            )
            assert r.status_code == 201, r.text
    delivered: Counter[str] = Counter()

    async def take() -> None:
        while True:
            # The other tenant's enqueue keeps it active, so each of these dequeues answers 100 at most.
            assert (await busy.post("/api/messages", json={"topic": "t", "payload": b64("y")})).status_code == 201
            r = await c.post("/api/messages/dequeue", json={"topic": "turns", "count": 450})
            assert r.status_code == 200, r.text
            got = r.json()["messages"]
            if not got:
                return
            assert len(got) <= 100
            priorities = [m["priority"] for m in got]
            assert priorities == sorted(priorities, reverse=True)
            delivered.update(m["id"] for m in got)

    await asyncio.gather(*(take() for _ in range(4)))
    assert len(delivered) == 1200 and set(delivered.values()) == {1}
