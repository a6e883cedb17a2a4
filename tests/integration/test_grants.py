"""Members do exactly what their grants allow, on every data route."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.integration.helpers import assert_error, b64

PASSWORD = "member password 123"


async def new_member(
    boss: httpx.AsyncClient, make_client: Any, *grants: tuple[str, str] | tuple[str, str, str]
) -> tuple[str, httpx.AsyncClient]:
    name = f"m-{uuid.uuid4().hex[:10]}"
    r = await boss.post("/api/users", json={"username": name, "password": PASSWORD, "role": "member"})
    assert r.status_code == 201, r.text
    user_id = r.json()["id"]
    for action, pattern, *group in grants:
        body = {"action": action, "topic_pattern": pattern} | ({"consumer_group": group[0]} if group else {})
        g = await boss.post(f"/api/users/{user_id}/grants", json=body)
        assert g.status_code == 201, g.text
    return user_id, make_client(auth=(r.json()["username"], PASSWORD))


async def enqueue(c: httpx.AsyncClient, topic: str) -> httpx.Response:
    return await c.post("/api/messages", json={"topic": topic, "payload": b64("x")})


async def test_produce_grant_patterns(make_client, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    boss = make_client(auth=await make_user("tenant_admin", tenant))
    _, member = await new_member(boss, make_client, ("produce", "orders.*"))
    for topic in ("orders", "orders.eu"):
        assert (await enqueue(member, topic)).status_code == 201, topic
    for topic in ("ordersx", "billing"):
        assert_error(await enqueue(member, topic), 403, "forbidden")
    batch = {"topic": "orders", "messages": [{"payload": b64("a")}, {"payload": b64("b"), "topic": "billing"}]}
    assert_error(await member.post("/api/messages/batch", json=batch), 403, "forbidden")
    assert (await boss.get("/api/messages", params={"topic": "billing"})).json()["total"] == 0  # nothing stored
    assert_error(await member.post("/api/messages/dequeue", json={"topic": "orders"}), 403, "forbidden")
    assert_error(await member.get("/api/messages", params={"topic": "orders"}), 403, "forbidden")


async def test_consume_grant_covers_the_dlq_and_id_routes(make_client, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    boss = make_client(auth=await make_user("tenant_admin", tenant))
    _, member = await new_member(boss, make_client, ("consume", "orders"))
    theirs = (await enqueue(boss, "orders")).json()["id"]
    other = (await enqueue(boss, "billing")).json()["id"]
    [m] = (await member.post("/api/messages/dequeue", json={"topic": "orders"})).json()["messages"]
    assert m["id"] == theirs
    assert (await member.post("/api/messages/dequeue", json={"topic": "orders.dlq"})).status_code == 200
    assert_error(await member.post("/api/messages/dequeue", json={"topic": "billing"}), 403, "forbidden")

    [b] = (await boss.post("/api/messages/dequeue", json={"topic": "billing"})).json()["messages"]
    for path in (f"/api/messages/{other}/ack", f"/api/messages/{other}/nack"):
        assert_error(await member.post(path, json={"receipt": b["receipt"]}), 403, "forbidden")
    extend = {"visibility_timeout_seconds": 30, "receipt": b["receipt"]}
    assert_error(await member.post(f"/api/messages/{other}/visibility", json=extend), 403, "forbidden")
    acks = {"acks": [{"id": theirs, "receipt": m["receipt"]}, {"id": other, "receipt": b["receipt"]}]}
    assert_error(await member.post("/api/messages/ack", json=acks), 403, "forbidden")
    assert (await boss.get(f"/api/messages/{other}")).json()["status"] == "processing"  # untouched

    r = await member.post(f"/api/messages/{theirs}/nack", json={"receipt": m["receipt"]})
    assert r.status_code == 200, r.text
    assert_error(await member.get(f"/api/messages/{theirs}"), 403, "forbidden")  # consume is not read
    assert_error(await member.delete(f"/api/messages/{theirs}"), 403, "forbidden")  # delete is for admins
    assert_error(await member.post("/api/topics/orders/purge"), 403, "forbidden")
    assert (await member.post("/api/topics/orders/requeue")).status_code == 200
    assert_error(await member.post("/api/topics/billing/requeue"), 403, "forbidden")


async def test_read_grants_filter_lists(make_client, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    boss = make_client(auth=await make_user("tenant_admin", tenant))
    for topic in ("orders", "orders.eu", "billing"):
        assert (await enqueue(boss, topic)).status_code == 201
    _, reader = await new_member(boss, make_client, ("read", "orders.*"))
    assert (await reader.get("/api/messages", params={"topic": "orders.eu"})).json()["total"] == 1
    assert_error(await reader.get("/api/messages", params={"topic": "billing"}), 403, "forbidden")
    assert_error(await reader.get("/api/messages"), 403, "forbidden")  # no topic: needs read on '*'
    topics = {t["topic"] for t in (await reader.get("/api/topics")).json()["items"]}
    assert topics == {"orders", "orders.eu"}
    stats = {row["topic"] for row in (await reader.get("/api/stats")).json()["topics"]}
    assert stats == {"orders", "orders.eu"}
    assert_error(await reader.post("/api/messages/dequeue", json={"topic": "orders"}), 403, "forbidden")

    _, everything = await new_member(boss, make_client, ("read", "*"))
    assert (await everything.get("/api/messages")).json()["total"] == 3


async def test_grant_routes(make_client, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    boss = make_client(auth=await make_user("tenant_admin", tenant))
    user_id, member = await new_member(boss, make_client)
    assert_error(await enqueue(member, "orders"), 403, "forbidden")  # no grants: nothing
    grant = {"action": "produce", "topic_pattern": "orders"}
    r = await boss.post(f"/api/users/{user_id}/grants", json=grant)
    assert r.status_code == 201, r.text
    created = r.json()
    assert set(created) == {"id", "action", "topic_pattern", "created_at", "consumer_group"}
    assert (await enqueue(member, "orders")).status_code == 201  # effective at once
    assert_error(await boss.post(f"/api/users/{user_id}/grants", json=grant), 409, "already_exists")
    for bad in (
        {"action": "delete", "topic_pattern": "orders"},
        {"action": "read", "topic_pattern": "*.orders"},
        {"action": "read", "topic_pattern": ""},
        {"action": "read"},
        {"action": "read", "topic_pattern": "orders", "extra": 1},
    ):
        assert_error(await boss.post(f"/api/users/{user_id}/grants", json=bad), 400, "invalid_request")
    assert (await boss.get(f"/api/users/{user_id}/grants")).json() == {"items": [created]}
    assert (await boss.delete(f"/api/users/{user_id}/grants/{created['id']}")).status_code == 204
    assert_error(await enqueue(member, "orders"), 403, "forbidden")  # revoked at once
    assert_error(await boss.delete(f"/api/users/{user_id}/grants/{created['id']}"), 404, "not_found")
    assert_error(await boss.get(f"/api/users/{uuid.uuid4()}/grants"), 404, "not_found")
    assert_error(await member.get(f"/api/users/{user_id}/grants"), 403, "forbidden")


async def test_grants_of_another_tenants_user_are_out_of_reach(make_client, make_user, tenant, db) -> None:  # type: ignore[no-untyped-def]
    from tests.support.tenants import Tenant

    other_slug = f"t-{uuid.uuid4().hex[:12]}"
    other_id = await db.fetchval("INSERT INTO tenants (slug, name) VALUES ($1, $1) RETURNING id", other_slug)
    other_boss = make_client(auth=await make_user("tenant_admin", Tenant(other_id, other_slug)))
    stranger_id, _ = await new_member(other_boss, make_client, ("read", "*"))
    boss = make_client(auth=await make_user("tenant_admin", tenant))
    grant = {"action": "read", "topic_pattern": "*"}
    assert_error(await boss.post(f"/api/users/{stranger_id}/grants", json=grant), 404, "not_found")
    assert_error(await boss.get(f"/api/users/{stranger_id}/grants"), 404, "not_found")
    assert await db.fetchval("SELECT count(*) FROM grants WHERE user_id = $1", uuid.UUID(stranger_id)) == 1


async def test_a_consume_grant_that_pins_a_group_consumes_only_as_that_group(make_client, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    boss = make_client(auth=await make_user("tenant_admin", tenant))
    await boss.put("/api/topic-configs/orders", json={"max_retries": 1})
    for group in ("billing", "shipping"):
        r = await boss.post("/api/topics/orders/consumer-groups", json={"consumer_group": group})
        assert r.status_code == 201, r.text
    user_id, member = await new_member(boss, make_client, ("consume", "orders", "billing"), ("read", "orders"))
    grants = (await boss.get(f"/api/users/{user_id}/grants")).json()["items"]
    assert {(g["action"], g["consumer_group"]) for g in grants} == {("consume", "billing"), ("read", None)}
    me = (await member.get("/api/auth/me")).json()
    assert {"action": "consume", "topic_pattern": "orders", "consumer_group": "billing"} in me["grants"]
    bad = {"action": "produce", "topic_pattern": "orders", "consumer_group": "billing"}
    assert_error(await boss.post(f"/api/users/{user_id}/grants", json=bad), 400, "invalid_request")

    await enqueue(boss, "orders")
    for body in ({"topic": "orders"}, {"topic": "orders", "consumer_group": "shipping"}):
        assert_error(await member.post("/api/messages/dequeue", json=body), 403, "forbidden")
    [s] = (await boss.post("/api/messages/dequeue", json={"topic": "orders", "consumer_group": "shipping"})).json()[
        "messages"
    ]
    as_shipping = {"receipt": s["receipt"], "consumer_group": "shipping"}
    for path in ("ack", "nack"):
        assert_error(await member.post(f"/api/messages/{s['id']}/{path}", json=as_shipping), 403, "forbidden")
    extend = {**as_shipping, "visibility_timeout_seconds": 30}
    assert_error(await member.post(f"/api/messages/{s['id']}/visibility", json=extend), 403, "forbidden")
    batch = {"acks": [{"id": s["id"], **as_shipping}]}
    assert_error(await member.post("/api/messages/ack", json=batch), 403, "forbidden")

    [m] = (await member.post("/api/messages/dequeue", json={"topic": "orders", "consumer_group": "billing"})).json()[
        "messages"
    ]
    nack = {"receipt": m["receipt"], "consumer_group": "billing", "error": "declined"}
    assert (await member.post(f"/api/messages/{m['id']}/nack", json=nack)).json() == {"outcome": "dlq"}
    # its group's dead letter it may requeue; another group's not
    assert (await boss.post(f"/api/messages/{s['id']}/nack", json={**as_shipping, "error": "x"})).json() == {
        "outcome": "dlq"
    }
    dead = (await boss.get("/api/topics/orders.dlq/messages")).json()["items"]
    by_group = {d["consumer_group"]: d["id"] for d in dead}
    assert_error(await member.post(f"/api/messages/{by_group['shipping']}/requeue"), 403, "forbidden")
    assert (await member.post(f"/api/messages/{by_group['billing']}/requeue")).status_code == 204
    job = {"action": "requeue", "filter": {"consumer_group": "shipping"}}
    assert_error(await member.post("/api/topics/orders.dlq/bulk-jobs", json=job), 403, "forbidden")
    chosen = {"action": "requeue", "ids": [by_group["shipping"]]}
    assert_error(await member.post("/api/topics/orders.dlq/messages/bulk", json=chosen), 403, "forbidden")
    job = {"action": "requeue", "filter": {"consumer_group": "billing"}}
    assert (await member.post("/api/topics/orders.dlq/bulk-jobs", json=job)).status_code == 202

    # an unpinned consume grant beside it lifts the pin
    await boss.post(f"/api/users/{user_id}/grants", json={"action": "consume", "topic_pattern": "orders"})
    r = await member.post("/api/messages/dequeue", json={"topic": "orders", "consumer_group": "shipping"})
    assert r.status_code == 200, r.text


async def test_a_consume_grant_must_pin_a_group_that_exists(make_client, make_user, tenant, db) -> None:  # type: ignore[no-untyped-def]
    boss = make_client(auth=await make_user("tenant_admin", tenant))
    user_id, _ = await new_member(boss, make_client, ("read", "orders"))
    missing = {"action": "consume", "topic_pattern": "orders", "consumer_group": "biling"}
    body = assert_error(await boss.post(f"/api/users/{user_id}/grants", json=missing), 404, "not_found")
    assert body["details"] == {"topic_pattern": "orders", "consumer_group": "biling"}
    assert await db.fetchval("SELECT count(*) FROM grants WHERE user_id = $1", uuid.UUID(user_id)) == 1
    r = await boss.post("/api/topics/orders.eu/consumer-groups", json={"consumer_group": "billing"})
    assert r.status_code == 201, r.text
    for pattern in ("orders.*", "*", "orders.eu"):  # a pattern covering a topic with the group
        grant = {"action": "consume", "topic_pattern": pattern, "consumer_group": "billing"}
        assert (await boss.post(f"/api/users/{user_id}/grants", json=grant)).status_code == 201
    elsewhere = {"action": "consume", "topic_pattern": "orders", "consumer_group": "billing"}
    assert_error(await boss.post(f"/api/users/{user_id}/grants", json=elsewhere), 404, "not_found")
