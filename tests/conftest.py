"""Shared fixtures: real Postgres and Redis servers, a migrated database, a running Skiplock, fresh tenants.

Where the servers come from, in order (`tests.support.servers`): a URL from the environment
(`SKIPLOCK_TEST_DATABASE_URL`, `SKIPLOCK_TEST_REDIS_URL`); else testcontainers when a Docker engine answers; else
the embedded servers that `make run` uses. Each session migrates one new database with Alembic; each test gets its
own tenant, which is the product's own isolation boundary, so tests never see each other's rows.
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from typing import Any

import asyncpg
import grpc
import httpx
import pytest

from mq.db import introspection
from mq.db.engine import asyncpg_dsn
from mq.tenancy.passwords import hash_password
from tests.support.grpc_calls import login_token
from tests.support.servers import (
    ADMIN,
    TOKEN_SECRET,
    Server,
    database_url_on,
    measure_coverage,
    migrated_database,
    new_database,
    postgres_server,
    redis_server,
    report_coverage,
    start_server,
    stop_server,
    system_redis_server,
)
from tests.support.tenants import Tenant


def pytest_sessionstart(session: pytest.Session) -> None:
    measure_coverage()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Coverage of the Skiplock servers the tests ran (subprocesses), reported and not gated."""
    if summary := report_coverage():
        terminalreporter.write_line(f"coverage of the servers under test: {summary}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Note where each server's log stood before a test, so that a failure can show what the servers said."""
    servers = [v for v in getattr(item, "funcargs", {}).values() if isinstance(v, Server)]
    item.stash[_LOG_MARKS] = {s.log_path: s.log_path.stat().st_size for s in servers if s.log_path.exists()}
    yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test's report carries its servers' warnings and errors logged while it ran (a 503's cause)."""
    report = yield
    if report.when == "call" and report.failed:
        for path, mark in item.stash.get(_LOG_MARKS, {}).items():
            with path.open("rb") as log:
                log.seek(mark)
                lines = log.read().decode(errors="replace").splitlines()
            said = [line for line in lines if any(level in line for level in _LOUD)]
            if said:
                report.sections.append((f"server log {path.name}", "\n".join(said[-40:])))
    return report


_LOG_MARKS = pytest.StashKey[dict[Any, int]]()
_LOUD = ('"level": "warning"', '"level": "error"', '"level": "critical"', "Traceback")


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """A Postgres server URL (its maintenance database)."""
    with postgres_server() as url:
        yield url


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture(scope="session")
def redis7_url() -> Iterator[str | None]:
    """A Redis 7 (production's), beside the session's `redis_url` (the embedded 6.2 `make run` ships): Redis-
    specific behaviour is tested on both. `SKIPLOCK_TEST_REDIS7_URL`, else Debian's redis-server; None when
    neither is there (CI installs it and fails rather than skip)."""
    if url := os.environ.get("SKIPLOCK_TEST_REDIS7_URL"):
        yield url
        return
    with system_redis_server() as url:
        if url is None and os.environ.get("CI"):
            raise RuntimeError("CI needs Redis 7: apt-get install redis-server")
        yield url


@pytest.fixture(params=["redis-6.2", "redis-7"])
def any_redis_url(request: pytest.FixtureRequest, redis_url: str, redis7_url: str | None) -> str:
    """Each Redis the product supports in turn: the embedded one (6.2) and a Redis 7."""
    if request.param == "redis-6.2":
        return redis_url
    if redis7_url is None:
        pytest.skip("no Redis 7 here (apt-get install redis-server)")
    return redis7_url


@pytest.fixture
async def empty_database(pg_server_url: str) -> AsyncIterator[str]:
    """A new, unmigrated database on the session's server (what a first deployment finds); dropped afterwards."""
    async with new_database(database_url_on(pg_server_url, "postgres"), "skiplock_empty") as url:
        yield url


@pytest.fixture(scope="session")
async def database_url(pg_server_url: str) -> AsyncIterator[str]:
    """A new database for this session, migrated to head with Alembic."""
    async with migrated_database(pg_server_url) as url:
        yield url


@pytest.fixture(scope="session")
async def db(database_url: str) -> AsyncIterator[asyncpg.Pool[Any]]:
    """A pool for tests that look at or arrange rows directly."""
    pool = await asyncpg.create_pool(
        asyncpg_dsn(database_url), min_size=1, max_size=4, connection_class=introspection.Connection
    )
    assert pool is not None
    yield pool
    await pool.close()


@pytest.fixture(scope="session")
def server_env(database_url: str, redis_url: str) -> dict[str, str]:
    return {
        "SKIPLOCK_DATABASE_URL": database_url,
        "SKIPLOCK_REDIS_URL": redis_url,
        "SKIPLOCK_MIGRATE_ON_START": "false",
        "SKIPLOCK_DEFAULT_TENANT": "",
        # Many tests fail logins on purpose, all from 127.0.0.1; the limiter has its own test and server.
        "SKIPLOCK_LOGIN_FAILURE_LIMIT": "100000",
        "SKIPLOCK_LOGIN_FAILURE_LIMIT_PER_ADDRESS": "100000",
        # Tests of many tenants follow each other within seconds, so each would count as another's neighbour:
        # tests/integration/test_fair_share.py turns the default enqueue rate on for a server of its own.
        "SKIPLOCK_TENANT_ENQUEUE_RATE": "0",
        # Reapers would change messages under tests that watch them; tests/integration/test_workers.py runs them.
        "SKIPLOCK_RUN_WORKERS": "false",
        # A known key, so that tests can forge the tokens a server must refuse (tests/integration/test_tokens.py)
        "SKIPLOCK_TOKEN_SECRET": TOKEN_SECRET,
    }


@pytest.fixture(scope="session")
def server(server_env: dict[str, str]) -> Iterator[Server]:
    srv = start_server(server_env)
    yield srv
    stop_server(srv)


@pytest.fixture(scope="session")
def second_server(server_env: dict[str, str]) -> Iterator[Server]:
    """Another API instance on the same Postgres and Redis, for behaviour that must hold across instances."""
    srv = start_server(server_env)
    yield srv
    stop_server(srv)


@pytest.fixture
async def tenant(db: asyncpg.Pool[Any]) -> Tenant:
    slug = f"t-{uuid.uuid4().hex[:12]}"
    tenant_id = await db.fetchval("INSERT INTO tenants (slug, name) VALUES ($1, $1) RETURNING id", slug)
    return Tenant(tenant_id, slug)


@pytest.fixture
async def client(server: Server, tenant: Tenant) -> AsyncIterator[httpx.AsyncClient]:
    """The platform admin addressing this test's tenant."""
    async with httpx.AsyncClient(
        base_url=server.base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}, timeout=30
    ) as c:
        yield c


@pytest.fixture
async def channel(server: Server) -> AsyncIterator[grpc.aio.Channel]:
    """A gRPC channel to the session's server (calls carry their own token: `tests.support.grpc_calls.bearer`)."""
    async with grpc.aio.insecure_channel(server.grpc_address) as c:
        yield c


@pytest.fixture
async def admin_token(server: Server, tenant: Tenant, make_user: Callable[..., Any]) -> str:
    """A bearer token of a tenant admin of this test's tenant (for gRPC calls: `tests.support.grpc_calls.bearer`)."""
    return await login_token(server, *(await make_user("tenant_admin", tenant)))


@pytest.fixture
async def make_client(server: Server) -> AsyncIterator[Callable[..., httpx.AsyncClient]]:
    """Clients with other credentials or headers; closed after the test."""
    made: list[httpx.AsyncClient] = []

    def make(
        auth: tuple[str, str] | None = ADMIN, headers: dict[str, str] | None = None, limits: httpx.Limits | None = None
    ) -> httpx.AsyncClient:
        c = httpx.AsyncClient(
            base_url=server.base_url, auth=auth, headers=headers or {}, timeout=60, limits=limits or httpx.Limits()
        )
        made.append(c)
        return c

    yield make
    for c in made:
        await c.aclose()


@pytest.fixture
async def make_user(db: asyncpg.Pool[Any]) -> Callable[..., Any]:
    """Insert a user of a role in a tenant; returns (username, password). Users made this way share one password of
    the session, hashed once (argon2 takes about 170 ms a hash here); each has its own name."""

    async def make(role: str, tenant: Tenant | None) -> tuple[str, str]:
        username = f"u-{uuid.uuid4().hex[:10]}"
        password, password_hash = _shared_password()
        await db.execute(
            "INSERT INTO users (id, tenant_id, username, password_hash, role) VALUES ($1, $2, $3, $4, $5)",
            uuid.uuid4(),
            tenant.id if tenant else None,
            username,
            password_hash,
            role,
        )
        return username, password

    return make


@functools.cache
def _shared_password() -> tuple[str, str]:
    """The password of the users `make_user` makes in this session, and its hash."""
    password = f"pw-{uuid.uuid4().hex}"
    return password, hash_password(password)
