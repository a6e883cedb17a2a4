"""Bearer tokens (contract, "queue-ti wire compatibility"): login and refresh, every /api route accepting them,
and the tokens a server must refuse: forged, unsigned, expired, of a changed password, a deleted user or a
suspended tenant."""

from __future__ import annotations

import time
import uuid
from typing import Any

import asyncpg
import httpx
import jwt

from tests.integration.helpers import assert_error, b64
from tests.support.servers import TOKEN_SECRET, Server
from tests.support.tenants import Tenant


async def _login(server: Server, username: str, password: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as c:
        return await c.post("/api/auth/login", json={"username": username, "password": password})


def _bearer(server: Server, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


async def test_a_token_from_login_works_on_every_route_and_refreshes(
    server: Server, tenant: Tenant, make_user: Any
) -> None:
    username, password = await make_user("tenant_admin", tenant)
    r = await _login(server, username, password)
    assert r.status_code == 200, r.text
    token = r.json()["token"]
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["sub"] == username and 14 * 60 < claims["exp"] - claims["iat"] <= 15 * 60  # queue-ti's 15 min
    async with _bearer(server, token) as c:
        assert (await c.get("/api/auth/me")).json()["username"] == username
        assert (await c.post("/api/messages", json={"topic": "t", "payload": b64("x")})).status_code == 201
        assert (await c.put("/api/topic-configs/t", json={"max_retries": 2})).status_code == 200
        r = await c.post("/api/auth/refresh")
        assert r.status_code == 200, r.text
    async with _bearer(server, r.json()["token"]) as c:
        assert (await c.get("/api/auth/me")).status_code == 200
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as c:
        assert (await c.get("/api/auth/status")).json()["methods"] == ["basic", "session", "bearer"]


async def test_wrong_credentials_get_no_token(server: Server, tenant: Tenant, make_user: Any) -> None:
    username, _ = await make_user("member", tenant)
    assert_error(await _login(server, username, "not-the-password"), 401, "unauthorized")
    assert_error(await _login(server, "nobody-" + uuid.uuid4().hex, "whatever-password"), 401, "unauthorized")
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as c:
        assert_error(await c.post("/api/auth/login", json={"username": username}), 400, "invalid_request")


async def test_forged_unsigned_expired_and_foreign_tokens_are_refused(
    server: Server, tenant: Tenant, make_user: Any
) -> None:
    username, password = await make_user("tenant_admin", tenant)
    good = (await _login(server, username, password)).json()["token"]
    claims = jwt.decode(good, options={"verify_signature": False})
    now = int(time.time())
    forged = [
        jwt.encode(claims, "another-key-another-key-another-key!", algorithm="HS256"),  # not our key
        jwt.encode(claims, None, algorithm="none"),  # unsigned
        jwt.encode({**claims, "iat": now - 3600, "exp": now - 60}, TOKEN_SECRET, algorithm="HS256"),  # expired
        jwt.encode({**claims, "iss": "queue-ti"}, TOKEN_SECRET, algorithm="HS256"),  # not ours
        jwt.encode({**claims, "cv": "0" * 32}, TOKEN_SECRET, algorithm="HS256"),  # another password's
        jwt.encode({k: v for k, v in claims.items() if k != "exp"}, TOKEN_SECRET, algorithm="HS256"),  # no expiry
        good[:-2] + ("AA" if not good.endswith("AA") else "BB"),  # a changed signature
        "not-a-token",
    ]
    for token in forged:
        async with _bearer(server, token) as c:
            assert_error(await c.get("/api/auth/me"), 401, "unauthorized")
            assert_error(await c.post("/api/auth/refresh"), 401, "unauthorized")


async def test_a_password_change_a_deletion_and_a_suspension_end_tokens(
    server: Server, tenant: Tenant, make_user: Any, db: asyncpg.Pool[Any], client: httpx.AsyncClient
) -> None:
    username, password = await make_user("member", tenant)
    token = (await _login(server, username, password)).json()["token"]
    async with _bearer(server, token) as c:
        assert (await c.get("/api/auth/me")).status_code == 200
        body = {"current_password": password, "new_password": "a-new-password-" + uuid.uuid4().hex}
        assert (await c.put("/api/auth/password", json=body)).status_code == 204
        assert_error(await c.get("/api/auth/me"), 401, "unauthorized")  # ended on this instance at once
        assert_error(await c.post("/api/auth/refresh"), 401, "unauthorized")
    token = (await _login(server, username, body["new_password"])).json()["token"]
    r = await client.patch(f"/api/tenants/{tenant.slug}", json={"status": "suspended"})
    assert r.status_code == 200, r.text
    async with _bearer(server, token) as c:
        assert_error(await c.get("/api/auth/me"), 403, "forbidden")
        assert_error(await c.post("/api/auth/refresh"), 403, "forbidden")
    r = await client.patch(f"/api/tenants/{tenant.slug}", json={"status": "active"})
    assert r.status_code == 200, r.text
    async with _bearer(server, token) as c:
        assert (await c.get("/api/auth/me")).status_code == 200
        user_id = await db.fetchval("SELECT id::text FROM users WHERE username = $1", username)
        assert (await client.delete(f"/api/users/{user_id}")).status_code == 204
        assert_error(await c.get("/api/auth/me"), 401, "unauthorized")
