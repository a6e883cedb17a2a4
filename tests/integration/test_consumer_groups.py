"""Consumer groups (the contract's "Consumer groups (fan-out)"): each group receives every message once, apart from
the others; a message is stored until every group that owes it has acked it."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import httpx

from mq.ids import uuid7
from tests.integration.helpers import assert_error, b64, dequeue, enqueue, long_polls_waiting
from tests.support.healing import run_job
from tests.support.servers import ADMIN, Server
from tests.support.tenants import Tenant
from tests.support.waiting import eventually


async def _group(client: httpx.AsyncClient, topic: str, name: str, start: str = "latest") -> dict[str, Any]:
    r = await client.post(f"/api/topics/{topic}/consumer-groups", json={"consumer_group": name, "start": start})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


async def _ack(client: httpx.AsyncClient, message: dict[str, Any], group: str) -> httpx.Response:
    return await client.post(
        f"/api/messages/{message['id']}/ack", json={"receipt": message["receipt"], "consumer_group": group}
    )


async def test_groups_are_created_listed_in_creation_order_and_deleted(client: httpx.AsyncClient) -> None:
    made = await _group(client, "orders", "billing")
    assert made["topic"] == "orders" and made["consumer_group"] == "billing" and made["start"] == "latest"
    assert made["created_at"].endswith("Z")
    await _group(client, "orders", "shipping", "earliest")
    await _group(client, "orders", "audit")
    listed = (await client.get("/api/topics/orders/consumer-groups")).json()
    assert listed["items"] == ["billing", "shipping", "audit"]
    assert [g["start"] for g in listed["groups"]] == ["latest", "earliest", "latest"]
    assert listed["groups"][0] | {"created_at": None} == {
        "consumer_group": "billing",
        "start": "latest",
        "created_at": None,
        "pending": 0,
        "processing": 0,
        "dead": 0,
        "oldest_pending_age_seconds": None,
    }
    r = await client.post("/api/topics/orders/consumer-groups", json={"consumer_group": "billing"})
    assert_error(r, 409, "group_exists")
    for bad in ("", "-x", "a" * 101, "a b"):
        r = await client.post("/api/topics/orders/consumer-groups", json={"consumer_group": bad})
        assert_error(r, 400, "invalid_request")
    r = await client.post("/api/topics/orders.dlq/consumer-groups", json={"consumer_group": "x"})
    assert_error(r, 400, "reserved_topic")
    assert (await client.delete("/api/topics/orders/consumer-groups/audit")).status_code == 204
    assert_error(await client.delete("/api/topics/orders/consumer-groups/audit"), 404, "not_found")
    assert (await client.get("/api/topics/orders/consumer-groups")).json()["items"] == ["billing", "shipping"]
    assert (await client.get("/api/topics/plain/consumer-groups")).json() == {"items": [], "groups": []}
    plain = await enqueue(client, "plain", "p")
    assert (await client.get(f"/api/messages/{plain}")).json()["deliveries"] is None


async def test_every_group_receives_every_message_once_and_the_message_goes_when_all_acked(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    groups = ["billing", "shipping", "audit"]
    for name in groups:
        await _group(client, "fan", name)
    single = await enqueue(client, "fan", "one")
    r = await client.post("/api/messages/batch", json={"topic": "fan", "messages": [{"payload": b64("two")}] * 4})
    ids = {single, *r.json()["ids"]}
    received: dict[str, list[dict[str, Any]]] = {}
    for name in groups:
        received[name] = await dequeue(client, "fan", 10, consumer_group=name)
        assert {m["id"] for m in received[name]} == ids  # each group: all five, once
        assert all(m["status"] == "processing" and m["receipt"] for m in received[name])
        assert {m["consumer_group"] for m in received[name]} == {name}  # the group each was leased for
        assert await dequeue(client, "fan", 10, consumer_group=name) == []  # leased: not again
    listed = {g["consumer_group"]: g for g in (await client.get("/api/topics/fan/consumer-groups")).json()["groups"]}
    assert [listed[n]["processing"] for n in groups] == [5, 5, 5]
    first = received["billing"][0]
    detail = (await client.get(f"/api/messages/{first['id']}")).json()
    assert detail["status"] == "pending"  # groups still owe it
    assert detail["deliveries"] == [
        {"consumer_group": name, "status": "processing", "retry_count": 0} for name in groups
    ]

    for name in groups[:2]:
        for m in received[name]:
            assert (await _ack(client, m, name)).status_code == 204
    assert await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1", tenant.id) == 5  # audit owes
    r = await client.post(
        "/api/messages/ack",
        json={"acks": [{"id": m["id"], "receipt": m["receipt"], "consumer_group": "audit"} for m in received["audit"]]},
    )
    assert r.json() == {"acked": 5, "failed": []}
    assert await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1", tenant.id) == 0
    assert (
        await db.fetchval(
            "SELECT count(*) FROM deliveries AS d JOIN consumer_groups AS g ON g.tenant_id = d.tenant_id "
            "AND g.id = d.group_id "
            "WHERE g.tenant_id = $1",
            tenant.id,
        )
        == 0
    )
    assert_error(await _ack(client, first, "billing"), 404, "message_not_found")


async def test_a_grouped_topic_is_consumed_only_through_its_groups(client: httpx.AsyncClient) -> None:
    await _group(client, "only", "g1")
    await enqueue(client, "only", "m")
    r = await client.post("/api/messages/dequeue", json={"topic": "only"})
    assert_error(r, 400, "consumer_group_required")
    r = await client.post("/api/messages/dequeue", json={"topic": "only", "consumer_group": "nope"})
    assert_error(r, 404, "not_found")
    r = await client.post("/api/messages/dequeue", json={"topic": "plainer", "consumer_group": "g1"})
    assert_error(r, 404, "not_found")
    [m] = await dequeue(client, "only", consumer_group="g1")
    assert_error(await _ack(client, m, "g2"), 404, "not_found")  # the tenant has no such group
    r = await client.post(f"/api/messages/{m['id']}/ack", json={"receipt": m["receipt"]})  # not as the group
    assert_error(r, 400, "consumer_group_required")
    stale = str(uuid.uuid4())
    r = await client.post(f"/api/messages/{m['id']}/ack", json={"receipt": stale, "consumer_group": "g1"})
    assert_error(r, 409, "lease_lost")
    assert (await _ack(client, m, "g1")).status_code == 204


async def test_latest_receives_what_comes_after_it_and_earliest_what_was_there(client: httpx.AsyncClient) -> None:
    before = [await enqueue(client, "starts", f"b{n}") for n in range(3)]
    await _group(client, "starts", "late")
    await _group(client, "starts", "early", "earliest")
    after = await enqueue(client, "starts", "a")
    late = await dequeue(client, "starts", 10, consumer_group="late")
    early = await dequeue(client, "starts", 10, consumer_group="early")
    assert [m["id"] for m in late] == [after]
    assert sorted(m["id"] for m in early) == sorted([*before, after])


async def test_deleting_a_group_releases_what_it_owed(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    await _group(client, "rel", "stays")
    await _group(client, "rel", "goes")
    ids = [await enqueue(client, "rel", f"m{n}") for n in range(3)]
    for m in await dequeue(client, "rel", 10, consumer_group="stays"):
        await _ack(client, m, "stays")
    assert await db.fetchval("SELECT count(*) FROM messages WHERE id = ANY($1::uuid[])", ids) == 3  # "goes" owes
    assert (await client.delete("/api/topics/rel/consumer-groups/goes")).status_code == 204
    assert await db.fetchval("SELECT count(*) FROM messages WHERE id = ANY($1::uuid[])", ids) == 0


async def test_two_groups_acking_a_messages_last_deliveries_at_once_delete_it(
    client: httpx.AsyncClient, server: Server, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    """queue-ti's race: under READ COMMITTED each of two racing acks still sees the other's delivery, and neither
    deleted the message. Here the count-down serializes them."""
    await _group(client, "race", "a")
    await _group(client, "race", "b")
    r = await client.post("/api/messages/batch", json={"topic": "race", "messages": [{"payload": b64("r")}] * 60})
    ids = r.json()["ids"]
    leased = {g: {m["id"]: m for m in await dequeue(client, "race", 100, consumer_group=g)} for g in ("a", "b")}
    async with httpx.AsyncClient(base_url=client.base_url, auth=client.auth, headers=client.headers) as other:
        results = await asyncio.gather(
            *(
                c.post(f"/api/messages/{mid}/ack", json={"receipt": leased[g][mid]["receipt"], "consumer_group": g})
                for mid in ids
                for g, c in (("a", client), ("b", other))
            )
        )
    assert {r.status_code for r in results} == {204}
    assert await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1", tenant.id) == 0


async def test_a_message_wakes_a_waiting_poll_of_every_group(client: httpx.AsyncClient) -> None:
    groups = ("g1", "g2", "g3")
    for name in groups:
        await _group(client, "woken", name)
    polls = [asyncio.create_task(dequeue(client, "woken", consumer_group=name, wait_seconds=10)) for name in groups]
    await long_polls_waiting(client.base_url, at_least=3)
    message_id = await enqueue(client, "woken", "one")
    received = await asyncio.wait_for(asyncio.gather(*polls), 4)  # the recheck would take 5 s
    assert [[m["id"] for m in r] for r in received] == [[message_id]] * 3


async def test_a_groups_nack_retries_and_dead_letters_its_own_delivery_only(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    await client.put("/api/topic-configs/nacked", json={"max_retries": 2, "retry_backoff_seconds": [0]})
    await _group(client, "nacked", "flaky")
    await _group(client, "nacked", "steady")
    message_id = await enqueue(client, "nacked", "n", key="k1")
    [m] = await dequeue(client, "nacked", consumer_group="flaky")
    r = await client.post(
        f"/api/messages/{m['id']}/nack", json={"receipt": m["receipt"], "error": "boom", "consumer_group": "flaky"}
    )
    assert r.json() == {"outcome": "retry"}
    [again] = await dequeue(client, "nacked", consumer_group="flaky")
    assert again["retry_count"] == 1 and again["last_error"] == "boom"
    r = await client.post(
        f"/api/messages/{m['id']}/visibility",
        json={"receipt": again["receipt"], "visibility_timeout_seconds": 60, "consumer_group": "flaky"},
    )
    assert r.status_code == 200 and r.json()["visibility_deadline"].endswith("Z")
    r = await client.post(
        f"/api/messages/{m['id']}/nack", json={"receipt": again["receipt"], "error": "bust", "consumer_group": "flaky"}
    )
    assert r.json() == {"outcome": "dlq"}
    dead = await db.fetchrow(
        "SELECT topic, original_topic, consumer_group, status, key FROM messages WHERE tenant_id = $1 AND topic = $2",
        tenant.id,
        "nacked.dlq",
    )
    assert dict(dead) == {
        "topic": "nacked.dlq",
        "original_topic": "nacked",
        "consumer_group": "flaky",
        "status": "pending",
        "key": "k1",
    }
    listed = {g["consumer_group"]: g for g in (await client.get("/api/topics/nacked/consumer-groups")).json()["groups"]}
    assert listed["flaky"]["dead"] == 1 and listed["flaky"]["pending"] == 0
    assert listed["steady"]["pending"] == 1  # the other group still owes it, untouched
    [s] = await dequeue(client, "nacked", consumer_group="steady")
    assert s["id"] == message_id and s["retry_count"] == 0
    assert (await _ack(client, s, "steady")).status_code == 204
    assert await db.fetchval("SELECT count(*) FROM messages WHERE id = $1", message_id) == 0
    r = await client.post(f"/api/messages/{message_id}/nack", json={"consumer_group": "flaky"})
    assert_error(r, 404, "message_not_found")


async def test_a_delivery_whose_lease_lapses_once_too_often_is_dead_lettered_for_its_group(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    await client.put("/api/topic-configs/lapsing", json={"max_retries": 2})
    await _group(client, "lapsing", "slow")
    await _group(client, "lapsing", "fast")
    message_id = await enqueue(client, "lapsing", "l")
    for attempt in range(2):
        [m] = await dequeue(client, "lapsing", consumer_group="slow", visibility_timeout_seconds=1)
        assert m["retry_count"] == attempt  # the first lapse comes back with retry_count + 1
        await asyncio.sleep(1.2)
    assert await dequeue(client, "lapsing", consumer_group="slow") == []  # the second lapse dead-letters it
    dead = await db.fetchrow(
        "SELECT consumer_group, original_topic, last_error FROM messages WHERE tenant_id = $1 AND topic = $2",
        tenant.id,
        "lapsing.dlq",
    )
    assert dead["consumer_group"] == "slow" and dead["original_topic"] == "lapsing"
    assert dead["last_error"].startswith("lease expired")
    [f] = await dequeue(client, "lapsing", consumer_group="fast")  # the other group is not affected
    assert f["id"] == message_id and f["retry_count"] == 0


async def test_requeueing_a_groups_dead_letter_delivers_it_to_that_group_only(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    await client.put("/api/topic-configs/rq", json={"max_retries": 1})
    await _group(client, "rq", "broken")
    await _group(client, "rq", "fine")
    await enqueue(client, "rq", "x")
    [m] = await dequeue(client, "rq", consumer_group="broken")
    nack = {"receipt": m["receipt"], "error": "no", "consumer_group": "broken"}
    assert (await client.post(f"/api/messages/{m['id']}/nack", json=nack)).json() == {"outcome": "dlq"}
    [f] = await dequeue(client, "rq", consumer_group="fine")
    assert (await _ack(client, f, "fine")).status_code == 204  # the original is gone: every group is done with it
    r = await client.get("/api/messages", params={"topic": "rq.dlq"})
    [dead] = r.json()["items"]
    assert dead["consumer_group"] == "broken" and dead["original_topic"] == "rq"
    assert (await client.post(f"/api/messages/{dead['id']}/requeue")).status_code == 204
    assert await dequeue(client, "rq", consumer_group="fine") == []  # not to the other group
    [again] = await dequeue(client, "rq", consumer_group="broken")
    assert again["id"] == dead["id"] and again["retry_count"] == 0
    assert (await _ack(client, again, "broken")).status_code == 204
    assert await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1", tenant.id) == 0


async def test_a_groups_dead_letters_are_listed_and_requeued_by_group(client: httpx.AsyncClient) -> None:
    """The console's view of one group's dead letters: the DLQ's page and a bulk job filtered by the group."""
    await client.put("/api/topic-configs/gd", json={"max_retries": 1})
    for group in ("a", "b"):
        await _group(client, "gd", group)
    await enqueue(client, "gd", "one")
    await enqueue(client, "gd", "two")
    for group in ("a", "b"):
        for m in await dequeue(client, "gd", 10, consumer_group=group):
            if group == "a" or m["payload"] == b64("two"):
                nack = {"receipt": m["receipt"], "error": "no", "consumer_group": group}
                assert (await client.post(f"/api/messages/{m['id']}/nack", json=nack)).json() == {"outcome": "dlq"}
    page = (await client.get("/api/topics/gd.dlq/messages", params={"consumer_group": "a"})).json()
    assert sorted(m["payload"] for m in page["items"]) == [b64("one"), b64("two")]
    assert {m["consumer_group"] for m in page["items"]} == {"a"}
    page = (await client.get("/api/topics/gd.dlq/messages", params={"consumer_group": "b"})).json()
    assert [m["payload"] for m in page["items"]] == [b64("two")]
    r = await client.get("/api/topics/gd.dlq/messages", params={"consumer_group": "not a name"})
    assert r.status_code == 400
    job = {"action": "requeue", "filter": {"consumer_group": "a"}}
    r = await client.post("/api/topics/gd.dlq/bulk-jobs", json=job)
    assert r.status_code == 202, r.text
    job_id = r.json()["id"]
    await eventually(lambda: _job_done(client, job_id), what="the bulk requeue")
    requeued = await dequeue(client, "gd", 10, consumer_group="a")
    assert sorted(m["payload"] for m in requeued) == [b64("one"), b64("two")]
    assert await dequeue(client, "gd", 10, consumer_group="b") == []
    page = (await client.get("/api/topics/gd.dlq/messages")).json()
    assert [(m["payload"], m["consumer_group"]) for m in page["items"]] == [(b64("two"), "b")]


async def _job_done(client: httpx.AsyncClient, job_id: str) -> bool:
    return bool((await client.get(f"/api/bulk-jobs/{job_id}")).json()["state"] == "done")


async def test_a_message_past_its_ttl_expires_for_every_group_that_still_owed_it(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    """Decided: a TTL is the message's, not a group's. Past it, no group receives it; the reaper marks it expired
    (or moves it to the DLQ with expire_to_dlq) and the groups' deliveries go."""
    await client.put("/api/topic-configs/ttl", json={"message_ttl_seconds": 1, "expire_to_dlq": True})
    await _group(client, "ttl", "quick")
    await _group(client, "ttl", "late")
    message_id = await enqueue(client, "ttl", "t")
    [q] = await dequeue(client, "ttl", consumer_group="quick")
    assert (await _ack(client, q, "quick")).status_code == 204
    await asyncio.sleep(1.2)
    assert await dequeue(client, "ttl", consumer_group="late") == []  # past its TTL: not delivered
    assert (await client.post("/api/admin/expiry-reaper/run")).status_code == 200
    moved = await db.fetchrow("SELECT topic, owed FROM messages WHERE id = $1", uuid.UUID(message_id))
    assert dict(moved) == {"topic": "ttl.dlq", "owed": None}
    assert await db.fetchval("SELECT count(*) FROM deliveries WHERE message_id = $1", uuid.UUID(message_id)) == 0
    [dead] = await dequeue(client, "ttl.dlq")  # a plain message in the DLQ
    assert dead["id"] == message_id


async def test_a_keyed_enqueue_replaces_a_twin_only_while_no_group_has_received_it(client: httpx.AsyncClient) -> None:
    await _group(client, "keyed", "a")
    await _group(client, "keyed", "b")
    first = await enqueue(client, "keyed", "v1", key="k")
    assert await enqueue(client, "keyed", "v2", key="k") == first  # no group received it: replaced in place
    [got] = await dequeue(client, "keyed", consumer_group="a")
    assert got["id"] == first and got["payload"] == b64("v2")
    second = await enqueue(client, "keyed", "v3", key="k")  # group a received the twin: a new message
    assert second != first
    b_got = await dequeue(client, "keyed", 10, consumer_group="b")
    assert [(m["id"], m["payload"]) for m in b_got] == [(first, b64("v2")), (second, b64("v3"))]
    a_more = await dequeue(client, "keyed", 10, consumer_group="a")
    assert [m["id"] for m in a_more] == [second]


async def test_a_keyed_enqueue_racing_a_groups_dequeue_is_never_lost_to_that_group(client: httpx.AsyncClient) -> None:
    """The upsert replaces the content a group is receiving at that moment, or stores a new message: either way the
    group receives the last content enqueued under the key."""
    await _group(client, "race", "a")
    await _group(client, "race", "b")
    for n in range(300):
        key = f"k{n}"
        await enqueue(client, "race", "old", key=key)
        received, _ = await asyncio.gather(
            dequeue(client, "race", 1, consumer_group="a"), enqueue(client, "race", "new", key=key)
        )
        payloads = [m["payload"] for m in received]
        for m in received:
            assert (await _ack(client, m, "a")).status_code == 204
        payloads += [m["payload"] for m in await dequeue(client, "race", 10, consumer_group="a")]
        assert payloads[-1] == b64("new"), (n, payloads)
        of_b = await dequeue(client, "race", 10, consumer_group="b")
        assert [m["payload"] for m in of_b][-1] == b64("new"), n  # "old" too when group a had received it
        for m in of_b:
            assert (await _ack(client, m, "b")).status_code == 204
        for m in await dequeue(client, "race", 10, consumer_group="a"):
            assert (await _ack(client, m, "a")).status_code == 204


async def test_a_keyed_enqueue_over_an_expired_twin_drops_the_twins_deliveries(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any]
) -> None:
    await _group(client, "twins", "a")
    await _group(client, "twins", "b")
    old = await enqueue(client, "twins", "v1", key="k")
    await db.execute("UPDATE messages SET expires_at = now() - interval '1 second' WHERE id = $1::uuid", old)
    new = await enqueue(client, "twins", "v2", key="k")
    assert new != old
    assert (await client.get(f"/api/messages/{old}")).json()["status"] == "expired"
    groups = (await client.get("/api/topics/twins/consumer-groups")).json()["groups"]
    assert [(g["pending"], g["oldest_pending_age_seconds"] is not None) for g in groups] == [(1, True), (1, True)]
    assert await db.fetchval("SELECT count(*) FROM deliveries WHERE message_id = $1::uuid", old) == 0


async def test_messages_stored_as_for_a_topic_without_groups_are_owed_to_its_groups_once_settled(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    """What an instance whose cached config did not know the topic had groups stores (never owed to any group) is
    owed to its groups once the caches' staleness has passed: the expiry reaper's run settles each new group once.
    A message owed to some groups and not to another is what that group's ack leaves: it is never owed again."""
    await _group(client, "strays", "a")
    await _group(client, "strays", "b")
    await db.execute(  # b was created a staleness ago (35 s) and is not settled yet
        """UPDATE consumer_groups SET created_at = now() - interval '36 seconds', settled_at = NULL
           WHERE tenant_id = $1 AND topic = 'strays' AND name = 'b'""",
        tenant.id,
    )
    stray, acked_by_b, older = uuid7(), uuid7(), uuid7()
    insert = "INSERT INTO messages (id, tenant_id, topic, payload, max_retries, owed, created_at) VALUES "
    await db.execute(insert + "($1, $2, 'strays', 'none', 3, NULL, now())", stray, tenant.id)  # knew no group
    await db.execute(insert + "($1, $2, 'strays', 'a only', 3, 1, now())", acked_by_b, tenant.id)  # b is done
    await db.execute(
        """INSERT INTO deliveries (tenant_id, group_id, message_id, priority, available_at)
           SELECT $1, id, $2, 0, now() FROM consumer_groups WHERE tenant_id = $1 AND topic = 'strays' AND name = 'a'""",
        tenant.id,
        acked_by_b,
    )
    before_b = "($1, $2, 'strays', 'before b', 3, NULL, now() - interval '60 seconds')"
    await db.execute(insert + before_b, older, tenant.id)  # stored before b: not b's
    assert (await client.post("/api/admin/expiry-reaper/run")).status_code == 200

    async def owed_to(message_id: uuid.UUID) -> list[str]:
        detail = (await client.get(f"/api/messages/{message_id}")).json()
        return [d["consumer_group"] for d in detail["deliveries"] or []]

    assert await owed_to(stray) == ["a", "b"]  # both existed when it was stored
    assert await owed_to(acked_by_b) == ["a"]
    assert await owed_to(older) == []  # stored before either group: owed to none (`earliest` takes such ones)
    got = await dequeue(client, "strays", 10, consumer_group="a")
    assert sorted(m["id"] for m in got) == sorted([str(stray), str(acked_by_b)])
    assert [m["id"] for m in await dequeue(client, "strays", 10, consumer_group="b")] == [str(stray)]
    settled = await db.fetch(
        "SELECT name, settled_at IS NOT NULL AS settled FROM consumer_groups WHERE tenant_id = $1 ORDER BY id",
        tenant.id,
    )
    assert [tuple(r) for r in settled] == [("a", False), ("b", True)]  # a: within its staleness still


async def test_max_depth_counts_the_messages_some_group_still_owes(client: httpx.AsyncClient) -> None:
    await client.put("/api/topic-configs/capped", json={"max_depth": 2})
    await _group(client, "capped", "a")
    await _group(client, "capped", "b")
    await enqueue(client, "capped", "1")
    await enqueue(client, "capped", "2")
    full = await client.post("/api/messages", json={"topic": "capped", "payload": b64("3")})
    assert_error(full, 429, "queue_full")
    for m in await dequeue(client, "capped", 10, consumer_group="a"):
        assert (await _ack(client, m, "a")).status_code == 204
    still = await client.post("/api/messages", json={"topic": "capped", "payload": b64("3")})
    assert_error(still, 429, "queue_full")  # group b still owes both
    [m, _] = await dequeue(client, "capped", 10, consumer_group="b")
    assert (await _ack(client, m, "b")).status_code == 204
    assert (await client.post("/api/messages", json={"topic": "capped", "payload": b64("3")})).status_code == 201


async def _race(
    bases: list[str], tenant: Tenant, groups: list[str], *, producers: int, rounds: int, churn: Any = None
) -> tuple[list[str], dict[str, list[str]]]:
    """Producers on both instances enqueue `rounds` times each (a batch of 4, then a single) while 4 consumers per
    group, spread over the instances, lease 5 at a time and ack; `churn` runs beside them. Returns what was
    enqueued and, per group, every id it received, in order."""
    headers = {"X-Tenant": tenant.slug}
    clients = [httpx.AsyncClient(base_url=b, auth=ADMIN, headers=headers, timeout=30) for b in bases]
    enqueued: list[str] = []
    received: dict[str, list[str]] = {g: [] for g in groups}
    producing = True

    async def produce(c: httpx.AsyncClient) -> None:
        for n in range(rounds):
            batch = {"topic": "race3", "messages": [{"payload": b64(f"b{n}-{i}")} for i in range(4)]}
            r = await c.post("/api/messages/batch", json=batch)
            assert r.status_code == 201, r.text
            enqueued.extend(r.json()["ids"])
            enqueued.append(await enqueue(c, "race3", f"s{n}"))

    async def consume(c: httpx.AsyncClient, group: str) -> None:
        while True:
            got = await dequeue(c, "race3", 5, consumer_group=group, visibility_timeout_seconds=60)
            if not got:
                if not producing:
                    return
                await asyncio.sleep(0.01)
                continue
            received[group].extend(m["id"] for m in got)
            acks = [{"id": m["id"], "receipt": m["receipt"], "consumer_group": group} for m in got]
            r = await c.post("/api/messages/ack", json={"acks": acks})
            assert r.json() == {"acked": len(got), "failed": []}, r.text

    try:
        consumers = [asyncio.create_task(consume(clients[n % len(clients)], g)) for g in groups for n in range(4)]
        side = asyncio.create_task(churn(clients, enqueued)) if churn else None
        await asyncio.gather(*(produce(clients[n % len(clients)]) for n in range(producers)))
        if side is not None:
            await side
        producing = False
        await asyncio.gather(*consumers)
    finally:
        for c in clients:
            await c.aclose()
    return enqueued, received


async def test_three_groups_of_four_racing_consumers_on_two_instances_receive_each_message_once(
    client: httpx.AsyncClient, server: Server, second_server: Server, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    groups = ["billing", "shipping", "audit"]
    for name in groups:
        await _group(client, "race3", name)
    bases = [server.base_url, second_server.base_url]
    enqueued, received = await _race(bases, tenant, groups, producers=4, rounds=25)
    assert len(enqueued) == len(set(enqueued)) == 500
    for name in groups:
        assert len(received[name]) == len(set(received[name])), name  # none twice
        assert set(received[name]) == set(enqueued), name  # none lost
    assert await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1", tenant.id) == 0


async def test_groups_created_and_deleted_while_producers_and_consumers_run(
    client: httpx.AsyncClient, server: Server, second_server: Server, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    """`stays` receives everything; `temp`, deleted midway, releases what it owed (nothing is left behind for it);
    `late`, created midway, receives what came after it and nothing before."""
    for name in ("stays", "temp"):
        await _group(client, "race3", name)
    created: dict[str, Any] = {}

    async def churn(clients: list[httpx.AsyncClient], enqueued: list[str]) -> None:
        await asyncio.sleep(0.3)
        created["before"] = set(enqueued)  # committed before the group is created
        created["late"] = await _group(clients[1], "race3", "late")
        await asyncio.sleep(0.3)
        assert (await clients[0].delete("/api/topics/race3/consumer-groups/temp")).status_code == 204

    bases = [server.base_url, second_server.base_url]
    enqueued, received = await _race(bases, tenant, ["stays"], producers=2, rounds=40, churn=churn)
    assert set(received["stays"]) == set(enqueued) and len(received["stays"]) == len(enqueued)
    late: list[dict[str, Any]] = []
    while got := await dequeue(client, "race3", 100, consumer_group="late"):
        late += got
        for m in got:
            assert (await _ack(client, m, "late")).status_code == 204
    assert not {m["id"] for m in late} & created["before"]  # nothing stored before it was created
    assert len(late) > 0 and len(late) == len({m["id"] for m in late})
    groups = (await client.get("/api/topics/race3/consumer-groups")).json()["items"]
    assert groups == ["stays", "late"]
    # a delivery of temp that an insert in flight at the deletion committed after its release is the settler's
    # (`test_healing_jobs.py`, test_a_group_deleted_while_an_insert_that_saw_it_commits_...)
    await run_job(db, "group_settler")
    assert await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1", tenant.id) == 0


async def test_a_deleted_groups_leftovers_are_released_by_the_group_settler(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    """A deletion interrupted (or meeting leased deliveries) leaves its tombstone; the settler releases the rest.
    A tenant deleted with its groups leaves tombstones too: its deliveries have no foreign key to go with."""
    await _group(client, "left", "stays")
    gone = await _group(client, "left", "gone")
    for _ in range(3):
        await enqueue(client, "left")
    gone_id = await db.fetchval("SELECT id FROM consumer_groups WHERE tenant_id = $1 AND name = 'gone'", tenant.id)
    # as if the request died right after deleting the group: the row goes, its tombstone is written, the deliveries
    # stay (`GROUP_DELETE`)
    await db.execute("DELETE FROM consumer_groups WHERE id = $1", gone_id)
    await db.execute("INSERT INTO deleted_groups (tenant_id, id) VALUES ($1, $2)", tenant.id, gone_id)
    assert gone["consumer_group"] == "gone"
    assert await db.fetchval("SELECT count(*) FROM deliveries WHERE group_id = $1", gone_id) == 3
    assert (await client.post("/api/admin/expiry-reaper/run")).status_code == 200
    assert await db.fetchval("SELECT count(*) FROM deliveries WHERE group_id = $1", gone_id) == 0
    # its tombstone outlives any transaction that may have read the group before its deletion (`mq.jobs`,
    # TOMBSTONE_SECONDS: one that committed a delivery of it late is released by the next run), then goes
    assert await db.fetchval("SELECT count(*) FROM deleted_groups WHERE id = $1", gone_id) == 1
    await db.execute(
        "UPDATE deleted_groups SET deleted_at = timezone('UTC', timezone('UTC', deleted_at) - interval '1 day')"
        " WHERE tenant_id = $1 AND id = $2",
        tenant.id,
        gone_id,
    )
    assert (await client.post("/api/admin/expiry-reaper/run")).status_code == 200
    assert await db.fetchval("SELECT count(*) FROM deleted_groups WHERE id = $1", gone_id) == 0
    owed = await db.fetch("SELECT owed FROM messages WHERE tenant_id = $1 AND topic = 'left'", tenant.id)
    assert [r["owed"] for r in owed] == [1, 1, 1]  # still "stays"'s

    assert (await client.delete("/api/topics/left/consumer-groups/stays")).status_code == 204
    assert await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1", tenant.id) == 0

    other = f"t-{uuid.uuid4().hex[:12]}"
    await db.execute("INSERT INTO tenants (slug, name) VALUES ($1, $1)", other)
    as_other = {"X-Tenant": other}
    r = await client.post("/api/topics/left/consumer-groups", json={"consumer_group": "g"}, headers=as_other)
    assert r.status_code == 201, r.text
    r = await client.post("/api/messages", json={"topic": "left", "payload": b64("x")}, headers=as_other)
    assert r.status_code == 201, r.text
    other_group = await db.fetchval(
        "SELECT g.id FROM consumer_groups AS g JOIN tenants AS t ON t.id = g.tenant_id WHERE t.slug = $1", other
    )
    assert (await client.delete(f"/api/tenants/{other}", params={"force": "true"})).status_code == 204
    assert (await client.post("/api/admin/expiry-reaper/run")).status_code == 200
    assert await db.fetchval("SELECT count(*) FROM deliveries WHERE group_id = $1", other_group) == 0
