"""Delivery guarantees found broken by black-box use: expired twins, lapsed leases, poison messages, batch acks
with stale receipts, caps that refuse with room left, dead letters that expire. Each test failed before its fix."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import httpx

from tests.integration.helpers import assert_error, b64, dequeue, enqueue, unb64
from tests.support.tenants import Tenant


async def _age(db: asyncpg.Pool[Any], message_id: str, **seconds_ago: float) -> None:
    """Move a message's timestamps into the past instead of sleeping: `expires_at=2` means it expired 2 s ago,
    `available_at=2` that its delay or lease ended 2 s ago."""
    for column, ago in seconds_ago.items():
        assert column in ("expires_at", "available_at")
        await db.execute(
            f"UPDATE messages SET {column} = now() - make_interval(secs => $2) WHERE id = $1::uuid", message_id, ago
        )


async def _row(db: asyncpg.Pool[Any], message_id: str) -> asyncpg.Record | None:
    return await db.fetchrow("SELECT * FROM messages WHERE id = $1::uuid", message_id)


# --- expired twins -----------------------------------------------------------------------------------------------


async def test_an_enqueue_whose_pending_twin_expired_is_stored_and_delivered(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any]
) -> None:
    assert (await client.put("/api/topic-configs/ttl", json={"message_ttl_seconds": 60})).status_code == 200
    old = await enqueue(client, "ttl", b"old", key="k")
    await _age(db, old, expires_at=1)
    new = await enqueue(client, "ttl", b"new", key="k")
    assert new != old
    [m] = await dequeue(client, "ttl")
    assert m["id"] == new and unb64(m["payload"]) == b"new"
    # The dead twin is evidence, not garbage: it is expired, as the reaper would have marked it.
    gone = await _row(db, old)
    assert gone is not None and gone["status"] == "expired" and gone["payload"] == b"old"


async def test_a_batch_whose_twins_expired_stores_every_item(client: httpx.AsyncClient, db: asyncpg.Pool[Any]) -> None:
    assert (await client.put("/api/topic-configs/ttlb", json={"message_ttl_seconds": 60})).status_code == 200
    dead = await enqueue(client, "ttlb", b"dead", key="a")
    alive = await enqueue(client, "ttlb", b"alive", key="b")
    await _age(db, dead, expires_at=1)
    items = [{"payload": b64(f"v{n}"), "key": k} for n, k in enumerate(["a", "b", "c"])]
    r = await client.post("/api/messages/batch", json={"topic": "ttlb", "messages": items})
    assert r.status_code == 201, r.text
    ids = r.json()["ids"]
    assert ids[0] != dead and ids[1] == alive  # a live twin is still updated in place
    got = {m["id"]: unb64(m["payload"]) for m in await dequeue(client, "ttlb", count=10)}
    assert got == {ids[0]: b"v0", ids[1]: b"v1", ids[2]: b"v2"}


async def test_a_dlq_expiry_routes_the_dead_twin_when_expire_to_dlq(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any]
) -> None:
    config = {"message_ttl_seconds": 60, "expire_to_dlq": True}
    assert (await client.put("/api/topic-configs/ttld", json=config)).status_code == 200
    old = await enqueue(client, "ttld", b"old", key="k")
    await _age(db, old, expires_at=1)
    new = await enqueue(client, "ttld", b"new", key="k")
    assert new != old
    routed = await _row(db, old)
    assert routed is not None and (routed["topic"], routed["status"], routed["original_topic"]) == (
        "ttld.dlq",
        "pending",
        "ttld",
    )


async def test_a_nack_does_not_yield_to_a_dead_twin(client: httpx.AsyncClient, db: asyncpg.Pool[Any]) -> None:
    assert (await client.put("/api/topic-configs/ttln", json={"message_ttl_seconds": 60})).status_code == 200
    first = await enqueue(client, "ttln", b"first", key="k")
    [leased] = await dequeue(client, "ttln")
    twin = await enqueue(client, "ttln", b"twin", key="k")  # the first is processing: a new pending message
    assert twin != first
    await _age(db, twin, expires_at=1)
    r = await client.post(f"/api/messages/{first}/nack", json={"receipt": leased["receipt"]})
    assert r.status_code == 200 and r.json()["outcome"] == "retry"
    [again] = await dequeue(client, "ttln")
    assert again["id"] == first and unb64(again["payload"]) == b"first"


async def test_expired_pending_messages_are_expired_in_stats_browse_and_topics(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any]
) -> None:
    mid = await enqueue(client, "ttls")
    await enqueue(client, "ttls")
    await db.execute("UPDATE messages SET expires_at = now() - interval '1 second' WHERE id = $1::uuid", mid)
    stats = (await client.get("/api/stats")).json()["topics"]
    assert {(s["status"], s["count"]) for s in stats if s["topic"] == "ttls"} == {("pending", 1), ("expired", 1)}
    page = (await client.get("/api/messages", params={"topic": "ttls", "status": "pending"})).json()
    assert page["total"] == 1 and mid not in [m["id"] for m in page["items"]]
    page = (await client.get("/api/messages", params={"topic": "ttls", "status": "expired"})).json()
    assert [m["id"] for m in page["items"]] == [mid] and page["items"][0]["status"] == "expired"
    assert (await client.get(f"/api/messages/{mid}")).json()["status"] == "expired"
    [summary] = [t for t in (await client.get("/api/topics")).json()["items"] if t["topic"] == "ttls"]
    assert (summary["pending"], summary["expired"]) == (1, 1)


# --- lapsed leases -----------------------------------------------------------------------------------------------


async def _dead_letter(client: httpx.AsyncClient, topic: str, payload: bytes = b"x", **fields: Any) -> str:
    r = await client.put(f"/api/topic-configs/{topic}", json={"max_retries": 1})
    assert r.status_code == 200
    mid = await enqueue(client, topic, payload, **fields)
    [m] = await dequeue(client, topic)
    r = await client.post(f"/api/messages/{mid}/nack", json={"receipt": m["receipt"], "error": "boom"})
    assert r.json() == {"outcome": "dlq"}
    return mid


async def test_a_lapsed_lease_in_a_dlq_can_be_requeued(client: httpx.AsyncClient, db: asyncpg.Pool[Any]) -> None:
    mid = await _dead_letter(client, "lapse")
    [m] = await dequeue(client, "lapse.dlq", visibility_timeout_seconds=1)
    assert m["id"] == mid
    await _age(db, mid, available_at=0.5)
    assert (await client.post(f"/api/messages/{mid}/requeue")).status_code == 204
    row = await _row(db, mid)
    assert row is not None and (row["topic"], row["status"], row["receipt"]) == ("lapse", "pending", None)


async def test_a_lapsed_lease_is_reported_as_pending_everywhere(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any]
) -> None:
    mid = await _dead_letter(client, "lapsed")
    await dequeue(client, "lapsed.dlq")
    await _age(db, mid, available_at=1)
    assert (await client.get(f"/api/messages/{mid}")).json()["status"] == "pending"
    stats = (await client.get("/api/stats")).json()["topics"]
    assert [(s["status"], s["count"]) for s in stats if s["topic"] == "lapsed.dlq"] == [("pending", 1)]
    pending = (await client.get("/api/messages", params={"topic": "lapsed.dlq", "status": "pending"})).json()
    assert pending["total"] == 1
    processing = (await client.get("/api/messages", params={"topic": "lapsed.dlq", "status": "processing"})).json()
    assert processing["total"] == 0
    [summary] = [t for t in (await client.get("/api/topics")).json()["items"] if t["topic"] == "lapsed.dlq"]
    assert (summary["pending"], summary["processing"]) == (1, 0)
    # requeue of the whole topic takes it, as it takes a pending one
    r = await client.post("/api/topics/lapsed/requeue")
    assert r.json() == {"requeued": 1}


async def test_purge_by_status_treats_a_lapsed_lease_as_pending(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any]
) -> None:
    held, lapsed = await enqueue(client, "purge-l"), await enqueue(client, "purge-l")
    await dequeue(client, "purge-l", count=2)
    await _age(db, lapsed, available_at=1)
    r = await client.post("/api/topics/purge-l/purge", json={"statuses": ["processing"]})
    assert r.json() == {"deleted": 1}
    assert await _row(db, held) is None and await _row(db, lapsed) is not None
    r = await client.post("/api/topics/purge-l/purge", json={"statuses": ["pending"]})
    assert r.json() == {"deleted": 1}


# --- poison messages ---------------------------------------------------------------------------------------------


async def test_a_message_whose_consumers_keep_crashing_reaches_its_dlq(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any]
) -> None:
    assert (await client.put("/api/topic-configs/poison", json={"max_retries": 3})).status_code == 200
    mid = await enqueue(client, "poison", b"crash")
    deliveries = []
    for _ in range(5):
        got = await dequeue(client, "poison", visibility_timeout_seconds=60)
        if not got:
            break
        deliveries.append(got[0]["retry_count"])
        await _age(db, mid, available_at=1)  # the consumer crashed: its lease lapsed
    assert deliveries == [0, 1, 2]  # three attempts, each lapse counted
    row = await _row(db, mid)
    assert row is not None
    assert (row["topic"], row["status"], row["original_topic"]) == ("poison.dlq", "pending", "poison")
    assert "lease" in row["last_error"] and "expired" in row["last_error"]
    [dead] = await dequeue(client, "poison.dlq")
    assert dead["id"] == mid and unb64(dead["payload"]) == b"crash"


async def test_a_poison_message_does_not_starve_the_one_behind_it(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any]
) -> None:
    r = await client.put("/api/topic-configs/poison2", json={"max_retries": 1, "dlq_enabled": False})
    assert r.status_code == 200
    poison = await enqueue(client, "poison2", b"p", priority=9)
    await dequeue(client, "poison2")
    await _age(db, poison, available_at=1)
    behind = await enqueue(client, "poison2", b"b")
    [m] = await dequeue(client, "poison2")  # the poison one fails instead of taking this delivery
    assert m["id"] == behind
    row = await _row(db, poison)
    assert row is not None and (row["status"], row["retry_count"]) == ("failed", 1)


async def test_a_late_nack_after_a_lapse_counts_the_attempt_once(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any]
) -> None:
    mid = await enqueue(client, "late")
    [m] = await dequeue(client, "late")
    await _age(db, mid, available_at=1)
    r = await client.post(f"/api/messages/{mid}/nack", json={"receipt": m["receipt"]})
    assert r.json() == {"outcome": "retry"}
    [again] = await dequeue(client, "late")
    assert again["retry_count"] == 1


# --- batch ack receipts ------------------------------------------------------------------------------------------


async def test_a_batch_ack_credits_the_current_receipt_and_refuses_the_stale_one(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any]
) -> None:
    mid = await enqueue(client, "acks")
    [old] = await dequeue(client, "acks")
    await _age(db, mid, available_at=1)
    [new] = await dequeue(client, "acks")
    acks = {"acks": [{"id": mid, "receipt": old["receipt"]}, {"id": mid, "receipt": new["receipt"]}]}
    r = await client.post("/api/messages/ack", json=acks)
    assert r.json() == {"acked": 1, "failed": [{"id": mid, "code": "lease_lost"}]}


async def test_coalesced_acks_credit_the_current_receipt(client: httpx.AsyncClient, db: asyncpg.Pool[Any]) -> None:
    for round_ in range(10):
        mid = await enqueue(client, "acksc")
        [old] = await dequeue(client, "acksc")
        await _age(db, mid, available_at=1)
        [new] = await dequeue(client, "acksc")
        stale, current = await asyncio.gather(
            client.post(f"/api/messages/{mid}/ack", json={"receipt": old["receipt"]}),
            client.post(f"/api/messages/{mid}/ack", json={"receipt": new["receipt"]}),
        )
        assert current.status_code == 204, (round_, current.text)
        # lease_lost when both shared a statement or the stale one came first; after the current one has deleted
        # the message, nothing is left to tell a stale receipt from a wrong one.
        assert (stale.status_code, stale.json()["code"]) in ((409, "lease_lost"), (404, "message_not_found"))


# --- caps that tell the truth ------------------------------------------------------------------------------------


async def test_max_depth_admits_as_soon_as_an_ack_made_room(client: httpx.AsyncClient) -> None:
    assert (await client.put("/api/topic-configs/room", json={"max_depth": 3})).status_code == 200
    for _ in range(3):
        await enqueue(client, "room")
    full = await client.post("/api/messages", json={"topic": "room", "payload": b64("x")})
    assert assert_error(full, 429, "queue_full")["details"]["depth"] == 3
    [m] = await dequeue(client, "room")
    assert (await client.post(f"/api/messages/{m['id']}/ack", json={"receipt": m["receipt"]})).status_code == 204
    await enqueue(client, "room")  # at once: the ack answered, so the room is there
    full = await client.post("/api/messages", json={"topic": "room", "payload": b64("x")})
    assert assert_error(full, 429, "queue_full")["details"]["depth"] == 3


async def test_max_messages_admits_as_soon_as_an_ack_made_room(
    client: httpx.AsyncClient, make_client: Any, tenant: Tenant
) -> None:
    r = await client.patch(f"/api/tenants/{tenant.slug}", json={"quotas": {"max_messages": 2}})
    assert r.status_code == 200
    await enqueue(client, "qa")
    await enqueue(client, "qb")
    body = assert_error(
        await client.post("/api/messages", json={"topic": "qa", "payload": b64("x")}), 429, "quota_exceeded"
    )
    assert body["details"]["used"] == 2
    [m] = await dequeue(client, "qb")
    assert (await client.post(f"/api/messages/{m['id']}/ack")).status_code == 204
    await enqueue(client, "qa")


async def test_expired_messages_do_not_count_toward_max_depth(client: httpx.AsyncClient, db: asyncpg.Pool[Any]) -> None:
    r = await client.put("/api/topic-configs/deep", json={"max_depth": 2, "message_ttl_seconds": 60})
    assert r.status_code == 200
    a = await enqueue(client, "deep")
    await enqueue(client, "deep")
    await _age(db, a, expires_at=1)
    await enqueue(client, "deep")
    full = await client.post("/api/messages", json={"topic": "deep", "payload": b64("x")})
    assert assert_error(full, 429, "queue_full")["details"]["depth"] == 2


# --- dead letters keep their origin ------------------------------------------------------------------------------


async def test_a_dead_letter_does_not_inherit_its_topics_ttl_and_keeps_its_origin(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any]
) -> None:
    r = await client.put("/api/topic-configs/evidence", json={"max_retries": 1, "message_ttl_seconds": 60})
    assert r.status_code == 200
    mid = await enqueue(client, "evidence")
    [m] = await dequeue(client, "evidence")
    await client.post(f"/api/messages/{mid}/nack", json={"receipt": m["receipt"]})
    row = await _row(db, mid)
    assert row is not None and row["topic"] == "evidence.dlq" and row["expires_at"] is None
    # One that expires there all the same (set by hand, as an older version left them) keeps where it came from.
    await db.execute("UPDATE messages SET expires_at = now() - interval '1 second' WHERE id = $1::uuid", mid)
    assert (await client.post("/api/admin/expiry-reaper/run")).status_code == 200
    row = await _row(db, mid)
    assert row is not None and row["status"] == "expired"
    assert row["original_topic"] == "evidence" and row["dlq_moved_at"] is not None
