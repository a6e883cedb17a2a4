"""Operations: readiness follows Postgres and Redis going away and coming back, logs are JSON lines with request
ids and never hold secrets, and a stopping server answers its long polls and exits cleanly."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from typing import Any

import httpx

from skiplock.local import EmbeddedPostgres, EmbeddedRedis
from tests.integration.helpers import b64, long_polls_waiting
from tests.support.servers import ADMIN, Server, scratch_dir, start_server, stop_server


async def wait_for_ready(base_url: str, status: int, part: str | None = None, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(base_url=base_url, timeout=5) as c:
        while True:
            r = await c.get("/readyz")
            body: dict[str, Any] = r.json()
            if r.status_code == status and (part is None or body["checks"][part] != "ok"):
                return body
            assert time.monotonic() < deadline, f"/readyz stayed {r.status_code}: {body}"
            await asyncio.sleep(0.2)


async def test_readiness_follows_postgres_and_redis() -> None:
    # Servers of this test's own, to stop and start again (on the same ports, with the same data).
    scratch = scratch_dir()
    pg, redis = EmbeddedPostgres(scratch / "pg"), EmbeddedRedis(scratch / "redis")
    await asyncio.to_thread(pg.start)
    await asyncio.to_thread(redis.start)
    env = {
        "SKIPLOCK_DATABASE_URL": pg.url,
        "SKIPLOCK_REDIS_URL": redis.url,
        "SKIPLOCK_RUN_WORKERS": "false",
        "SKIPLOCK_MIGRATE_ON_START": "true",  # a database of its own: with a URL the server migrates only when told
    }
    srv = None
    try:
        srv = await asyncio.to_thread(start_server, env)
        async with httpx.AsyncClient(base_url=srv.base_url) as c:
            r = await c.get("/healthz")
            assert r.status_code == 200
        await wait_for_ready(srv.base_url, 200)

        await asyncio.to_thread(redis.stop)
        body = await wait_for_ready(srv.base_url, 503, "redis")
        assert body["code"] == "unavailable" and body["checks"]["postgres"] == "ok"
        await asyncio.to_thread(redis.start)
        await wait_for_ready(srv.base_url, 200)

        await asyncio.to_thread(pg.stop)
        body = await wait_for_ready(srv.base_url, 503, "postgres")
        assert body["checks"]["redis"] == "ok"
        async with httpx.AsyncClient(base_url=srv.base_url) as c:
            assert (await c.get("/healthz")).status_code == 200  # liveness does no I/O
        await asyncio.to_thread(pg.start)
        await wait_for_ready(srv.base_url, 200)
    finally:
        if srv is not None:
            await asyncio.to_thread(stop_server, srv)
        await asyncio.to_thread(redis.stop)
        await asyncio.to_thread(pg.stop)


async def test_logs_are_json_with_request_ids_and_hold_no_secrets(server_env, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    srv: Server = await asyncio.to_thread(
        start_server, {**server_env, "SKIPLOCK_LOG_LEVEL": "debug", "SKIPLOCK_LOG_FORMAT": "json"}
    )
    username, password = await make_user("tenant_admin", tenant)
    payload = b64("top-secret-payload-value")
    try:
        async with httpx.AsyncClient(base_url=srv.base_url) as c:
            r = await c.post(
                "/api/messages",
                json={"topic": "logs", "payload": payload, "metadata": {"card": "4111-1111"}},
                auth=(username, password),
                headers={"X-Request-ID": "trace-abc-123"},
            )
            assert r.status_code == 201 and r.headers["x-request-id"] == "trace-abc-123"
            r = await c.get("/api/topics", auth=(username, "wrong-secret-password-123"))
            assert r.status_code == 401
            generated = r.headers["x-request-id"]
            assert len(generated) >= 16
            r = await c.get("/api/topics", auth=(username, password), headers={"X-Request-ID": "bad id\twith tab"})
            assert r.headers["x-request-id"] != "bad id\twith tab"
            r = await c.post("/api/auth/session", auth=(username, password))
            assert r.status_code == 204
            session = r.cookies.get("skiplock_session")
            assert session
        await asyncio.to_thread(stop_server, srv)
        log = srv.log()
        entries = [json.loads(line) for line in log.splitlines() if line.strip()]
        requests = [e for e in entries if e.get("message") == "request"]
        assert any(e.get("client_request_id") == "trace-abc-123" and e["route"] == "/api/messages" for e in requests)
        assert any(e.get("request_id") == generated and e["status"] == 401 for e in requests)
        basic = httpx.BasicAuth(username, password)._auth_header
        for secret in (password, "wrong-secret-password-123", payload, "top-secret", "4111-1111", session, basic):
            assert secret not in log
        assert "authorization" not in log.lower()
    finally:
        await asyncio.to_thread(stop_server, srv)


async def test_a_stopping_server_answers_long_polls_and_exits(server_env, tenant) -> None:  # type: ignore[no-untyped-def]
    srv = await asyncio.to_thread(start_server, {**server_env, "SKIPLOCK_RUN_WORKERS": "true"})
    try:
        async with httpx.AsyncClient(
            base_url=srv.base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}, timeout=30
        ) as c:
            poll = asyncio.create_task(c.post("/api/messages/dequeue", json={"topic": "idle", "wait_seconds": 20}))
            await long_polls_waiting(srv.base_url)
            started = time.monotonic()
            srv.process.send_signal(signal.SIGTERM)
            r = await poll
            assert r.status_code == 200 and r.json() == {"messages": []}
            assert time.monotonic() - started < 5
        code = await asyncio.to_thread(srv.process.wait, 15)
        assert code == 0, srv.log()
    finally:
        await asyncio.to_thread(stop_server, srv)
