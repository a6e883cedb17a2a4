"""Enqueue: single, keyed upsert, batch, delay, priority, TTL, round trip of arbitrary bytes."""

from __future__ import annotations

import os

import httpx

from tests.integration.helpers import assert_error, b64, dequeue, enqueue, unb64


async def test_enqueue_then_get_returns_the_contract_shape(client: httpx.AsyncClient) -> None:
    mid = await enqueue(client, "orders", b"hello", metadata={"a": 1, "nested": {"b": [1, 2]}})
    r = await client.get(f"/api/messages/{mid}")
    assert r.status_code == 200
    m = r.json()
    assert set(m) >= {
        "id",
        "topic",
        "key",
        "payload",
        "metadata",
        "status",
        "priority",
        "retry_count",
        "max_retries",
        "last_error",
        "created_at",
        "updated_at",
        "available_at",
        "expires_at",
        "original_topic",
        "dlq_moved_at",
    }
    assert m["id"] == mid and m["topic"] == "orders" and m["status"] == "pending"
    assert unb64(m["payload"]) == b"hello"
    assert m["metadata"] == {"a": 1, "nested": {"b": [1, 2]}}
    assert m["max_retries"] == 3 and m["retry_count"] == 0
    assert m["created_at"].endswith("Z") and len(m["created_at"]) == len("2026-11-22T04:38:10.123Z")
    assert m["id"][14] == "7"  # UUIDv7


async def test_payload_round_trips_every_byte_value(client: httpx.AsyncClient) -> None:
    payload = bytes(range(256)) * 4 + os.urandom(4096)
    await enqueue(client, "bytes", payload)
    [m] = await dequeue(client, "bytes")
    assert unb64(m["payload"]) == payload


async def test_empty_payload_is_allowed(client: httpx.AsyncClient) -> None:
    await enqueue(client, "empty", b"")
    [m] = await dequeue(client, "empty")
    assert m["payload"] == ""


async def test_key_upsert_replaces_pending_twin_in_place(client: httpx.AsyncClient) -> None:
    first = await enqueue(client, "orders", b"v1", key="order-42", metadata={"v": 1})
    other = await enqueue(client, "orders", b"later")
    again = await enqueue(client, "orders", b"v2", key="order-42", metadata={"v": 2})
    assert again == first
    page = (await client.get("/api/messages", params={"topic": "orders"})).json()
    assert page["total"] == 2
    # It kept its queue position: still ahead of the message enqueued after it.
    got = await dequeue(client, "orders", count=2)
    assert [m["id"] for m in got] == [first, other]
    assert unb64(got[0]["payload"]) == b"v2" and got[0]["metadata"] == {"v": 2}


async def test_key_upsert_never_touches_a_processing_twin(client: httpx.AsyncClient) -> None:
    first = await enqueue(client, "orders", b"v1", key="k")
    [leased] = await dequeue(client, "orders")
    assert leased["id"] == first
    second = await enqueue(client, "orders", b"v2", key="k")
    assert second != first
    held = (await client.get(f"/api/messages/{first}")).json()
    assert held["status"] == "processing" and unb64(held["payload"]) == b"v1"


async def test_same_key_on_other_topic_is_another_message(client: httpx.AsyncClient) -> None:
    a = await enqueue(client, "a", key="k")
    b = await enqueue(client, "b", key="k")
    assert a != b


async def test_batch_enqueue_keeps_input_order_and_folds_keys(client: httpx.AsyncClient) -> None:
    existing = await enqueue(client, "batch", b"old", key="dup")
    items = [{"payload": b64(f"m{i}")} for i in range(5)]
    items.insert(2, {"payload": b64("k1"), "key": "dup"})
    items.append({"payload": b64("k2"), "key": "dup"})
    items.append({"payload": b64("other-topic"), "topic": "batch-b"})
    r = await client.post("/api/messages/batch", json={"topic": "batch", "messages": items})
    assert r.status_code == 201, r.text
    ids = r.json()["ids"]
    assert len(ids) == len(items)
    assert ids[2] == existing and ids[6] == existing
    assert len(set(ids)) == len(items) - 1  # the two "dup" items are one message
    got = await dequeue(client, "batch", count=10)
    assert [unb64(m["payload"]) for m in got] == [b"k2", b"m0", b"m1", b"m2", b"m3", b"m4"]
    [b] = await dequeue(client, "batch-b")
    assert b["id"] == ids[-1]


async def test_batch_is_all_or_nothing_with_per_item_details(client: httpx.AsyncClient) -> None:
    items = [
        {"payload": b64("ok")},
        {"payload": "!!!not-base64"},
        {"payload": b64("ok"), "priority": 42},
        {"payload": b64("x"), "topic": "x.dlq"},
    ]
    r = await client.post("/api/messages/batch", json={"topic": "atomic", "messages": items})
    body = assert_error(r, 400, "invalid_request")
    assert [d["index"] for d in body["details"]] == [1, 2, 3]
    assert body["details"][2]["code"] == "reserved_topic"
    assert (await client.get("/api/messages", params={"topic": "atomic"})).json()["total"] == 0


async def test_batch_of_1000_and_limit(client: httpx.AsyncClient) -> None:
    items = [{"payload": b64(str(i))} for i in range(1000)]
    r = await client.post("/api/messages/batch", json={"topic": "big", "messages": items})
    assert r.status_code == 201
    assert len(set(r.json()["ids"])) == 1000
    r = await client.post("/api/messages/batch", json={"topic": "big", "messages": [*items, items[0]]})
    assert_error(r, 400, "invalid_request")
    r = await client.post("/api/messages/batch", json={"topic": "big", "messages": []})
    assert_error(r, 400, "invalid_request")


async def test_delay_defers_visibility(client: httpx.AsyncClient) -> None:
    mid = await enqueue(client, "later", delay_seconds=1.5)
    assert await dequeue(client, "later") == []
    got = await dequeue(client, "later", wait_seconds=5)
    assert [m["id"] for m in got] == [mid]


async def test_priority_then_age(client: httpx.AsyncClient) -> None:
    low1 = await enqueue(client, "prio", priority=0)
    high = await enqueue(client, "prio", priority=9)
    low2 = await enqueue(client, "prio", priority=0)
    mid = await enqueue(client, "prio", priority=5)
    got = await dequeue(client, "prio", count=4)
    assert [m["id"] for m in got] == [high, mid, low1, low2]


async def test_expired_messages_are_never_dequeued(client: httpx.AsyncClient, db, tenant) -> None:  # type: ignore[no-untyped-def]
    mid = await enqueue(client, "ttl")
    await db.execute("UPDATE messages SET expires_at = now() - interval '1 second' WHERE id = $1::uuid", mid)
    assert await dequeue(client, "ttl") == []


async def test_large_keyless_batch_keeps_metadata_priority_and_defaults(client: httpx.AsyncClient) -> None:
    # 40 keyless, undelayed items: the COPY path. Everything a message carries must still be stored.
    items = [{"payload": b64(f"p{i}"), "metadata": {"n": i, "tag": "ü🐘"}, "priority": i % 3} for i in range(40)]
    r = await client.post("/api/messages/batch", json={"topic": "copy", "messages": items})
    assert r.status_code == 201, r.text
    ids = r.json()["ids"]
    first = (await client.get(f"/api/messages/{ids[5]}")).json()
    assert first["metadata"] == {"n": 5, "tag": "ü🐘"}
    assert first["priority"] == 2
    assert first["status"] == "pending"
    assert first["max_retries"] == 3
    assert first["available_at"] <= first["updated_at"]
    got = await dequeue(client, "copy", count=40)
    assert [m["priority"] for m in got] == sorted((i % 3 for i in range(40)), reverse=True)
    assert [unb64(m["payload"]) for m in got if m["priority"] == 0][:3] == [b"p0", b"p3", b"p6"]


async def test_topic_ttl_sets_expires_at_on_every_enqueue_path(client: httpx.AsyncClient, db, tenant) -> None:  # type: ignore[no-untyped-def]
    await db.execute(
        "INSERT INTO topic_configs (tenant_id, topic, message_ttl_seconds) VALUES ($1, 'short', 60)", tenant.id
    )
    single = await enqueue(client, "short")
    keyed = await enqueue(client, "short", key="k")
    r = await client.post("/api/messages/batch", json={"topic": "short", "messages": [{"payload": "eA=="}] * 20})
    batch = r.json()["ids"]
    rows = await db.fetch(
        "SELECT extract(epoch FROM expires_at - created_at)::int AS ttl FROM messages WHERE id = ANY($1::uuid[])",
        [single, keyed, *batch],
    )
    assert sorted({row["ttl"] for row in rows}) == [60]
    assert len(rows) == 22
