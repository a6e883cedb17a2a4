"""Browsing and administration routes: list, get, delete, topic summaries, stats, purge, delete by key."""

from __future__ import annotations

import uuid
from urllib.parse import quote

import httpx

from tests.integration.helpers import assert_error, dequeue, enqueue


async def test_browse_filters_paginates_newest_first(client: httpx.AsyncClient) -> None:
    ids = [await enqueue(client, "browse", f"m{i}", key=f"k{i % 2}" if i < 2 else None) for i in range(7)]
    await enqueue(client, "other")
    await dequeue(client, "browse")  # ids[0] is now processing
    page = (await client.get("/api/messages", params={"topic": "browse", "limit": 3})).json()
    assert page["total"] == 7
    assert page["limit"] == 3
    assert page["offset"] == 0
    assert [m["id"] for m in page["items"]] == ids[::-1][:3]
    assert all("receipt" not in m or m["receipt"] is None for m in page["items"])
    page2 = (await client.get("/api/messages", params={"topic": "browse", "limit": 3, "offset": 3})).json()
    assert [m["id"] for m in page2["items"]] == ids[::-1][3:6]
    processing = (await client.get("/api/messages", params={"topic": "browse", "status": "processing"})).json()
    assert [m["id"] for m in processing["items"]] == [ids[0]]
    assert processing["items"][0]["visibility_deadline"]
    keyed = (await client.get("/api/messages", params={"topic": "browse", "key": "k1"})).json()
    assert [m["id"] for m in keyed["items"]] == [ids[1]]
    everything = (await client.get("/api/messages")).json()
    assert everything["total"] == 8
    assert everything["limit"] == 50


async def test_get_and_delete_one_message(client: httpx.AsyncClient) -> None:
    mid = await enqueue(client, "del")
    assert (await client.get(f"/api/messages/{mid}")).status_code == 200
    assert (await client.delete(f"/api/messages/{mid}")).status_code == 204
    assert_error(await client.delete(f"/api/messages/{mid}"), 404, "message_not_found")
    assert_error(await client.get(f"/api/messages/{uuid.uuid4()}"), 404, "message_not_found")


async def test_delete_and_purge_need_a_tenant_admin(make_client, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    member = make_client(auth=await make_user("member", tenant))
    mid = str(uuid.uuid4())
    assert_error(await member.delete(f"/api/messages/{mid}"), 403, "forbidden")
    assert_error(await member.post("/api/topics/t/purge"), 403, "forbidden")
    assert_error(await member.delete("/api/topics/t/messages/by-key/k"), 403, "forbidden")


async def test_topics_summary_and_stats(client: httpx.AsyncClient, db, tenant) -> None:  # type: ignore[no-untyped-def]
    await enqueue(client, "alpha")
    await enqueue(client, "alpha")
    await enqueue(client, "alpha", delay_seconds=3600)
    await enqueue(client, "beta")
    await dequeue(client, "alpha")
    await db.execute(
        "INSERT INTO topic_configs (tenant_id, topic, max_retries) VALUES ($1, 'configured-only', 7)", tenant.id
    )
    topics = {t["topic"]: t for t in (await client.get("/api/topics")).json()["items"]}
    assert set(topics) == {"alpha", "beta", "configured-only"}
    alpha = topics["alpha"]
    assert (alpha["pending"], alpha["processing"], alpha["delayed"], alpha["failed"]) == (2, 1, 1, 0)
    assert alpha["oldest_pending_age_seconds"] >= 0
    assert alpha["config"] is None
    assert topics["configured-only"]["config"]["max_retries"] == 7
    assert topics["configured-only"]["pending"] == 0
    stats = (await client.get("/api/stats")).json()["topics"]
    assert {"topic": "alpha", "status": "processing", "count": 1} in stats
    assert {"topic": "alpha", "status": "pending", "count": 2} in stats
    assert {"topic": "beta", "status": "pending", "count": 1} in stats


async def test_purge_by_status_and_all(client: httpx.AsyncClient, db) -> None:  # type: ignore[no-untyped-def]
    for _ in range(3):
        await enqueue(client, "purge")
    [leased] = await dequeue(client, "purge")
    failed = await enqueue(client, "purge")
    await db.execute("UPDATE messages SET status = 'failed' WHERE id = $1::uuid", failed)
    r = await client.post("/api/topics/purge/purge", json={"statuses": ["failed"]})
    assert r.json() == {"deleted": 1}
    r = await client.post("/api/topics/purge/purge", json={"statuses": ["processing"]})
    assert r.json() == {"deleted": 1}
    assert_error(await client.get(f"/api/messages/{leased['id']}"), 404, "message_not_found")
    assert (await client.post("/api/topics/purge/purge")).json() == {"deleted": 2}
    assert (await client.post("/api/topics/purge/purge", json={})).json() == {"deleted": 0}
    assert_error(await client.post("/api/topics/bad topic/purge"), 400, "invalid_request")


async def test_delete_by_key_takes_every_status(client: httpx.AsyncClient) -> None:
    await enqueue(client, "bk", key="k")
    await dequeue(client, "bk")  # processing
    await enqueue(client, "bk", key="k")  # a new pending twin
    await enqueue(client, "bk", key="other")
    r = await client.delete("/api/topics/bk/messages/by-key/k")
    assert r.status_code == 200
    assert r.json() == {"deleted": 2}
    assert (await client.get("/api/messages", params={"topic": "bk"})).json()["total"] == 1


async def test_topic_config_reads(client: httpx.AsyncClient, db, tenant) -> None:  # type: ignore[no-untyped-def]
    await db.execute(
        "INSERT INTO topic_configs (tenant_id, topic, max_retries, retry_backoff_seconds) VALUES ($1, 'cfg', 5, "
        "'{1,5}')",
        tenant.id,
    )
    assert (await client.get("/api/topic-configs/cfg")).json()["retry_backoff_seconds"] == [1, 5]
    items = (await client.get("/api/topic-configs")).json()["items"]
    assert [i["topic"] for i in items] == ["cfg"]
    assert_error(await client.get("/api/topic-configs/none"), 404, "not_found")
    assert_error(await client.get("/api/topic-configs/bad topic"), 400, "invalid_request")


async def test_a_topic_config_governs_retries(client: httpx.AsyncClient, db, tenant) -> None:  # type: ignore[no-untyped-def]
    await db.execute(
        "INSERT INTO topic_configs (tenant_id, topic, max_retries, dlq_enabled) VALUES ($1, 'strict', 1, false)",
        tenant.id,
    )
    mid = await enqueue(client, "strict")
    assert (await client.get(f"/api/messages/{mid}")).json()["max_retries"] == 1
    await dequeue(client, "strict")
    assert (await client.post(f"/api/messages/{mid}/nack")).json() == {"outcome": "failed"}
    assert (await client.get(f"/api/messages/{mid}")).json()["status"] == "failed"


async def test_the_dead_letters_of_a_200_character_topic_are_addressable(client: httpx.AsyncClient) -> None:
    """`<topic>.dlq` of the longest topic is 204 characters: every route that names a topic must take it."""
    topic = "t" * 200
    dlq = f"{topic}.dlq"
    assert (await client.put(f"/api/topic-configs/{topic}", json={"max_retries": 1})).status_code == 200
    for _ in range(3):
        await enqueue(client, topic, key=None)
    for message in await dequeue(client, topic, count=3):
        r = await client.post(f"/api/messages/{message['id']}/nack", json={"error": "boom"})
        assert r.json()["outcome"] == "dlq", r.text
    page = (await client.get("/api/messages", params={"topic": dlq})).json()
    assert page["total"] == 3 and {m["topic"] for m in page["items"]} == {dlq}
    assert {t["topic"] for t in (await client.get("/api/topics")).json()["items"]} >= {topic, dlq}
    assert (await client.get(f"/api/topics/{dlq}/messages")).status_code == 200
    (leased,) = await dequeue(client, dlq)  # a DLQ processor
    assert (await client.post(f"/api/messages/{leased['id']}/ack", json={})).status_code == 204
    waiting = (await client.get("/api/messages", params={"topic": dlq})).json()["items"]
    assert (await client.post(f"/api/messages/{waiting[0]['id']}/requeue")).status_code == 204
    assert (await client.post(f"/api/topics/{topic}/requeue")).json() == {"requeued": 1}
    for message in await dequeue(client, topic, count=3):
        await client.post(f"/api/messages/{message['id']}/nack", json={"error": "again"})
    assert (await client.post(f"/api/topics/{dlq}/purge")).json() == {"deleted": 2}
    # Names that no route can have created stay refused.
    assert_error(await client.get("/api/messages", params={"topic": "t" * 201}), 400, "invalid_request")
    assert_error(await client.post(f"/api/topics/{'t' * 201}.dlq/purge"), 400, "invalid_request")
    assert_error(await client.post("/api/messages/dequeue", json={"topic": "t" * 204}), 400, "invalid_request")
    r = await client.post("/api/messages", json={"topic": dlq, "payload": "eA=="})
    assert r.status_code == 400 and r.json()["code"] in {"reserved_topic", "invalid_request"}


async def test_delete_by_key_takes_any_key_percent_encoded(client: httpx.AsyncClient) -> None:
    keys = ["a/b", "/lead", "trail/", "a//b", "100% sure", "a?b#c", "..", "ünï/cödé"]
    for key in keys:
        await enqueue(client, "keys", key=key)
    await enqueue(client, "keys", key="a")
    for key in keys:
        encoded = quote(key, safe="") if key != ".." else "%2E%2E"  # a bare `..` is a dot-segment clients resolve
        r = await client.delete(f"/api/topics/keys/messages/by-key/{encoded}")
        assert r.status_code == 200, (key, r.text)
        assert r.json() == {"deleted": 1}, key
    left = (await client.get("/api/messages", params={"topic": "keys"})).json()["items"]
    assert [m["key"] for m in left] == ["a"]
    assert (await client.delete("/api/topics/keys/messages/by-key/a")).json() == {"deleted": 1}
    assert_error(await client.delete("/api/topics/keys/messages/by-key/%FF"), 400, "invalid_request")
