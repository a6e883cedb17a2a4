"""Topic configs: CRUD and validation, exact max_depth across instances, throughput limits shared by instances,
the two-tier config cache and its invalidation, retry backoff and TTL."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import redis.asyncio as aioredis

from mq.broadcast import Broadcast
from mq.db.engine import asyncpg_dsn
from mq.db.listener import PostgresListener
from mq.db.repository import OperationsRepository
from mq.ids import uuid7
from mq.queue.configs import TopicConfigs
from mq.queue.repository import MessageRepository
from mq.queue.types import NewRow
from mq.settings import Settings
from skiplock.local import EmbeddedRedis
from tests.integration.helpers import assert_error, b64, dequeue, enqueue
from tests.support.servers import ADMIN, Server, start_server, stop_server
from tests.support.tenants import Tenant
from tests.support.waiting import eventually


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def put_config(client: httpx.AsyncClient, topic: str, **config: Any) -> dict[str, Any]:
    r = await client.put(f"/api/topic-configs/{topic}", json=config)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def tenant_client(base_url: str, tenant: Tenant) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}, timeout=30)


async def test_put_get_list_and_delete_a_config(client: httpx.AsyncClient) -> None:
    full = {
        "max_retries": 5,
        "message_ttl_seconds": 3600,
        "max_depth": 1000,
        "throughput_limit": 50,
        "visibility_timeout_seconds": 120,
        "retry_backoff_seconds": [1, 5, 15, 30, 60],
        "dlq_enabled": False,
        "expire_to_dlq": True,
        "replayable": True,
        "replay_window_seconds": 86400,
        "max_inflight": 10,
    }
    assert await put_config(client, "orders", **full) == {"topic": "orders", **full}  # the topic: queue-ti's shape
    assert (await client.get("/api/topic-configs/orders")).json() == {"topic": "orders", **full}
    r = await client.put("/api/topic-configs/orders", json={"topic": "orders", **full})  # queue-ti's body
    assert r.status_code == 200 and r.json()["max_depth"] == 1000, r.text
    assert_error(await client.put("/api/topic-configs/orders", json={"topic": "other"}), 400, "invalid_request")
    # PUT replaces the whole config: omitted fields fall back to the global defaults.
    partial = await put_config(client, "orders", max_retries=2)
    assert partial["max_retries"] == 2 and partial["max_depth"] is None and partial["retry_backoff_seconds"] is None
    listed = (await client.get("/api/topic-configs")).json()["items"]
    assert [c["topic"] for c in listed] == ["orders"]
    assert (await client.delete("/api/topic-configs/orders")).status_code == 204
    assert_error(await client.get("/api/topic-configs/orders"), 404, "not_found")
    assert_error(await client.delete("/api/topic-configs/orders"), 404, "not_found")


@pytest.mark.parametrize(
    "body",
    [
        {"max_retries": -1},
        {"max_retries": 1_000_000},
        {"message_ttl_seconds": -5},
        {"max_depth": 0},
        {"max_depth": 10**12},
        {"throughput_limit": 0},
        {"visibility_timeout_seconds": 0},
        {"visibility_timeout_seconds": 43201},
        {"retry_backoff_seconds": [1, -1]},
        {"retry_backoff_seconds": list(range(40))},
        {"retry_backoff_seconds": "1,2"},
        {"dlq_enabled": "yes"},
        {"max_retries": "3"},
        {"max_retries": 1.5},
        {"unknown": 1},
    ],
)
async def test_bad_configs_are_refused(client: httpx.AsyncClient, body: dict[str, Any]) -> None:
    assert_error(await client.put("/api/topic-configs/orders", json=body), 400, "invalid_request")


async def test_dead_letter_topics_and_bad_names_take_no_config(client: httpx.AsyncClient) -> None:
    assert_error(await client.put("/api/topic-configs/orders.dlq", json={}), 400, "reserved_topic")
    assert_error(await client.put("/api/topic-configs/bad name", json={}), 400, "invalid_request")


async def test_members_cannot_configure(make_client, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    member = make_client(auth=await make_user("member", tenant))
    assert_error(await member.put("/api/topic-configs/orders", json={"max_depth": 1}), 403, "forbidden")
    assert_error(await member.delete("/api/topic-configs/orders"), 403, "forbidden")


async def test_a_config_for_a_new_topic_counts_against_max_topics(client: httpx.AsyncClient, tenant: Tenant) -> None:
    assert (await client.patch(f"/api/tenants/{tenant.slug}", json={"quotas": {"max_topics": 1}})).status_code == 200
    await put_config(client, "first", max_retries=1)
    await put_config(client, "first", max_retries=2)  # the same topic again: no new topic
    assert_error(await client.put("/api/topic-configs/second", json={}), 403, "quota_exceeded")


async def test_a_capped_copy_batch_fills_the_topic_exactly_and_passes_its_gate_once(  # type: ignore[no-untyped-def]
    client, db, tenant
) -> None:
    """Keyless batches of 16+ rows go in by COPY, capped or not; the gate runs once per COPY, not per row."""
    await put_config(client, "copied", max_depth=100)
    batch = {"topic": "copied", "messages": [{"payload": b64(str(k))} for k in range(60)]}
    assert (await client.post("/api/messages/batch", json=batch)).status_code == 201
    bound = "SELECT sum(bound) FROM admission_gates WHERE tenant_id = $1 AND scope = 'copied'"
    assert await db.fetchval(bound, tenant.id) == 60
    r = await client.post("/api/messages/batch", json=batch)  # 120 > 100: refused whole
    assert_error(r, 429, "queue_full")
    assert r.json()["details"]["max_depth"] == 100
    batch["messages"] = batch["messages"][:40]
    assert (await client.post("/api/messages/batch", json=batch)).status_code == 201  # exactly 100
    live = "SELECT count(*) FROM messages WHERE tenant_id = $1 AND topic = 'copied'"
    assert await db.fetchval(live, tenant.id) == 100
    batch["messages"] = batch["messages"][:16]
    assert_error(await client.post("/api/messages/batch", json=batch), 429, "queue_full")
    assert await db.fetchval(live, tenant.id) == 100


async def test_a_change_on_one_instance_is_used_by_another_within_a_second(  # type: ignore[no-untyped-def]
    server: Server, second_server: Server, tenant: Tenant
) -> None:
    async with tenant_client(server.base_url, tenant) as a, tenant_client(second_server.base_url, tenant) as b:
        await enqueue(b, "shared")  # b has the (empty) config cached now
        await put_config(a, "shared", max_depth=1)
        started = time.monotonic()
        while True:
            r = await b.post("/api/messages", json={"topic": "shared", "payload": b64("x")})
            if r.status_code == 429:
                break
            assert r.status_code == 201
            await b.delete(f"/api/messages/{r.json()['id']}")  # keep the depth at 1
            assert time.monotonic() - started < 1.0, "instance b still uses the old config"
        assert_error(r, 429, "queue_full")


async def test_max_depth_is_exact_with_many_producers_on_two_instances(  # type: ignore[no-untyped-def]
    server: Server, second_server: Server, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    cap = 100
    accepted = 0
    async with tenant_client(server.base_url, tenant) as a, tenant_client(second_server.base_url, tenant) as b:
        await put_config(a, "capped", max_depth=cap)
        await enqueue(a, "uncapped")  # another topic of the tenant: not counted

        async def producer(n: int) -> None:
            nonlocal accepted
            c = (a, b)[n % 2]
            for i in range(6):
                size = (40, 1, 3, 1, 1, 40)[i]  # batches of 40 run as statements of their own, concurrently
                if size == 1:
                    r = await c.post("/api/messages", json={"topic": "capped", "payload": b64(f"{n}-{i}")})
                else:
                    items = [{"payload": b64(f"{n}-{i}-{k}")} for k in range(size)]
                    r = await c.post("/api/messages/batch", json={"topic": "capped", "messages": items})
                if r.status_code == 201:
                    accepted += size
                else:
                    body = assert_error(r, 429, "queue_full")
                    assert r.headers["Retry-After"] == "1" and body["details"]["max_depth"] == cap

        await asyncio.gather(*(producer(n) for n in range(24)))
        live = await db.fetchval(
            "SELECT count(*) FROM messages WHERE tenant_id = $1 AND topic = 'capped' AND status IN "
            "('pending', 'processing')",
            tenant.id,
        )
        assert accepted == live and cap - 40 < accepted <= cap
        # Leased messages still count; acked ones make room.
        leased = await dequeue(a, "capped", count=10)
        assert_error(await b.post("/api/messages", json={"topic": "capped", "payload": b64("x")}), 429, "queue_full")
        acks = [{"id": m["id"], "receipt": m["receipt"]} for m in leased]
        assert (await a.post("/api/messages/ack", json={"acks": acks})).json()["acked"] == 10
        r = await b.post("/api/messages/batch", json={"topic": "capped", "messages": [{"payload": b64("y")}] * 10})
        assert r.status_code == 201, r.text


async def test_a_capped_insert_chosen_as_a_deadlocks_victim_is_tried_again(
    database_url: str, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    """Near a cap, inserts lock the admission gates' stripes in order, but one may already hold its own stripe
    (the row lock it took rechecking it). Here a transaction holds stripe 5 and then wants stripe 0, which the
    insert took on its way to 5: Postgres ends the deadlock by undoing the insert, which is then tried again."""
    pool = await asyncpg.create_pool(asyncpg_dsn(database_url), min_size=1, max_size=1)
    try:
        await db.execute(  # every stripe full: the insert takes the slow path, locking stripes 0, 1, ... in order
            "INSERT INTO admission_gates (tenant_id, scope, stripe, bound, alloc) "
            "SELECT $1, 'capped', s, 0, 0 FROM generate_series(0, 31) AS s",
            tenant.id,
        )
        row = NewRow("capped", b"x", None, None, 0.0, 0, 3, 0)
        async with db.acquire() as holder, holder.transaction():
            await holder.execute("SET LOCAL deadlock_timeout = '10s'")  # the insert is the one that gives way
            await holder.execute(
                "SELECT FROM admission_gates WHERE tenant_id = $1 AND scope = 'capped' AND stripe = 5 FOR UPDATE",
                tenant.id,
            )
            insert = asyncio.create_task(
                MessageRepository(pool).insert_batch(tenant.id, [uuid7()], [row], (["capped"], [1], [100], None, []))
            )
            await eventually(
                lambda: db.fetchval(
                    "SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted)"
                ),
                what="the insert waiting for stripe 5",
            )
            await holder.execute(  # the deadlock: the insert holds 0-4 and waits for 5
                "SELECT FROM admission_gates WHERE tenant_id = $1 AND scope = 'capped' AND stripe = 0 FOR UPDATE",
                tenant.id,
            )
        [stored] = await asyncio.wait_for(insert, 30)
        assert await db.fetchval("SELECT topic FROM messages WHERE id = $1", stored["id"]) == "capped"
    finally:
        await pool.close()


async def test_requeue_from_the_dlq_respects_max_depth(client: httpx.AsyncClient) -> None:
    await put_config(client, "small", max_depth=2, max_retries=1)
    first = await enqueue(client, "small")
    [m] = await dequeue(client, "small")
    assert (await client.post(f"/api/messages/{m['id']}/nack", json={})).json()["outcome"] == "dlq"
    await enqueue(client, "small")
    await enqueue(client, "small")  # full: 2 live in "small", the first one waits in small.dlq
    assert_error(await client.post(f"/api/messages/{first}/requeue"), 429, "queue_full")
    assert_error(await client.post("/api/topics/small/requeue"), 429, "queue_full")
    assert (await client.get(f"/api/messages/{first}")).json()["topic"] == "small.dlq"  # nothing moved


async def shared_throughput(a: httpx.AsyncClient, b: httpx.AsyncClient, rate: int, seconds: float) -> float:
    """The deliveries per second two instances' consumers (two each) get of a topic limited to `rate`, counted
    over `seconds` after the first (which drains the bucket's burst)."""
    await put_config(a, "metered", throughput_limit=rate)
    items = [{"payload": b64(str(n))} for n in range(1000)]
    assert (await a.post("/api/messages/batch", json={"topic": "metered", "messages": items})).status_code == 201
    counted_from = time.monotonic() + 1
    stop = counted_from + seconds
    counted = 0

    async def consumer(c: httpx.AsyncClient) -> None:
        nonlocal counted
        while time.monotonic() < stop:
            got = await dequeue(c, "metered", count=10, wait_seconds=1)
            if time.monotonic() >= counted_from:
                counted += len(got)

    await asyncio.gather(*(consumer(c) for c in (a, b, a, b)))
    return counted / (stop - counted_from)


async def test_throughput_limit_is_shared_by_two_instances(  # type: ignore[no-untyped-def]
    server: Server, second_server: Server, tenant: Tenant
) -> None:
    rate = 40
    async with tenant_client(server.base_url, tenant) as a, tenant_client(second_server.base_url, tenant) as b:
        measured = await shared_throughput(a, b, rate, seconds=10)
    assert rate * 0.9 <= measured <= rate * 1.1, measured


async def test_without_redis_requests_keep_succeeding_and_limits_fall_back(  # type: ignore[no-untyped-def]
    server_env: dict[str, str], tenant: Tenant, tmp_path: Path
) -> None:
    redis = EmbeddedRedis(tmp_path / "redis")
    redis_url = redis.start()
    own = await asyncio.to_thread(start_server, {**server_env, "SKIPLOCK_REDIS_URL": redis_url})
    try:
        async with tenant_client(own.base_url, tenant) as c:
            await put_config(c, "limited", throughput_limit=5)
            items = [{"payload": b64(str(n))} for n in range(50)]
            assert (
                await c.post("/api/messages/batch", json={"topic": "limited", "messages": items})
            ).status_code == 201
            assert len(await dequeue(c, "limited", count=50)) == 5  # one second of rate from the shared bucket
            redis.stop()
            await enqueue(c, "limited")  # enqueues, configs and auth work without Redis
            await put_config(c, "limited", throughput_limit=5, max_retries=2)
            got = [len(await dequeue(c, "limited", count=50)) for _ in range(3)]
            assert 1 <= sum(got) <= 6  # the instance's own bucket (5/s, one instance), never an error
    finally:
        stop_server(own)
        redis.stop()


class CountingRepository(MessageRepository):
    """The real repository on the real database, counting config reads."""

    reads = 0

    async def topic_config(self, tenant_id: int, topic: str) -> Any:
        self.reads += 1
        return await super().topic_config(tenant_id, topic)


async def test_cache_hits_do_not_query_postgres(db: asyncpg.Pool[Any], any_redis_url: str, tenant: Tenant) -> None:
    await db.execute("INSERT INTO topic_configs (tenant_id, topic, max_retries) VALUES ($1, 'cached', 7)", tenant.id)
    settings = Settings(database_url="postgresql://unused", any_redis_url=any_redis_url)
    redis = aioredis.from_url(any_redis_url)
    try:
        first, second = CountingRepository(db), CountingRepository(db)
        one, other = TopicConfigs(first, settings, redis), TopicConfigs(second, settings, redis)
        missing = f"none-{uuid.uuid4().hex[:6]}"
        for _ in range(3):
            assert (await one.effective(tenant.id, "cached")).max_retries == 7
            assert await one.get(tenant.id, missing) is None
        assert first.reads == 2  # once each; then tier 1
        assert (await other.effective(tenant.id, "cached")).max_retries == 7
        assert await other.get(tenant.id, missing) is None
        assert second.reads == 0  # tier 2 (Redis), negative entries included
        await db.execute(
            "UPDATE topic_configs SET max_retries = 8 WHERE tenant_id = $1 AND topic = 'cached'", tenant.id
        )
        await one.changed(tenant.id, "cached")
        assert (await one.effective(tenant.id, "cached")).max_retries == 8 and first.reads == 3
    finally:
        await redis.aclose()


@pytest.mark.parametrize("with_redis", [True, False])
async def test_the_invalidation_reaches_every_instance(  # type: ignore[no-untyped-def]
    db: asyncpg.Pool[Any], any_redis_url: str, database_url: str, with_redis: bool
) -> None:
    """Over Redis pub/sub, and over Postgres NOTIFY where no Redis is configured."""
    settings = Settings(database_url=database_url, any_redis_url=any_redis_url)
    redis = aioredis.from_url(any_redis_url) if with_redis else None
    url = any_redis_url if with_redis else None
    listeners = [PostgresListener(database_url) for _ in range(2)]
    casts = [Broadcast(redis, url, listener, OperationsRepository(db)) for listener in listeners]
    writer, reader = (TopicConfigs(MessageRepository(db), settings, redis, cast) for cast in casts)
    for listener, cast in zip(listeners, casts, strict=True):
        await listener.start()
        await cast.start()
    try:
        for cast in casts:
            await asyncio.wait_for(cast.listening(), 5)
        topic = f"watched-{uuid.uuid4().hex[:6]}"
        await reader.effective(1, topic)
        assert (1, topic) in reader._cache
        await writer.changed(1, topic)
        await eventually(lambda: (1, topic) not in reader._cache, timeout=1, what="the invalidation")
    finally:
        for listener, cast in zip(listeners, casts, strict=True):
            await cast.close()
            await listener.close()
        if redis is not None:
            await redis.aclose()


async def test_nack_without_delay_follows_the_backoff_schedule(client: httpx.AsyncClient) -> None:
    await put_config(client, "backoff", max_retries=5, retry_backoff_seconds=[1, 3])
    mid = await enqueue(client, "backoff")
    delays = []
    for _ in range(3):
        [m] = await dequeue(client, "backoff", wait_seconds=5)
        assert (await client.post(f"/api/messages/{mid}/nack", json={"receipt": m["receipt"]})).json() == {
            "outcome": "retry"
        }
        stored = (await client.get(f"/api/messages/{mid}")).json()
        delays.append(round((at(stored["available_at"]) - at(stored["updated_at"])).total_seconds()))
    assert delays == [1, 3, 3]  # the last value repeats


async def test_ttl_hides_expired_messages_before_any_reaper(client: httpx.AsyncClient) -> None:
    await put_config(client, "short", message_ttl_seconds=1)
    mid = await enqueue(client, "short")
    await asyncio.sleep(1.2)
    assert await dequeue(client, "short") == []
    assert (await client.get(f"/api/messages/{mid}")).json()["status"] == "expired"  # even before the reaper marks it
