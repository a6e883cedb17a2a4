"""Contract, "Bounds on what one tenant can make the server do", data plane: the pinned-group rule on every route
that touches a group's deliveries or dead letters (a whole DLQ's requeue included), and a nack's metadata merged
only within 16 KiB."""

from __future__ import annotations

from typing import Any

import asyncpg
import httpx

from tests.integration.helpers import assert_error, b64, dequeue, enqueue
from tests.support.tenants import Tenant


async def _member(
    client: httpx.AsyncClient, make_user: Any, make_client: Any, tenant: Tenant, db: asyncpg.Pool[Any], group: str
) -> httpx.AsyncClient:
    """A member whose consume grant on `orders` pins `group`."""
    username, password = await make_user("member", tenant)
    user_id = await db.fetchval("SELECT id FROM users WHERE username = $1", username)
    grant = {"action": "consume", "topic_pattern": "orders", "consumer_group": group}
    assert (await client.post(f"/api/users/{user_id}/grants", json=grant)).status_code == 201
    return make_client(auth=(username, password))  # type: ignore[no-any-return]


async def _dead_letter(client: httpx.AsyncClient, group: str) -> None:
    await enqueue(client, "orders", group)
    for m in await dequeue(client, "orders", 10, consumer_group=group):
        r = await client.post(f"/api/messages/{m['id']}/nack", json={"consumer_group": group, "error": "x"})
        assert r.json()["outcome"] == "dlq", r.text


async def test_a_member_pinned_to_one_group_cannot_requeue_another_groups_dead_letters(
    client: httpx.AsyncClient, make_user: Any, make_client: Any, tenant: Tenant, db: asyncpg.Pool[Any]
) -> None:
    await client.put("/api/topic-configs/orders", json={"max_retries": 1})
    for group in ("g1", "g2"):
        r = await client.post("/api/topics/orders/consumer-groups", json={"consumer_group": group})
        assert r.status_code == 201, r.text
    await _dead_letter(client, "g2")
    g1 = await _member(client, make_user, make_client, tenant, db, "g1")
    assert_error(await g1.post("/api/topics/orders/requeue"), 403, "forbidden")
    assert_error(await g1.post("/api/topics/orders.dlq/requeue"), 403, "forbidden")
    [letter] = (await client.get("/api/messages", params={"topic": "orders.dlq"})).json()["items"]
    assert_error(await g1.post(f"/api/messages/{letter['id']}/requeue"), 403, "forbidden")  # as it was
    listed = (await client.get("/api/messages", params={"topic": "orders.dlq"})).json()["items"]
    assert [v["id"] for v in listed] == [letter["id"]]  # nothing moved
    # a tenant admin requeues g2's letter (owed to g2 only); then, with only g1's letters there, the member may
    assert (await client.post("/api/topics/orders/requeue")).json() == {"requeued": 1}
    await _dead_letter(client, "g1")
    r = await g1.post("/api/topics/orders/requeue")  # (g1 still owed the first message: two of its letters)
    assert r.status_code == 200 and r.json() == {"requeued": 2}, r.text


async def test_a_nack_merges_metadata_only_within_16_kib(client: httpx.AsyncClient) -> None:
    """9,000 + 9,000 characters: refused whole, the message keeps its lease and its metadata; within the bound it
    merges."""
    r = await client.post("/api/messages", json={"topic": "saved", "payload": b64(b"x"), "metadata": {"a": "x" * 9000}})
    assert r.status_code == 201, r.text
    [m] = await dequeue(client, "saved", 1, visibility_timeout_seconds=60)
    body = {"receipt": m["receipt"], "metadata": {"b": "y" * 9000}}
    refused = assert_error(await client.post(f"/api/messages/{m['id']}/nack", json=body), 400, "invalid_request")
    assert refused["details"]["limit"] == 16384
    detail = (await client.get(f"/api/messages/{m['id']}")).json()
    assert detail["status"] == "processing" and detail["metadata"] == {"a": "x" * 9000} and detail["retry_count"] == 0
    r = await client.post(f"/api/messages/{m['id']}/nack", json={"receipt": m["receipt"], "metadata": {"b": "y"}})
    assert r.status_code == 200, r.text  # the same lease, within the bound
    assert (await client.get(f"/api/messages/{m['id']}")).json()["metadata"] == {"a": "x" * 9000, "b": "y"}
    # a group's saved state counts with the message's metadata
    assert (await client.post("/api/topics/grouped/consumer-groups", json={"consumer_group": "g"})).status_code == 201
    r = await client.post(
        "/api/messages", json={"topic": "grouped", "payload": b64(b"x"), "metadata": {"a": "x" * 9000}}
    )
    [g] = await dequeue(client, "grouped", 1, consumer_group="g")
    body = {"receipt": g["receipt"], "consumer_group": "g", "metadata": {"b": "y" * 9000}}
    assert_error(await client.post(f"/api/messages/{g['id']}/nack", json=body), 400, "invalid_request")
    body["metadata"] = {"b": "y" * 10}
    assert (await client.post(f"/api/messages/{g['id']}/nack", json=body)).status_code == 200
