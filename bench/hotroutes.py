"""`make bench` part `hot`: the hot routes' lean path (`api.hot_routes`) against the same server with
`SKIPLOCK_HOT_ROUTES=false` (every request through the framework), on the same database, in interleaved rounds:
single enqueue, batch enqueue of 100, dequeue 100 + batch ack, dequeue 1 + ack, 8 clients. Besides the throughput
ratio, each server's CPU per request (psutil), the steadier measure on a noisy machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg

from bench.harness import RAW_SCHEMA, Side, compare, connected, cpu_seconds, start_api, workloads
from tests.support.servers import stop_server


async def measure_hot_routes(
    pool: asyncpg.Pool[Any], base_url: str, tenant_id: int, server_pid: int, urls: tuple[str, str, Path]
) -> list[dict[str, Any]]:
    """`urls`: the database's and Redis' URLs and the scratch data directory, for the second server."""
    database_url, redis_url, data_dir = urls
    await pool.execute(RAW_SCHEMA)  # the workloads' setups empty it too
    framework = start_api(database_url, redis_url, data_dir, env={"SKIPLOCK_HOT_ROUTES": "false"})
    hot_http, framework_http = await connected(base_url), await connected(framework.base_url)
    hot_cpu, framework_cpu = cpu_seconds(server_pid), cpu_seconds(framework.process.pid)
    rows = []
    try:
        for w in workloads(pool, tenant_id):
            if w.key == "batch_enqueue_1000":
                continue
            base = Side(w.api_setup, framework_http, w.api_op, framework_cpu)
            measured = Side(w.api_setup, hot_http, w.api_op, hot_cpu)
            rows.append(await compare(f"hot_{w.key}", 1.0, base, measured, "the same server without its hot routes"))
    finally:
        for c in hot_http + framework_http:
            await c.close()
        stop_server(framework)
    return rows
