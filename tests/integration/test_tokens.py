"""Bearer tokens (contract, "queue-ti wire compatibility"): login and refresh, every /api operation the served
OpenAPI document secures with them accepting them, and the tokens a server must refuse: forged, unsigned, expired,
of a changed password, a deleted user or a suspended tenant."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import asyncpg
import httpx
import jwt

from mq.tenancy.repository import UserRecord
from mq.tenancy.tokens import TokenSigner
from tests.integration.helpers import assert_error, b64
from tests.support.servers import TOKEN_SECRET, Server
from tests.support.tenants import Tenant


async def _login(server: Server, username: str, password: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as c:
        return await c.post("/api/auth/login", json={"username": username, "password": password})


def _bearer(server: Server, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


async def test_a_token_from_login_works_and_refreshes(server: Server, tenant: Tenant, make_user: Any) -> None:
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


def _path_values(message_id: str, user_id: str) -> dict[str, str]:
    """A plausible value for each path parameter the document names."""
    return {
        "topic": "walked",
        "message_id": message_id,
        # Another user of the tenant: a DELETE of the token's own user would end the token halfway through the walk.
        "user_id": user_id,
        "grant_id": str(uuid.uuid4()),
        "job_id": str(uuid.uuid4()),
        # Not the tenant's own slug: tenant routes are the platform's (403 here), and a walk that deleted its own
        # tenant if that ever changed would be the worst way to find out.
        "slug": f"elsewhere-{uuid.uuid4().hex[:10]}",
        "group": "g",
        "key": "k",
        "name": "nightly",
        "username": f"someone-{uuid.uuid4().hex[:10]}",
    }


async def test_every_bearer_operation_of_the_openapi_document_takes_a_token_and_refuses_a_bad_one(
    server: Server, tenant: Tenant, make_user: Any, db: asyncpg.Pool[Any]
) -> None:
    """Each /api operation of the served document, sent the same request three times: with a token from login,
    a forged one and an expired one. Only the token differs, so an answer other than 401 to the first (whatever
    the request's own fate: 400, 403, 404) means the token was read and taken, and the bad ones must get 401.
    Operations the document leaves without security are public and skipped; one whose security names no bearer
    (the console's session login, which takes a password) must refuse even a good token."""
    username, password = await make_user("tenant_admin", tenant)
    token = (await _login(server, username, password)).json()["token"]
    claims = jwt.decode(token, options={"verify_signature": False})
    now = int(time.time())
    bad = {
        "forged": jwt.encode(claims, "another-key-another-key-another-key!", algorithm="HS256"),
        "expired": jwt.encode({**claims, "iat": now - 3600, "exp": now - 60}, TOKEN_SECRET, algorithm="HS256"),
    }
    other_user = await db.fetchval(
        "SELECT id::text FROM users WHERE username = $1", (await make_user("member", tenant))[0]
    )
    async with _bearer(server, token) as c:
        document = (await c.get("/schema/openapi.json")).json()
        r = await c.post("/api/messages", json={"topic": "walked", "payload": b64("x")})
        assert r.status_code == 201, r.text
        values = _path_values(r.json()["id"], other_user)
    wrong: list[str] = []
    walked = 0
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as c:
        for template, operations in document["paths"].items():
            if not template.startswith("/api/"):
                continue
            for method, operation in operations.items():
                schemes = {name for requirement in operation.get("security", []) for name in requirement}
                if not schemes:
                    continue
                # str.format raises KeyError on a parameter without a value above: a new route gets one, not a skip.
                path = template.format_map(values)
                body = {} if "requestBody" in operation else None  # JSON, or the cross-site check answers 415 first
                walked += 1
                for label, credential in (("valid", token), *bad.items()):
                    headers = {"Authorization": f"Bearer {credential}"}
                    r = await c.request(method.upper(), path, json=body, headers=headers)
                    refused = r.status_code == 401 and r.json().get("code") == "unauthorized"
                    should_refuse = label != "valid" or "bearerToken" not in schemes
                    # A 5xx says nothing about the token, and is a fault of its own.
                    if refused != should_refuse or r.status_code >= 500:
                        wrong.append(f"{label} token, {method.upper()} {template}: {r.status_code} {r.text[:160]}")
    assert wrong == [], "\n".join(wrong)
    assert walked > 60, walked  # the walk reached the document's operations (73 when this was written)


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


async def test_a_token_chain_ends_twelve_hours_after_its_password_login(
    server: Server, tenant: Tenant, make_user: Any, db: asyncpg.Pool[Any]
) -> None:
    """Contract, "Bounds...": refreshes continue the chain of the password login that began it, and none outlives
    `token_max_age` (12 hours): a stolen token cannot be refreshed forever."""
    username, password = await make_user("member", tenant)
    token = (await _login(server, username, password)).json()["token"]
    began = jwt.decode(token, options={"verify_signature": False})["auth_time"]
    async with _bearer(server, token) as c:
        refreshed = (await c.post("/api/auth/refresh")).json()["token"]
    assert jwt.decode(refreshed, options={"verify_signature": False})["auth_time"] == began
    # a chain that began 12 hours less 2 seconds ago: its tokens end with it, however recently refreshed
    row = await db.fetchrow(
        """SELECT u.id, u.username, u.password_hash, u.role, u.tenant_id, t.slug, t.status
           FROM users AS u JOIN tenants AS t ON t.id = u.tenant_id WHERE u.username = $1""",
        username,
    )
    now = int(time.time())
    old = TokenSigner(TOKEN_SECRET.encode(), 900, 43200).issue(UserRecord(*row), began_at=now - 43200 + 2)
    async with _bearer(server, old) as c:
        r = await c.post("/api/auth/refresh")
        assert r.status_code == 200, r.text
        last = r.json()["token"]
        assert jwt.decode(last, options={"verify_signature": False})["exp"] <= now + 2  # not beyond the chain
    await asyncio.sleep(2.5)
    async with _bearer(server, last) as c:
        assert_error(await c.post("/api/auth/refresh"), 401, "unauthorized")
    assert (await _login(server, username, password)).status_code == 200  # the password begins a new chain
