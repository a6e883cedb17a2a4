"""The Spark data source and job against a real server: bulk writes exactly once, idempotent keyed re-runs,
back-pressure from a capped topic and from a rate quota, rejected rows (invalid, or refused by the topic's schema),
credentials checked on the driver, a streaming query, reading a DLQ, and the ready job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from skiplock_client import AsyncClient, Client, Quotas

from tests.support.servers import ADMIN, Server
from tests.support.tenants import Tenant
from tests.support.waiting import wait_until


async def _payloads(db: Any, tenant: Tenant, topic: str) -> list[bytes]:
    rows = await db.fetch("SELECT payload FROM messages WHERE tenant_id = $1 AND topic = $2", tenant.id, topic)
    return [bytes(r["payload"]) for r in rows]


def _write(frame: Any, connection: dict[str, str], **options: str) -> None:
    frame.write.format("skiplock").mode("append").options(**connection, **options).save()


async def test_rows_from_parquet_land_exactly_once_and_a_keyed_rerun_adds_nothing(
    spark: Any, connection: dict[str, str], db: Any, tenant: Tenant, tmp_path: Path
) -> None:
    path = str(tmp_path / "orders.parquet")
    spark.range(100_000).selectExpr("id", "concat('order-', id) AS body").repartition(4).write.parquet(path)
    orders = spark.read.parquet(path)
    _write(orders, connection, topic="orders", payloadColumn="body")
    payloads = await _payloads(db, tenant, "orders")
    assert len(payloads) == 100_000
    assert set(payloads) == {f"order-{n}".encode() for n in range(100_000)}

    keyed = orders.where("id < 20000")
    for _ in range(2):  # the same job twice: one pending message per key
        _write(keyed, connection, topic="keyed", keyColumn="id", payloadColumn="body")
    assert len(await _payloads(db, tenant, "keyed")) == 20_000


async def test_the_whole_row_is_the_default_payload(
    spark: Any, connection: dict[str, str], db: Any, tenant: Tenant
) -> None:
    frame = spark.createDataFrame(
        [(1, "ada", {"source": "crm"}, 7, "orders-eu"), (2, "bob", None, 0, None)],
        "id long, name string, meta map<string,string>, prio int, route string",
    )
    _write(frame, connection, topic="people", metadataColumn="meta", priorityColumn="prio", topicColumn="route")
    rows = await db.fetch(
        "SELECT topic, payload, metadata::text, priority FROM messages WHERE tenant_id = $1 ORDER BY topic", tenant.id
    )
    assert [(r["topic"], json.loads(bytes(r["payload"])), r["priority"]) for r in rows] == [
        ("orders-eu", {"id": 1, "name": "ada", "meta": {"source": "crm"}, "prio": 7, "route": "orders-eu"}, 7),
        ("people", {"id": 2, "name": "bob", "meta": None, "prio": 0, "route": None}, 0),
    ]
    assert json.loads(rows[0]["metadata"]) == {"source": "crm"}


def test_a_capped_topic_slows_the_job_and_loses_nothing(
    spark: Any, connection: dict[str, str], server: Server, tenant: Tenant
) -> None:
    """max_depth 300 against 20,000 rows, with a consumer draining the topic: the job completes (its 429s are
    back-pressure), and the consumer sees every row exactly once."""
    received: list[bytes] = []
    with Client(server.base_url, auth=ADMIN, tenant=tenant.slug) as sk:
        sk.set_topic_config("capped", max_depth=300)
        consumer = sk.consumer(
            "capped", lambda m: received.append(m.payload), concurrency=4, prefetch=200, wait_seconds=1
        )
        consuming = threading.Thread(target=consumer.run_forever)
        consuming.start()
        try:
            frame = spark.range(20_000).selectExpr("cast(id AS string) AS body").repartition(2)
            _write(frame, connection, topic="capped", payloadColumn="body", batchSize="200")
            wait_until(lambda: len(received) >= 20_000, timeout=60, what="the consumer drained the topic")
        finally:
            consumer.stop()
            consuming.join(30)
    assert sorted(received) == sorted(str(n).encode() for n in range(20_000))


async def test_an_enqueue_rate_quota_paces_the_job(
    spark: Any, connection: dict[str, str], server: Server, tenant: Tenant, db: Any
) -> None:
    async with AsyncClient(server.base_url, auth=ADMIN) as platform:
        await platform.update_tenant(tenant.slug, quotas=Quotas(enqueue_rate=2000))
    frame = spark.range(10_000).selectExpr("cast(id AS string) AS body").repartition(2)
    started = time.monotonic()
    _write(frame, connection, topic="paced", payloadColumn="body", batchSize="500")
    elapsed = time.monotonic() - started
    assert len(await _payloads(db, tenant, "paced")) == 10_000
    assert elapsed >= 3.0, f"10,000 rows at 2,000/s (plus one second's burst) took only {elapsed:.1f} s"


async def test_invalid_rows_go_to_the_reject_path_with_their_codes(
    spark: Any, connection: dict[str, str], db: Any, tenant: Tenant, tmp_path: Path
) -> None:
    frame = spark.createDataFrame(
        [(n, f"row {n}", 42 if n % 10 == 3 else 1) for n in range(100)], "id long, body string, prio int"
    ).repartition(2)
    rejects = tmp_path / "rejects"
    _write(
        frame,
        connection,
        topic="mixed",
        payloadColumn="body",
        priorityColumn="prio",
        onInvalid="reject",
        rejectPath=str(rejects),
    )
    stored = await _payloads(db, tenant, "mixed")
    assert len(stored) == 90
    lines = [json.loads(line) for f in rejects.glob("*.jsonl") for line in f.read_text().splitlines()]
    assert sorted(json.loads(r["row"])["payload"] for r in lines) == sorted(f"row {n}" for n in range(3, 100, 10))
    assert {r["code"] for r in lines} == {"invalid_request"}

    as_parquet = tmp_path / "rejects-parquet"
    _write(
        frame,
        connection,
        topic="mixed-again",
        payloadColumn="body",
        priorityColumn="prio",
        onInvalid="reject",
        rejectPath=str(as_parquet),
        rejectFormat="parquet",
    )
    table = pq.read_table(as_parquet).to_pylist()
    assert len(table) == 10 and {r["code"] for r in table} == {"invalid_request"}

    with pytest.raises(Exception, match=r"priority|invalid"):  # onInvalid=fail (the default) fails the job
        _write(frame, connection, topic="strict", payloadColumn="body", priorityColumn="prio")


async def test_rows_a_topics_schema_refuses_are_rejected_with_their_pointer(
    spark: Any, connection: dict[str, str], db: Any, server: Server, tenant: Tenant, tmp_path: Path
) -> None:
    schema = {"type": "object", "properties": {"qty": {"type": "integer", "minimum": 1}}, "required": ["qty"]}
    with Client(server.base_url, auth=ADMIN, tenant=tenant.slug) as sk:
        sk.set_topic_schema("shaped", schema, format="json_schema")
    frame = spark.createDataFrame([(n, 0 if n % 5 == 0 else n) for n in range(20)], "id long, qty long")
    rejects = tmp_path / "schema-rejects"
    _write(frame, connection, topic="shaped", onInvalid="reject", rejectPath=str(rejects))
    assert len(await _payloads(db, tenant, "shaped")) == 16
    lines = [json.loads(line) for f in rejects.glob("*.jsonl") for line in f.read_text().splitlines()]
    assert sorted(json.loads(r["row"])["id"] for r in lines) == [0, 5, 10, 15]
    assert {r["code"] for r in lines} == {"schema_violation"} and all("/qty" in r["error"] for r in lines)


def test_a_wrong_password_or_column_fails_on_the_driver(spark: Any, connection: dict[str, str]) -> None:
    frame = spark.range(10).selectExpr("id", "cast(id AS string) AS body")
    with pytest.raises(Exception, match="refused the credentials"):
        _write(frame, {**connection, "password": "not the password"}, topic="t")
    with pytest.raises(Exception, match="keyColumn: no column 'order_id'"):
        _write(frame, connection, topic="t", keyColumn="order_id")
    with pytest.raises(Exception, match="payloadColumn: column 'id' is LongType"):
        _write(frame, connection, topic="t", payloadColumn="id")
    without_tenant = {k: v for k, v in connection.items() if k != "tenant"}
    with pytest.raises(Exception, match="is a platform admin: name the tenant"):
        _write(frame, without_tenant, topic="t")
    with pytest.raises(Exception, match="append"):
        frame.write.format("skiplock").mode("overwrite").options(**connection, topic="t").save()


async def test_a_streaming_query_feeds_a_topic(
    spark: Any, connection: dict[str, str], db: Any, tenant: Tenant, tmp_path: Path
) -> None:
    """Three files, one micro-batch each, run to the end (`availableNow`): every line is one message. A query
    stopped in the middle of a batch replays that batch on restart (at least once), so the test lets it finish."""
    source = tmp_path / "ticks"
    source.mkdir()
    for part in range(3):
        (source / f"part-{part}.txt").write_text("".join(f"{n}\n" for n in range(part * 200, part * 200 + 200)))
    stream = spark.readStream.format("text").option("maxFilesPerTrigger", 1).load(str(source))
    query = (
        stream.selectExpr("value AS body")
        .writeStream.format("skiplock")
        .options(**connection, topic="ticks", payloadColumn="body")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(120), "the query did not finish its three batches"
    finally:
        query.stop()
    assert query.lastProgress is not None and query.lastProgress["batchId"] == 2
    payloads = await _payloads(db, tenant, "ticks")
    assert sorted(int(p) for p in payloads) == list(range(600))


async def test_the_reader_returns_a_dlqs_messages(
    spark: Any, connection: dict[str, str], server: Server, tenant: Tenant
) -> None:
    async with AsyncClient(server.base_url, auth=ADMIN, tenant=tenant.slug) as sk:
        await sk.set_topic_config("payments", max_retries=1)
        ids = await sk.send_batch(
            "payments",
            [f"p{n}" for n in range(5)],
        )
        for message in await sk.receive("payments", 5):
            assert await sk.nack(message, f"declined {message.text()}") == "dlq"
        await sk.send("payments.other", b"unrelated")
    dlq = spark.read.format("skiplock").options(**connection, topic="payments.dlq").load()
    rows = dlq.collect()
    assert sorted(r.id for r in rows) == sorted(ids)
    assert {(r.payload, r.last_error, r.original_topic, r.status) for r in rows} == {
        (f"p{n}".encode(), f"declined p{n}", "payments", "pending") for n in range(5)
    }
    pushed = spark.read.format("skiplock").options(**connection, topic="payments.dlq", pushFilters="true").load()
    assert pushed.where("status = 'failed'").count() == 0
    assert pushed.where("status = 'pending'").count() == 5


async def test_the_reader_reads_one_consumer_groups_view(
    spark: Any, connection: dict[str, str], server: Server, tenant: Tenant
) -> None:
    async with AsyncClient(server.base_url, auth=ADMIN, tenant=tenant.slug) as sk:
        await sk.set_topic_config("fan", max_retries=1)
        for group in ("billing", "shipping"):
            await sk.create_consumer_group("fan", group)
        ids = await sk.send_batch("fan", ["a", "b", "c"])
        done, declined = await sk.receive("fan", 2, consumer_group="billing")
        await sk.ack(done, consumer_group="billing")
        assert await sk.nack(declined, "declined", consumer_group="billing") == "dlq"

    def read(**options: str) -> list[Any]:
        return spark.read.format("skiplock").options(**connection, **options).load().collect()

    assert sorted(r.id for r in read(topic="fan", consumerGroup="shipping")) == sorted(ids)
    [owed] = read(topic="fan", consumerGroup="billing")
    assert owed.id not in (done.id, declined.id) and owed.consumer_group is None
    [dead] = read(topic="fan.dlq", consumerGroup="billing")
    assert (dead.payload, dead.consumer_group, dead.original_topic) == (declined.payload, "billing", "fan")
    assert read(topic="fan.dlq", consumerGroup="shipping") == []


async def test_a_topics_history_reads_as_a_dataframe_in_time_slices_to_parquet(
    spark: Any, connection: dict[str, str], server: Server, tenant: Tenant, tmp_path: Path
) -> None:
    async with AsyncClient(server.base_url, auth=ADMIN, tenant=tenant.slug) as sk:
        await sk.set_topic_config("orders-log", replayable=True)
        await sk.send_batch("orders-log", [f"o{n}" for n in range(30)])
        while got := await sk.receive("orders-log", 7):
            await sk.ack_batch(got)
        entries = [e async for e in sk.message_log("orders-log")]
    since, until = entries[0].acked_at, entries[-1].acked_at  # the last batch's ack is outside [since, until)
    history = (
        spark.read.format("skiplock")
        .options(**connection, topic="orders-log", history="true", since=since, until=until, slices="3")
        .load()
    )
    assert history.rdd.getNumPartitions() == 3
    path = str(tmp_path / "orders.parquet")
    history.write.parquet(path)  # "last month's orders to Parquet"
    table = pq.read_table(path)
    expected = [e for e in entries if e.acked_at < until]
    assert sorted(table.column("id").to_pylist()) == sorted(e.id for e in expected)
    assert set(table.column("payload").to_pylist()) == {e.payload for e in expected}
    pushed = spark.read.format("skiplock").options(**connection, topic="orders-log", history="true", pushFilters="true")
    assert pushed.load().where(f"acked_at >= '{until}'").count() == len(entries) - len(expected)


def _job(connection: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "SKIPLOCK_URL": connection["url"],
        "SKIPLOCK_USERNAME": connection["username"],
        "SKIPLOCK_PASSWORD": connection["password"],
    }
    return subprocess.run(
        [sys.executable, "-m", "skiplock_client.spark.enqueue", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=environment,
        check=False,
    )


def test_the_ready_job(spark: Any, connection: dict[str, str], tmp_path: Path, tenant: Tenant) -> None:
    path = str(tmp_path / "input.parquet")
    spark.range(1000).selectExpr("id", "concat('x', id) AS body").write.parquet(path)
    args = ["--input", path, "--topic", "job", "--key-column", "id", "--payload-column", "body", "--master", "local[1]"]
    wrong = {**connection, "password": "a wrong password"}
    run = _job(wrong, *args, "--tenant", tenant.slug)
    assert run.returncode == 1 and "refused the credentials" in run.stdout, run.stdout
    assert "a wrong password" not in run.stdout + run.stderr
    run = _job(connection, *args, "--tenant", tenant.slug)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1000 rows -> 1000 messages" in run.stdout
    assert connection["password"] not in run.stdout + run.stderr
