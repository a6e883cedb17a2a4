"""Logins under attack (docs/security.md): counters that expire on every supported Redis, limits per (username,
address), per address and per username that never lock out a client that knows its password, bounded password
hashing, no username enumeration, the default admin password, password changes, and logouts that announce only
sessions that ended."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest
import redis.asyncio as aioredis

from mq import errors
from mq.tenancy.invalidation import CHANNEL
from mq.tenancy.limits import LoginLimiter
from skiplock.local import free_port
from tests.integration.helpers import assert_error
from tests.support.servers import ADMIN, ROOT, Server, start_server, stop_server
from tests.support.tenants import Tenant


async def test_failed_login_counters_expire_on_every_supported_redis(any_redis_url: str) -> None:
    redis = aioredis.from_url(any_redis_url)
    try:
        limiter = LoginLimiter(redis, per_pair=3, per_address=100, window_seconds=1, per_username=100)
        name = f"u-{uuid.uuid4().hex}"
        for _ in range(3):
            await limiter.failed("10.1.1.1", name)
        keys = [k async for k in redis.scan_iter(match="skiplock:login-failures:*")]
        ttls = [await redis.ttl(k) for k in keys]
        assert keys and all(t > 0 for t in ttls), ttls  # none is left without a TTL: none locks out forever
        with pytest.raises(errors.RateLimited):
            await limiter.check("10.1.1.1", name)
        await limiter.check("10.2.2.2", name)  # another address is not limited for that user
        deadline = time.monotonic() + 5
        while True:  # the window passes
            try:
                await limiter.check("10.1.1.1", name)
                break
            except errors.RateLimited:
                assert time.monotonic() < deadline, "the counters never expired"
                await asyncio.sleep(0.1)
    finally:
        await redis.aclose()


@pytest.fixture(scope="module")
def strict_server(server_env: dict[str, str], redis_url: str) -> Any:
    """A server with small login limits of its own (its own Redis database): pair 3, address 6, username 9;
    credentials cached for 1 s; one argon2 at a time with two waiting."""
    base, _, _db = redis_url.rpartition("/")
    env = {
        **server_env,
        "SKIPLOCK_REDIS_URL": f"{base}/6",
        "SKIPLOCK_LOGIN_FAILURE_LIMIT": "3",
        "SKIPLOCK_LOGIN_FAILURE_LIMIT_PER_ADDRESS": "6",
        "SKIPLOCK_LOGIN_FAILURE_LIMIT_PER_USERNAME": "9",
        "SKIPLOCK_LOGIN_FAILURE_WINDOW_SECONDS": "600",
        "SKIPLOCK_AUTH_CACHE_TTL_SECONDS": "1",
        "SKIPLOCK_PASSWORD_CHECK_CONCURRENCY": "1",
        "SKIPLOCK_PASSWORD_CHECK_QUEUE": "2",
    }
    srv = start_server(env)
    yield srv
    stop_server(srv)


@pytest.fixture
async def strict(strict_server: Server) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=strict_server.base_url, timeout=30) as c:
        yield c


def _from(address: str) -> dict[str, str]:
    """Requests as if from `address`, through the trusted local proxy (SKIPLOCK_TRUSTED_PROXIES)."""
    return {"X-Forwarded-For": address}


async def test_someone_elses_failures_never_lock_out_a_client_that_knows_its_password(
    strict: httpx.AsyncClient, make_user: Any, tenant: Tenant
) -> None:
    username, password = await make_user("tenant_admin", tenant)
    producer = _from("10.0.0.5")
    assert (await strict.get("/api/topics", auth=(username, password), headers=producer)).status_code == 200
    for n in range(3):  # one attacker guesses from its address until it is stopped
        r = await strict.get("/api/topics", auth=(username, f"guess {n}"), headers=_from("10.6.6.6"))
        assert_error(r, 401, "unauthorized")
    r = await strict.get("/api/topics", auth=(username, "one more guess"), headers=_from("10.6.6.6"))
    assert_error(r, 429, "rate_limited")  # no more guesses from there, not even checked
    assert int(r.headers["Retry-After"]) > 0
    # The producer goes on, past its cache's lifetime (1 s), and a new client elsewhere logs in.
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        assert (await strict.get("/api/topics", auth=(username, password), headers=producer)).status_code == 200
        await asyncio.sleep(0.1)
    r = await strict.post("/api/auth/session", auth=(username, password), headers=_from("10.0.0.7"))
    assert r.status_code == 204


async def test_a_distributed_guess_meets_the_username_ceiling(
    strict: httpx.AsyncClient, make_user: Any, tenant: Tenant
) -> None:
    username, password = await make_user("tenant_admin", tenant)
    assert (await strict.get("/api/topics", auth=(username, password), headers=_from("10.1.0.1"))).status_code == 200
    for attacker in range(3):
        for n in range(3):
            r = await strict.get("/api/topics", auth=(username, f"g{n}"), headers=_from(f"10.7.0.{attacker}"))
            assert_error(r, 401, "unauthorized")
    r = await strict.get("/api/topics", auth=(username, "a fresh guess"), headers=_from("10.1.0.99"))
    assert_error(r, 429, "rate_limited")  # 9 failures on the username: even a fresh address may not guess
    assert (await strict.get("/api/topics", auth=(username, password), headers=_from("10.1.0.1"))).status_code == 200


async def test_one_address_spraying_usernames_is_stopped(
    strict: httpx.AsyncClient, make_user: Any, tenant: Tenant
) -> None:
    sprayer = _from("10.8.8.8")
    for _ in range(6):
        r = await strict.get("/api/topics", auth=(f"ghost-{uuid.uuid4().hex[:8]}", "nope nope"), headers=sprayer)
        assert_error(r, 401, "unauthorized")
    username, password = await make_user("tenant_admin", tenant)
    assert_error(await strict.get("/api/topics", auth=(username, password), headers=sprayer), 429, "rate_limited")
    assert (await strict.get("/api/topics", auth=(username, password), headers=_from("10.8.8.9"))).status_code == 200


async def test_password_hashing_is_bounded_and_verified_clients_are_served_meanwhile(
    strict: httpx.AsyncClient, make_user: Any, tenant: Tenant
) -> None:
    username, password = await make_user("tenant_admin", tenant)
    assert (await strict.get("/api/topics", auth=(username, password), headers=_from("10.3.0.1"))).status_code == 200

    async def guess(n: int) -> httpx.Response:
        return await strict.get(
            "/api/topics", auth=(f"ghost-{n}-{uuid.uuid4().hex[:6]}", "x"), headers=_from(f"10.9.{n}.1")
        )

    burst = asyncio.gather(*(guess(n) for n in range(20)))
    await asyncio.sleep(0.05)
    served = await strict.get("/api/topics", auth=(username, password), headers=_from("10.3.0.1"))
    responses = await burst
    assert served.status_code == 200
    statuses = sorted(r.status_code for r in responses)
    assert set(statuses) <= {401, 503} and statuses.count(503) >= 10, statuses  # 1 running + 2 waiting at most
    refused = next(r for r in responses if r.status_code == 503)
    assert_error(refused, 503, "unavailable")
    assert refused.headers["Retry-After"] == "1"


async def test_a_tenants_admins_cannot_learn_other_tenants_usernames(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], make_client: Any, tenant: Tenant
) -> None:
    other_slug = f"o-{uuid.uuid4().hex[:10]}"
    await db.execute("INSERT INTO tenants (slug, name) VALUES ($1, $1)", other_slug)
    other = make_client(headers={"X-Tenant": other_slug})
    mine = await client.post("/api/users", json={"username": "alice", "password": "long enough password"})
    theirs = await other.post("/api/users", json={"username": "alice", "password": "long enough password"})
    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["username"] == f"alice@{tenant.slug}" and theirs.json()["username"] == f"alice@{other_slug}"
    again = await client.post("/api/users", json={"username": f"alice@{tenant.slug}", "password": "x" * 12})
    assert_error(again, 409, "already_exists")  # only its own names collide
    # Asking for another tenant's namespace just lands in one's own.
    r = await client.post("/api/users", json={"username": f"alice@{other_slug}", "password": "x" * 12})
    assert r.status_code == 201 and r.json()["username"] == f"alice@{other_slug}@{tenant.slug}"
    login = make_client(auth=(f"alice@{tenant.slug}", "long enough password"))
    assert (await login.get("/api/auth/me")).json()["tenant"] == tenant.slug


def _serve_once(env: dict[str, str], timeout: float = 60) -> tuple[int | None, str]:
    """Start `skiplock serve`: (its exit code, or None when it came up and was stopped; its log)."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "skiplock", "serve"],
            cwd=ROOT,
            env={**env, "SKIPLOCK_PORT": str(port)},
            stdout=log,
            stderr=log,
        )
        deadline = time.monotonic() + timeout
        code: int | None = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                code = proc.returncode
                break
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    proc.terminate()
                    proc.wait(30)
                    break
            time.sleep(0.1)
        else:
            proc.kill()
            proc.wait()
            raise AssertionError("the server neither came up nor exited")
        log.seek(0)
        return code, log.read().decode(errors="replace")


async def test_the_default_admin_password_is_refused_off_loopback(server_env: dict[str, str]) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("SKIPLOCK_")}
    env.update(server_env)
    env.update({"SKIPLOCK_ADMIN_PASSWORD": ADMIN[1], "SKIPLOCK_HOST": "0.0.0.0", "SKIPLOCK_LOG_LEVEL": "warning"})
    code, log = await asyncio.to_thread(_serve_once, env)
    assert code not in (None, 0) and "default password" in log, log
    assert ADMIN[1] not in log  # the password itself is never printed
    allowed = {**env, "SKIPLOCK_ALLOW_DEFAULT_ADMIN_PASSWORD": "true"}
    code, log = await asyncio.to_thread(_serve_once, allowed)
    assert code is None, log
    # On loopback the default is fine: that is `make run` (every other test server runs so).


async def test_off_loopback_metrics_need_a_token_or_an_explicit_opt_in(server_env: dict[str, str]) -> None:
    env = {
        **server_env,
        "SKIPLOCK_HOST": "0.0.0.0",
        "SKIPLOCK_ALLOW_DEFAULT_ADMIN_PASSWORD": "true",
    }
    for extra, status in (({}, 403), ({"SKIPLOCK_METRICS_PUBLIC": "true"}, 200)):
        srv = await asyncio.to_thread(start_server, {**env, **extra})
        try:
            r = httpx.get(f"{srv.base_url}/metrics")
            assert r.status_code == status, r.text
            if status == 403:
                assert_error(r, 403, "forbidden")
        finally:
            stop_server(srv)


async def test_platform_admins_change_passwords_and_old_ones_stop_at_once(
    make_user: Any, make_client: Any, server: Server, second_server: Server
) -> None:
    name, old = await make_user("platform_admin", None)
    on_first, on_second = make_client(auth=(name, old)), make_client(auth=(name, old))
    on_second.base_url = httpx.URL(second_server.base_url)
    assert (await on_first.get("/api/tenants")).status_code == 200
    assert (await on_second.get("/api/tenants")).status_code == 200  # cached on both instances
    session = make_client(auth=(name, old))
    assert (await session.post("/api/auth/session")).status_code == 204
    session.auth = None

    wrong = await on_first.put(
        "/api/auth/password", json={"current_password": "not it at all", "new_password": "n" * 12}
    )
    assert_error(wrong, 403, "forbidden")
    short = await on_first.put("/api/auth/password", json={"current_password": old, "new_password": "short"})
    assert_error(short, 400, "invalid_request")
    new = "a brand new password"
    r = await on_first.put("/api/auth/password", json={"current_password": old, "new_password": new})
    assert r.status_code == 204
    deadline = time.monotonic() + 2
    while (await on_second.get("/api/tenants")).status_code != 401:  # the other instance hears of it
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    assert_error(await on_first.get("/api/tenants"), 401, "unauthorized")
    assert_error(await session.get("/api/auth/me"), 401, "unauthorized")  # its sessions ended
    assert (await make_client(auth=(name, new)).get("/api/tenants")).status_code == 200

    # Another platform admin sets it; members and tenant admins cannot.
    r = await make_client().put(f"/api/admin/platform-admins/{name}/password", json={"password": "set by a peer!"})
    assert r.status_code == 204
    assert (await make_client(auth=(name, "set by a peer!")).get("/api/tenants")).status_code == 200
    r = await make_client().put("/api/admin/platform-admins/nobody-here/password", json={"password": "x" * 12})
    assert_error(r, 404, "not_found")


async def test_only_a_logout_that_ended_a_session_is_announced(
    redis_url: str, make_client: Any, server: Server
) -> None:
    redis = aioredis.from_url(redis_url)
    pubsub = redis.pubsub()
    await pubsub.subscribe(CHANNEL)
    try:
        await pubsub.get_message(timeout=1)  # the subscription's confirmation

        async def announced() -> bool:
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline:
                if await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.1):
                    return True
            return False

        basic = make_client()
        r = await basic.delete("/api/auth/session", headers={"Cookie": "skiplock_session=made-up"})
        assert r.status_code == 204
        assert not await announced()
        login = make_client()
        assert (await login.post("/api/auth/session")).status_code == 204
        csrf = login.cookies["skiplock_csrf"]
        login.auth = None
        assert (await login.delete("/api/auth/session", headers={"X-CSRF-Token": csrf})).status_code == 204
        assert await announced()
    finally:
        await pubsub.aclose()
        await redis.aclose()


async def test_the_session_cookie_is_secure_behind_a_tls_proxy(make_client: Any) -> None:
    c = make_client()
    plain = await c.post("/api/auth/session")
    assert "secure" not in plain.headers["set-cookie"].lower()
    behind = await c.post("/api/auth/session", headers={"X-Forwarded-Proto": "https"})
    assert all("secure" in v.lower() for v in behind.headers.get_list("set-cookie"))


async def test_token_logins_count_toward_the_same_limits(
    strict: httpx.AsyncClient, make_user: Any, tenant: Tenant
) -> None:
    """`POST /api/auth/login` (queue-ti's) is refused past the limits as Basic credentials are."""
    username, password = await make_user("tenant_admin", tenant)

    async def login(secret: str, address: str) -> httpx.Response:
        body = {"username": username, "password": secret}
        return await strict.post("/api/auth/login", json=body, headers=_from(address))

    for n in range(3):
        assert_error(await login(f"guess {n}", "10.77.0.1"), 401, "unauthorized")
    assert_error(await login(password, "10.77.0.1"), 429, "rate_limited")  # even the right one, from there
    r = await login(password, "10.77.0.2")
    assert r.status_code == 200 and r.json()["token"]
