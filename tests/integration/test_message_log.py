"""Message history (contract, "Message history and replay"): the log kept by acks, its pages, trims and replays,
and the partitions that hold it."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import httpx

from mq.history.partitions import LogPartitions
from tests.integration.helpers import assert_error, b64, dequeue, enqueue, metric
from tests.support.servers import Server
from tests.support.tenants import Tenant


async def _replayable(client: httpx.AsyncClient, topic: str, **config: Any) -> None:
    r = await client.put(f"/api/topic-configs/{topic}", json={"replayable": True, **config})
    assert r.status_code == 200, r.text


async def _consume(client: httpx.AsyncClient, topic: str, n: int) -> list[str]:
    """Dequeue `n` and ack them: the first one by one, the rest in one batch."""
    got = await dequeue(client, topic, n)
    assert len(got) == n
    first, rest = got[0], got[1:]
    assert (
        await client.post(f"/api/messages/{first['id']}/ack", json={"receipt": first["receipt"]})
    ).status_code == 204
    if rest:
        acks = {"acks": [{"id": m["id"], "receipt": m["receipt"]} for m in rest]}
        assert (await client.post("/api/messages/ack", json=acks)).json()["acked"] == len(rest)
    return [m["id"] for m in got]


async def _log(client: httpx.AsyncClient, topic: str, **params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        r = await client.get(
            f"/api/topics/{topic}/message-log", params={**params, **({"cursor": cursor} if cursor else {})}
        )
        assert r.status_code == 200, r.text
        body = r.json()
        items += body["items"]
        cursor = body["next_cursor"]
        if cursor is None:
            return items


async def test_every_ack_of_a_replayable_topic_is_logged_once_and_nothing_else(
    client: httpx.AsyncClient, server: Server, tenant: Tenant
) -> None:
    await _replayable(client, "orders")
    for n in range(5):
        await enqueue(client, "orders", f"o{n}", key=f"k{n}" if n == 0 else None)
    acked = await _consume(client, "orders", 5)
    await enqueue(client, "orders", "nacked")
    [m] = await dequeue(client, "orders")
    assert (await client.post(f"/api/messages/{m['id']}/nack", json={"receipt": m["receipt"]})).status_code == 200
    stale = {"receipt": str(uuid.uuid4())}
    [m] = await dequeue(client, "orders")
    assert (await client.post(f"/api/messages/{m['id']}/ack", json=stale)).status_code == 409  # refused: nothing
    await enqueue(client, "plain", "not logged")
    await _consume(client, "plain", 1)

    log = await _log(client, "orders", limit=2)
    assert [e["id"] for e in log] == acked  # oldest first, once each
    assert [e["payload"] for e in log] == [b64(f"o{n}") for n in range(5)]
    assert log[0]["key"] == "k0" and log[0]["topic"] == "orders" and log[0]["retry_count"] == 0
    assert all(e["acked_at"] >= e["created_at"][:19] for e in log)
    assert await _log(client, "plain") == []
    async with httpx.AsyncClient(base_url=server.base_url) as c:
        text = (await c.get("/metrics")).text
    assert metric(text, "skiplock_history_written_total", tenant=tenant.slug, topic="orders") == 5
    assert metric(text, "skiplock_history_written_total", tenant=tenant.slug, topic="plain") is None


async def test_the_log_filters_by_time_and_key_and_pages_stably(client: httpx.AsyncClient) -> None:
    await _replayable(client, "paged")
    for n in range(3):
        await enqueue(client, "paged", f"a{n}", key="same" if n == 1 else None)
    await _consume(client, "paged", 3)
    middle = (await _log(client, "paged"))[1]["acked_at"]
    first = await client.get("/api/topics/paged/message-log", params={"limit": 1})
    for n in range(3):
        await enqueue(client, "paged", f"b{n}")
    await _consume(client, "paged", 3)  # acks after the first page do not shift it
    rest = await _log(client, "paged", cursor=first.json()["next_cursor"])
    whole = [first.json()["items"][0], *rest]
    assert [unb(e) for e in whole] == ["a0", "a1", "a2", "b0", "b1", "b2"]
    assert [unb(e) for e in await _log(client, "paged", key="same")] == ["a1"]
    assert [unb(e) for e in await _log(client, "paged", from_time=middle)][:2] == ["a1", "a2"]
    assert_error(await client.get("/api/topics/paged/message-log", params={"cursor": "nope"}), 400, "invalid_request")
    assert_error(await client.get("/api/topics/paged/message-log", params={"limit": 1001}), 400, "invalid_request")


def unb(entry: dict[str, Any]) -> str:
    import base64

    return base64.b64decode(entry["payload"]).decode()


async def test_a_trim_hides_entries_at_once(client: httpx.AsyncClient) -> None:
    await _replayable(client, "trimmed")
    for n in range(4):
        await enqueue(client, "trimmed", f"t{n}")
    await _consume(client, "trimmed", 4)
    cut = datetime.now(UTC) + timedelta(seconds=1)
    r = await client.delete("/api/topics/trimmed/message-log", params={"before": cut.isoformat()})
    assert r.json() == {"deleted": 4}
    assert await _log(client, "trimmed") == []
    r = await client.delete("/api/topics/trimmed/message-log", params={"before": cut.isoformat()})
    assert r.json() == {"deleted": 0}


async def test_a_replay_enqueues_again_in_acked_order_and_stops_at_max_depth_to_resume_exactly(
    client: httpx.AsyncClient,
) -> None:
    await _replayable(client, "again")
    for n in range(5):
        await enqueue(client, "again", f"r{n}")
        await _consume(client, "again", 1)  # one ack each: five acked_at
    until = datetime.now(UTC).isoformat()
    r = await client.post("/api/topics/again/replay", json={"to_time": until})
    assert r.json() == {"replayed": 5}, r.text
    got = await dequeue(client, "again", 10)
    assert [unb(m) for m in got] == [f"r{n}" for n in range(5)]
    old_ids = {e["id"] for e in await _log(client, "again", to_time=until)}
    assert not {m["id"] for m in got} & old_ids  # new messages
    for m in got:
        assert (await client.post(f"/api/messages/{m['id']}/ack", json={"receipt": m["receipt"]})).status_code == 204

    await client.put("/api/topic-configs/again", json={"replayable": True, "max_depth": 3})
    r = await client.post("/api/topics/again/replay", json={"to_time": until})
    assert r.status_code == 429, r.text
    body = r.json()
    assert body["code"] == "queue_full" and body["details"]["replayed"] == 3
    resume = body["details"]["resume_from"]
    got = await dequeue(client, "again", 10)
    assert [unb(m) for m in got] == ["r0", "r1", "r2"]
    for m in got:
        await client.post(f"/api/messages/{m['id']}/ack", json={"receipt": m["receipt"]})
    r = await client.post("/api/topics/again/replay", json={"from_time": resume, "to_time": until})
    assert r.json() == {"replayed": 2}, r.text
    assert [unb(m) for m in await dequeue(client, "again", 10)] == ["r3", "r4"]
    # The audit trail has all three, the refused one with what went and where it stopped.
    trail = (await client.get("/api/audit", params={"action": "topic.replay", "topic": "again"})).json()["items"]
    assert [e["details"]["replayed"] for e in trail] == [2, 3, 5]  # newest first
    refused = trail[1]["details"]
    assert refused["refused"] == "queue_full" and refused["resume_from"] == resume
    assert trail[0]["details"]["from_time"] is not None and "refused" not in trail[0]["details"]

    assert_error(await client.post("/api/topics/never/replay", json={}), 409, "not_replayable")


async def test_a_partition_below_every_floor_is_dropped_whole(db: asyncpg.Pool[Any], tenant: Tenant) -> None:
    """A partition of a minute in 2020 holding a trimmed topic's entries goes as one DROP TABLE."""
    partitions = LogPartitions(60)
    start = datetime(2020, 1, 1, tzinfo=UTC).timestamp()
    async with db.acquire() as conn:
        assert await partitions.ensure(conn, now=start) == 3
        await conn.execute(
            """INSERT INTO message_log (tenant_id, topic, acked_at, id, payload, priority, retry_count, created_at)
               SELECT $1, 'old', to_timestamp($2) + n * interval '1 second', gen_random_uuid(), 'x', 0, 0, now()
               FROM generate_series(0, 9) AS n""",
            tenant.id,
            start,
        )
        name = f"message_log_p{int(start)}_{int(start) + 60}"
        assert await conn.fetchval(f"SELECT count(*) FROM {name}") == 10
        await partitions.drop_expired(conn)  # (other tests' trimmed rows in the default partition go)
        assert await conn.fetchval("SELECT to_regclass($1)", name) is not None  # kept until trimmed
        await conn.execute(
            "INSERT INTO message_log_trims (tenant_id, topic, before) VALUES ($1, 'old', now())", tenant.id
        )
        rows, dropped = await partitions.drop_expired(conn)
        assert rows >= 10 and dropped >= 1
        assert await conn.fetchval("SELECT to_regclass($1)", name) is None
        for span in await partitions.spans(conn):  # the empty ones of 2020 too
            assert span.end > start + 60


async def test_a_grouped_message_is_logged_once_when_its_last_group_acks(client: httpx.AsyncClient) -> None:
    await _replayable(client, "fanlog")
    for group in ("a", "b"):
        r = await client.post("/api/topics/fanlog/consumer-groups", json={"consumer_group": group})
        assert r.status_code == 201, r.text
    message_id = await enqueue(client, "fanlog", "once")
    for group in ("a", "b"):
        [m] = await dequeue(client, "fanlog", consumer_group=group)
        ack = {"receipt": m["receipt"], "consumer_group": group}
        assert (await client.post(f"/api/messages/{message_id}/ack", json=ack)).status_code == 204
        logged = [e["id"] for e in await _log(client, "fanlog")]
        assert logged == ([] if group == "a" else [message_id])  # a still owed to b: not yet


async def test_another_tenant_never_sees_trims_or_replays_a_tenants_log(
    client: httpx.AsyncClient, make_client: Any, db: asyncpg.Pool[Any]
) -> None:
    await _replayable(client, "private")
    await enqueue(client, "private", "mine")
    await _consume(client, "private", 1)
    other_slug = f"t-{uuid.uuid4().hex[:12]}"
    await db.execute("INSERT INTO tenants (slug, name) VALUES ($1, $1)", other_slug)
    other = make_client(headers={"X-Tenant": other_slug})
    assert (await other.get("/api/topics/private/message-log")).json() == {"items": [], "next_cursor": None}
    r = await other.delete("/api/topics/private/message-log", params={"before": "2100-01-01T00:00:00Z"})
    assert r.json() == {"deleted": 0}
    assert_error(await other.post("/api/topics/private/replay", json={}), 409, "not_replayable")
    await _replayable(other, "private")
    assert (await other.post("/api/topics/private/replay", json={})).json() == {"replayed": 0}
    assert [unb(e) for e in await _log(client, "private")] == ["mine"]  # untouched


async def test_racing_single_and_batch_acks_and_resent_batches_log_each_message_once(
    client: httpx.AsyncClient, make_client: Any, tenant: Tenant
) -> None:
    """Eight consumers race over 240 messages (half ack one by one, half in batches they send twice, at once):
    each acked id is logged once. A reader pages the log while the second half is acked: it sees every entry that
    was there when it began, and none twice."""
    await _replayable(client, "raced")
    acked: list[str] = []

    async def consumer(batches: bool) -> None:
        own = make_client(headers={"X-Tenant": tenant.slug})
        while got := await dequeue(own, "raced", 7):
            if batches:
                body = {"acks": [{"id": m["id"], "receipt": m["receipt"]} for m in got]}
                first, again = await asyncio.gather(*(own.post("/api/messages/ack", json=body) for _ in range(2)))
                assert first.json()["acked"] + again.json()["acked"] == len(got)  # a resent batch acks nothing
            else:
                for m in got:
                    ack = {"receipt": m["receipt"]}
                    assert (await own.post(f"/api/messages/{m['id']}/ack", json=ack)).status_code == 204
            acked.extend(m["id"] for m in got)

    async def race() -> None:
        batch = {"messages": [{"topic": "raced", "payload": b64(f"m{n}")} for n in range(120)]}
        assert (await client.post("/api/messages/batch", json=batch)).status_code == 201
        await asyncio.gather(*(consumer(batches=n % 2 == 0) for n in range(8)))

    await race()
    before = [e["id"] for e in await _log(client, "raced", limit=1000)]
    paged, _ = await asyncio.gather(_log(client, "raced", limit=9), race())
    logged = [e["id"] for e in await _log(client, "raced", limit=1000)]
    assert len(acked) == 240 and sorted(logged) == sorted(acked)  # each once
    paged_ids = [e["id"] for e in paged]
    assert len(paged_ids) == len(set(paged_ids))  # none twice
    assert set(before) <= set(paged_ids) <= set(logged)  # none skipped


async def test_lapsed_leases_and_lease_lost_acks_log_nothing(client: httpx.AsyncClient) -> None:
    await _replayable(client, "lapsing", visibility_timeout_seconds=1, max_retries=2)
    message_id = await enqueue(client, "lapsing", "late")
    [first] = await dequeue(client, "lapsing")
    await asyncio.sleep(1.2)  # the lease lapses; the message is delivered again
    [second] = await dequeue(client, "lapsing")
    assert second["id"] == message_id
    late = {"receipt": first["receipt"]}
    assert_error(await client.post(f"/api/messages/{message_id}/ack", json=late), 409, "lease_lost")
    assert await _log(client, "lapsing") == []
    await asyncio.sleep(1.2)  # lapses again: its last retry, dead-lettered by the next dequeue
    assert await dequeue(client, "lapsing") == []
    assert await _log(client, "lapsing") == []
    assert (await client.get(f"/api/messages/{message_id}")).json()["topic"] == "lapsing.dlq"


async def test_a_replay_to_one_consumer_group_is_delivered_to_it_only(client: httpx.AsyncClient) -> None:
    await _replayable(client, "fanned")
    for group in ("billing", "shipping"):
        r = await client.post("/api/topics/fanned/consumer-groups", json={"consumer_group": group})
        assert r.status_code == 201, r.text
    for n in range(3):
        await enqueue(client, "fanned", f"f{n}", key="k" if n == 2 else None)
    for group in ("billing", "shipping"):
        got = await dequeue(client, "fanned", 3, consumer_group=group)
        acks = {"acks": [{"id": m["id"], "receipt": m["receipt"], "consumer_group": group} for m in got]}
        assert (await client.post("/api/messages/ack", json=acks)).json()["acked"] == 3
    assert len(await _log(client, "fanned")) == 3

    r = await client.post("/api/topics/fanned/replay", json={"consumer_group": "billing"})
    assert r.json() == {"replayed": 3}, r.text
    assert await dequeue(client, "fanned", 10, consumer_group="shipping") == []
    got = await dequeue(client, "fanned", 10, consumer_group="billing")
    assert [unb(m) for m in got] == ["f0", "f1", "f2"]
    assert {m["consumer_group"] for m in got} == {"billing"}
    acks = {"acks": [{"id": m["id"], "receipt": m["receipt"], "consumer_group": "billing"} for m in got]}
    assert (await client.post("/api/messages/ack", json=acks)).json()["acked"] == 3
    for m in got:  # its one group done: the message is gone, and logged again
        assert (await client.get(f"/api/messages/{m['id']}")).status_code == 404
    assert len(await _log(client, "fanned")) == 6

    r = await client.post("/api/topics/fanned/replay", json={"key": "k"})  # to every group
    assert r.json() == {"replayed": 2}, r.text
    for group in ("billing", "shipping"):
        assert [unb(m) for m in await dequeue(client, "fanned", 10, consumer_group=group)] == ["f2"]
    r = await client.post("/api/topics/fanned/replay", json={"consumer_group": "nobody"})
    assert_error(r, 404, "not_found")


async def test_entries_past_the_window_are_neither_listed_nor_replayed(client: httpx.AsyncClient) -> None:
    await _replayable(client, "windowed", replay_window_seconds=1)
    await enqueue(client, "windowed", "old")
    await _consume(client, "windowed", 1)
    await asyncio.sleep(1.1)
    await enqueue(client, "windowed", "new")
    await _consume(client, "windowed", 1)
    assert [unb(e) for e in await _log(client, "windowed")] == ["new"]
    assert (await client.post("/api/topics/windowed/replay", json={})).json() == {"replayed": 1}
    assert [unb(m) for m in await dequeue(client, "windowed", 10)] == ["new"]


async def test_the_archive_reaper_runs_on_request_and_reports_its_run(
    client: httpx.AsyncClient, server: Server, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    """POST /api/admin/archive-reaper/run drops a day past every floor ({deleted}: its rows), shows in the jobs'
    last runs and counts the partitions it dropped."""
    day = 86_400
    start = datetime(2021, 3, 1, tzinfo=UTC).timestamp()
    async with db.acquire() as conn:
        await LogPartitions(day).ensure(conn, now=start)
        await conn.execute(
            """INSERT INTO message_log (tenant_id, topic, acked_at, id, payload, priority, retry_count, created_at)
               SELECT $1, 'aged', to_timestamp($2) + n * interval '1 minute', gen_random_uuid(), 'x', 0, 0, now()
               FROM generate_series(0, 19) AS n""",
            tenant.id,
            start,
        )
    await _replayable(client, "aged")
    r = await client.delete("/api/topics/aged/message-log", params={"before": "2022-01-01T00:00:00Z"})
    assert r.json() == {"deleted": 20}
    async with httpx.AsyncClient(base_url=server.base_url) as c:
        before = metric((await c.get("/metrics")).text, "skiplock_history_partitions_dropped_total") or 0.0
    admin = httpx.AsyncClient(base_url=server.base_url, auth=client.auth, timeout=30)
    async with admin:
        r = await admin.post("/api/admin/archive-reaper/run")
        assert r.status_code == 200, r.text
        assert r.json()["deleted"] >= 20
        runs = {j["job"]: j for j in (await admin.get("/api/admin/jobs")).json()["jobs"]}
    assert runs["archive_reaper"]["rows"] >= 20
    name = f"message_log_p{int(start)}_{int(start) + day}"
    assert await db.fetchval("SELECT to_regclass($1)", name) is None
    async with httpx.AsyncClient(base_url=server.base_url) as c:
        after = metric((await c.get("/metrics")).text, "skiplock_history_partitions_dropped_total")
    assert after is not None and after >= before + 1
