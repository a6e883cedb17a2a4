"""The enqueue-rate quota that applies by default while other tenants are active (`tenant_enqueue_rate`), on a
server of its own with the rate at 100 messages per second: a tenant alone is not limited; beside another, it may
enqueue a second's worth at once and then owes time; a refused batch stores nothing; the quiet tenant is not
refused; a tenant with an enqueue_rate quota of its own is not asked."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import httpx
import pytest

from tests.integration.helpers import assert_error, b64
from tests.support.servers import ADMIN, Server, start_server, stop_server
from tests.support.tenants import Tenant


@pytest.fixture(scope="module")
def fair_server(server_env: dict[str, str]) -> Iterator[Server]:
    server = start_server({**server_env, "SKIPLOCK_TENANT_ENQUEUE_RATE": "100"})
    yield server
    stop_server(server)


@pytest.fixture
async def admin(fair_server: Server) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=fair_server.base_url, auth=ADMIN, timeout=30) as c:
        yield c


async def _new_tenant(db: asyncpg.Pool[Any], name: str) -> Tenant:
    slug = f"{name}-{uuid.uuid4().hex[:12]}"
    return Tenant(await db.fetchval("INSERT INTO tenants (slug, name) VALUES ($1, $1) RETURNING id", slug), slug)


async def _batch(admin: httpx.AsyncClient, tenant: Tenant, n: int) -> httpx.Response:
    messages = [{"payload": b64("x")}] * n
    return await admin.post(
        "/api/messages/batch", headers={"X-Tenant": tenant.slug}, json={"topic": "t", "messages": messages}
    )


async def test_a_flooding_tenant_owes_time_only_while_another_is_active(admin: httpx.AsyncClient, db) -> None:  # type: ignore[no-untyped-def]
    flood, quiet, own = [await _new_tenant(db, n) for n in ("flood", "quiet", "own")]
    for _ in range(3):  # alone: 600 at once, more than a second's worth, all taken
        assert (await _batch(admin, flood, 200)).status_code == 201

    assert (await _batch(admin, quiet, 1)).status_code == 201  # the quiet tenant is active now
    assert (await _batch(admin, flood, 150)).status_code == 201  # a second's worth (100) left: let through, 50 owed
    response = await _batch(admin, flood, 10)
    refused = assert_error(response, 429, "rate_limited")
    assert int(response.headers["Retry-After"]) >= 1
    assert refused["details"] == {"quota": "tenant_enqueue_rate", "limit": 100}
    stored = await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1", flood.id)
    assert stored == 750  # the refused batch stored nothing
    assert (await _batch(admin, quiet, 1)).status_code == 201  # the quiet tenant has an allowance of its own

    r = await admin.patch(f"/api/tenants/{own.slug}", json={"quotas": {"enqueue_rate": 100_000}})
    assert r.status_code == 200, r.text
    for _ in range(3):  # its own quota decides, not the default
        assert (await _batch(admin, own, 200)).status_code == 201
