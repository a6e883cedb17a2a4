"""The audit trail: GET /api/audit, who sees which entries, paging, filters, what is recorded and what is not."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

import httpx

from tests.integration.helpers import assert_error, dequeue, enqueue


async def _entries(client: httpx.AsyncClient, **params: object) -> list[dict[str, object]]:
    r = await client.get("/api/audit", params={"limit": 200, **params})
    assert r.status_code == 200, r.text
    items: list[dict[str, object]] = r.json()["items"]
    return items


async def test_administrative_actions_are_recorded_with_who_what_and_the_request(
    make_client, make_user, tenant
) -> None:  # type: ignore[no-untyped-def]
    boss_name, boss_password = await make_user("tenant_admin", tenant)
    boss = make_client(auth=(boss_name, boss_password))
    await enqueue(boss, "orders")
    (leased,) = await dequeue(boss, "orders")
    assert (await boss.post(f"/api/messages/{leased['id']}/ack", json={})).status_code == 204
    assert await _entries(boss) == []  # the data plane is not audited

    r = await boss.put("/api/topic-configs/orders", json={"max_retries": 5}, headers={"X-Request-ID": "req-config-1"})
    assert r.status_code == 200
    await enqueue(boss, "orders")
    assert (await boss.post("/api/topics/orders/pause")).status_code == 200
    assert (await boss.post("/api/topics/orders/purge", json={})).json() == {"deleted": 1}
    r = await boss.post("/api/users", json={"username": "carol", "password": "correct horse battery", "role": "member"})
    carol = r.json()
    assert (await boss.patch(f"/api/users/{carol['id']}", json={"role": "tenant_admin"})).status_code == 200

    entries = await _entries(boss)
    assert [e["action"] for e in entries] == [
        "user.role_change",
        "user.create",
        "topic.purge",
        "topic.pause",
        "topic_config.update",
    ]
    assert all(e["actor"] == boss_name and e["tenant"] == tenant.slug for e in entries)
    role, _, purge, _, config = entries
    assert role["target"] == carol["username"] and role["details"] == {
        "user_id": carol["id"],
        "from": "member",
        "to": "tenant_admin",
    }
    assert purge["target"] == "orders" and purge["details"] == {"statuses": None, "deleted": 1}
    # the request id is the server's (no caller chooses it); the caller's own is kept beside it
    assert config["details"]["client_request_id"] == "req-config-1"  # type: ignore[index]
    assert re.fullmatch(r"[0-9a-f]{32}", str(config["request_id"])) and config["details"]["max_retries"] == 5  # type: ignore[index]
    assert {"id", "at", "actor", "tenant", "action", "target", "details", "request_id"} == set(config)
    assert str(config["at"]).endswith("Z")

    # `topic.` is the family: the topic's configuration's and schema's actions are in it
    family = [e["action"] for e in await _entries(boss, action="topic.")]
    assert family == ["topic.purge", "topic.pause", "topic_config.update"]
    assert [e["action"] for e in await _entries(boss, action="topic_config.")] == ["topic_config.update"]
    assert [e["action"] for e in await _entries(boss, action="topic.purge")] == ["topic.purge"]
    assert len(await _entries(boss, topic="orders")) == 3
    assert await _entries(boss, actor="nobody") == []
    future = (datetime.now(UTC) + timedelta(minutes=5)).isoformat()
    assert await _entries(boss, from_time=future) == []
    assert len(await _entries(boss, to_time=future)) == 5


async def test_who_sees_which_entries(make_client, make_user, tenant, db) -> None:  # type: ignore[no-untyped-def]
    boss = make_client(auth=await make_user("tenant_admin", tenant))
    member = make_client(auth=await make_user("member", tenant))
    other_slug = f"t-{uuid.uuid4().hex[:12]}"
    platform = make_client()
    assert (await platform.post("/api/tenants", json={"slug": other_slug, "name": "x"})).status_code == 201
    other = make_client(headers={"X-Tenant": other_slug})
    assert (await other.post("/api/topics/secret/purge", json={})).status_code == 200
    assert (await boss.post("/api/topics/mine/purge", json={})).status_code == 200

    assert_error(await member.get("/api/audit"), 403, "forbidden")
    mine = await _entries(boss)
    assert [(e["action"], e["target"]) for e in mine] == [("topic.purge", "mine")]
    everything = await _entries(platform)
    assert {("topic.purge", "secret"), ("topic.purge", "mine"), ("tenant.create", other_slug)} <= {
        (e["action"], e["target"]) for e in everything
    }
    theirs = await _entries(other)
    assert [(e["action"], e["target"]) for e in theirs] == [("topic.purge", "secret"), ("tenant.create", other_slug)]
    assert (await platform.post("/api/admin/delete-reaper/run")).status_code == 200
    (run,) = await _entries(platform, action="reaper.delete_run", limit=1)
    assert run["tenant"] is None and run["actor"] == "admin"
    assert all(e["action"] != "reaper.delete_run" for e in await _entries(boss))


async def test_pages_go_back_by_cursor(make_client, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    boss = make_client(auth=await make_user("tenant_admin", tenant))
    for n in range(7):
        assert (await boss.post(f"/api/topics/t{n}/pause")).status_code == 200
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        page = (await boss.get("/api/audit", params=params)).json()
        seen += [e["target"] for e in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"t{n}" for n in reversed(range(7))]
    assert_error(await boss.get("/api/audit", params={"cursor": "nope"}), 400, "invalid_request")
    assert_error(await boss.get("/api/audit", params={"limit": 0}), 400, "invalid_request")


async def test_refused_logins_are_recorded_for_platform_admins(make_client) -> None:  # type: ignore[no-untyped-def]
    """Contract, "Bounds...": a refused login has no actor; the name tried is a detail, never the actor or target
    (anyone may try any name: one with a newline and a fake action is stored as the text it is)."""
    forged = f'mallory-{uuid.uuid4().hex[:6]}\n{{"action" "user.delete"}}'  # (no ':' in a Basic name)
    stranger = make_client(auth=(forged, "not the password"), headers={"X-Request-ID": "chosen-by-the-caller"})
    assert_error(await stranger.post("/api/auth/session"), 401, "unauthorized")
    async with httpx.AsyncClient(base_url=stranger.base_url, timeout=30) as anonymous:
        r = await anonymous.post("/api/auth/login", json={"username": forged, "password": "not the password"})
        assert_error(r, 401, "unauthorized")
    refused = await _entries(make_client(), action="auth.login_refused")
    entries = [e for e in refused if e["details"]["username"] == forged]
    assert sorted(e["target"] for e in entries) == ["session", "token"]
    for entry in entries:
        assert entry["actor"] is None and entry["tenant"] is None
        assert "not the password" not in str(entry)
    [session] = [e for e in entries if e["target"] == "session"]
    assert session["request_id"] != "chosen-by-the-caller" and re.fullmatch(r"[0-9a-f]{32}", session["request_id"])
    assert session["details"]["client_request_id"] == "chosen-by-the-caller"
    assert await _entries(make_client(), action="auth.login_refused", actor=forged) == []


async def test_entries_past_the_retention_are_dropped(make_client, db) -> None:  # type: ignore[no-untyped-def]
    old, recent = uuid.uuid4(), uuid.uuid4()
    await db.execute(
        "INSERT INTO audit_log (tenant_id, id, at, actor, action, target) VALUES"
        " (0, $1, now() - interval '400 days', 'x', 'test.old', 'x'), (0, $2, now(), 'x', 'test.recent', 'x')",
        old,
        recent,
    )
    assert (await make_client().post("/api/admin/expiry-reaper/run")).status_code == 200
    kept = {r["id"] for r in await db.fetch("SELECT id FROM audit_log WHERE id = ANY($1::uuid[])", [old, recent])}
    assert kept == {recent}
