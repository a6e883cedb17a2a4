"""The consumer runtime of `skiplock_client` against the bench's own loop, on the same server and the same backlog.

Baseline: CLIENTS connections each repeating dequeue 100 + one batch ack (`bench.harness.dequeue_100_ack`, the minimal
HTTP client). Measured: CLIENTS consumers (`client.consumer(...)`, 100 messages per fetch, a no-op handler), each
on an `AsyncClient` of its own, as CLIENTS worker processes would each run one; messages/s counts handler calls
that returned within the round. Rounds alternate which side runs first; both see a fresh backlog. The server's CPU
per message is reported beside the ratio (the steadier measure on a noisy machine), and so is the client's (this
process): on a 2-core machine it competes with the server for the same cores.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

import asyncpg
from skiplock_client import AsyncClient, Message

from bench.harness import (
    ADMIN,
    CLIENTS,
    ROUNDS,
    SECONDS,
    TENANT,
    Result,
    cpu_seconds,
    dequeue_100_ack,
    merged,
    prefill,
    run_clients,
)
from bench.httpclient import HttpConnection

TARGET = 0.8


async def _noop(message: Message) -> None:
    return None


async def _consume(clients: list[AsyncClient]) -> Result:
    consumers = [
        client.consumer("bench-drain", _noop, prefetch=100, max_fetch=100, wait_seconds=1, handle_signals=False)
        for client in clients
    ]
    started = time.perf_counter()
    running = [asyncio.create_task(c.run()) for c in consumers]
    await asyncio.sleep(SECONDS)
    result = Result("consumer_runtime", sum(c.handled for c in consumers), 0, time.perf_counter() - started)
    for c in consumers:
        c.stop()
    await asyncio.gather(*running)
    return result


async def measure_consumer(pool: asyncpg.Pool[Any], base_url: str, tenant_id: int, server_pid: int) -> dict[str, Any]:
    cpu = cpu_seconds(server_pid)

    host, port = base_url.removeprefix("http://").split(":")
    http = [HttpConnection(host, int(port), ADMIN, {"X-Tenant": TENANT}) for _ in range(CLIENTS)]
    for c in http:
        await c.connect()
    backlog = int(30_000 * SECONDS)
    results: tuple[list[Result], list[Result]] = ([], [])
    server_seconds = [0.0, 0.0]
    ratios = []
    # One client per consumer, as each worker process would have its own (and its own small connection pool).
    clients = [AsyncClient(base_url, auth=ADMIN, tenant=TENANT, max_connections=4) for _ in range(CLIENTS)]
    client_seconds = [0.0, 0.0]

    async def loop() -> Result:
        return await run_clients("dequeue_100_ack", http, dequeue_100_ack)

    sides = ((0, loop), (1, lambda: _consume(clients)))
    try:
        for round_number in range(ROUNDS):
            for n, side in sides if round_number % 2 == 0 else sides[::-1]:
                await prefill(pool, tenant_id, "bench-drain", backlog)
                before, client_before = cpu(), time.process_time()
                results[n].append(await side())
                server_seconds[n] += cpu() - before
                client_seconds[n] += time.process_time() - client_before
            ratios.append(results[1][-1].rate / results[0][-1].rate if results[0][-1].rate else 0.0)
    finally:
        for c in http:
            await c.close()
        for client in clients:
            await client.aclose()
    handled = [max(1, sum(r.messages for r in results[n])) for n in (0, 1)]
    per_message = [server_seconds[n] * 1e6 / handled[n] for n in (0, 1)]
    client_per_message = [client_seconds[n] * 1e6 / handled[n] for n in (0, 1)]
    row = {
        "workload": "consumer_runtime",
        "target": TARGET,
        "raw": merged(results[0]),
        "api": merged(results[1]),
        "ratio": round(statistics.median(ratios), 3),
        "ratios": [round(r, 3) for r in ratios],
        "server_cpu_us_per_message": {"consumer": round(per_message[1], 1), "loop": round(per_message[0], 1)},
        "client_cpu_us_per_message": {
            "consumer": round(client_per_message[1], 1),
            "loop": round(client_per_message[0], 1),
        },
    }
    print(
        f"  consumer_runtime: ratios {row['ratios']}, server CPU/message {row['server_cpu_us_per_message']}, "
        f"client CPU/message {row['client_cpu_us_per_message']}"
    )
    return row
