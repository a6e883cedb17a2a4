"""Contract, "Bounds on what one tenant can make the server do", schedules: a count quota, ticks under the enqueue
rates as enqueues are, due schedules taken fairly across tenants, and a schedule shown only to who may read its
topic."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest

from mq.runtime import Runtime
from mq.schedules.firer import ScheduleFirer
from mq.settings import Settings
from tests.integration.helpers import assert_error, b64
from tests.support.servers import ADMIN, Server
from tests.support.tenants import Tenant


async def _put(client: httpx.AsyncClient, name: str, topic: str = "ticks", **body: Any) -> httpx.Response:
    return await client.put(
        f"/api/schedules/{name}", json={"topic": topic, "cron": "* * * * * *", "payload": b64("tick"), **body}
    )


async def _other_tenant(db: asyncpg.Pool[Any]) -> Tenant:
    slug = f"t-{uuid.uuid4().hex[:12]}"
    return Tenant(await db.fetchval("INSERT INTO tenants (slug, name) VALUES ($1, $1) RETURNING id", slug), slug)


async def test_a_tenant_has_at_most_its_max_schedules(
    client: httpx.AsyncClient, tenant: Tenant, make_client: Any
) -> None:
    platform = make_client()
    r = await platform.patch(f"/api/tenants/{tenant.slug}", json={"quotas": {"max_schedules": 3}})
    assert r.status_code == 200, r.text
    await asyncio.sleep(0.2)  # the quota reached every cache (a broadcast)
    for n in range(3):
        assert (await _put(client, f"s{n}")).status_code == 200
    body = assert_error(await _put(client, "s3"), 403, "quota_exceeded")
    assert body["details"] == {"quota": "max_schedules", "limit": 3}
    assert (await _put(client, "s1", cron="0 * * * *")).status_code == 200  # changing one is not a new one
    assert (await client.delete("/api/schedules/s0")).status_code == 204
    assert (await _put(client, "s3")).status_code == 200


async def test_without_a_quota_the_platform_default_is_1000(client: httpx.AsyncClient) -> None:
    semaphore = asyncio.Semaphore(16)

    async def put(n: int) -> int:
        async with semaphore:
            return (await _put(client, f"s{n:04d}")).status_code

    assert set(await asyncio.gather(*(put(n) for n in range(1000)))) == {200}
    assert_error(await _put(client, "one-more"), 403, "quota_exceeded")
    assert len((await client.get("/api/schedules")).json()["items"]) == 1000


async def test_a_member_sees_only_schedules_whose_topic_it_may_read(
    client: httpx.AsyncClient, make_user: Any, make_client: Any, tenant: Tenant, db: asyncpg.Pool[Any]
) -> None:
    assert (await _put(client, "mine", topic="reports", metadata={"note": "ours"})).status_code == 200
    secret = {"iban": "DE89370400440532013000", "api_key": "sk-live-do-not-show"}
    assert (await _put(client, "theirs", topic="payments", metadata=secret)).status_code == 200
    username, password = await make_user("member", tenant)
    user_id = await db.fetchval("SELECT id FROM users WHERE username = $1", username)
    for action in ("read", "produce"):
        r = await client.post(f"/api/users/{user_id}/grants", json={"action": action, "topic_pattern": "reports"})
        assert r.status_code == 201, r.text
    r = await client.post(f"/api/users/{user_id}/grants", json={"action": "produce", "topic_pattern": "payments"})
    assert r.status_code == 201, r.text
    member = make_client(auth=(username, password))
    listed = await member.get("/api/schedules")
    assert [s["name"] for s in listed.json()["items"]] == ["mine"]
    assert "sk-live" not in listed.text
    assert (await member.get("/api/schedules/mine")).status_code == 200
    assert_error(await member.get("/api/schedules/theirs"), 404, "not_found")
    assert_error(await member.get("/api/messages", params={"topic": "payments"}), 403, "forbidden")  # as browsing
    assert len((await client.get("/api/schedules")).json()["items"]) == 2  # a tenant admin reads every topic


async def _firer(database_url: str, redis_url: str, fair_rate: int) -> tuple[Runtime, ScheduleFirer]:
    settings = Settings(database_url=database_url, redis_url=redis_url, tenant_enqueue_rate=fair_rate)
    runtime = await Runtime.open(settings, bootstrap_users=False)
    return runtime, ScheduleFirer(runtime.ticks.repository, runtime.queue, runtime.metrics, batch=50)


@pytest.fixture
async def firer(database_url: str, redis_url: str) -> AsyncIterator[ScheduleFirer]:
    """A worker's firer taking 50 schedules a batch, with the default fair enqueue rate at 5 messages per second
    (the suite's servers run with it off)."""
    runtime, firer = await _firer(database_url, redis_url, 5)
    try:
        yield firer
    finally:
        await runtime.close()


@pytest.fixture
async def unlimited_firer(database_url: str, redis_url: str) -> AsyncIterator[ScheduleFirer]:
    runtime, firer = await _firer(database_url, redis_url, 0)
    try:
        yield firer
    finally:
        await runtime.close()


async def _schedules_of(server: Server, tenant: Tenant, n: int, topic: str, cron: str = "* * * * * *") -> None:
    async with httpx.AsyncClient(
        base_url=server.base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}, timeout=30
    ) as c:
        for i in range(n):
            assert (await _put(c, f"{topic}-{i:03d}", topic=topic, cron=cron)).status_code == 200


async def _all_due(db: asyncpg.Pool[Any], tenants: list[Tenant], seconds_ago: float) -> None:
    await db.execute(
        """UPDATE schedules SET next_run_at = date_trunc('second', now()) - make_interval(secs => $2)
           WHERE tenant_id = ANY($1)""",
        [t.id for t in tenants],
        seconds_ago,
    )


async def test_ticks_count_against_the_fair_enqueue_rate_as_enqueues_do(
    server: Server, db: asyncpg.Pool[Any], tenant: Tenant, firer: ScheduleFirer
) -> None:
    """While another tenant is active on the worker, a tenant without an enqueue_rate quota gets the default fair
    rate (5/s here, bursts of a second's worth) for its ticks, as for its enqueues: 30 schedules on 30 topics due
    at once, each its own admission, store about 5 and the rest are refused as rate_limited."""
    other = await _other_tenant(db)
    async with httpx.AsyncClient(
        base_url=server.base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}, timeout=30
    ) as c:
        for i in range(30):
            assert (await _put(c, f"s{i:02d}", topic=f"flood-{i:02d}", cron="0 0 * * *")).status_code == 200
    await _all_due(db, [tenant], 0)
    firer.queue.shared.seen(other.id)  # another tenant was just active on this worker
    await firer.run_once()
    stored = await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1", tenant.id)
    refused = await db.fetchval(
        "SELECT count(*) FROM schedules WHERE tenant_id = $1 AND last_error LIKE 'rate_limited%'", tenant.id
    )
    assert stored + refused == 30 and 1 <= stored <= 10, (stored, refused)


async def test_one_tenants_backlog_of_due_ticks_never_holds_another_tenants_tick_back(
    server: Server, db: asyncpg.Pool[Any], tenant: Tenant, unlimited_firer: ScheduleFirer
) -> None:
    """A tenant with 300 schedules due for a minute, another with one due now: the first batch (50 here) fires
    the other tenant's tick, not only the backlog's oldest."""
    quiet = await _other_tenant(db)
    await _schedules_of(server, tenant, 300, "backlog", cron="0 0 * * *")  # one tick each: the latest missed
    await _schedules_of(server, quiet, 1, "quiet", cron="0 0 * * *")
    await _all_due(db, [tenant], 60)
    await _all_due(db, [quiet], 0)
    await unlimited_firer.fire_batch()
    fired = await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1 AND topic = 'quiet'", quiet.id)
    assert fired == 1
    backlog = await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1 AND topic = 'backlog'", tenant.id)
    assert backlog <= 25  # the two tenants with schedules due share the batch of 50
    await unlimited_firer.run_once()
    backlog = await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1 AND topic = 'backlog'", tenant.id)
    assert backlog == 300
