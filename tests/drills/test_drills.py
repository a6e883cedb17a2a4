"""Reliability drills against real servers started as a user would (docs/reliability.md records the figures).

Each drill runs producers and consumers over HTTP (`harness.Load`), does something bad to a real process, and
checks the ledger: every message whose enqueue answered 2xx is delivered, none changed, none acknowledged twice;
errors while a dependency is away are 503 with Retry-After, never 500 and never a hang. The suite runs the short
versions; `make drills` the long ones (SKIPLOCK_DRILL_LONG=1) and prints the figures.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections import Counter
from typing import Any

import asyncpg
import httpx
import psutil
import pytest

from mq.db.repository import lock_key
from skiplock.local import EmbeddedPostgres, EmbeddedRedis, free_port
from tests.drills.harness import TOPIC, Load, report, seconds
from tests.support.servers import ADMIN, Server, scratch_dir, start_server, stop_server
from tests.support.tenants import Tenant

pytestmark = pytest.mark.drill

#: How long Postgres or Redis stays away in their drills (the suite and `make drills` alike: see docs/reliability.md;
#: SKIPLOCK_DRILL_DOWN_SECONDS to try another)
DOWN_SECONDS = float(os.environ.get("SKIPLOCK_DRILL_DOWN_SECONDS", "10"))


def _assert_no_loss(figures: dict[str, Any]) -> None:
    assert figures["lost"] == 0, figures
    assert figures["changed"] == 0, figures
    assert figures["double_acked"] == 0, figures
    assert figures["500"] == 0, figures
    assert figures["slow_requests"] == 0, figures
    assert figures["acknowledged_enqueues"] > 0, figures


def _internal_errors(server: Server) -> list[str]:
    """The server's log lines about 500s (the exception's type and the last frames), to show what went wrong."""
    return [line[-1500:] for line in server.log().splitlines() if "internal error" in line]


async def _account(figures: dict[str, Any], load: Load, database_url: str) -> dict[str, Any]:
    """Look up the tokens never delivered: a message that failed in its DLQ (its lease lapsed there too: a lapse
    counts as an attempt, and a dead letter has none left) is kept as evidence, not lost; report it apart."""
    tokens = load.ledger.lost_tokens()
    if not tokens:
        return figures | {"failed_in_dlq": 0}
    conn = await asyncpg.connect(database_url)
    try:
        # Only the drill's tenant: the database is shared with other tests, whose payloads need not be JSON.
        tenant_rows = await conn.fetch(
            """SELECT topic, status, retry_count, last_error, payload FROM messages
               WHERE tenant_id = (SELECT id FROM tenants WHERE slug = $1)""",
            load.tenant,
        )
    finally:
        await conn.close()
    wanted = set(tokens)
    rows = []
    for row in tenant_rows:
        try:
            token = json.loads(row["payload"]).get("token")
        except ValueError:
            continue
        if token in wanted:
            rows.append({k: row[k] for k in ("topic", "status", "retry_count", "last_error")} | {"token": token})
    failed = [r for r in rows if r["status"] == "failed" and r["topic"].endswith(".dlq")]
    found = {r["token"] for r in rows}
    return figures | {
        "failed_in_dlq": len(failed),
        "lost": len(tokens) - len(failed),
        "lost_rows": [dict(r) for r in rows if r not in failed][:5],
        "lost_nowhere": len([t for t in tokens if t not in found]),
        # of those, the ones a consumer received (their ack's answer was not a 200 and they are gone: an ack that
        # committed without saying so would show here)
        "lost_nowhere_received": len([t for t in tokens if t not in found and load.ledger.received[t]]),
    }


async def _account_group(figures: dict[str, Any], load: Load, group: str, database_url: str) -> dict[str, Any]:
    """Where a group's undelivered tokens are: still owed to it in the topic, its dead letter (failed in the DLQ:
    evidence, not lost), or nowhere (lost)."""
    tokens = set(load.ledgers[group].lost_tokens())
    if not tokens:
        return figures | {"failed_in_dlq": 0}
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch(
            """SELECT m.topic, m.status, m.consumer_group, m.payload,
                      (SELECT d.status FROM deliveries AS d JOIN consumer_groups AS g ON g.tenant_id = d.tenant_id
                          AND g.id = d.group_id
                       WHERE d.message_id = m.id AND g.name = $2) AS owed_as
               FROM messages AS m WHERE m.tenant_id = (SELECT id FROM tenants WHERE slug = $1)""",
            load.tenant,
            group,
        )
    finally:
        await conn.close()
    where: dict[str, str] = {}
    for row in rows:
        try:
            token = json.loads(row["payload"]).get("token")
        except ValueError:
            continue
        if token not in tokens:
            continue
        if row["owed_as"] is not None:
            where[token] = f"owed {row['owed_as']}"
        elif row["consumer_group"] == group and row["topic"].endswith(".dlq"):
            where[token] = f"dlq {row['status']}"
    failed = sum(1 for w in where.values() if w == "dlq failed")
    return figures | {
        "failed_in_dlq": failed,
        "lost": len(tokens) - failed,
        "lost_where": dict(Counter(where.values())),
        "lost_nowhere": len(tokens) - len(where),
    }


async def _start(env: dict[str, str], **kwargs: Any) -> Server:
    return await asyncio.to_thread(start_server, env, **kwargs)


async def test_kill_9_of_the_api_under_load(server_env: dict[str, str], tenant: Tenant) -> None:
    """The API process is killed with SIGKILL every few seconds and started again on the same port."""
    port = free_port()
    env = {**server_env, "SKIPLOCK_PORT": str(port)}
    server = await _start(env)
    load = Load(lambda: f"http://127.0.0.1:{port}", ADMIN, tenant.slug)
    load.start()
    kills, downtime = 0, []
    deadline = time.monotonic() + seconds(12, 180)
    try:
        while time.monotonic() < deadline:
            await asyncio.sleep(3)
            server.process.kill()
            server.process.wait(10)
            kills += 1
            down = time.monotonic()
            server = await _start(env)
            downtime.append(time.monotonic() - down)
        await load.drain(timeout=60)
    finally:
        await load.cancel()
        stop_server(server)
    figures = load.ledger.result() | {"kills": kills, "restart_seconds_max": round(max(downtime), 2)}
    figures = await _account(figures, load, server_env["SKIPLOCK_DATABASE_URL"])
    report("kill -9 API", figures)
    _assert_no_loss(figures)


@pytest.mark.timeout(900)
async def test_kill_9_of_the_api_while_three_consumer_groups_consume(
    server_env: dict[str, str], tenant: Tenant
) -> None:
    """Three consumer groups on the drill's topic, two consumers each, while the API is killed with SIGKILL every few
    seconds: every group receives every acknowledged message, none acked twice by a group."""
    port = free_port()
    env = {**server_env, "SKIPLOCK_PORT": str(port)}
    server = await _start(env)
    groups = ("billing", "shipping", "audit")
    async with httpx.AsyncClient(base_url=server.base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}) as admin:
        for group in groups:
            r = await admin.post(f"/api/topics/{TOPIC}/consumer-groups", json={"consumer_group": group})
            assert r.status_code == 201, r.text
    # Each message is consumed three times: more consumers than producers, so that each group keeps up.
    load = Load(lambda: f"http://127.0.0.1:{port}", ADMIN, tenant.slug, producers=2, consumers=3, groups=groups)
    load.start()
    kills = 0
    deadline = time.monotonic() + seconds(12, 180)
    try:
        while time.monotonic() < deadline:
            await asyncio.sleep(3)
            server.process.kill()
            server.process.wait(10)
            kills += 1
            server = await _start(env)
        await load.drain(timeout=180)
    finally:
        await load.cancel()
        stop_server(server)
    per_group = load.results()
    for group, figures in per_group.items():
        per_group[group] = await _account_group(figures, load, group, server_env["SKIPLOCK_DATABASE_URL"])
    report("kill -9 API, 3 consumer groups", {"kills": kills} | per_group)
    for group, figures in per_group.items():
        _assert_no_loss(figures | {"slow_requests": load.ledger.slow, "group": group})


async def test_kill_9_of_make_run_and_start_again_on_the_same_data(tenant: Tenant) -> None:
    """`make run`'s whole process (API and its embedded Postgres and Redis) is killed with SIGKILL under load;
    the next start on the same data folder comes up cleanly, with every acknowledged message."""
    data_dir = scratch_dir() / "data"
    port = free_port()
    env = {"SKIPLOCK_PORT": str(port), "SKIPLOCK_DEFAULT_TENANT": "drill"}
    server = await _start(env, data_dir=data_dir)
    load = Load(lambda: f"http://127.0.0.1:{port}", ADMIN, "drill", producers=3, consumers=2)
    load.start()
    kills, restart = 0, []
    deadline = time.monotonic() + seconds(10, 120)
    try:
        while time.monotonic() < deadline:
            await asyncio.sleep(4)
            server.process.kill()
            server.process.wait(10)
            kills += 1
            down = time.monotonic()
            server = await _start(env, data_dir=data_dir)  # must not fail on a busy data folder or port
            restart.append(time.monotonic() - down)
        await load.drain(timeout=60)
    finally:
        await load.cancel()
        stop_server(server)
    figures = load.ledger.result() | {"kills": kills, "restart_seconds_max": round(max(restart), 2)}
    report("kill -9 make run", figures)
    _assert_no_loss(figures)


async def test_postgres_restart_under_load(server_env: dict[str, str], tenant: Tenant) -> None:
    """Postgres stops (fast shutdown) for 10 s under load and comes back on the same port and data."""
    pg = EmbeddedPostgres(scratch_dir() / "pg", database="drill")
    pg_url = pg.start()
    try:
        env = {**server_env, "SKIPLOCK_DATABASE_URL": pg_url, "SKIPLOCK_MIGRATE_ON_START": "true"}
        server = await _start(env)
        conn = await asyncpg.connect(pg_url)
        await conn.execute("INSERT INTO tenants (slug, name) VALUES ($1, $1) ON CONFLICT DO NOTHING", tenant.slug)
        await conn.close()
        load = Load(lambda: server.base_url, ADMIN, tenant.slug)
        load.start()
        try:
            await asyncio.sleep(seconds(3, 20))
            before = dict(load.ledger.statuses)
            await asyncio.to_thread(pg.stop)
            await asyncio.sleep(DOWN_SECONDS)
            await asyncio.to_thread(pg.start)
            up = time.monotonic()
            recovered = None
            async with httpx.AsyncClient(base_url=server.base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}) as c:
                while recovered is None and time.monotonic() - up < 30:
                    r = await c.get("/api/topics")
                    if r.status_code == 200:
                        recovered = time.monotonic() - up
                    else:
                        await asyncio.sleep(0.1)
            await asyncio.sleep(seconds(3, 20))
            await load.drain(timeout=60)
        finally:
            await load.cancel()
            stop_server(server)
        during = {k: v - before.get(k, 0) for k, v in load.ledger.statuses.items() if v != before.get(k, 0)}
        down = {"down_seconds": DOWN_SECONDS, "recovery_seconds": recovered, "while_down": during}
        figures = await _account(load.ledger.result() | down, load, pg_url)
        figures["internal_errors"] = _internal_errors(server)
        report("Postgres restart", figures)
        _assert_no_loss(figures)
        assert recovered is not None, "the API did not recover by itself"
        assert all(k.split()[1] in ("200", "201", "503") for k in during), during
    finally:
        pg.stop()


async def test_redis_loss_under_load(server_env: dict[str, str], tenant: Tenant, client: httpx.AsyncClient) -> None:
    """Redis stops for 10 s under load (topic limits and quotas configured, so every Redis use is
    exercised): no request fails; limits fall back; caches heal; login limiting resumes."""
    redis = EmbeddedRedis(scratch_dir() / "redis")
    redis_url = redis.start()
    port = redis.port
    env = {**server_env, "SKIPLOCK_REDIS_URL": redis_url}
    server = await _start(env)
    try:
        config = {"throughput_limit": 100000, "max_depth": 1000000}
        assert (await client.put("/api/topic-configs/drill", json=config)).status_code == 200
        patch = {"quotas": {"enqueue_rate": 1000000, "max_messages": 10000000}}
        assert (await client.patch(f"/api/tenants/{tenant.slug}", json=patch)).status_code == 200
        load = Load(lambda: server.base_url, ADMIN, tenant.slug)
        load.start()
        try:
            await asyncio.sleep(seconds(3, 20))
            await asyncio.to_thread(redis.stop)
            await asyncio.sleep(DOWN_SECONDS)
            redis = EmbeddedRedis(scratch_dir() / "redis2", port=port)
            await asyncio.to_thread(redis.start)
            await asyncio.sleep(seconds(3, 20))
            await load.drain(timeout=60)
        finally:
            await load.cancel()
        figures = load.ledger.result()
        # Login limiting resumes: failures count in the new Redis again.
        async with httpx.AsyncClient(base_url=server.base_url) as c:
            for _ in range(3):
                await c.get("/api/topics", auth=("nobody-at-all", "wrong password"))
        import redis.asyncio as aioredis

        r = aioredis.from_url(redis_url)
        try:
            counted = [k async for k in r.scan_iter(match="skiplock:login-failures:*")]
        finally:
            await r.aclose()
        figures["login_limiting_resumed"] = bool(counted)
        report("Redis loss", figures)
        _assert_no_loss(figures)
        assert figures["5xx"] == 0 and load.ledger.count("Connect") == 0, figures
        assert counted
    finally:
        stop_server(server)
        redis.stop()


async def test_a_worker_replica_killed_mid_reap(database_url: str, tenant: Tenant, db: asyncpg.Pool[Any]) -> None:
    """Two `skiplock worker` replicas; the one reaping is killed with SIGKILL mid-run: the other takes over
    within one interval and every message is reaped exactly once."""
    import subprocess
    import sys

    from tests.support.servers import ROOT

    n = 60000
    await db.execute("INSERT INTO topic_configs (tenant_id, topic, expire_to_dlq) VALUES ($1, 'reap', true)", tenant.id)
    await db.execute(
        """INSERT INTO messages (id, tenant_id, topic, payload, max_retries, expires_at)
           SELECT gen_random_uuid(), $1, 'reap', '\\x00', 3, now() - interval '1 minute' FROM generate_series(1, $2)""",
        tenant.id,
        n,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKIPLOCK_")}
    env.update(
        {
            "SKIPLOCK_DATABASE_URL": database_url,
            "SKIPLOCK_EXPIRY_REAPER_INTERVAL_SECONDS": "2",
            "SKIPLOCK_REAPER_BATCH_SIZE": "200",
            "SKIPLOCK_LOG_LEVEL": "info",
            "SKIPLOCK_GAUGES_INTERVAL_SECONDS": "3600",
        }
    )
    logs = [scratch_dir() / f"worker-{i}.log" for i in range(2)]
    replicas = []
    for path in logs:
        with path.open("wb") as out:
            replicas.append(
                subprocess.Popen([sys.executable, "-m", "workers"], cwd=ROOT, env=env, stdout=out, stderr=out)
            )
    try:
        holder = None
        deadline = time.monotonic() + 30
        while holder is None:  # the replica whose connection holds the reaper's lock
            assert time.monotonic() < deadline, "no replica started reaping"
            row = await db.fetchrow(
                """SELECT a.pid, a.application_name, a.client_port FROM pg_locks AS l
                   JOIN pg_stat_activity AS a ON a.pid = l.pid
                   WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
                     AND (l.classid::int8 << 32 | l.objid::int8) = $1""",
                lock_key("expiry_reaper"),
            )
            if row is not None:
                for proc in replicas:
                    ports = {c.laddr.port for c in psutil.Process(proc.pid).net_connections(kind="tcp")}
                    if row["client_port"] in ports:
                        holder = proc
            await asyncio.sleep(0.05)
        # kill it mid-run: once its first batches are in (it holds the lock a moment before, reading which tenants
        # have work)
        while (
            left_then := await db.fetchval(
                "SELECT count(*) FROM messages WHERE tenant_id = $1 AND topic = 'reap'", tenant.id
            )
        ) == n:
            assert time.monotonic() < deadline, "the replica holding the lock reaped nothing"
            await asyncio.sleep(0.02)
        holder.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        holder.wait(10)
        while await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1 AND topic = 'reap'", tenant.id):
            assert time.monotonic() - killed_at < 60, "the other replica did not take over"
            await asyncio.sleep(0.1)
        takeover = time.monotonic() - killed_at
        moved = await db.fetchval(
            "SELECT count(*) FROM messages WHERE tenant_id = $1 AND topic = 'reap.dlq' AND original_topic = 'reap'",
            tenant.id,
        )
        twice = await db.fetchval(
            "SELECT count(*) FROM messages WHERE tenant_id = $1 AND topic LIKE '%.dlq.dlq'", tenant.id
        )
    finally:
        for proc in replicas:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(30)
    figures = {
        "messages": n,
        "left_when_killed": left_then,
        "takeover_and_finish_seconds": round(takeover, 2),
        "moved_once": moved,
        "moved_twice": twice,
    }
    report("worker replica killed", figures)
    assert 0 < left_then < n, "the kill did not land mid-run"
    assert moved == n and twice == 0


async def test_worker_replicas_killed_while_schedules_fire(
    database_url: str, tenant: Tenant, db: asyncpg.Pool[Any]
) -> None:
    """Two `skiplock worker` replicas fire 40 schedules every second; each is killed with SIGKILL in turn (the
    first while firing) and started again. Every tick between the first and the last is enqueued exactly once:
    none twice, none missing."""
    import subprocess
    import sys
    from datetime import UTC, datetime

    from tests.support.servers import ROOT

    names = [f"drill-{n:02}" for n in range(40)]
    await db.execute(
        """INSERT INTO schedules (tenant_id, name, topic, cron, timezone, payload, next_run_at)
           SELECT $1, n, 'tick-drill', '* * * * * *', 'UTC', '\\x7b7d', date_trunc('second', now()) + interval '2 s'
           FROM unnest($2::text[]) AS n""",
        tenant.id,
        names,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKIPLOCK_")}
    env.update(
        {
            "SKIPLOCK_DATABASE_URL": database_url,
            "SKIPLOCK_SCHEDULE_POLL_SECONDS": "0.2",
            "SKIPLOCK_EXPIRY_REAPER_INTERVAL_SECONDS": "3600",
            "SKIPLOCK_GAUGES_INTERVAL_SECONDS": "3600",
            "SKIPLOCK_LOG_LEVEL": "info",
        }
    )

    def start(n: int) -> subprocess.Popen[bytes]:
        with (scratch_dir() / f"tick-worker-{n}.log").open("wb") as out:
            return subprocess.Popen([sys.executable, "-m", "workers"], cwd=ROOT, env=env, stdout=out, stderr=out)

    async def firing(proc: subprocess.Popen[bytes]) -> bool:
        """Whether the replica's connection is inside a firing transaction now."""
        ports = {c.laddr.port for c in psutil.Process(proc.pid).net_connections(kind="tcp")}
        rows = await db.fetch(  # the workers' only multi-statement transactions are the firer's (reapers are off)
            "SELECT client_port FROM pg_stat_activity WHERE xact_start IS NOT NULL AND state <> 'idle'"
        )
        return any(r["client_port"] in ports for r in rows)

    replicas = [start(0), start(1)]
    started = datetime.now(UTC)
    kills, mid_tick = 0, 0
    try:
        await asyncio.sleep(seconds(4, 10))
        for n in range(2):  # each replica killed in turn, as close to a firing transaction as the poll gets
            victim = replicas[n]
            deadline = time.monotonic() + 3
            while not await firing(victim) and time.monotonic() < deadline:
                await asyncio.sleep(0.005)
            mid_tick += await firing(victim)
            victim.send_signal(signal.SIGKILL)
            victim.wait(10)
            kills += 1
            await asyncio.sleep(1.5)
            replicas[n] = start(10 + n)
            await asyncio.sleep(seconds(3, 8))
    finally:
        for proc in replicas:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(30)
    ended = datetime.now(UTC)
    rows = await db.fetch(
        """SELECT metadata->>'skiplock_schedule' AS name, (metadata->>'skiplock_tick')::timestamptz AS tick
           FROM messages WHERE tenant_id = $1 AND topic = 'tick-drill'""",
        tenant.id,
    )
    by_name: dict[str, list[datetime]] = {}
    for r in rows:
        by_name.setdefault(r["name"], []).append(r["tick"])
    twice = sum(len(ticks) - len(set(ticks)) for ticks in by_name.values())
    missing = 0
    for ticks in by_name.values():
        got = sorted(set(ticks))
        expected = int((got[-1] - got[0]).total_seconds()) + 1
        missing += expected - len(got)
    figures = {
        "schedules": len(names),
        "ticks_enqueued": len(rows),
        "seconds": round((ended - started).total_seconds(), 1),
        "kills": kills,
        "killed_inside_a_firing_transaction": mid_tick,
        "ticks_twice": twice,
        "ticks_missing": missing,
    }
    report("worker replicas killed while schedules fire", figures)
    assert sorted(by_name) == names and twice == 0
    assert missing == 0, figures


async def test_sigterm_under_load(server_env: dict[str, str], tenant: Tenant) -> None:
    """SIGTERM while producers, consumers and long polls run: in-flight requests finish, long polls answer empty
    at once, nothing answers 5xx, the process exits 0 within the grace period; started again, every acknowledged
    message is there."""
    env = {**server_env, "SKIPLOCK_PORT": str(free_port())}
    server = await _start(env)
    load = Load(lambda: server.base_url, ADMIN, tenant.slug)
    load.start()
    headers = {"X-Tenant": tenant.slug}
    async with httpx.AsyncClient(base_url=server.base_url, auth=ADMIN, headers=headers, timeout=30) as c:
        polls = [
            asyncio.create_task(c.post("/api/messages/dequeue", json={"topic": "idle", "wait_seconds": 20}))
            for _ in range(20)
        ]
        await asyncio.sleep(seconds(3, 20))
        signalled = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        answered = await asyncio.gather(*polls, return_exceptions=True)
        polls_done = time.monotonic() - signalled
        code = await asyncio.to_thread(server.process.wait, 30)
        exited = time.monotonic() - signalled
    server = await _start(env)
    try:
        await load.drain(timeout=60)
    finally:
        await load.cancel()
        stop_server(server)
    figures = load.ledger.result() | {
        "long_polls_answered_in_seconds": round(polls_done, 2),
        "exit_code": code,
        "exit_seconds": round(exited, 2),
    }
    report("SIGTERM under load", figures)
    assert code == 0 and exited < 30, figures
    assert all(isinstance(r, httpx.Response) and r.status_code == 200 for r in answered), answered
    assert all(r.json()["messages"] == [] for r in answered if isinstance(r, httpx.Response))
    assert figures["5xx"] == 0, figures
    _assert_no_loss(figures)


async def test_a_lock_holding_postgres_answers_503_not_a_hang(
    server_env: dict[str, str], tenant: Tenant, database_url: str
) -> None:
    """Someone holds an exclusive lock on the messages table for 8 s: requests answer 503 with Retry-After within
    the statement timeout (2 s here) instead of queueing on the pool forever, and all is well once it is let go."""
    env = {**server_env, "SKIPLOCK_DB_STATEMENT_TIMEOUT_SECONDS": "2"}
    server = await _start(env)
    blocker = await asyncpg.connect(database_url.replace("postgresql+asyncpg://", "postgresql://"))
    load = Load(lambda: server.base_url, ADMIN, tenant.slug)
    load.start()
    try:
        await asyncio.sleep(2)
        before = dict(load.ledger.statuses)
        started = time.monotonic()
        async with blocker.transaction():
            await blocker.execute("LOCK TABLE messages IN ACCESS EXCLUSIVE MODE")
            async with httpx.AsyncClient(
                base_url=server.base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}, timeout=30
            ) as c:
                probe_started = time.monotonic()
                probe = await c.post("/api/messages/dequeue", json={"topic": "drill"})
                probe_seconds = time.monotonic() - probe_started
            await asyncio.sleep(max(0.0, 8 - (time.monotonic() - started)))
        during = {k: v - before.get(k, 0) for k, v in load.ledger.statuses.items() if v != before.get(k, 0)}
        await asyncio.sleep(2)
        await load.drain(timeout=60)
    finally:
        await load.cancel()
        await blocker.close()
        stop_server(server)
    figures = load.ledger.result() | {
        "locked_seconds": 8,
        "probe_status": probe.status_code,
        "probe_seconds": round(probe_seconds, 2),
        "while_locked": during,
        "internal_errors": _internal_errors(server),
    }
    report("lock-holding Postgres", figures)
    _assert_no_loss(figures)
    assert probe.status_code == 503 and probe.headers["Retry-After"] == "1" and probe_seconds < 10, figures
