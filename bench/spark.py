"""`make bench` part `spark`: the Spark data source writing 1,000,000 small rows into a plain topic (rows/s of the
write, the SparkSession started beforehand), against the bench's own batch-enqueue loop over HTTP (CLIENTS
connections, 1,000 messages per request) on the same server, in the same run; rounds alternate which goes first.

Both carry the bench's 100-byte payloads. Spark runs in local[2] on the machine's two cores, beside the server and
Postgres: the report gives the server's CPU per message on each side and this process's and Spark's own share, to
say where the time goes.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Any

import asyncpg
import psutil

from bench.harness import (
    ADMIN,
    CLIENTS,
    PAYLOAD_B64,
    ROUNDS,
    TENANT,
    Result,
    api_enqueue_batch,
    batch_body,
    cpu_seconds,
    merged,
    run_clients,
)
from bench.httpclient import HttpConnection

ROWS = int(os.environ.get("SKIPLOCK_BENCH_SPARK_ROWS", "1000000"))
TARGET = 0.7


def _session() -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession  # noqa: PLC0415 - only this part needs a JVM
    from skiplock_client.spark import SkiplockDataSource  # noqa: PLC0415

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("skiplock-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(SkiplockDataSource)
    return spark


def _spark_cpu() -> float:
    """CPU seconds of the Spark JVM (a child of this process) and its Python workers."""
    total = 0.0
    for jvm in (p for p in psutil.Process().children() if p.name() == "java"):
        for process in (jvm, *jvm.children(recursive=True)):
            try:
                times = process.cpu_times()
                total += times.user + times.system
            except psutil.NoSuchProcess:
                continue
    return total


async def measure_spark(pool: asyncpg.Pool[Any], base_url: str, tenant_id: int, server_pid: int) -> dict[str, Any]:
    server_cpu = cpu_seconds(server_pid)

    spark = _session()
    # the bench's 100-byte payload, as a binary column; local[2]: two partitions, two tasks
    rows = spark.range(ROWS).selectExpr(f"unbase64('{PAYLOAD_B64}') AS body")
    options = {"url": base_url, "username": ADMIN[0], "password": ADMIN[1], "tenant": TENANT, "topic": "bench-spark"}

    def write(frame: Any) -> None:
        frame.write.format("skiplock").mode("append").options(**options, payloadColumn="body").save()

    write(rows.limit(100_000))  # the JVM's warm-up (class loading, JIT) is not the data source's cost

    async def job() -> Result:
        started = time.perf_counter()
        write(rows)
        return Result("spark_job", ROWS, 0, time.perf_counter() - started)

    host, port = base_url.removeprefix("http://").split(":")
    http = [HttpConnection(host, int(port), ADMIN, {"X-Tenant": TENANT}) for _ in range(CLIENTS)]
    for c in http:
        await c.connect()
    enqueue = api_enqueue_batch(batch_body(1000), 1000)

    async def loop() -> Result:
        return await run_clients("batch_enqueue_1000", http, enqueue)

    results: tuple[list[Result], list[Result]] = ([], [])
    server_seconds, spark_seconds, ratios = [0.0, 0.0], 0.0, []
    sides = ((0, loop), (1, job))
    try:
        for round_number in range(ROUNDS):
            for n, side in sides if round_number % 2 == 0 else sides[::-1]:
                await pool.execute("TRUNCATE messages")
                before, spark_before = server_cpu(), _spark_cpu()
                results[n].append(await side())
                server_seconds[n] += server_cpu() - before
                if n == 1:
                    spark_seconds += _spark_cpu() - spark_before
            ratios.append(results[1][-1].rate / results[0][-1].rate if results[0][-1].rate else 0.0)
    finally:
        for c in http:
            await c.close()
        spark.stop()
    messages = [max(1, sum(r.messages for r in results[n])) for n in (0, 1)]
    row = {
        "workload": "spark_job",
        "target": TARGET,
        "raw": merged(results[0]),
        "api": merged(results[1]),
        "ratio": round(statistics.median(ratios), 3),
        "ratios": [round(r, 3) for r in ratios],
        "server_cpu_us_per_message": {
            "spark": round(server_seconds[1] * 1e6 / messages[1], 1),
            "loop": round(server_seconds[0] * 1e6 / messages[0], 1),
        },
        "spark_cpu_us_per_row": round(spark_seconds * 1e6 / messages[1], 1),
    }
    print(
        f"  spark_job: ratios {row['ratios']}, server CPU/message {row['server_cpu_us_per_message']}, "
        f"Spark's own CPU/row {row['spark_cpu_us_per_row']} us"
    )
    return row
