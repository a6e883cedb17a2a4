"""Shared fixtures: real Postgres and Redis servers, a migrated database, a running Skiplock, fresh tenants.

Where the servers come from, in order: a URL from the environment (`SKIPLOCK_TEST_DATABASE_URL`,
`SKIPLOCK_TEST_REDIS_URL`); else testcontainers when a Docker engine answers; else the embedded servers that
`make run` uses. Each session migrates one new database with Alembic; each test gets its own tenant, which is the
product's own isolation boundary, so tests never see each other's rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from mq.db.engine import asyncpg_dsn, migrate
from mq.tenancy.passwords import hash_password
from skiplock.local import EmbeddedPostgres, EmbeddedRedis, free_port

ROOT = Path(__file__).resolve().parents[1]
ADMIN = ("admin", "skiplock-admin")  # the product default, so the README quickstart runs as printed


def _scratch_dir() -> Path:
    # Traversable by the embedded Postgres' service user when the suite runs as root.
    path = Path(tempfile.mkdtemp(prefix="skiplock-test-"))
    path.chmod(0o755)
    return path


def _docker_answers() -> bool:
    """Whether a Docker engine answers, checked without leaving a client's sockets open."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        if host.startswith("unix://"):
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(1)
                s.connect(host[len("unix://") :])
        elif host.startswith("tcp://"):
            name, _, port = host[len("tcp://") :].partition(":")
            socket.create_connection((name, int(port or 2375)), timeout=1).close()
        else:
            return False
    except OSError:
        return False
    return True


def _docker_container(kind: str) -> Any:
    """A started testcontainers container, or None when no Docker engine answers."""
    if not _docker_answers():
        return None
    try:
        from docker.errors import DockerException

        if kind == "postgres":
            from testcontainers.community.postgres import PostgresContainer

            container: Any = PostgresContainer("postgres:16-alpine", driver=None)
        else:
            from testcontainers.community.redis import RedisContainer

            container = RedisContainer("redis:7-alpine")
        container.start()
        return container
    except (DockerException, ImportError, OSError, ConnectionError):
        return None
    except Exception as exc:
        if "docker" in type(exc).__module__.lower() or "Docker" in str(exc):
            return None
        raise


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """A Postgres server URL (its maintenance database)."""
    if url := os.environ.get("SKIPLOCK_TEST_DATABASE_URL"):
        yield url
        return
    container = _docker_container("postgres")
    if container is not None:
        yield container.get_connection_url()
        container.stop()
        return
    server = EmbeddedPostgres(_scratch_dir() / "pg", database="postgres")
    server.start()
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    if url := os.environ.get("SKIPLOCK_TEST_REDIS_URL"):
        yield url
        return
    container = _docker_container("redis")
    if container is not None:
        host, port = container.get_container_host_ip(), container.get_exposed_port(6379)
        yield f"redis://{host}:{port}/0"
        container.stop()
        return
    server = EmbeddedRedis(_scratch_dir() / "redis")
    server.start()
    yield server.url
    server.stop()


#: Where a Redis 7 comes from when no URL is given: Debian's `redis-server` (`.ci/run` installs it).
SYSTEM_REDIS = Path("/usr/bin/redis-server")


@pytest.fixture(scope="session")
def redis7_url() -> Iterator[str | None]:
    """A Redis 7 (production's), beside the session's `redis_url` (the embedded 6.2 `make run` ships): Redis-
    specific behaviour is tested on both. `SKIPLOCK_TEST_REDIS7_URL`, else Debian's redis-server; None when
    neither is there (CI installs it and fails rather than skip)."""
    if url := os.environ.get("SKIPLOCK_TEST_REDIS7_URL"):
        yield url
        return
    if not SYSTEM_REDIS.exists():
        if os.environ.get("CI"):
            raise RuntimeError("CI needs Redis 7: apt-get install redis-server")
        yield None
        return
    server = EmbeddedRedis(_scratch_dir() / "redis7", binary=SYSTEM_REDIS)
    server.start()
    yield server.url
    server.stop()


@pytest.fixture(params=["redis-6.2", "redis-7"])
def any_redis_url(request: pytest.FixtureRequest, redis_url: str, redis7_url: str | None) -> str:
    """Each Redis the product supports in turn: the embedded one (6.2) and a Redis 7."""
    if request.param == "redis-6.2":
        return redis_url
    if redis7_url is None:
        pytest.skip("no Redis 7 here (apt-get install redis-server)")
    return redis7_url


def _database_url(server_url: str, name: str) -> str:
    base, _, _ = asyncpg_dsn(server_url).rpartition("/")
    return f"{base}/{name}"


@pytest.fixture(scope="session")
async def database_url(pg_server_url: str) -> AsyncIterator[str]:
    """A new database for this session, migrated to head with Alembic."""
    name = f"skiplock_test_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(asyncpg_dsn(pg_server_url))
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = _database_url(pg_server_url, name)
    await asyncio.to_thread(migrate, url)  # Alembic runs its own event loop
    yield url
    await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    await admin.close()


@pytest.fixture(scope="session")
async def db(database_url: str) -> AsyncIterator[asyncpg.Pool[Any]]:
    """A pool for tests that look at or arrange rows directly."""
    pool = await asyncpg.create_pool(asyncpg_dsn(database_url), min_size=1, max_size=4)
    assert pool is not None
    yield pool
    await pool.close()


@dataclass
class Server:
    base_url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def start_server(env_overrides: dict[str, str], *, data_dir: Path | None = None, timeout: float = 60) -> Server:
    """Run `skiplock serve` as a user would, and wait for /readyz."""
    port = int(env_overrides.get("SKIPLOCK_PORT") or free_port())
    log_path = Path(tempfile.mkstemp(prefix="skiplock-server-", suffix=".log")[1])
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKIPLOCK_")}
    env.update(
        {
            "SKIPLOCK_PORT": str(port),
            "SKIPLOCK_ADMIN_USERNAME": ADMIN[0],
            "SKIPLOCK_ADMIN_PASSWORD": ADMIN[1],
            "SKIPLOCK_DATA_DIR": str(data_dir or _scratch_dir()),
            "SKIPLOCK_LOG_LEVEL": "warning",
        }
    )
    env.update(env_overrides)
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "skiplock", "serve"], cwd=ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT
        )
    server = Server(f"http://127.0.0.1:{port}", process, log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{server.log()}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{server.base_url}/readyz", timeout=1).status_code == 200:
                return server
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"server not ready in {timeout}s:\n{server.log()}")


def stop_server(server: Server) -> None:
    if server.process.poll() is None:
        server.process.terminate()
        try:
            server.process.wait(30)
        except subprocess.TimeoutExpired:
            server.process.kill()


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
        # Reapers would change messages under tests that watch them; tests/integration/test_workers.py runs them.
        "SKIPLOCK_RUN_WORKERS": "false",
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


@dataclass
class Tenant:
    id: int
    slug: str


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
    """Insert a user of a role in a tenant; returns (username, password)."""

    async def make(role: str, tenant: Tenant | None) -> tuple[str, str]:
        username = f"u-{uuid.uuid4().hex[:10]}"
        password = f"pw-{uuid.uuid4().hex}"
        await db.execute(
            "INSERT INTO users (id, tenant_id, username, password_hash, role) VALUES ($1, $2, $3, $4, $5)",
            uuid.uuid4(),
            tenant.id if tenant else None,
            username,
            hash_password(password),
            role,
        )
        return username, password

    return make
