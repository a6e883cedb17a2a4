"""Two tenants with the same topic names: nothing of one is visible to, or touched by, the other, on any route."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from mq.db.repository import OperationsRepository
from mq.jobs import GaugeRefresher
from tests.integration.helpers import assert_error, b64, dequeue, enqueue, metric
from tests.support.servers import Server
from tests.support.tenants import Tenant
from tests.support.waiting import eventually


async def snapshot(db: Any, tenant_id: int) -> list[tuple[Any, ...]]:
    rows = await db.fetch(
        "SELECT id, topic, key, status, receipt, retry_count, payload FROM messages WHERE tenant_id = $1 ORDER BY id",
        tenant_id,
    )
    return [tuple(r) for r in rows]


async def test_a_tenant_can_neither_see_nor_touch_another_tenants_data(make_client, make_user, tenant, db) -> None:  # type: ignore[no-untyped-def]
    other_slug = f"t-{uuid.uuid4().hex[:12]}"
    other = Tenant(
        await db.fetchval("INSERT INTO tenants (slug, name) VALUES ($1, $1) RETURNING id", other_slug), other_slug
    )
    a = make_client(auth=await make_user("tenant_admin", tenant))
    b = make_client(auth=await make_user("tenant_admin", other))

    # Tenant B: a pending, a keyed, a leased and a dead-lettered message on "orders", and a member with a grant.
    pending = (await b.post("/api/messages", json={"topic": "orders", "payload": b64("p")})).json()["id"]
    keyed = (await b.post("/api/messages", json={"topic": "orders", "payload": b64("k"), "key": "k"})).json()["id"]
    dead = (await b.post("/api/messages", json={"topic": "audit", "payload": b64("d")})).json()["id"]
    for _ in range(3):
        [m] = (await b.post("/api/messages/dequeue", json={"topic": "audit"})).json()["messages"]
        assert (await b.post(f"/api/messages/{m['id']}/nack", json={"receipt": m["receipt"]})).status_code == 200
    assert (await b.get(f"/api/messages/{dead}")).json()["topic"] == "audit.dlq"
    leased = (await b.post("/api/messages", json={"topic": "work", "payload": b64("l")})).json()["id"]
    [lease] = (await b.post("/api/messages/dequeue", json={"topic": "work"})).json()["messages"]
    b_member = (
        await b.post("/api/users", json={"username": f"bm-{uuid.uuid4().hex[:8]}", "password": "x" * 12})
    ).json()
    grant = await b.post(f"/api/users/{b_member['id']}/grants", json={"action": "read", "topic_pattern": "*"})
    before = await snapshot(db, other.id)

    # Tenant A tries everything, by id and by name.
    for mid in (pending, keyed, dead, leased):
        assert_error(await a.get(f"/api/messages/{mid}"), 404, "message_not_found")
        assert_error(await a.post(f"/api/messages/{mid}/requeue"), 404, "message_not_found")
        for receipt in (None, lease["receipt"]):
            body = {} if receipt is None else {"receipt": receipt}
            assert_error(await a.post(f"/api/messages/{mid}/ack", json=body), 404, "message_not_found")
            assert_error(await a.post(f"/api/messages/{mid}/nack", json=body), 404, "message_not_found")
            extend = {"visibility_timeout_seconds": 60, **body}
            assert_error(await a.post(f"/api/messages/{mid}/visibility", json=extend), 404, "message_not_found")
        assert_error(await a.delete(f"/api/messages/{mid}"), 404, "message_not_found")
    acks = {"acks": [{"id": leased, "receipt": lease["receipt"]}, {"id": pending}]}
    r = (await a.post("/api/messages/ack", json=acks)).json()
    assert r["acked"] == 0 and {f["code"] for f in r["failed"]} == {"message_not_found"}

    for params in ({}, {"topic": "orders"}, {"topic": "orders", "key": "k"}, {"status": "processing"}):
        page = (await a.get("/api/messages", params=params)).json()
        assert page["items"] == [] and page["total"] == 0, params
    for topic in ("orders", "audit.dlq", "work"):
        got = await a.post("/api/messages/dequeue", json={"topic": topic, "count": 10})
        assert got.json() == {"messages": []}
    assert (await a.post("/api/topics/audit/requeue")).json() == {"requeued": 0}
    assert (await a.post("/api/topics/orders/purge")).json() == {"deleted": 0}
    assert (await a.delete("/api/topics/orders/messages/by-key/k")).json() == {"deleted": 0}
    assert (await a.get("/api/topics")).json() == {"items": []}
    assert (await a.get("/api/stats")).json() == {"topics": []}
    assert (await a.get("/api/topic-configs")).json() == {"items": []}
    assert_error(await a.get("/api/topic-configs/orders"), 404, "not_found")

    users = (await a.get("/api/users", params={"limit": 200})).json()["items"]
    assert b_member["id"] not in [u["id"] for u in users]
    assert_error(await a.get(f"/api/users/{b_member['id']}"), 404, "not_found")
    assert_error(await a.patch(f"/api/users/{b_member['id']}", json={"role": "tenant_admin"}), 404, "not_found")
    assert_error(await a.get(f"/api/users/{b_member['id']}/grants"), 404, "not_found")
    assert_error(await a.delete(f"/api/users/{b_member['id']}/grants/{grant.json()['id']}"), 404, "not_found")
    assert_error(await a.delete(f"/api/users/{b_member['id']}"), 404, "not_found")
    assert_error(await a.get("/api/users", headers={"X-Tenant": other.slug}), 403, "forbidden")
    assert_error(await a.get("/api/tenants"), 403, "forbidden")

    # The same key in A is A's own message, not an upsert of B's.
    mine = (await a.post("/api/messages", json={"topic": "orders", "payload": b64("mine"), "key": "k"})).json()["id"]
    assert mine != keyed

    # Nothing of B changed, and B still holds its lease.
    assert await snapshot(db, other.id) == before
    assert (await b.post(f"/api/messages/{leased}/ack", json={"receipt": lease["receipt"]})).status_code == 204
    stats = {(row["topic"], row["status"]): row["count"] for row in (await b.get("/api/stats")).json()["topics"]}
    assert stats == {("orders", "pending"): 2, ("audit.dlq", "pending"): 1}
    assert {(row["topic"], row["status"]) for row in (await a.get("/api/stats")).json()["topics"]} == {
        ("orders", "pending")
    }


async def test_platform_admin_sees_each_tenant_only_through_x_tenant(make_client, make_user, tenant, db) -> None:  # type: ignore[no-untyped-def]
    other_slug = f"t-{uuid.uuid4().hex[:12]}"
    await db.execute("INSERT INTO tenants (slug, name) VALUES ($1, $1)", other_slug)
    in_a = make_client(headers={"X-Tenant": tenant.slug})
    in_b = make_client(headers={"X-Tenant": other_slug})
    mid = (await in_a.post("/api/messages", json={"topic": "orders", "payload": b64("a")})).json()["id"]
    assert (await in_a.get(f"/api/messages/{mid}")).status_code == 200
    assert_error(await in_b.get(f"/api/messages/{mid}"), 404, "message_not_found")
    assert (await in_b.get("/api/messages")).json()["total"] == 0
    assert_error(await make_client(headers={"X-Tenant": "no-such-tenant"}).get("/api/messages"), 404, "not_found")


async def test_consumer_groups_their_deliveries_and_metrics_are_per_tenant(
    server: Server, client: httpx.AsyncClient, make_client: Any, db: Any, tenant: Tenant
) -> None:
    other_slug = f"t-{uuid.uuid4().hex[:12]}"
    await db.execute("INSERT INTO tenants (slug, name) VALUES ($1, $1)", other_slug)
    other = make_client(headers={"X-Tenant": other_slug})
    group = {"consumer_group": "g"}
    assert (await client.post("/api/topics/shared-name/consumer-groups", json=group)).status_code == 201
    message_id = await enqueue(client, "shared-name", "mine")
    assert (await other.get("/api/topics/shared-name/consumer-groups")).json() == {"items": [], "groups": []}
    r = await other.post("/api/messages/dequeue", json={"topic": "shared-name", "consumer_group": "g"})
    assert_error(r, 404, "not_found")
    # the same names in another tenant: its own group, which owes nothing of ours
    assert (await other.post("/api/topics/shared-name/consumer-groups", json=group)).status_code == 201
    assert await dequeue(other, "shared-name", 10, consumer_group="g") == []
    await enqueue(other, "shared-name", "theirs")
    await enqueue(other, "shared-name", "theirs")
    [m] = await dequeue(client, "shared-name", consumer_group="g")
    ack = {"receipt": m["receipt"], "consumer_group": "g"}
    assert_error(await other.post(f"/api/messages/{message_id}/ack", json=ack), 404, "message_not_found")
    assert_error(await other.delete("/api/topics/shared-name/consumer-groups/h"), 404, "not_found")

    assert (await GaugeRefresher(OperationsRepository(db)).run_once(wait=True)).ran
    labels = {"topic": "shared-name", "consumer_group": "g", "status": "pending"}

    async def scraped() -> str | None:
        async with httpx.AsyncClient(base_url=server.base_url) as c:
            text = (await c.get("/metrics")).text
        return text if metric(text, "skiplock_group_messages", tenant=other_slug, **labels) is not None else None

    text = await eventually(scraped, timeout=5, what="both tenants' group gauges")
    assert metric(text, "skiplock_group_messages", tenant=other_slug, **labels) == 2
    assert metric(text, "skiplock_group_messages", tenant=tenant.slug, **labels) == 0
    assert metric(text, "skiplock_group_messages", tenant=tenant.slug, **{**labels, "status": "processing"}) == 1
    assert (await client.post(f"/api/messages/{message_id}/ack", json=ack)).status_code == 204
