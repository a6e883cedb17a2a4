"""GET /metrics: counters move as operations happen, labels never mix tenants, topic labels are bounded, the
bearer token, the HTTP histogram by route template, and the gauges read from what the leader stored."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest

from mq.db import repository as repository_module
from mq.db.repository import OperationsRepository
from mq.jobs import GaugeRefresher
from tests.integration.helpers import assert_error, b64, dequeue, enqueue, metric
from tests.support.servers import ADMIN, Server, start_server, stop_server
from tests.support.tenants import Tenant
from tests.support.waiting import eventually


async def scrape(base_url: str, **headers: str) -> str:
    async with httpx.AsyncClient(base_url=base_url) as c:
        r = await c.get("/metrics", headers=headers)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("text/plain")
        return r.text


async def make_tenant(db: Any) -> Tenant:
    slug = f"t-{uuid.uuid4().hex[:12]}"
    return Tenant(await db.fetchval("INSERT INTO tenants (slug, name) VALUES ($1, $1) RETURNING id", slug), slug)


async def test_counters_move_with_operations_and_never_mix_tenants(server: Server, db, make_client, tenant) -> None:  # type: ignore[no-untyped-def]
    other = await make_tenant(db)
    a = make_client(headers={"X-Tenant": tenant.slug})
    b = make_client(headers={"X-Tenant": other.slug})
    # Tenant A: 3 enqueues (one keyed twice: an upsert), a batch of 2, 3 dequeued, 1 ack, 1 nack, 1 dead letter.
    await enqueue(a, "orders", key="k")
    await enqueue(a, "orders", key="k")
    await enqueue(a, "orders")
    r = await a.post("/api/messages/batch", json={"topic": "orders", "messages": [{"payload": b64("1")}] * 2})
    assert r.status_code == 201
    taken = await dequeue(a, "orders", 3)
    r = await a.post(f"/api/messages/{taken[0]['id']}/ack", json={"receipt": taken[0]["receipt"]})
    assert r.status_code == 204
    r = await a.post(f"/api/messages/{taken[1]['id']}/nack", json={"receipt": taken[1]["receipt"]})
    assert r.json()["outcome"] == "retry"
    acks = {"acks": [{"id": taken[2]["id"], "receipt": taken[2]["receipt"]}]}
    assert (await a.post("/api/messages/ack", json=acks)).json()["acked"] == 1
    # Tenant B, same topic name: one enqueue only.
    await enqueue(b, "orders")

    text = await scrape(server.base_url)
    mine = {"tenant": tenant.slug, "topic": "orders"}
    theirs = {"tenant": other.slug, "topic": "orders"}
    assert metric(text, "skiplock_messages_enqueued_total", **mine) == 4
    assert metric(text, "skiplock_messages_upserted_total", **mine) == 1
    assert metric(text, "skiplock_messages_dequeued_total", **mine) == 3
    assert metric(text, "skiplock_messages_acked_total", **mine) == 2
    assert metric(text, "skiplock_messages_nacked_total", **mine, outcome="retry") == 1
    assert metric(text, "skiplock_message_wait_seconds_count", **mine) == 3  # first deliveries
    assert metric(text, "skiplock_messages_enqueued_total", **theirs) == 1
    for name in ("upserted", "dequeued", "acked"):
        assert metric(text, f"skiplock_messages_{name}_total", **theirs) is None
    for line in text.splitlines():  # no series carries both tenants, or a tenant id instead of a slug
        if tenant.slug in line:
            assert other.slug not in line
    assert f'tenant="{tenant.id}"' not in text and f'tenant="{other.id}"' not in text

    # The HTTP histogram is labelled by route template, never by the raw path (unbounded ids).
    count = metric(
        text,
        "skiplock_http_request_duration_seconds_count",
        route="/api/messages/{message_id}/ack",
        method="POST",
        status="2xx",
    )
    assert count is not None and count >= 1
    assert taken[0]["id"] not in text


async def test_rejections_and_throttling_are_counted(server: Server, client, tenant) -> None:  # type: ignore[no-untyped-def]
    await client.put("/api/topic-configs/small", json={"max_depth": 1})
    await enqueue(client, "small")
    assert_error(await client.post("/api/messages", json={"topic": "small", "payload": b64("x")}), 429, "queue_full")
    await client.put("/api/topic-configs/slow", json={"throughput_limit": 1})
    for _ in range(3):
        await enqueue(client, "slow")
    await dequeue(client, "slow", 3)  # one token: 1 of 3, throttled
    text = await scrape(server.base_url)
    labels = {"tenant": tenant.slug}
    assert metric(text, "skiplock_enqueue_rejected_total", **labels, topic="small", reason="queue_full") == 1
    assert metric(text, "skiplock_dequeues_throttled_total", **labels, topic="slow") == 1


async def test_refusals_by_code_limits_waiting_polls_and_the_dependencies(  # type: ignore[no-untyped-def]
    server: Server, db, client, make_client, tenant
) -> None:
    other = await make_tenant(db)
    theirs = make_client(headers={"X-Tenant": other.slug})
    await client.put("/api/topic-configs/bounded", json={"max_depth": 1, "max_inflight": 3})
    await enqueue(client, "bounded")
    assert_error(await client.post("/api/messages", json={"topic": "bounded", "payload": b64("x")}), 429, "queue_full")
    assert_error(await client.get("/api/messages/0190a5b0-0000-7000-8000-000000000000"), 404, "message_not_found")
    assert_error(await theirs.post("/api/messages/dequeue", json={"topic": "x", "count": 0}), 400, "invalid_request")
    waiting = asyncio.ensure_future(client.post("/api/messages/dequeue", json={"topic": "quiet", "wait_seconds": 20}))
    try:
        labels = {"tenant": tenant.slug}

        async def polled() -> str | None:
            text = await scrape(server.base_url)
            waits = metric(text, "skiplock_long_polls_waiting", **labels, topic="quiet") == 1
            limited = metric(text, "skiplock_topic_limit", **labels, topic="bounded", limit="max_depth") is not None
            return text if waits and limited else None  # the limits are reread at most every two seconds

        text = await eventually(polled, timeout=10, what="the waiting poll and the limits in /metrics")
    finally:
        waiting.cancel()
    assert metric(text, "skiplock_http_refusals_total", **labels, code="queue_full") == 1
    assert metric(text, "skiplock_http_refusals_total", **labels, code="message_not_found") == 1
    assert metric(text, "skiplock_http_refusals_total", **labels, code="invalid_request") is None
    assert metric(text, "skiplock_http_refusals_total", tenant=other.slug, code="invalid_request") == 1
    assert metric(text, "skiplock_topic_limit", **labels, topic="bounded", limit="max_depth") == 1
    assert metric(text, "skiplock_topic_limit", **labels, topic="bounded", limit="max_inflight") == 3
    assert metric(text, "skiplock_topic_limit", **labels, topic="bounded", limit="throughput_limit") is None
    assert metric(text, "skiplock_dependency_up", dependency="postgres") == 1
    assert metric(text, "skiplock_dependency_up", dependency="redis") == 1
    busy = metric(text, "skiplock_db_pool_connections", state="busy")
    idle = metric(text, "skiplock_db_pool_connections", state="idle")
    size = metric(text, "skiplock_db_pool_max_connections")
    assert busy is not None and idle is not None and size is not None and 1 <= busy + idle <= size
    used, limit = metric(text, "skiplock_db_server_connections"), metric(text, "skiplock_db_server_max_connections")
    assert used is not None and limit is not None and 1 <= used <= limit
    assert (metric(text, "skiplock_db_statement_duration_seconds_count", statement="enqueue") or 0) >= 1


async def test_gauges_come_from_the_leaders_snapshot(server: Server, db, client, tenant) -> None:  # type: ignore[no-untyped-def]
    for _ in range(3):
        await enqueue(client, "depth")
    await dequeue(client, "depth", 1)
    assert (await GaugeRefresher(OperationsRepository(db)).run_once()).ran
    labels = {"tenant": tenant.slug, "topic": "depth"}

    async def refreshed() -> str | None:  # an instance rereads the stored gauges at most every two seconds
        text = await scrape(server.base_url)
        return text if metric(text, "skiplock_messages", **labels, status="pending") is not None else None

    text = await eventually(refreshed, timeout=5, what="the stored gauges in /metrics")
    assert metric(text, "skiplock_messages", **labels, status="pending") == 2
    assert metric(text, "skiplock_messages", **labels, status="processing") == 1
    age = metric(text, "skiplock_oldest_pending_age_seconds", **labels)
    assert age is not None and 0 <= age < 60
    assert metric(text, "skiplock_job_last_run_timestamp_seconds", job="gauges") is not None
    assert metric(text, "process_resident_memory_bytes") is not None


async def test_the_gauges_count_a_lapsed_lease_as_pending_as_the_console_does(
    server: Server, db, client, tenant
) -> None:  # type: ignore[no-untyped-def]
    await enqueue(client, "lapsing")
    await dequeue(client, "lapsing", visibility_timeout_seconds=1)
    await asyncio.sleep(1.2)
    assert (await GaugeRefresher(OperationsRepository(db)).run_once()).ran
    labels = {"tenant": tenant.slug, "topic": "lapsing"}

    async def refreshed() -> str | None:
        text = await scrape(server.base_url)
        return text if metric(text, "skiplock_messages", **labels, status="pending") is not None else None

    text = await eventually(refreshed, timeout=5, what="the stored gauges in /metrics")
    assert metric(text, "skiplock_messages", **labels, status="pending") == 1  # the console's topic counts say so
    assert metric(text, "skiplock_messages", **labels, status="processing") is None
    age = metric(text, "skiplock_oldest_pending_age_seconds", **labels)
    assert age is not None and age >= 0  # available again: it counts toward the stalled-consumers alert
    [topic] = [t for t in (await client.get("/api/topics")).json()["items"] if t["topic"] == "lapsing"]
    assert (topic["pending"], topic["processing"]) == (1, 0)


async def test_each_consumer_group_has_its_depth_and_lag(server: Server, db, client, tenant) -> None:  # type: ignore[no-untyped-def]
    for group in ("billing", "shipping"):
        r = await client.post("/api/topics/fan/consumer-groups", json={"consumer_group": group})
        assert r.status_code == 201, r.text
    for _ in range(3):
        await enqueue(client, "fan")
    await dequeue(client, "fan", 1, consumer_group="billing")
    await dequeue(client, "fan", 3, consumer_group="shipping")
    assert (await GaugeRefresher(OperationsRepository(db)).run_once()).ran
    labels = {"tenant": tenant.slug, "topic": "fan"}

    async def refreshed() -> str | None:
        text = await scrape(server.base_url)
        seen = metric(text, "skiplock_group_messages", **labels, consumer_group="billing", status="pending")
        return text if seen is not None else None

    text = await eventually(refreshed, timeout=5, what="the stored group gauges in /metrics")
    for group, pending, processing in (("billing", 2, 1), ("shipping", 0, 3)):
        assert metric(text, "skiplock_group_messages", **labels, consumer_group=group, status="pending") == pending
        got = metric(text, "skiplock_group_messages", **labels, consumer_group=group, status="processing")
        assert got == processing
    lag = metric(text, "skiplock_group_oldest_pending_age_seconds", **labels, consumer_group="billing")
    assert lag is not None and 0 <= lag < 60
    assert metric(text, "skiplock_group_oldest_pending_age_seconds", **labels, consumer_group="shipping") is None


async def test_reaper_runs_are_counted(server: Server, db, tenant) -> None:  # type: ignore[no-untyped-def]
    await db.execute(
        """INSERT INTO messages (id, tenant_id, topic, payload, max_retries, expires_at)
           SELECT gen_random_uuid(), $1, 'ttl', 'x', 3, now() - interval '1 minute' FROM generate_series(1, 4)""",
        tenant.id,
    )
    async with httpx.AsyncClient(base_url=server.base_url, auth=ADMIN) as admin:
        assert (await admin.post("/api/admin/expiry-reaper/run")).status_code == 200
        assert (await admin.post("/api/admin/delete-reaper/run")).status_code == 200
    text = await scrape(server.base_url)
    labels = {"tenant": tenant.slug, "topic": "ttl"}
    assert metric(text, "skiplock_messages_expired_total", **labels) == 4
    assert metric(text, "skiplock_messages_deleted_total", **labels) == 4


async def test_topic_labels_are_bounded_and_the_token_is_required(server_env, tenant) -> None:  # type: ignore[no-untyped-def]
    env = {**server_env, "SKIPLOCK_METRICS_MAX_TOPICS_PER_TENANT": "3", "SKIPLOCK_METRICS_TOKEN": "s3cret-scrape"}
    srv = await asyncio.to_thread(start_server, env)
    try:
        async with httpx.AsyncClient(base_url=srv.base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}) as c:
            for topic in ("t1", "t2", "t3", "t4", "t5"):
                await enqueue(c, topic)
            assert_error(await c.get("/metrics"), 401, "unauthorized")  # Basic credentials are not the token
        async with httpx.AsyncClient(base_url=srv.base_url) as anonymous:
            assert_error(await anonymous.get("/metrics"), 401, "unauthorized")
            r = await anonymous.get("/metrics", headers={"Authorization": "Bearer wrong"})
            assert_error(r, 401, "unauthorized")
        text = await scrape(srv.base_url, Authorization="Bearer s3cret-scrape")
        labels = {"tenant": tenant.slug}
        assert metric(text, "skiplock_messages_enqueued_total", **labels, topic="t1") == 1
        assert metric(text, "skiplock_messages_enqueued_total", **labels, topic="t2") == 1
        assert metric(text, "skiplock_messages_enqueued_total", **labels, topic="t3") is None
        assert metric(text, "skiplock_messages_enqueued_total", **labels, topic="other") == 3
    finally:
        await asyncio.to_thread(stop_server, srv)


async def test_a_large_table_is_counted_a_range_of_pages_at_a_time_to_the_same_gauges(
    db,
    tenant,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    """The page-range recount (a table over GAUGES_PAGES_PER_STATEMENT pages) stores what one statement would."""
    await db.execute(
        """INSERT INTO messages (id, tenant_id, topic, payload, max_retries, status, available_at)
           SELECT gen_random_uuid(), $1, 'ranged-' || (g % 3), decode(repeat('ab', 200), 'hex'), 3,
                  CASE WHEN g % 4 = 0 THEN 'processing' ELSE 'pending' END,
                  CASE WHEN g % 4 = 0 THEN now() + interval '1 hour' ELSE now() - (g || ' s')::interval END
           FROM generate_series(1, 3000) AS g""",
        tenant.id,
    )
    refresher = GaugeRefresher(OperationsRepository(db))

    async def stored() -> dict[tuple[str, str], tuple[int, float | None]]:
        await refresher.run_once(wait=True)
        rows = await db.fetch(
            "SELECT topic, status, messages, oldest_pending_age_seconds FROM topic_gauges WHERE tenant_id = $1",
            tenant.id,
        )
        return {(r["topic"], r["status"]): (r["messages"], r["oldest_pending_age_seconds"]) for r in rows}

    whole = await stored()
    assert {key: n for key, (n, _) in whole.items()} == {
        (topic, status): 750 if status == "pending" else 250
        for topic in ("ranged-0", "ranged-1", "ranged-2")
        for status in ("pending", "processing")
    }
    monkeypatch.setattr(repository_module, "GAUGES_PAGES_PER_STATEMENT", 7)  # 3000 rows of 200 bytes: ~90 pages
    ranged = await stored()
    assert {key: n for key, (n, _) in ranged.items()} == {key: n for key, (n, _) in whole.items()}
    for key, (_, age) in ranged.items():  # the same oldest message, a moment later
        before = whole[key][1]
        assert (age is None) == (before is None)
        if age is not None and before is not None:
            assert before <= age < before + 10
