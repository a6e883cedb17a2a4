"""Tenants (platform admins) and users (tenant admins): the control-plane routes."""

from __future__ import annotations

import asyncio
import uuid

from tests.integration.helpers import assert_error, b64
from tests.support.waiting import eventually


def slug() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


async def test_platform_admin_creates_lists_gets_and_updates_tenants(make_client) -> None:  # type: ignore[no-untyped-def]
    admin = make_client()
    s = slug()
    r = await admin.post("/api/tenants", json={"slug": s, "name": "Acme", "quotas": {"max_topics": 10}})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["slug"] == s and body["name"] == "Acme" and body["status"] == "active"
    assert body["quotas"] == {"max_topics": 10} and body["created_at"].endswith("Z")
    assert_error(await admin.post("/api/tenants", json={"slug": s, "name": "again"}), 409, "already_exists")
    assert (await admin.get(f"/api/tenants/{s}")).json() == body
    page = (await admin.get("/api/tenants", params={"limit": 200})).json()
    assert set(page) == {"items", "total", "limit", "offset"} and page["limit"] == 200
    assert any(t["slug"] == s for t in page["items"]) or page["total"] > 200
    r = await admin.patch(f"/api/tenants/{s}", json={"name": "Acme Ltd", "quotas": {"max_messages": 5}})
    assert r.status_code == 200, r.text
    assert r.json()["name"] == "Acme Ltd" and r.json()["quotas"] == {"max_messages": 5}
    assert_error(await admin.get(f"/api/tenants/{slug()}"), 404, "not_found")
    assert_error(await admin.patch(f"/api/tenants/{slug()}", json={"name": "x"}), 404, "not_found")


async def test_tenant_bodies_are_validated(make_client) -> None:  # type: ignore[no-untyped-def]
    admin = make_client()
    for bad in (
        {"slug": "Not A Slug", "name": "x"},
        {"slug": "-starts-with-dash", "name": "x"},
        {"slug": slug(), "name": ""},
        {"slug": slug(), "name": "x", "quotas": {"max_topics": -1}},
        {"slug": slug(), "name": "x", "quotas": {"unknown": 1}},
        {"slug": slug(), "name": "x", "quotas": {"max_messages": "5"}},
        {"slug": slug(), "name": "x", "extra": True},
        {"slug": slug(), "name": "nul\u0000"},
    ):
        assert_error(await admin.post("/api/tenants", json=bad), 400, "invalid_request")
    s = slug()
    assert (await admin.post("/api/tenants", json={"slug": s, "name": "x"})).status_code == 201
    assert_error(await admin.patch(f"/api/tenants/{s}", json={"status": "paused"}), 400, "invalid_request")


async def test_only_platform_admins_manage_tenants(make_client, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    tenant_admin = make_client(auth=await make_user("tenant_admin", tenant))
    assert_error(await tenant_admin.get("/api/tenants"), 403, "forbidden")
    assert_error(await tenant_admin.post("/api/tenants", json={"slug": slug(), "name": "x"}), 403, "forbidden")
    assert_error(await tenant_admin.delete(f"/api/tenants/{tenant.slug}"), 403, "forbidden")


async def test_suspended_tenant_gets_403_and_keeps_its_messages(make_client, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    admin = make_client()
    user = make_client(auth=await make_user("tenant_admin", tenant))
    r = await user.post("/api/messages", json={"topic": "t", "payload": b64("kept")})
    assert r.status_code == 201
    assert (await user.get("/api/messages", params={"topic": "t"})).status_code == 200  # now in the auth cache
    assert (await admin.patch(f"/api/tenants/{tenant.slug}", json={"status": "suspended"})).status_code == 200
    assert_error(await user.get("/api/messages", params={"topic": "t"}), 403, "forbidden")
    assert (await admin.patch(f"/api/tenants/{tenant.slug}", json={"status": "active"})).status_code == 200
    page = (await user.get("/api/messages", params={"topic": "t"})).json()
    assert page["total"] == 1


async def test_deleting_a_tenant_with_messages_needs_force(make_client, make_user, tenant, db) -> None:  # type: ignore[no-untyped-def]
    admin = make_client()
    username, password = await make_user("tenant_admin", tenant)
    user = make_client(auth=(username, password))
    assert (await user.post("/api/messages", json={"topic": "t", "payload": b64("x")})).status_code == 201
    assert_error(await admin.delete(f"/api/tenants/{tenant.slug}"), 409, "tenant_not_empty")
    assert (await user.get("/api/messages")).status_code == 200
    assert (await admin.delete(f"/api/tenants/{tenant.slug}", params={"force": "true"})).status_code == 204
    assert await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1", tenant.id) == 0
    assert await db.fetchval("SELECT count(*) FROM users WHERE username = $1", username) == 0
    assert_error(await user.get("/api/messages"), 401, "unauthorized")
    assert_error(await admin.get(f"/api/tenants/{tenant.slug}"), 404, "not_found")
    empty = slug()
    assert (await admin.post("/api/tenants", json={"slug": empty, "name": "x"})).status_code == 201
    assert (await admin.delete(f"/api/tenants/{empty}")).status_code == 204


async def test_tenant_admin_manages_users_of_its_tenant(make_client, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    boss = make_client(auth=await make_user("tenant_admin", tenant))
    name = f"alice-{uuid.uuid4().hex[:8]}"
    r = await boss.post("/api/users", json={"username": name, "password": "correct horse battery", "role": "member"})
    assert r.status_code == 201, r.text
    alice = r.json()
    assert set(alice) == {"id", "username", "role", "tenant", "created_at", "updated_at"}
    assert alice["username"] == f"{name}@{tenant.slug}"  # a tenant's names live under its slug
    assert alice["role"] == "member" and alice["tenant"] == tenant.slug
    name = alice["username"]
    dup = {"username": name, "password": "another long password"}
    assert_error(await boss.post("/api/users", json=dup), 409, "already_exists")
    page = (await boss.get("/api/users")).json()
    assert name in [u["username"] for u in page["items"]] and page["total"] == len(page["items"])
    assert "password" not in str(page) and "hash" not in str(page)
    assert (await boss.get(f"/api/users/{alice['id']}")).json() == alice

    member = make_client(auth=(name, "correct horse battery"))
    assert (await member.get("/api/auth/status")).status_code == 200
    assert_error(await member.get("/api/users"), 403, "forbidden")  # members manage nobody

    r = await boss.patch(f"/api/users/{alice['id']}", json={"password": "a brand new password"})
    assert r.status_code == 200, r.text
    assert_error(await member.get("/api/messages"), 401, "unauthorized")  # the old password stops at once
    renewed = make_client(auth=(name, "a brand new password"))
    assert (await renewed.get("/api/messages")).status_code == 403  # authenticated; a member without grants
    assert (await boss.patch(f"/api/users/{alice['id']}", json={"role": "tenant_admin"})).json()["role"] == (
        "tenant_admin"
    )
    assert (await renewed.get("/api/messages")).status_code == 200

    assert (await boss.delete(f"/api/users/{alice['id']}")).status_code == 204
    assert_error(await renewed.get("/api/messages"), 401, "unauthorized")
    assert_error(await boss.get(f"/api/users/{alice['id']}"), 404, "not_found")
    assert_error(await boss.delete(f"/api/users/{alice['id']}"), 404, "not_found")


async def test_user_bodies_are_validated(make_client, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    boss = make_client(auth=await make_user("tenant_admin", tenant))
    for bad in (
        {"username": "bob", "password": "short"},
        {"username": "bob", "password": "long enough password", "role": "platform_admin"},
        {"username": "bo:b", "password": "long enough password"},
        {"username": "", "password": "long enough password"},
        {"username": "bob\u0000", "password": "long enough password"},
        {"username": "bob", "password": "long enough password", "tenant": "other"},
        {"username": "bob", "password": 123456789012},
        {"username": "bob", "password": "x" * 2000},
    ):
        assert_error(await boss.post("/api/users", json=bad), 400, "invalid_request")
    assert_error(await boss.patch(f"/api/users/{uuid.uuid4()}", json={"role": "member"}), 404, "not_found")
    assert_error(await boss.patch("/api/users/not-a-uuid", json={"role": "member"}), 404, "not_found")


async def test_users_of_another_tenant_are_invisible(make_client, make_user, tenant, db) -> None:  # type: ignore[no-untyped-def]
    other_slug = slug()
    other_id = await db.fetchval("INSERT INTO tenants (slug, name) VALUES ($1, $1) RETURNING id", other_slug)
    from tests.support.tenants import Tenant

    stranger_name, _ = await make_user("member", Tenant(other_id, other_slug))
    stranger_id = str(await db.fetchval("SELECT id FROM users WHERE username = $1", stranger_name))
    boss = make_client(auth=await make_user("tenant_admin", tenant))
    assert stranger_name not in [u["username"] for u in (await boss.get("/api/users")).json()["items"]]
    assert_error(await boss.get(f"/api/users/{stranger_id}"), 404, "not_found")
    assert_error(await boss.patch(f"/api/users/{stranger_id}", json={"role": "tenant_admin"}), 404, "not_found")
    assert_error(await boss.delete(f"/api/users/{stranger_id}"), 404, "not_found")
    # A tenant admin cannot address another tenant with X-Tenant.
    sneaky = make_client(auth=await make_user("tenant_admin", tenant), headers={"X-Tenant": other_slug})
    assert_error(await sneaky.get("/api/users"), 403, "forbidden")


async def test_platform_admin_manages_users_through_x_tenant(make_client, tenant) -> None:  # type: ignore[no-untyped-def]
    assert_error(await make_client().get("/api/users"), 400, "invalid_request")
    admin = make_client(headers={"X-Tenant": tenant.slug})
    name = f"carol-{uuid.uuid4().hex[:8]}"
    r = await admin.post("/api/users", json={"username": name, "password": "long enough password"})
    assert r.status_code == 201 and r.json()["tenant"] == tenant.slug and r.json()["role"] == "member"


async def test_passwords_never_reach_the_logs(server, make_client, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    boss = make_client(auth=await make_user("tenant_admin", tenant))
    secret = f"unguessable-{uuid.uuid4().hex}"
    r = await boss.post("/api/users", json={"username": f"d-{uuid.uuid4().hex[:8]}", "password": secret})
    assert r.status_code == 201
    await make_client(auth=("nobody", secret)).get("/api/messages")
    assert secret not in server.log_path.read_text(errors="replace")


async def test_changes_reach_every_instance_at_once(server, server_env, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    """Instance B caches a member's credentials; changes made through instance A end them on B within a second,
    though B's credential cache would keep them for 30 s (pub/sub invalidation, not the TTL)."""
    import asyncio
    import time

    import httpx

    from tests.support.servers import ADMIN, start_server, stop_server

    second = await asyncio.to_thread(start_server, server_env)
    try:
        boss_auth = await make_user("tenant_admin", tenant)
        name = f"e-{uuid.uuid4().hex[:8]}@{tenant.slug}"
        async with (
            httpx.AsyncClient(base_url=server.base_url, auth=boss_auth, timeout=30) as boss_a,
            httpx.AsyncClient(base_url=server.base_url, auth=ADMIN, timeout=30) as admin_a,
            httpx.AsyncClient(base_url=second.base_url, auth=(name, "first password!"), timeout=30) as member_b,
            httpx.AsyncClient(base_url=second.base_url, auth=(name, "second password!"), timeout=30) as renewed_b,
        ):
            r = await boss_a.post("/api/users", json={"username": name, "password": "first password!"})
            user_id = r.json()["id"]
            grant = await boss_a.post(f"/api/users/{user_id}/grants", json={"action": "read", "topic_pattern": "*"})
            assert grant.status_code == 201

            async def ends_within_a_second(client: httpx.AsyncClient, status: int) -> None:
                started = time.monotonic()
                while (await client.get("/api/messages")).status_code != status:
                    assert time.monotonic() - started < 1.0, f"instance B still answers as before, not {status}"
                    await asyncio.sleep(0.02)

            assert (await member_b.get("/api/messages")).status_code == 200  # cached on B now
            r = await boss_a.patch(f"/api/users/{user_id}", json={"password": "second password!"})
            assert r.status_code == 200
            await ends_within_a_second(member_b, 401)

            assert (await renewed_b.get("/api/messages")).status_code == 200
            await boss_a.delete(f"/api/users/{user_id}/grants/{grant.json()['id']}")
            await ends_within_a_second(renewed_b, 403)

            await boss_a.post(f"/api/users/{user_id}/grants", json={"action": "read", "topic_pattern": "*"})
            assert (await renewed_b.get("/api/messages")).status_code == 200
            assert (await admin_a.patch(f"/api/tenants/{tenant.slug}", json={"status": "suspended"})).status_code == 200
            await ends_within_a_second(renewed_b, 403)
    finally:
        stop_server(second)


async def test_enqueues_racing_a_forced_delete_leave_no_orphans(make_client, db) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    for _ in range(3):
        slug = f"doomed-{uuid.uuid4().hex[:8]}"
        admin = make_client()
        assert (await admin.post("/api/tenants", json={"slug": slug, "name": "doomed"})).status_code == 201
        tenant_id = await db.fetchval("SELECT id FROM tenants WHERE slug = $1", slug)
        producer = make_client(headers={"X-Tenant": slug})
        stop = asyncio.Event()

        async def produce(c=producer, ev=stop) -> None:  # type: ignore[no-untyped-def]
            while not ev.is_set():
                batch = {"topic": "t", "messages": [{"payload": b64("x")} for _ in range(20)]}
                await c.post("/api/messages/batch", json=batch)  # 201 until the tenant is gone, then 404

        producers = [asyncio.create_task(produce()) for _ in range(6)]
        await eventually(  # the producers are writing
            lambda t=tenant_id: db.fetchval("SELECT count(*) >= 100 FROM messages WHERE tenant_id = $1", t)
        )
        assert (await admin.delete(f"/api/tenants/{slug}", params={"force": "true"})).status_code == 204
        await asyncio.sleep(0.2)  # they go on racing the delete for a while (its 404s are not observable apart)
        stop.set()
        await asyncio.gather(*producers)
        assert (await admin.post("/api/admin/expiry-reaper/run")).status_code == 200  # the sweeper runs with it
        assert await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1", tenant_id) == 0
        assert await db.fetchval("SELECT count(*) FROM deleted_tenants WHERE tenant_id = $1", tenant_id) == 1
        # an hour on, the racing enqueues long over, the tombstone with nothing under it goes
        await db.execute(
            "UPDATE deleted_tenants SET deleted_at = now() - interval '61 minutes' WHERE tenant_id = $1", tenant_id
        )
        assert (await admin.post("/api/admin/expiry-reaper/run")).status_code == 200
        assert await db.fetchval("SELECT count(*) FROM deleted_tenants WHERE tenant_id = $1", tenant_id) == 0


async def test_the_last_tenant_admin_cannot_be_demoted_or_deleted(make_client, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    boss_name, boss_password = await make_user("tenant_admin", tenant)
    boss = make_client(auth=(boss_name, boss_password))
    me = (await boss.get("/api/users")).json()["items"]
    (own,) = [u for u in me if u["username"] == boss_name]
    assert_error(await boss.patch(f"/api/users/{own['id']}", json={"role": "member"}), 409, "last_admin")
    assert_error(await boss.delete(f"/api/users/{own['id']}"), 409, "last_admin")
    platform = make_client(headers={"X-Tenant": tenant.slug})
    assert_error(await platform.patch(f"/api/users/{own['id']}", json={"role": "member"}), 409, "last_admin")
    assert (await boss.get("/api/users")).status_code == 200  # still a tenant admin
    # A password change and a no-op role change of the last admin are not demotions.
    assert (await boss.patch(f"/api/users/{own['id']}", json={"role": "tenant_admin"})).status_code == 200

    r = await boss.post(
        "/api/users", json={"username": "deputy", "password": "correct horse battery", "role": "tenant_admin"}
    )
    assert r.status_code == 201, r.text
    assert (await boss.patch(f"/api/users/{own['id']}", json={"role": "member"})).json()["role"] == "member"
    deputy = make_client(auth=(r.json()["username"], "correct horse battery"))
    assert_error(await deputy.delete(f"/api/users/{r.json()['id']}"), 409, "last_admin")


async def test_two_admins_demoting_each_other_at_once_leave_one(make_client) -> None:  # type: ignore[no-untyped-def]
    """Under READ COMMITTED each demotion would see the other admin still in place; both must not succeed."""
    for _ in range(8):
        slug_ = slug()
        assert (await make_client().post("/api/tenants", json={"slug": slug_, "name": slug_})).status_code == 201
        platform = make_client(headers={"X-Tenant": slug_})
        ids = []
        for i in range(2):
            r = await platform.post(
                "/api/users", json={"username": f"a{i}", "password": "correct horse battery", "role": "tenant_admin"}
            )
            assert r.status_code == 201, r.text
            ids.append(r.json()["id"])
        demotions = await asyncio.gather(*(platform.patch(f"/api/users/{uid}", json={"role": "member"}) for uid in ids))
        assert sorted(r.status_code for r in demotions) == [200, 409], [r.text for r in demotions]
        users = (await platform.get("/api/users")).json()["items"]
        assert [u["role"] for u in users].count("tenant_admin") == 1
        deletions = await asyncio.gather(*(platform.delete(f"/api/users/{uid}") for uid in ids))
        assert sorted(r.status_code for r in deletions) == [204, 409]
