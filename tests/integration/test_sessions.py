"""Admin UI sessions: cookie login, CSRF, logout, revocation, and failed-login limiting."""

from __future__ import annotations

import asyncio
import time

import httpx

from tests.integration.helpers import assert_error, b64
from tests.support.servers import ADMIN, start_server, stop_server


def cookie_client(base_url: str, response: httpx.Response, csrf: bool = True) -> httpx.AsyncClient:
    """A client that authenticates only with the session cookie a login answered (as a browser would)."""
    jar = httpx.Cookies()
    for name, value in response.cookies.items():
        jar.set(name, value)
    headers = {"X-CSRF-Token": response.cookies["skiplock_csrf"]} if csrf else {}
    return httpx.AsyncClient(base_url=base_url, cookies=jar, headers=headers, timeout=30)


async def test_login_sets_strict_httponly_cookies_and_the_session_acts_for_the_user(server, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    auth = await make_user("tenant_admin", tenant)
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as anon:
        r = await anon.post("/api/auth/session", auth=auth)
        assert r.status_code == 204, r.text
        set_cookies = r.headers.get_list("set-cookie")
        session = next(c for c in set_cookies if c.startswith("skiplock_session="))
        csrf = next(c for c in set_cookies if c.startswith("skiplock_csrf="))
        assert "HttpOnly" in session and "samesite=strict" in session.lower() and "Path=/" in session
        assert "Secure" not in session  # plain HTTP here; over TLS the cookie is Secure
        assert "HttpOnly" not in csrf and "samesite=strict" in csrf.lower()
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as nobody:
            assert_error(await nobody.post("/api/auth/session"), 401, "unauthorized")
        async with cookie_client(server.base_url, r) as ui:
            assert (await ui.get("/api/auth/me")).json() == {
                "username": auth[0],
                "role": "tenant_admin",
                "tenant": tenant.slug,
                "grants": [],  # an admin needs none
            }
            r2 = await ui.post("/api/messages", json={"topic": "ui", "payload": b64("x")})
            assert r2.status_code == 201, r2.text
            assert (await ui.get("/api/messages", params={"topic": "ui"})).json()["total"] == 1
            assert_error(await ui.post("/api/auth/session"), 401, "unauthorized")  # a login needs credentials


async def test_cookie_requests_that_change_state_need_the_csrf_token(server, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    auth = await make_user("tenant_admin", tenant)
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as anon:
        login = await anon.post("/api/auth/session", auth=auth)
    async with cookie_client(server.base_url, login, csrf=False) as forged:
        assert (await forged.get("/api/messages")).status_code == 200  # safe methods need no token
        body = {"topic": "ui", "payload": b64("x")}
        assert_error(await forged.post("/api/messages", json=body), 403, "forbidden")
        wrong = {"X-CSRF-Token": "not-the-token"}
        assert_error(await forged.post("/api/messages", json=body, headers=wrong), 403, "forbidden")
        assert_error(await forged.delete("/api/auth/session"), 403, "forbidden")
        assert (await forged.get("/api/messages", params={"topic": "ui"})).json()["total"] == 0  # nothing stored


async def test_logout_ends_the_session(server, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    auth = await make_user("member", tenant)
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as anon:
        login = await anon.post("/api/auth/session", auth=auth)
    async with cookie_client(server.base_url, login) as ui:
        assert (await ui.get("/api/auth/me")).status_code == 200
        r = await ui.delete("/api/auth/session")
        assert r.status_code == 204
        assert any(c.startswith("skiplock_session=") and "Max-Age=0" in c for c in r.headers.get_list("set-cookie"))
    async with cookie_client(server.base_url, login) as replay:  # the old cookie, kept by an attacker
        assert_error(await replay.get("/api/auth/me"), 401, "unauthorized")


async def test_sessions_cross_instances_and_end_with_the_password(server, server_env, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    second = await asyncio.to_thread(start_server, server_env)
    try:
        username, password = await make_user("tenant_admin", tenant)
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as anon:
            login = await anon.post("/api/auth/session", auth=(username, password))
        async with (
            cookie_client(second.base_url, login) as on_second,
            httpx.AsyncClient(base_url=server.base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}) as admin,
        ):
            assert (await on_second.get("/api/auth/me")).json()["username"] == username
            users = (await admin.get("/api/users", params={"limit": 200})).json()["items"]
            user_id = next(u["id"] for u in users if u["username"] == username)
            r = await admin.patch(f"/api/users/{user_id}", json={"password": "a completely new password"})
            assert r.status_code == 200
            started = time.monotonic()
            while (await on_second.get("/api/auth/me")).status_code != 401:
                assert time.monotonic() - started < 1.0
                await asyncio.sleep(0.02)
    finally:
        stop_server(second)
