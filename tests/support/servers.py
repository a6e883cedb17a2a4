"""Real Postgres and Redis servers, migrated databases, and Skiplock servers started as a user starts them.

Where Postgres and Redis come from, in order: a URL from the environment; else testcontainers when a Docker engine
answers; else the embedded servers that `make run` uses (`skiplock.local`). The test suite (`tests/conftest.py`)
and the benchmarks (`bench/`) both start their servers here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from mq.db.engine import asyncpg_dsn
from mq.migration import migrate
from skiplock.local import EmbeddedPostgres, EmbeddedRedis, free_port

ROOT = Path(__file__).resolve().parents[2]
ADMIN = ("admin", "skiplock-admin")  # the product default, so the README quickstart runs as printed
#: Where a Redis 7 comes from when no URL is given: Debian's `redis-server` (`.ci/run` installs it).
SYSTEM_REDIS = Path("/usr/bin/redis-server")


def scratch_dir(prefix: str = "skiplock-test-") -> Path:
    """A new temporary folder, traversable by the embedded Postgres' service user when running as root."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
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


@contextlib.contextmanager
def postgres_server(url_variable: str = "SKIPLOCK_TEST_DATABASE_URL") -> Iterator[str]:
    """A Postgres server's URL (its maintenance database), for as long as the block runs."""
    if url := os.environ.get(url_variable):
        yield url
        return
    container = _docker_container("postgres")
    if container is not None:
        try:
            yield container.get_connection_url()
        finally:
            container.stop()
        return
    server = EmbeddedPostgres(scratch_dir() / "pg", database="postgres")
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@contextlib.contextmanager
def redis_server(url_variable: str = "SKIPLOCK_TEST_REDIS_URL") -> Iterator[str]:
    """A Redis server's URL: the environment's, a container's, or the embedded Redis 6.2 `make run` ships."""
    if url := os.environ.get(url_variable):
        yield url
        return
    container = _docker_container("redis")
    if container is not None:
        try:
            yield f"redis://{container.get_container_host_ip()}:{container.get_exposed_port(6379)}/0"
        finally:
            container.stop()
        return
    server = EmbeddedRedis(scratch_dir() / "redis")
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@contextlib.contextmanager
def system_redis_server() -> Iterator[str | None]:
    """Debian's redis-server (Redis 7, production's) on a free port; None when it is not installed."""
    if not SYSTEM_REDIS.exists():
        yield None
        return
    server = EmbeddedRedis(scratch_dir() / "redis7", binary=SYSTEM_REDIS)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def database_url_on(server_url: str, name: str) -> str:
    base, _, _ = asyncpg_dsn(server_url).rpartition("/")
    return f"{base}/{name}"


@contextlib.asynccontextmanager
async def migrated_database(server_url: str, prefix: str = "skiplock_test") -> AsyncIterator[str]:
    """A new database on the server, migrated to head with Alembic; dropped afterwards."""
    async with new_database(server_url, prefix) as url:
        await asyncio.to_thread(migrate, url)  # Alembic runs its own event loop
        yield url


@contextlib.asynccontextmanager
async def new_database(server_url: str, prefix: str) -> AsyncIterator[str]:
    """A new, empty database on the server; dropped afterwards. On a Citus coordinator (its maintenance database
    has the extension), a cluster of its own: the database on every node, the extension in each, the workers
    registered with the coordinator (Citus' metadata is per database), as docs/scale-out.md sets one up."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(asyncpg_dsn(server_url))
    try:
        workers = await _citus_workers(admin)
        await admin.execute(f'CREATE DATABASE "{name}"')
        url = database_url_on(server_url, name)
        if workers is not None:
            # one cluster made at a time (pytest-xdist's sessions at once): registering a worker alters its roles,
            # which every database of the node shares ("tuple concurrently updated")
            await admin.execute("SELECT pg_advisory_lock($1)", _CLUSTER_LOCK)
            try:
                await _citus_cluster(url, name, workers)
            finally:
                await admin.execute("SELECT pg_advisory_unlock($1)", _CLUSTER_LOCK)
        try:
            yield url
        finally:
            await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            for host, port in workers or []:
                worker = await asyncpg.connect(_on_node(server_url, host, port, "postgres"))
                try:
                    await worker.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                finally:
                    await worker.close()
    finally:
        await admin.close()


#: The advisory lock that keeps test sessions from registering their clusters' workers at once.
_CLUSTER_LOCK = 7_420_042


async def _citus_workers(admin: asyncpg.Connection[Any]) -> list[tuple[str, int]] | None:
    """The Citus workers registered in the server's maintenance database; None on plain Postgres."""
    if not await admin.fetchval("SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')"):
        return None
    rows = await admin.fetch("SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeport")
    return [(r["nodename"], r["nodeport"]) for r in rows]


def _on_node(server_url: str, host: str, port: int, database: str) -> str:
    """The server URL's credentials on another node of its cluster."""
    parts = urllib.parse.urlsplit(asyncpg_dsn(server_url))
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@{host}:{port}" if credentials else f"{host}:{port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, f"/{database}", parts.query, ""))


async def _citus_cluster(url: str, name: str, workers: list[tuple[str, int]]) -> None:
    for host, port in workers:
        worker = await asyncpg.connect(_on_node(url, host, port, "postgres"))
        try:
            await worker.execute(f'CREATE DATABASE "{name}"')
        finally:
            await worker.close()
        on_worker = await asyncpg.connect(_on_node(url, host, port, name))
        try:
            await on_worker.execute("CREATE EXTENSION citus")
        finally:
            await on_worker.close()
    coordinator = await asyncpg.connect(asyncpg_dsn(url))
    try:
        await coordinator.execute("CREATE EXTENSION citus")
        parts = urllib.parse.urlsplit(asyncpg_dsn(url))
        await coordinator.execute("SELECT citus_set_coordinator_host($1, $2)", parts.hostname, parts.port or 5432)
        for host, port in workers:
            await coordinator.execute("SELECT citus_add_node($1, $2)", host, port)
    finally:
        await coordinator.close()


#: The bearer tokens' signing key of the servers under test (`SKIPLOCK_TOKEN_SECRET`): tests forge tokens with it.
TOKEN_SECRET = "skiplock-tests-token-secret-0123456789abcdef"


@dataclass
class Server:
    base_url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    #: queue-ti's gRPC service (`host:port`; empty when off)
    grpc_address: str = ""

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


#: Where the servers under test write their coverage data, one folder per test session (None: not measured;
#: `bench/` starts its servers without it).
_coverage_dir: Path | None = None


def measure_coverage() -> Path | None:
    """Run the servers started from now on under coverage.py (reported after the session, never gated), unless
    SKIPLOCK_TEST_COVERAGE=0; the folder their data goes to."""
    global _coverage_dir  # noqa: PLW0603 - one switch for the test session, set once at its start
    if os.environ.get("SKIPLOCK_TEST_COVERAGE", "1") != "0":
        # pytest-xdist's sessions (`make test`) write into their controller's folder, which reports them all
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        _coverage_dir = ROOT / ".coverage-servers" / str(os.getppid() if worker else os.getpid())
        if not worker:
            shutil.rmtree(_coverage_dir, ignore_errors=True)
    return _coverage_dir


def report_coverage() -> str | None:
    """Combine the servers' coverage data; the report's path and its total line, or None without data."""
    import coverage

    if _coverage_dir is None or not any(_coverage_dir.glob(".coverage.*")):
        return None
    measured = coverage.Coverage(data_file=str(_coverage_dir / ".coverage"), config_file=str(ROOT / "pyproject.toml"))
    measured.combine(data_paths=[str(_coverage_dir)])
    measured.save()
    report = _coverage_dir / "report.txt"
    with report.open("w") as out:
        total = measured.report(file=out, skip_covered=True)
    return f"{report.relative_to(ROOT)} (total {total:.0f}%)"


def start_server(
    env_overrides: dict[str, str],
    *,
    data_dir: Path | None = None,
    timeout: float = 60,
    command: tuple[str, ...] = ("-m", "skiplock", "serve"),
) -> Server:
    """Run `skiplock serve` (or `python <command>`) as a user would, and wait for /readyz."""
    port = int(env_overrides.get("SKIPLOCK_PORT") or free_port())
    grpc = env_overrides.get("SKIPLOCK_GRPC_PORT")
    grpc_port = free_port() if grpc is None else int(grpc or 0)  # each server its own gRPC port unless told
    log_path = Path(tempfile.mkstemp(prefix="skiplock-server-", suffix=".log")[1])
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKIPLOCK_")}
    env.update(
        {
            "SKIPLOCK_PORT": str(port),
            "SKIPLOCK_GRPC_PORT": str(grpc_port),
            "SKIPLOCK_ADMIN_USERNAME": ADMIN[0],
            "SKIPLOCK_ADMIN_PASSWORD": ADMIN[1],
            "SKIPLOCK_DATA_DIR": str(data_dir or scratch_dir()),
            "SKIPLOCK_LOG_LEVEL": "warning",
        }
    )
    env.update(env_overrides)
    if _coverage_dir is not None:
        command = ("-m", "coverage", "run", "--parallel-mode", f"--rcfile={ROOT / 'pyproject.toml'}", *command)
        env["COVERAGE_FILE"] = str(_coverage_dir / ".coverage")
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, *command], cwd=ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT
        )
    server = Server(f"http://127.0.0.1:{port}", process, log_path, f"127.0.0.1:{grpc_port}" if grpc_port else "")
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
