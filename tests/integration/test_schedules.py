"""Periodic messages (contract, "Periodic messages"): schedules put, read and deleted; each tick enqueued exactly
once by racing workers, with its metadata; a missed tick enqueued once at catch-up, older ones skipped; refused
ticks recorded, not retried; tenant isolation."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import asyncpg
import httpx
import pytest

from mq.runtime import Runtime
from mq.schedules.firer import ScheduleFirer
from mq.settings import Settings
from tests.integration.helpers import assert_error, b64, dequeue, enqueue
from tests.support.tenants import Tenant


@pytest.fixture
async def firers(database_url: str, redis_url: str) -> AsyncIterator[list[ScheduleFirer]]:
    """Three workers' firers, each with its own runtime (pools, caches), as three replicas have."""
    runtimes = [
        await Runtime.open(Settings(database_url=database_url, redis_url=redis_url), bootstrap_users=False)
        for _ in range(3)
    ]
    try:
        yield [r.ticks for r in runtimes]
    finally:
        for runtime in runtimes:
            await runtime.close()


async def _put(client: httpx.AsyncClient, name: str, **body: Any) -> httpx.Response:
    return await client.put(f"/api/schedules/{name}", json={"payload": b64("tick"), **body})


async def _due_now(db: asyncpg.Pool[Any], tenant: Tenant, name: str, ago: timedelta = timedelta()) -> datetime:
    """Make the schedule's next tick due (`ago` in the past, on its cron: the one the stored tick was)."""
    at: datetime = await db.fetchval(
        "UPDATE schedules SET next_run_at = date_trunc('second', now()) - $3::interval "
        "WHERE tenant_id = $1 AND name = $2 RETURNING next_run_at",
        tenant.id,
        name,
        ago,
    )
    return at


async def test_schedules_are_put_read_and_deleted(client: httpx.AsyncClient) -> None:
    r = await _put(
        client,
        "nightly",
        topic="reports",
        cron="30 2 * * *",
        timezone="Europe/Berlin",
        priority=3,
        metadata={"kind": "report"},
        key="nightly-report",
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert {k: body[k] for k in ("name", "topic", "cron", "timezone", "priority", "enabled", "key")} == {
        "name": "nightly",
        "topic": "reports",
        "cron": "30 2 * * *",
        "timezone": "Europe/Berlin",
        "priority": 3,
        "enabled": True,
        "key": "nightly-report",
    }
    assert body["metadata"] == {"kind": "report"} and body["last_run_at"] is None and body["last_error"] is None
    next_run = datetime.fromisoformat(body["next_run_at"])
    assert next_run > datetime.now(UTC)
    assert next_run.astimezone(ZoneInfo("Europe/Berlin")).strftime("%H:%M") in ("02:30", "03:00")
    assert base64.b64decode(body["payload"]) == b"tick"
    assert (await _put(client, "every-5s", topic="reports", cron="*/5 * * * * *")).json()["timezone"] == "UTC"
    assert [s["name"] for s in (await client.get("/api/schedules")).json()["items"]] == ["every-5s", "nightly"]
    assert (await client.get("/api/schedules/nightly")).json() == body

    for bad in (
        {"cron": "* * *"},
        {"cron": "61 * * * *"},
        {"cron": "* * * * *", "timezone": "Mars/Olympus"},
        {"cron": "0 0 30 2 *"},
        {"cron": "* * * * *", "topic": "x.dlq"},
    ):
        r = await _put(client, "bad", **{"topic": "reports", **bad})
        assert r.status_code == 400 and r.json()["code"] in ("invalid_request", "reserved_topic"), (bad, r.text)
    assert_error(await client.get("/api/schedules/bad"), 404, "not_found")
    assert (await client.delete("/api/schedules/nightly")).status_code == 204
    assert_error(await client.delete("/api/schedules/nightly"), 404, "not_found")


async def test_a_tick_is_enqueued_once_with_the_schedules_message_and_metadata(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant, firers: list[ScheduleFirer]
) -> None:
    r = await _put(client, "hourly", topic="ticked", cron="0 * * * *", priority=4, metadata={"source": "cron"})
    assert r.status_code == 200, r.text
    await firers[0].run_once()
    assert await dequeue(client, "ticked", 10) == []  # not due yet
    due = await _due_now(db, tenant, "hourly")
    await asyncio.gather(*(f.run_once() for f in firers))
    [m] = await dequeue(client, "ticked", 10)
    assert base64.b64decode(m["payload"]) == b"tick" and m["priority"] == 4
    assert m["metadata"] == {
        "source": "cron",
        "skiplock_schedule": "hourly",
        "skiplock_tick": due.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    }
    schedule = (await client.get("/api/schedules/hourly")).json()
    assert schedule["last_run_at"] == m["metadata"]["skiplock_tick"] and schedule["last_error"] is None
    assert datetime.fromisoformat(schedule["next_run_at"]) > datetime.now(UTC)
    await asyncio.gather(*(f.run_once() for f in firers))
    assert await dequeue(client, "ticked", 10) == []  # fired: not due again until the next hour


async def test_racing_workers_fire_each_due_tick_exactly_once(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant, firers: list[ScheduleFirer]
) -> None:
    names = [f"s{n:03}" for n in range(300)]
    for name in names:
        assert (await _put(client, name, topic="raced-ticks", cron="0 0 * * *")).status_code == 200
    await db.execute("UPDATE schedules SET next_run_at = now() - interval '1 second' WHERE tenant_id = $1", tenant.id)
    for firer in firers:
        firer.batch = 40  # many small transactions, so that the three interleave
    await asyncio.gather(*(f.run_once() for f in firers), *(f.run_once() for f in firers))
    rows = await db.fetch(
        "SELECT metadata->>'skiplock_schedule' AS name, count(*) AS n FROM messages "
        "WHERE tenant_id = $1 AND topic = 'raced-ticks' GROUP BY 1",
        tenant.id,
    )
    assert sorted(r["name"] for r in rows) == names and {r["n"] for r in rows} == {1}


async def test_missed_ticks_enqueue_the_latest_once_and_skip_the_older(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant, firers: list[ScheduleFirer]
) -> None:
    # daily: the schedule's next tick cannot come due while the test runs (a minutely one did, when the test
    # crossed a minute on a loaded machine: the servers' own firers stored that tick too)
    assert (await _put(client, "daily", topic="caught-up", cron="0 0 * * *")).status_code == 200
    await db.execute(  # no worker ran for three days: 3 ticks missed
        "UPDATE schedules SET next_run_at = date_trunc('day', now()) - interval '3 days' "
        "WHERE tenant_id = $1 AND name = 'daily'",
        tenant.id,
    )
    await firers[0].run_once()
    [m] = await dequeue(client, "caught-up", 10)
    tick = datetime.fromisoformat(m["metadata"]["skiplock_tick"])
    now = datetime.now(UTC)
    assert now - timedelta(days=1) < tick <= now and (tick.hour, tick.minute, tick.second) == (0, 0, 0)  # the latest
    await firers[0].run_once()
    assert await dequeue(client, "caught-up", 10) == []


async def test_a_refused_tick_is_recorded_and_the_schedule_moves_on(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant, firers: list[ScheduleFirer]
) -> None:
    r = await client.put("/api/topic-configs/capped-ticks", json={"max_depth": 1})
    assert r.status_code == 200, r.text
    assert (
        await client.post("/api/messages", json={"topic": "capped-ticks", "payload": b64("first")})
    ).status_code == 201
    assert (await _put(client, "capped", topic="capped-ticks", cron="0 * * * *")).status_code == 200
    schema = {"schema_json": '{"type": "object"}', "format": "json_schema"}
    assert (await client.put("/api/topic-schemas/shaped-ticks", json=schema)).status_code == 200
    assert (await _put(client, "shaped", topic="shaped-ticks", cron="0 * * * *")).status_code == 200  # "tick": no JSON
    for name in ("capped", "shaped"):
        await _due_now(db, tenant, name)
    await firers[0].run_once()
    capped = (await client.get("/api/schedules/capped")).json()
    assert capped["last_error"].startswith("queue_full: ") and capped["last_run_at"] is not None
    assert datetime.fromisoformat(capped["next_run_at"]) > datetime.now(UTC)  # moved on, not retried
    assert (await client.get("/api/schedules/shaped")).json()["last_error"].startswith("schema_violation: ")
    assert len(await dequeue(client, "capped-ticks", 10)) == 1 and await dequeue(client, "shaped-ticks", 10) == []
    # Disabling it (or saving it unchanged) keeps the evidence; changing what it sends or when forgets it.
    off = await _put(client, "capped", topic="capped-ticks", cron="0 * * * *", enabled=False)
    assert off.json()["last_error"] == capped["last_error"] and off.json()["enabled"] is False
    assert (await _put(client, "capped", topic="capped-ticks", cron="5 * * * *")).json()["last_error"] is None


async def test_a_topic_cap_admits_the_ticks_that_fit_and_refuses_the_rest(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant, firers: list[ScheduleFirer]
) -> None:
    assert (await client.put("/api/topic-configs/few-ticks", json={"max_depth": 3})).status_code == 200
    for n in range(5):
        assert (await _put(client, f"few-{n}", topic="few-ticks", cron="0 * * * *")).status_code == 200
        await _due_now(db, tenant, f"few-{n}")
    await firers[0].run_once()  # (other tests' schedules may be due too: this tenant's outcomes are checked)
    assert len(await dequeue(client, "few-ticks", 10)) == 3
    errors = [(await client.get(f"/api/schedules/few-{n}")).json()["last_error"] for n in range(5)]
    assert sorted(e.split(":")[0] if e else "" for e in errors) == ["", "", "", "queue_full", "queue_full"]


async def test_a_disabled_schedule_does_not_fire(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant, firers: list[ScheduleFirer]
) -> None:
    assert (await _put(client, "paused", topic="quiet", cron="0 * * * *", enabled=False)).status_code == 200
    await _due_now(db, tenant, "paused")
    await firers[0].run_once()
    assert await dequeue(client, "quiet", 10) == []


async def test_another_tenant_never_sees_or_changes_a_tenants_schedules(
    client: httpx.AsyncClient, make_client: Any, db: asyncpg.Pool[Any]
) -> None:
    assert (await _put(client, "mine", topic="reports", cron="0 * * * *")).status_code == 200
    other_slug = f"t-{uuid.uuid4().hex[:12]}"
    await db.execute("INSERT INTO tenants (slug, name) VALUES ($1, $1)", other_slug)
    other = make_client(headers={"X-Tenant": other_slug})
    assert (await other.get("/api/schedules")).json() == {"items": []}
    assert_error(await other.get("/api/schedules/mine"), 404, "not_found")
    assert_error(await other.delete("/api/schedules/mine"), 404, "not_found")
    assert (await client.get("/api/schedules/mine")).status_code == 200


async def test_one_batch_stores_many_tenants_ticks_each_in_its_own_tenant_and_topic(
    client: httpx.AsyncClient, make_client: Any, db: asyncpg.Pool[Any], tenant: Tenant, firers: list[ScheduleFirer]
) -> None:
    """The ticks nothing can refuse share one statement across tenants and topics; capped, keyed and grouped
    ones take their own, in the same batch."""
    other_slug = f"t-{uuid.uuid4().hex[:12]}"
    await db.execute("INSERT INTO tenants (slug, name) VALUES ($1, $1)", other_slug)
    other = make_client(headers={"X-Tenant": other_slug})
    assert (await client.put("/api/topic-configs/mixed-capped", json={"max_depth": 1})).status_code == 200
    group = await client.post("/api/topics/mixed-grouped/consumer-groups", json={"consumer_group": "g"})
    assert group.status_code == 201, group.text
    for who, names in ((client, ("a", "b")), (other, ("a", "c"))):
        for name in names:
            assert (await _put(who, f"plain-{name}", topic=f"mixed-{name}", cron="0 * * * *")).status_code == 200
    for name, body in (
        ("capped-1", {"topic": "mixed-capped"}),
        ("capped-2", {"topic": "mixed-capped"}),
        ("keyed", {"topic": "mixed-keyed", "key": "k"}),
        ("grouped", {"topic": "mixed-grouped"}),
    ):
        assert (await _put(client, name, cron="0 * * * *", **body)).status_code == 200
    await db.execute(
        "UPDATE schedules AS s SET next_run_at = now() - interval '1 second' FROM tenants AS t "
        "WHERE t.id = s.tenant_id AND t.slug = ANY($1::text[])",
        [tenant.slug, other_slug],
    )
    await firers[0].run_once()  # (other tests' schedules may be due too: only these tenants' outcomes are checked)
    rows = await db.fetch(
        "SELECT t.slug, m.topic, m.key, m.metadata->>'skiplock_schedule' AS schedule FROM messages AS m "
        "JOIN tenants AS t ON t.id = m.tenant_id WHERE m.topic LIKE 'mixed-%' AND t.slug = ANY($1::text[])",
        [tenant.slug, other_slug],
    )
    stored = {(r["slug"], r["topic"], r["key"], r["schedule"]) for r in rows}
    capped = {s for s in stored if s[1] == "mixed-capped"}
    mine, theirs = tenant.slug, other_slug
    assert (
        len(rows) == 7
        and len(capped) == 1
        and stored - capped
        == {
            (mine, "mixed-a", None, "plain-a"),
            (mine, "mixed-b", None, "plain-b"),
            (mine, "mixed-keyed", "k", "keyed"),
            (mine, "mixed-grouped", None, "grouped"),
            (theirs, "mixed-a", None, "plain-a"),
            (theirs, "mixed-c", None, "plain-c"),
        }
    )
    errors = [(await client.get(f"/api/schedules/capped-{n}")).json()["last_error"] for n in (1, 2)]
    assert sorted(e.split(":")[0] if e else "" for e in errors) == ["", "queue_full"]
    [delivery] = await dequeue(client, "mixed-grouped", 5, consumer_group="g")
    assert delivery["metadata"]["skiplock_schedule"] == "grouped"
    assert [m["metadata"]["skiplock_schedule"] for m in await dequeue(other, "mixed-c", 5)] == ["plain-c"]


async def test_run_now_enqueues_the_message_once_as_a_producer_would_and_leaves_the_schedule_as_it_was(
    client: httpx.AsyncClient,
) -> None:
    assert (await _put(client, "nightly", topic="reports", cron="0 3 * * *", key="night")).status_code == 200
    before = (await client.get("/api/schedules/nightly")).json()
    r = await client.post("/api/schedules/nightly/run")
    assert r.status_code == 201, r.text
    [message] = await dequeue(client, "reports", 10)
    assert message["id"] == r.json()["id"] and message["key"] == "night"
    assert message["metadata"] == {"skiplock_schedule": "nightly", "skiplock_run": "manual"}
    assert (await client.get("/api/schedules/nightly")).json() == before  # cron, next and last run unchanged
    trail = (await client.get("/api/audit", params={"action": "schedule.run"})).json()["items"]
    assert trail[0]["target"] == "nightly" and trail[0]["details"]["id"] == message["id"]

    ack = {"receipt": message["receipt"]}
    assert (await client.post(f"/api/messages/{message['id']}/ack", json=ack)).status_code == 204
    assert (await client.put("/api/topic-configs/reports", json={"max_depth": 1})).status_code == 200
    await enqueue(client, "reports")
    assert_error(await client.post("/api/schedules/nightly/run"), 429, "queue_full")  # the refusal is the answer
    assert (await client.get("/api/schedules/nightly")).json()["last_error"] is None
    assert_error(await client.post("/api/schedules/absent/run"), 404, "not_found")
