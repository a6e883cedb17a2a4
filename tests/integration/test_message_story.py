"""A message's story (`GET /api/messages/{id}/story`): plain, grouped and replayed messages, from every side."""

from __future__ import annotations

from typing import Any

import httpx

from tests.integration.helpers import assert_error, dequeue, enqueue


async def story(client: httpx.AsyncClient, message_id: str, **params: str) -> dict[str, Any]:
    r = await client.get(f"/api/messages/{message_id}/story", params=params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def kinds(body: dict[str, Any]) -> list[str]:
    return [e["kind"] if e["kind"] != "attempt" else f"attempt:{e['outcome']}" for e in body["events"]]


async def test_a_plain_messages_story_from_enqueue_to_its_ack_and_its_replay(client: httpx.AsyncClient) -> None:
    r = await client.put("/api/topic-configs/orders", json={"max_retries": 1, "replayable": True})
    assert r.status_code == 200, r.text
    mid = await enqueue(client, "orders", b"o-1")
    [m] = await dequeue(client, "orders")
    r = await client.post(f"/api/messages/{mid}/nack", json={"receipt": m["receipt"], "error": "card declined"})
    assert r.json()["outcome"] == "dlq"
    dead = await story(client, mid)
    assert dead["state"] == "stored" and dead["topic"] == "orders.dlq" and dead["message"]["topic"] == "orders.dlq"
    assert kinds(dead) == ["enqueued", "attempt:dead_lettered", "dead_lettered"]
    assert dead["events"][1]["error"] == "card declined" and dead["events"][2]["topic"] == "orders.dlq"

    assert (await client.post(f"/api/messages/{mid}/requeue")).status_code == 204
    [m] = await dequeue(client, "orders")
    assert (await client.post(f"/api/messages/{mid}/ack", json={"receipt": m["receipt"]})).status_code == 204
    assert_error(await client.get(f"/api/messages/{mid}"), 404, "message_not_found")
    acked = await story(client, mid)  # no longer stored: the audit trail names its topic, the log has its ack
    assert acked["state"] == "acked" and acked["message"] is None and acked["acked_at"]
    assert kinds(acked) == ["enqueued", "requeued", "acked"]  # (its attempts went with its row)
    assert acked["events"][1]["by"] == "admin"
    assert acked["consumer_groups"] is None and acked["replay_of"] is None

    r = await client.post("/api/topics/orders/replay", json={"from_time": acked["acked_at"]})
    assert r.status_code == 200 and r.json() == {"replayed": 1}, r.text
    replayed = await story(client, mid, topic="orders")
    event = replayed["events"][-1]
    assert event["kind"] == "replayed" and event["by"] == "admin" and event["message_id"] != mid
    again = await story(client, event["message_id"])
    assert again["replay_of"] == mid and again["events"][0]["message_id"] == mid
    assert again["message"]["metadata"] == {"skiplock_replay_of": mid}


async def test_a_grouped_messages_story_tells_each_groups_part(client: httpx.AsyncClient) -> None:
    assert (await client.put("/api/topic-configs/shop", json={"max_retries": 1})).status_code == 200
    for group in ("billing", "shipping", "audit"):
        r = await client.post("/api/topics/shop/consumer-groups", json={"consumer_group": group})
        assert r.status_code == 201, r.text
    mid = await enqueue(client, "shop", b"order")
    r = await client.post("/api/topics/shop/consumer-groups", json={"consumer_group": "late"})
    assert r.status_code == 201, r.text
    [b] = await dequeue(client, "shop", consumer_group="billing")
    r = await client.post(f"/api/messages/{mid}/ack", json={"receipt": b["receipt"], "consumer_group": "billing"})
    assert r.status_code == 204, r.text
    [s] = await dequeue(client, "shop", consumer_group="shipping")
    r = await client.post(
        f"/api/messages/{mid}/nack",
        json={"receipt": s["receipt"], "consumer_group": "shipping", "error": "carrier down"},
    )
    assert r.json()["outcome"] == "dlq", r.text
    await dequeue(client, "shop", consumer_group="audit")  # holds it now

    body = await story(client, mid)
    assert body["state"] == "stored"
    groups = {g["consumer_group"]: g for g in body["consumer_groups"]}
    assert groups["billing"]["state"] == "acked"
    assert groups["shipping"]["state"] == "dead_lettered" and groups["shipping"]["dead_letter_id"]
    assert groups["audit"]["state"] == "processing" and groups["late"]["state"] == "not_owed"
    by_group = [(e["kind"], e["consumer_group"], e.get("outcome")) for e in body["events"]]
    assert ("attempt", "shipping", "dead_lettered") in by_group and ("acked", "billing", None) in by_group
    assert ("dead_lettered", "shipping", None) in by_group and ("attempt", "audit", "processing") in by_group
    dead_letter = next(e for e in body["events"] if e["kind"] == "dead_lettered")
    assert dead_letter["message_id"] == groups["shipping"]["dead_letter_id"] and dead_letter["error"] == "carrier down"

    copy = await story(client, groups["shipping"]["dead_letter_id"])  # the dead letter leads back to its message
    assert copy["dead_letter_of"] == mid and copy["topic"] == "shop.dlq" and copy["consumer_groups"] is None
    assert kinds(copy) == ["enqueued", "attempt:dead_lettered", "dead_lettered"]
    assert copy["events"][0]["message_id"] == mid and copy["events"][1]["consumer_group"] == "shipping"


async def test_a_message_back_from_its_dlq_by_a_requeue_of_the_whole_dlq(client: httpx.AsyncClient) -> None:
    assert (await client.put("/api/topic-configs/bills", json={"max_retries": 1})).status_code == 200
    mid = await enqueue(client, "bills")
    [m] = await dequeue(client, "bills")
    await client.post(f"/api/messages/{mid}/nack", json={"receipt": m["receipt"], "error": "no"})
    assert (await client.post("/api/topics/bills/requeue")).status_code == 200
    body = await story(client, mid)
    assert kinds(body) == ["enqueued", "attempt:dead_lettered", "dead_lettered", "requeued"]
    requeued = body["events"][-1]
    assert requeued["by"] == "admin" and requeued["note"] == "by a requeue of bills.dlq (topic.requeue)"
    assert body["message"]["topic"] == "bills" and body["message"]["status"] == "pending"


async def test_nothing_known_is_a_404_and_a_member_needs_read_on_the_topic(client: httpx.AsyncClient) -> None:
    assert_error(await client.get("/api/messages/not-an-id/story"), 404, "message_not_found")
    gone = "01900000-0000-7000-8000-000000000000"
    assert_error(await client.get(f"/api/messages/{gone}/story"), 404, "message_not_found")
    assert_error(await client.get(f"/api/messages/{gone}/story", params={"topic": "x y"}), 400, "invalid_request")
    assert_error(await client.get(f"/api/messages/{gone}/story", params={"topic": "plain"}), 404, "message_not_found")
    mid = await enqueue(client, "plain")
    body = await story(client, mid)
    assert kinds(body) == ["enqueued"] and body["consumer_groups"] is None


async def test_who_holds_a_topics_messages_now(client: httpx.AsyncClient) -> None:
    for n in range(3):
        await enqueue(client, "held", f"m{n}")
    await dequeue(client, "held", count=2)
    await client.post("/api/topics/fan/consumer-groups", json={"consumer_group": "billing"})
    await enqueue(client, "fan")
    await dequeue(client, "fan", consumer_group="billing")
    r = await client.get("/api/topics/held/consumers")
    assert r.status_code == 200, r.text
    [held] = r.json()["items"]
    assert held["consumer"] == "admin" and held["consumer_group"] is None and held["holding"] == 2
    assert held["oldest_lease_at"] <= held["newest_lease_at"]
    [grouped] = (await client.get("/api/topics/fan/consumers")).json()["items"]
    assert grouped["consumer_group"] == "billing" and grouped["holding"] == 1
    assert (await client.get("/api/topics/quiet/consumers")).json() == {"items": []}


async def test_failed_messages_grouped_by_error_class(client: httpx.AsyncClient) -> None:
    assert (await client.put("/api/topic-configs/jobs", json={"max_retries": 1})).status_code == 200
    errors_given = [
        "ValueError: bad input 1",
        "ValueError: bad input 2",
        "Traceback (most recent call last):\n  File \"w.py\", line 3, in run\nKeyError: 'sku'\n",
        "timeout",
    ]
    for error in errors_given:
        await enqueue(client, "jobs")
        [m] = await dequeue(client, "jobs")
        r = await client.post(f"/api/messages/{m['id']}/nack", json={"receipt": m["receipt"], "error": error})
        assert r.json()["outcome"] == "dlq"
    r = await client.get("/api/topics/jobs.dlq/error-classes")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["scanned"] == 4
    classes = {c["error_class"]: c for c in body["items"]}
    assert (
        classes["ValueError"]["messages"] == 2 and classes["ValueError"]["example_error"] == "ValueError: bad input 2"
    )
    assert classes["KeyError"]["messages"] == 1 and classes["timeout"]["messages"] == 1
    assert body["items"][0]["error_class"] == "ValueError"
    assert (await client.get("/api/topics/jobs/error-classes")).json() == {"items": [], "scanned": 0}
