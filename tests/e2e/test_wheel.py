"""The package as an operator installs it, outside the checkout: a wheel in a fresh virtualenv runs `skiplock
migrate`, the API (`skiplock serve`) and a worker (`skiplock worker`) against a real Postgres.

The wheel is built from a copy of the tracked sources, so nothing in the checkout can leak in; its dependencies are
its runtime dependencies alone, from a wheelhouse of them (`tests.support.wheels`, `--no-index`): a runtime import
missing from `[project].dependencies` fails here, and the embedded servers are not installed.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
from pathlib import Path

import asyncpg
import httpx
import pytest
import redis.asyncio as aioredis

from skiplock.local import free_port
from tests.support.servers import ADMIN, ROOT, scratch_dir
from tests.support.waiting import eventually, wait_until
from tests.support.wheels import EMBEDDED_MODULES, build_wheel, importable, install_into

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the wheel installed; yields its bin folder."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    wheel = build_wheel(source, work / "dist")
    venv = work / "venv"
    install_into(venv, wheel)
    return venv / "bin"


async def _own_redis(redis_url: str) -> str:
    """A Redis database of this test's own, emptied: the session's database holds the failed logins other tests
    made from 127.0.0.1, and the installed server runs with the default login limits."""
    own = f"{redis_url.rpartition('/')[0]}/7"
    redis = aioredis.from_url(own)
    try:
        await redis.flushdb()
    finally:
        await redis.aclose()
    return own


def _env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKIPLOCK_", "PYTHON"))}
    return {**env, "SKIPLOCK_LOG_LEVEL": "info", **{f"SKIPLOCK_{k.upper()}": v for k, v in settings.items()}}


async def test_wheel_migrates_serves_and_runs_workers(installed: Path, empty_database: str, redis_url: str) -> None:
    outside = scratch_dir()  # not the checkout: nothing importable by accident
    where = subprocess.run(
        [installed / "python", "-c", "import api, mq, skiplock, workers; print(mq.__file__, api.__file__)"],
        cwd=outside,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(ROOT) not in where and str(installed.parent) in where, where
    assert importable(installed / "python", EMBEDDED_MODULES) == []  # what `make run` embeds is not there

    migrate = subprocess.run(
        [installed / "skiplock", "migrate"],
        check=False,
        cwd=outside,
        env=_env(database_url=empty_database),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrate.returncode == 0, migrate.stderr
    conn = await asyncpg.connect(empty_database)
    try:
        assert await conn.fetchval("SELECT count(*) FROM alembic_version") == 1
    finally:
        await conn.close()

    redis_url = await _own_redis(redis_url)
    port = free_port()
    serve_log = outside / "serve.log"
    with serve_log.open("wb") as log:
        server = subprocess.Popen(
            [installed / "skiplock", "serve"],
            cwd=outside,
            env=_env(
                database_url=empty_database,
                redis_url=redis_url,
                port=str(port),
                migrate_on_start="false",
                run_workers="false",
                admin_password=ADMIN[1],
                data_dir=str(outside / "data"),
            ),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    worker_log = outside / "worker.log"
    with worker_log.open("wb") as log:
        worker = subprocess.Popen(
            [installed / "skiplock", "worker"],
            cwd=outside,
            env=_env(database_url=empty_database, redis_url=redis_url, expiry_reaper_interval_seconds="1"),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        base = f"http://127.0.0.1:{port}"

        def ready() -> bool:
            assert server.poll() is None, serve_log.read_text()
            try:
                return httpx.get(f"{base}/readyz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(ready, timeout=60, what="the installed server's /readyz")
        async with httpx.AsyncClient(base_url=base, auth=ADMIN, headers={"X-Tenant": "default"}) as client:
            payload = base64.b64encode(b"from the wheel").decode()
            r = await client.post("/api/messages", json={"topic": "w", "payload": payload, "key": "k"})
            assert r.status_code == 201, r.text
            r = await client.post("/api/messages/dequeue", json={"topic": "w"})
            assert [m["id"] for m in r.json()["messages"]] == [r.json()["messages"][0]["id"]]
            assert (await client.get("/schema/openapi.json")).status_code == 200

        conn = await asyncpg.connect(empty_database)
        try:

            async def reaped() -> bool:
                assert worker.poll() is None, worker_log.read_text()
                return bool(await conn.fetchval("SELECT count(*) FROM job_runs WHERE job = 'expiry_reaper'"))

            await eventually(reaped, timeout=60, what="a run of the installed worker's expiry reaper")
        finally:
            await conn.close()
    finally:
        for process in (server, worker):
            process.send_signal(signal.SIGTERM)
        assert server.wait(30) == 0, serve_log.read_text()
        assert worker.wait(30) == 0, worker_log.read_text()
