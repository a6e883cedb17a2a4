"""Basic auth, roles, X-Tenant, and tenant isolation on the data plane."""

from __future__ import annotations

import base64

from tests.integration.helpers import assert_error, dequeue, enqueue
from tests.support.servers import ADMIN


async def test_missing_or_bad_credentials_are_401_with_challenge(make_client) -> None:  # type: ignore[no-untyped-def]
    anon = make_client(auth=None)
    for r in [
        await anon.get("/api/messages"),
        await anon.post("/api/messages/dequeue", json={"topic": "t"}),
        await anon.get("/api/messages", headers={"Authorization": "Bearer abc"}),
        await anon.get("/api/messages", headers={"Authorization": "Basic !!!"}),
        await anon.get("/api/messages", headers={"Authorization": "Basic " + base64.b64encode(b"nocolon").decode()}),
        await make_client(auth=(ADMIN[0], "wrong")).get("/api/messages"),
        await make_client(auth=("nobody", "x")).get("/api/messages"),
    ]:
        assert_error(r, 401, "unauthorized")
        assert r.headers["www-authenticate"] == 'Basic realm="skiplock"'


async def test_public_routes(make_client) -> None:  # type: ignore[no-untyped-def]
    anon = make_client(auth=None)
    assert (await anon.get("/api/version")).json()["version"]
    assert (await anon.get("/api/auth/status")).status_code == 200
    assert (await anon.get("/healthz")).json() == {"status": "ok"}
    assert (await anon.get("/readyz")).json()["status"] == "ready"
    spec = (await anon.get("/schema/openapi.json")).json()
    assert "/api/messages/dequeue" in spec["paths"]
    assert (await anon.get("/schema")).status_code == 200


async def test_platform_admin_needs_x_tenant(make_client) -> None:  # type: ignore[no-untyped-def]
    admin = make_client()
    assert_error(await admin.post("/api/messages/dequeue", json={"topic": "t"}), 400, "invalid_request")
    assert_error(await make_client(headers={"X-Tenant": "no-such-tenant"}).get("/api/messages"), 404, "not_found")


async def test_tenant_admin_works_in_its_own_tenant_only(make_client, make_user, tenant, db) -> None:  # type: ignore[no-untyped-def]
    user = await make_user("tenant_admin", tenant)
    own = make_client(auth=user)
    mid = await enqueue(own, "t")
    assert (await own.get(f"/api/messages/{mid}")).status_code == 200
    other_slug = f"{tenant.slug}-other"
    await db.execute("INSERT INTO tenants (slug, name) VALUES ($1, $1)", other_slug)
    assert_error(await make_client(auth=user, headers={"X-Tenant": other_slug}).get("/api/messages"), 403, "forbidden")


async def test_member_without_grants_is_forbidden(make_client, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    member = make_client(auth=await make_user("member", tenant))
    assert_error(await member.post("/api/messages", json={"topic": "t", "payload": "YQ=="}), 403, "forbidden")


async def test_tenants_never_see_each_others_messages(make_client, make_user, tenant, db) -> None:  # type: ignore[no-untyped-def]
    other_slug = f"{tenant.slug}-b"
    other_id = await db.fetchval("INSERT INTO tenants (slug, name) VALUES ($1, $1) RETURNING id", other_slug)
    a = make_client(headers={"X-Tenant": tenant.slug})
    b = make_client(headers={"X-Tenant": other_slug})
    mid = await enqueue(a, "shared-name", b"a-secret", key="k")
    keyed_b = await enqueue(b, "shared-name", b"b-data", key="k")
    assert keyed_b != mid  # same topic and key in another tenant is another message
    assert_error(await b.get(f"/api/messages/{mid}"), 404, "message_not_found")
    assert_error(await b.post(f"/api/messages/{mid}/ack"), 404, "message_not_found")
    assert_error(await b.post(f"/api/messages/{mid}/nack"), 404, "message_not_found")
    assert_error(await b.post(f"/api/messages/{mid}/requeue"), 404, "message_not_found")
    assert_error(await b.delete(f"/api/messages/{mid}"), 404, "message_not_found")
    [got_b] = await dequeue(b, "shared-name")
    assert got_b["id"] == keyed_b
    assert (await b.get("/api/messages")).json()["total"] == 1
    assert (await b.post("/api/topics/shared-name/purge")).json() == {"deleted": 1}
    stats_a = (await a.get("/api/stats")).json()["topics"]
    assert stats_a == [{"topic": "shared-name", "status": "pending", "count": 1}]
    [got_a] = await dequeue(a, "shared-name")
    assert got_a["id"] == mid
    assert other_id != tenant.id
