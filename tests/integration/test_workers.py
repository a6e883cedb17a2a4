"""The reapers and the scheduler against real Postgres and Redis: batching and counts, DLQ routing of expired
messages, one run at a time across replicas and hand-over when one dies, the delete reaper's schedule reaching
every replica, the manual triggers, and the scheduler running inside `skiplock serve`."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from typing import Any

import asyncpg
import httpx
import redis.asyncio as aioredis

from mq.broadcast import Broadcast
from mq.db.engine import asyncpg_dsn
from mq.db.listener import PostgresListener
from mq.db.repository import OperationsRepository, lock_key
from mq.ids import uuid7_batch
from mq.jobs import DeleteReaper, ExpiryReaper, Jobs, _BatchJob
from mq.metrics import Metrics
from mq.settings import Settings
from skiplock.local import free_port
from tests.integration.helpers import assert_error, b64, metric
from tests.support.servers import ADMIN, Server, start_server, stop_server
from tests.support.tenants import Tenant
from workers.scheduler import Workers


async def insert(db: asyncpg.Pool[Any], tenant: Tenant, topic: str, n: int, *, expired: bool, **columns: Any) -> None:
    """`n` messages whose TTL ran out a minute ago (`expired`) or has an hour left; extra columns as given."""
    names = "".join(f", {name}" for name in columns)
    values = "".join(f", ${5 + i}" for i in range(len(columns)))
    await db.execute(
        f"""INSERT INTO messages (id, tenant_id, topic, payload, max_retries, expires_at{names})
            SELECT u, $1, $2, 'x', 3, now() + make_interval(secs => $4){values}
            FROM unnest($3::uuid[]) AS u""",
        tenant.id,
        topic,
        uuid7_batch(n),
        -60.0 if expired else 3600.0,
        *columns.values(),
    )


async def statuses(db: asyncpg.Pool[Any], tenant: Tenant) -> dict[tuple[str, str], int]:
    rows = await db.fetch(
        "SELECT topic, status, count(*) AS n FROM messages WHERE tenant_id = $1 GROUP BY 1, 2", tenant.id
    )
    return {(r["topic"], r["status"]): r["n"] for r in rows}


async def test_expiry_reaper_marks_expired_messages_in_batches(db, tenant) -> None:  # type: ignore[no-untyped-def]
    await insert(db, tenant, "orders", 25, expired=True)
    await insert(db, tenant, "orders", 5, expired=False)
    await insert(db, tenant, "orders", 3, expired=True, status="processing", receipt=None)
    result = await ExpiryReaper(
        OperationsRepository(db), batch_size=10, expire_to_dlq=False, dlq_enabled=True
    ).run_once()
    assert result.ran and result.by_topic is not None
    assert result.by_topic[(tenant.slug, "orders")] == 28  # three full batches of 10 and a last one of 8
    assert await statuses(db, tenant) == {("orders", "expired"): 28, ("orders", "pending"): 5}
    run = await db.fetchrow(
        "SELECT rows, finished_at > now() - interval '1 minute' AS recent FROM job_runs WHERE job = 'expiry_reaper'"
    )
    assert run["recent"] and run["rows"] >= 28


async def test_expire_to_dlq_moves_expired_messages_to_the_dead_letter_topic(client, db, tenant) -> None:  # type: ignore[no-untyped-def]
    r = await client.put("/api/topic-configs/routed", json={"expire_to_dlq": True})
    assert r.status_code == 200 and r.json()["expire_to_dlq"] is True
    for k in range(4):  # keyed: once in the DLQ a message leaves its key free for a new one
        await insert(db, tenant, "routed", 1, expired=True, key=f"k{k}")
    await insert(db, tenant, "routed.dlq", 2, expired=True, original_topic="routed")  # already dead: just expires
    await insert(db, tenant, "plain", 3, expired=True)
    result = await ExpiryReaper(
        OperationsRepository(db), batch_size=2, expire_to_dlq=False, dlq_enabled=True
    ).run_once()
    assert result.by_topic is not None
    assert {k: v for k, v in result.by_topic.items() if k[0] == tenant.slug} == {
        (tenant.slug, "routed"): 4,
        (tenant.slug, "routed.dlq"): 2,
        (tenant.slug, "plain"): 3,
    }
    assert await statuses(db, tenant) == {
        ("routed.dlq", "pending"): 4,
        ("routed.dlq", "expired"): 2,
        ("plain", "expired"): 3,
    }
    moved = await db.fetch(
        "SELECT original_topic, expires_at, dlq_moved_at, retry_count, max_retries FROM messages "
        "WHERE tenant_id = $1 AND topic = 'routed.dlq' AND status = 'pending'",
        tenant.id,
    )
    assert all(
        m["original_topic"] == "routed"
        and m["expires_at"] is None
        and m["dlq_moved_at"] is not None
        and m["max_retries"] == 0
        for m in moved
    )
    # The global default applies to topics without a config; a topic with its DLQ disabled never routes.
    await client.put("/api/topic-configs/nodlq", json={"dlq_enabled": False})
    await insert(db, tenant, "nodlq", 2, expired=True)
    await insert(db, tenant, "other", 2, expired=True)
    await ExpiryReaper(OperationsRepository(db), 100, expire_to_dlq=True, dlq_enabled=True).run_once()
    after = await statuses(db, tenant)
    assert after[("nodlq", "expired")] == 2 and after[("other.dlq", "pending")] == 2


async def test_delete_reaper_deletes_expired_and_old_failed_messages(db, tenant) -> None:  # type: ignore[no-untyped-def]
    await insert(db, tenant, "t", 12, expired=True, status="expired")
    await insert(db, tenant, "t", 5, expired=False, status="failed", updated_at=time_ago(3600))
    await insert(db, tenant, "t", 4, expired=False, status="failed")  # recent: kept
    await insert(db, tenant, "t", 6, expired=False)  # live: kept
    result = await DeleteReaper(OperationsRepository(db), batch_size=5, failed_retention_seconds=600).run_once()
    assert result.by_topic is not None and result.by_topic[(tenant.slug, "t")] == 17
    assert await statuses(db, tenant) == {("t", "failed"): 4, ("t", "pending"): 6}


def time_ago(seconds: float) -> Any:
    from datetime import UTC, datetime, timedelta

    return datetime.now(UTC) - timedelta(seconds=seconds)


async def test_one_replica_runs_a_job_at_a_time_and_a_dead_one_hands_over(database_url, db, tenant) -> None:  # type: ignore[no-untyped-def]
    other_replica = await asyncpg.create_pool(asyncpg_dsn(database_url), min_size=1, max_size=2)
    try:
        reaper = ExpiryReaper(
            OperationsRepository(other_replica), batch_size=100, expire_to_dlq=False, dlq_enabled=True
        )
        await insert(db, tenant, "locked", 3, expired=True)
        async with OperationsRepository(db).job_lock("expiry_reaper", wait=False) as held:
            assert held is not None
            assert not (await reaper.run_once()).ran  # skipped, not queued behind
            waiting = asyncio.create_task(reaper.run_once(wait=True))  # a manual trigger waits instead
            await asyncio.sleep(0.3)
            assert not waiting.done()
        assert (await waiting).ran
        assert (await statuses(db, tenant))[("locked", "expired")] == 3

        # Runs racing from two replicas never overlap: each run holds the lock for at least 0.1 s after it starts
        # its first statement, so any two starts are at least 0.1 s apart.
        starts: list[float] = []

        class SlowJob(_BatchJob):
            name = "expiry_reaper"  # the same lock as the real job
            candidates = "SELECT 1::bigint WHERE $1 > 0"  # one tenant with work
            statement = "SELECT 'x' AS tenant, 'y' AS topic, 0 AS n FROM pg_sleep(0.1) WHERE $1 > 0 AND $2 > 0"

            def _arguments(self) -> tuple[Any, ...]:
                starts.append(time.monotonic())
                return ()

        replicas = [SlowJob(OperationsRepository(db), 10), SlowJob(OperationsRepository(other_replica), 10)]
        for _ in range(3):
            results = await asyncio.gather(*(job.run_once() for job in replicas * 4))
            assert sum(r.ran for r in results) >= 1
        starts.sort()
        assert all(later - earlier >= 0.099 for earlier, later in itertools.pairwise(starts))

        # A replica dies holding the lock: its connection goes, and with it the lock.
        dying = await asyncpg.connect(asyncpg_dsn(database_url))
        assert await dying.fetchval("SELECT pg_try_advisory_lock($1)", lock_key("expiry_reaper"))
        assert not (await reaper.run_once()).ran
        await db.execute("SELECT pg_terminate_backend($1::int)", dying.get_server_pid())
        deadline = time.monotonic() + 5
        while not (await reaper.run_once()).ran:
            assert time.monotonic() < deadline, "the lock was not released with the dead connection"
            await asyncio.sleep(0.1)
        dying.terminate()
    finally:
        await other_replica.close()


async def test_a_schedule_change_reaches_every_replicas_scheduler(database_url, any_redis_url, db) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(database_url=database_url, any_redis_url=any_redis_url, expiry_reaper_interval_seconds=3600)
    replicas = []
    try:
        for _ in range(2):
            pool = await asyncpg.create_pool(asyncpg_dsn(database_url), min_size=1, max_size=3)
            redis = aioredis.from_url(any_redis_url)
            listener = PostgresListener(database_url)
            await listener.start()
            broadcast = Broadcast(redis, any_redis_url, listener, OperationsRepository(pool))
            jobs = Jobs(OperationsRepository(pool), settings, broadcast.publish, Metrics())
            broadcast.on("skiplock:workers:schedule", jobs.schedule_changed)
            await broadcast.start()
            workers = Workers(jobs)
            await workers.start()
            replicas.append((pool, redis, listener, broadcast, jobs, workers))
            await asyncio.wait_for(broadcast.listening(), 5)
        (_, _, _, _, jobs_a, _), (_, _, _, _, _, workers_b) = replicas
        await jobs_a.schedule.put("*/5 * * * *")
        deadline = time.monotonic() + 3
        while workers_b.delete_schedule != "*/5 * * * *":
            assert time.monotonic() < deadline, "replica b did not pick up the new schedule"
            await asyncio.sleep(0.05)
        job = workers_b.scheduler.get_job("delete_reaper")
        assert job is not None and job.next_run_time is not None
        await jobs_a.schedule.put("")
        deadline = time.monotonic() + 3
        while workers_b.scheduler.get_job("delete_reaper") is not None:
            assert time.monotonic() < deadline, "replica b kept the old schedule"
            await asyncio.sleep(0.05)
    finally:
        for pool, redis, listener, broadcast, _, workers in replicas:
            workers.shutdown()
            await broadcast.close()
            await listener.close()
            await pool.close()
            await redis.aclose()
        await db.execute("DELETE FROM worker_settings")


async def test_schedule_api_validates_and_is_shared_by_instances(  # type: ignore[no-untyped-def]
    server: Server, second_server: Server, make_user, tenant, db
) -> None:
    async with (
        httpx.AsyncClient(base_url=server.base_url, auth=ADMIN) as a,
        httpx.AsyncClient(base_url=second_server.base_url, auth=ADMIN) as b,
    ):
        try:
            r = await a.put("/api/admin/delete-reaper/schedule", json={"schedule": "0  3 * * *"})
            assert r.status_code == 200
            put = r.json()
            assert put["schedule"] == "0 3 * * *" and put["active"] is True
            # the next five runs, a day apart at 03:00 UTC
            assert len(put["next_runs"]) == 5 and all(t.endswith("T03:00:00.000Z") for t in put["next_runs"])
            assert (await b.get("/api/admin/delete-reaper/schedule")).json() == put
            for bad in ("61 * * * *", "* * * *", "every day", "* * * * * *"):
                assert_error(
                    await a.put("/api/admin/delete-reaper/schedule", json={"schedule": bad}), 400, "invalid_request"
                )
            for body in ({}, {"schedule": 5}, {"schedule": "* * * * *", "x": 1}):
                assert_error(await a.put("/api/admin/delete-reaper/schedule", json=body), 400, "invalid_request")
            r = await a.put("/api/admin/delete-reaper/schedule", json={"schedule": ""})
            assert r.json() == {"schedule": "", "active": False, "next_runs": []}
        finally:
            await db.execute("DELETE FROM worker_settings")
    tenant_admin = await make_user("tenant_admin", tenant)
    async with httpx.AsyncClient(base_url=server.base_url, auth=tenant_admin) as c:
        assert_error(await c.get("/api/admin/delete-reaper/schedule"), 403, "forbidden")
        assert_error(await c.post("/api/admin/expiry-reaper/run"), 403, "forbidden")
        assert_error(await c.post("/api/admin/delete-reaper/run"), 403, "forbidden")


async def test_manual_triggers_return_counts(server: Server, db, tenant) -> None:  # type: ignore[no-untyped-def]
    await insert(db, tenant, "manual", 7, expired=True)
    async with httpx.AsyncClient(base_url=server.base_url, auth=ADMIN) as a:
        r = await a.post("/api/admin/expiry-reaper/run")
        assert r.status_code == 200 and r.json()["expired"] >= 7
        assert (await statuses(db, tenant)) == {("manual", "expired"): 7}
        r = await a.post("/api/admin/delete-reaper/run")
        assert r.status_code == 200 and r.json()["deleted"] >= 7
        assert await statuses(db, tenant) == {}


async def test_the_api_process_runs_the_scheduler(server_env, tenant) -> None:  # type: ignore[no-untyped-def]
    env = {
        **server_env,
        "SKIPLOCK_RUN_WORKERS": "true",
        "SKIPLOCK_EXPIRY_REAPER_INTERVAL_SECONDS": "0.5",
        "SKIPLOCK_GAUGES_INTERVAL_SECONDS": "0.5",
    }
    srv = await asyncio.to_thread(start_server, env)
    try:
        async with httpx.AsyncClient(base_url=srv.base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}) as c:
            assert (await c.put("/api/topic-configs/ttl", json={"message_ttl_seconds": 1})).status_code == 200
            r = await c.post("/api/messages", json={"topic": "ttl", "payload": b64("x")})
            assert r.status_code == 201, r.text
            message_id = r.json()["id"]
            deadline = time.monotonic() + 10
            while (await c.get(f"/api/messages/{message_id}")).json()["status"] != "expired":
                assert time.monotonic() < deadline, "the expiry reaper did not run"
                await asyncio.sleep(0.2)
            deadline = time.monotonic() + 10
            labels = {"tenant": tenant.slug, "topic": "ttl", "status": "expired"}
            while metric((await c.get("/metrics")).text, "skiplock_messages", **labels) != 1:
                assert time.monotonic() < deadline, "the gauges were not refreshed"
                await asyncio.sleep(0.2)
    finally:
        await asyncio.to_thread(stop_server, srv)


async def test_a_worker_with_a_port_serves_health_and_its_jobs_metrics(server: Server, server_env, tenant) -> None:  # type: ignore[no-untyped-def]
    """`skiplock worker` with SKIPLOCK_WORKER_PORT: probes and a scrape for Kubernetes, the counters of the jobs it
    runs (which no API process counts), the /metrics token rules, and no other route."""
    port = str(free_port())
    env = {
        **server_env,
        "SKIPLOCK_PORT": port,  # where start_server waits for /readyz: the worker's port
        "SKIPLOCK_WORKER_PORT": port,
        "SKIPLOCK_METRICS_TOKEN": "worker-token",
        "SKIPLOCK_EXPIRY_REAPER_INTERVAL_SECONDS": "0.5",
    }
    worker = await asyncio.to_thread(start_server, env, command=("-m", "skiplock", "worker"))
    try:
        async with httpx.AsyncClient(base_url=server.base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}) as c:
            assert (await c.put("/api/topic-configs/ttl", json={"message_ttl_seconds": 1})).status_code == 200
            assert (await c.post("/api/messages", json={"topic": "ttl", "payload": b64("x")})).status_code == 201
        async with httpx.AsyncClient(base_url=worker.base_url) as w:
            assert (await w.get("/healthz")).status_code == 200
            assert (await w.get("/readyz")).json()["checks"] == {"postgres": "ok", "redis": "ok"}
            assert (await w.get("/metrics")).status_code == 401
            assert (await w.get("/api/version")).status_code == 404
            assert (await w.get("/")).status_code == 404
            bearer = {"Authorization": "Bearer worker-token"}
            labels = {"tenant": tenant.slug, "topic": "ttl"}
            deadline = time.monotonic() + 15
            while (
                metric((await w.get("/metrics", headers=bearer)).text, "skiplock_messages_expired_total", **labels) != 1
            ):
                assert time.monotonic() < deadline, f"the worker's expiry reaper was not counted:\n{worker.log()}"
                await asyncio.sleep(0.3)
        worker.process.terminate()
        assert await asyncio.to_thread(worker.process.wait, 30) == 0, worker.log()
    finally:
        await asyncio.to_thread(stop_server, worker)


async def test_a_cancelled_run_never_leaves_its_lock_in_the_pool(database_url, db) -> None:  # type: ignore[no-untyped-def]
    """The pool does not reset connections: a lock left on one would stop the job on every replica."""

    async def no_reset(_conn: Any) -> None:  # as the hot-path pool (mq.db.engine)
        return None

    pool = await asyncpg.create_pool(asyncpg_dsn(database_url), min_size=1, max_size=1, reset=no_reset)
    try:

        class SlowJob(_BatchJob):
            name = "cancelled_job"
            candidates = "SELECT 1::bigint WHERE $1 > 0"
            statement = "SELECT 'x' AS tenant, 'y' AS topic, 0 AS n FROM pg_sleep(5) WHERE $1 > 0 AND $2 > 0"

            def _arguments(self) -> tuple[Any, ...]:
                return ()

        for cancel_after in (0.05, 0.2, 0.0):  # during the lock, the statement, and at once
            task = asyncio.create_task(SlowJob(OperationsRepository(pool), 10).run_once(wait=True))
            await asyncio.sleep(cancel_after)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            other = await asyncpg.connect(asyncpg_dsn(database_url))
            try:
                deadline = time.monotonic() + 5
                while not await other.fetchval("SELECT pg_try_advisory_lock($1)", lock_key("cancelled_job")):
                    assert time.monotonic() < deadline, f"lock still held after a cancel at {cancel_after} s"
                    await asyncio.sleep(0.05)
            finally:
                await other.close()
    finally:
        await pool.close()
