"""The jobs that repair state (`mq.jobs`: the group settler, the deleted groups' release, the in-flight keeper, the
reapers) never give a consumer group back what it finished, never owe it what it was not owed, and never lose
what it was: run after acks, nacks, dead letters, requeues and replays, and while consumers race (docs/semantics.md,
"Healing jobs"). The groups' Hypothesis model runs each of them at any step too (`test_group_lifecycle_model.py`).
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import Any

import asyncpg
import httpx

from mq.ids import uuid7
from mq.jobs import TOMBSTONE_SECONDS
from mq.queue.configs import STALE_SECONDS
from mq.queue.repository import MessageRepository
from mq.queue.types import NewRow
from tests.integration.helpers import b64, dequeue
from tests.support.healing import HEALING_JOBS, run_every_job, run_job
from tests.support.servers import ADMIN, Server
from tests.support.tenants import Tenant


async def _group(client: httpx.AsyncClient, topic: str, name: str, start: str = "latest") -> None:
    r = await client.post(f"/api/topics/{topic}/consumer-groups", json={"consumer_group": name, "start": start})
    assert r.status_code == 201, r.text


async def _enqueue_many(client: httpx.AsyncClient, topic: str, n: int) -> list[str]:
    """Half by single enqueues, half in one batch: both statements a producer uses."""
    ids = []
    for i in range(n // 2):
        r = await client.post("/api/messages", json={"topic": topic, "payload": b64(f"s{i}")})
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    items = [{"payload": b64(f"b{i}")} for i in range(n - n // 2)]
    r = await client.post("/api/messages/batch", json={"topic": topic, "messages": items})
    assert r.status_code == 201, r.text
    return ids + r.json()["ids"]


async def _ack_all(client: httpx.AsyncClient, messages: list[dict[str, Any]], group: str) -> None:
    acks = [{"id": m["id"], "receipt": m["receipt"], "consumer_group": group} for m in messages]
    for start in range(0, len(acks), 500):
        r = await client.post("/api/messages/ack", json={"acks": acks[start : start + 500]})
        assert r.status_code == 200 and not r.json()["failed"], r.text


async def _pending(client: httpx.AsyncClient, topic: str) -> dict[str, int]:
    groups = (await client.get(f"/api/topics/{topic}/consumer-groups")).json()["groups"]
    return {g["consumer_group"]: g["pending"] + g["processing"] for g in groups}


# `created_at` moved $2 seconds back, in UTC (Citus refuses a STABLE function, timestamptz - interval, applied to a
# column in an UPDATE; these are IMMUTABLE)
_EARLIER = "timezone('UTC', timezone('UTC', created_at) - make_interval(secs => $2))"


async def _as_if_a_while_passed(db: asyncpg.Pool[Any], tenant: Tenant) -> None:
    """Every group of the tenant created past the caches' staleness and not settled yet: the settler's next run
    settles each of them, as it does a minute after a group is made."""
    await db.execute(
        f"""UPDATE consumer_groups SET created_at = {_EARLIER}, settled_at = NULL
           WHERE tenant_id = $1""",
        tenant.id,
        STALE_SECONDS + 1,
    )
    await db.execute(  # the messages' creation moves with them: they stay after their groups
        f"UPDATE messages SET created_at = {_EARLIER} WHERE tenant_id = $1",
        tenant.id,
        STALE_SECONDS + 1,
    )


async def _tombstones_aged(db: asyncpg.Pool[Any], tenant: Tenant) -> None:
    """The tenant's deleted groups' tombstones past their retention (`mq.jobs.TOMBSTONE_SECONDS`)."""
    await db.execute(
        "UPDATE deleted_groups SET deleted_at = timezone('UTC', timezone('UTC', deleted_at)"
        " - make_interval(secs => $2)) WHERE tenant_id = $1",
        tenant.id,
        TOMBSTONE_SECONDS + 1,
    )


async def test_a_group_that_acked_while_another_still_owes_never_gets_its_messages_back(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    """The reproduction: groups a and b, 100 messages, a acks all of them while b has not consumed yet; past every
    job's interval, a's pending stays 0 and its next dequeue is empty, and b still receives all 100."""
    await _group(client, "acked", "a")
    await _group(client, "acked", "b")
    ids = await _enqueue_many(client, "acked", 100)
    got = await dequeue(client, "acked", 1000, consumer_group="a")
    assert sorted(m["id"] for m in got) == sorted(ids)
    await _ack_all(client, got, "a")
    assert await _pending(client, "acked") == {"a": 0, "b": 100}
    await _as_if_a_while_passed(db, tenant)
    assert (await client.post("/api/admin/expiry-reaper/run")).status_code == 200  # what the workers run
    await run_every_job(db, tenant.id)
    assert await _pending(client, "acked") == {"a": 0, "b": 100}
    assert await dequeue(client, "acked", 1000, consumer_group="a") == []
    got_b = await dequeue(client, "acked", 1000, consumer_group="b")
    assert sorted(m["id"] for m in got_b) == sorted(ids)
    await _ack_all(client, got_b, "b")
    await run_every_job(db, tenant.id)
    assert await _pending(client, "acked") == {"a": 0, "b": 0}
    assert (await client.get("/api/messages", params={"topic": "acked"})).json()["total"] == 0


async def test_dead_letters_requeues_and_replays_to_one_group_are_not_owed_to_the_others(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    """A group's dead letter leaves the message owed to the others only; its requeue and a replay to one group
    are owed to that group only. The jobs, run after each, keep it so."""
    await client.put("/api/topic-configs/fan", json={"max_retries": 1, "replayable": True})
    for name in ("a", "b", "c"):
        await _group(client, "fan", name)
    ids = await _enqueue_many(client, "fan", 10)
    for m in await dequeue(client, "fan", 10, consumer_group="a"):  # a dead-letters every message
        r = await client.post(f"/api/messages/{m['id']}/nack", json={"receipt": m["receipt"], "consumer_group": "a"})
        assert r.json()["outcome"] == "dlq", r.text
    await _ack_all(client, await dequeue(client, "fan", 10, consumer_group="b"), "b")
    await run_every_job(db, tenant.id)
    assert await _pending(client, "fan") == {"a": 0, "b": 0, "c": 10}
    await _as_if_a_while_passed(db, tenant)
    await run_every_job(db, tenant.id)
    assert await _pending(client, "fan") == {"a": 0, "b": 0, "c": 10}
    got_c = await dequeue(client, "fan", 10, consumer_group="c")
    assert sorted(m["id"] for m in got_c) == sorted(ids)
    await _ack_all(client, got_c, "c")  # the last group's ack: logged
    letters = (await client.get("/api/messages", params={"topic": "fan.dlq", "limit": 200})).json()["items"]
    assert len(letters) == 10 and {v["consumer_group"] for v in letters} == {"a"}
    r = await client.post(f"/api/messages/{letters[0]['id']}/requeue")
    assert r.status_code == 204, r.text
    r = await client.post("/api/topics/fan/replay", json={"consumer_group": "b"})
    assert r.json() == {"replayed": 10}, r.text
    await run_every_job(db, tenant.id)
    await _as_if_a_while_passed(db, tenant)
    await run_every_job(db, tenant.id)
    assert await _pending(client, "fan") == {"a": 1, "b": 10, "c": 0}
    assert [m["id"] for m in await dequeue(client, "fan", 100, consumer_group="a")] == [letters[0]["id"]]
    replayed = await dequeue(client, "fan", 100, consumer_group="b")
    assert len(replayed) == 10 and not {m["id"] for m in replayed} & set(ids)
    assert await dequeue(client, "fan", 100, consumer_group="c") == []


async def test_each_job_run_between_every_step_changes_nothing_a_group_sees(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    """A scripted walk through every kind of step (enqueue, lease, lapse, nack, ack, create earliest, delete,
    requeue, replay) with each job run after each step; what each group receives equals what it would without
    any job."""
    await client.put("/api/topic-configs/walk", json={"max_retries": 3, "replayable": True, "max_inflight": 5})
    await _group(client, "walk", "a")
    await _group(client, "walk", "b")
    seen: dict[str, Counter[str]] = {"a": Counter(), "b": Counter(), "c": Counter()}
    acked: dict[str, set[str]] = {"a": set(), "b": set(), "c": set()}

    async def take(group: str, n: int) -> list[dict[str, Any]]:
        got = await dequeue(client, "walk", n, consumer_group=group, visibility_timeout_seconds=60)
        for m in got:
            assert m["id"] not in acked[group], (group, m["id"])  # never what the group acked
            seen[group][m["id"]] += 1
        return got

    async def lapse(group: str) -> None:
        """The group's leases lapse: their deadline (and its recorded lease's, the topic being limited) passes."""
        await db.execute(
            """WITH lapsed AS (
                   SELECT d.group_id, d.message_id, d.available_at, d.receipt FROM deliveries AS d
                   WHERE d.status = 'processing' AND d.group_id = (
                       SELECT id FROM consumer_groups WHERE tenant_id = $1 AND topic = 'walk' AND name = $2)
               ), ledger AS (
                   UPDATE inflight_leases AS l SET deadline = now() - interval '1 second' FROM lapsed AS x
                   WHERE l.group_id = x.group_id AND l.receipt = x.receipt AND l.deadline = x.available_at
               )
               UPDATE deliveries AS d SET available_at = now() - interval '1 second' FROM lapsed AS x
               WHERE d.group_id = x.group_id AND d.message_id = x.message_id""",
            tenant.id,
            group,
        )

    async def ack(group: str, messages: list[dict[str, Any]]) -> None:
        await _ack_all(client, messages, group)
        acked[group].update(m["id"] for m in messages)

    ids = await _enqueue_many(client, "walk", 8)
    steps = [
        lambda: take("a", 3),
        lambda: lapse("a"),
        lambda: take("a", 3),  # the lapsed ones again: a second attempt, not a duplicate
        lambda: take("b", 5),
        lambda: client.post(
            f"/api/messages/{ids[0]}/nack", json={"consumer_group": "b", "error": "x", "delay_seconds": 0}
        ),
        lambda: _group(client, "walk", "c", "earliest"),
        lambda: take("c", 8),
    ]
    for step in steps:
        await step()
        for name in HEALING_JOBS:
            await run_job(db, name, tenant.id)
    for group in ("a", "b", "c"):  # each acks what it holds, then takes and acks the rest
        await lapse(group)
        while got := await take(group, 5):
            await ack(group, got)
            for name in HEALING_JOBS:
                await run_job(db, name, tenant.id)
    for group in ("a", "b", "c"):
        assert acked[group] == set(ids), group  # every message, to every group, once acked
    r = await client.post("/api/topics/walk/replay", json={"consumer_group": "c"})
    assert r.json() == {"replayed": 8}, r.text  # each message once, at its last group's ack
    assert (await client.delete("/api/topics/walk/consumer-groups/a")).status_code == 204
    for name in HEALING_JOBS:
        await run_job(db, name, tenant.id)
    assert await _pending(client, "walk") == {"b": 0, "c": 8}
    assert await dequeue(client, "walk", 100, consumer_group="b") == []


async def test_jobs_running_while_groups_race_never_redeliver_an_acked_message(
    server: Server, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    """Groups of three consumers each on one limited topic (acks, nacks, leases left to lapse after a second),
    producers enqueueing, a group created `earliest` midway and one deleted, and every job looping meanwhile. No
    dequeue that began after its group acked a message returns it; each group acks each message it owed exactly
    once; no group ever holds more than `max_inflight` leases."""
    topic, limit = "race", 6
    rng = random.Random(39)
    headers = {"X-Tenant": tenant.slug}
    async with httpx.AsyncClient(base_url=server.base_url, auth=ADMIN, headers=headers, timeout=30) as client:
        await client.put(f"/api/topic-configs/{topic}", json={"max_retries": 100, "max_inflight": limit})
        for name in ("a", "b", "d"):
            await _group(client, topic, name)
        produced: list[str] = []
        after_c: set[str] = set()  # enqueues begun after c's creation answered
        acked: dict[str, Counter[str]] = {g: Counter() for g in ("a", "b", "c", "d")}
        acked_at: dict[tuple[str, str], float] = {}
        owed_c: set[str] = set()
        c_made = asyncio.Event()
        producing = True
        loop = asyncio.get_running_loop()

        async def produce() -> None:
            nonlocal producing
            for round_ in range(30):
                begun_after_c = c_made.is_set()
                items = [{"payload": b64(f"{round_}-{i}")} for i in range(10)]
                r = await client.post("/api/messages/batch", json={"topic": topic, "messages": items})
                assert r.status_code == 201, r.text
                produced.extend(r.json()["ids"])
                if begun_after_c:
                    after_c.update(r.json()["ids"])
                if round_ == 10:
                    await _group(client, topic, "c", "earliest")
                    owed_c.update(
                        str(i)
                        for i in await db.fetchval(
                            """SELECT array_agg(message_id) FROM deliveries WHERE group_id = (SELECT id
                                   FROM consumer_groups WHERE tenant_id = $1 AND topic = $2 AND name = 'c')""",
                            tenant.id,
                            topic,
                        )
                        or []
                    )
                    c_made.set()
                if round_ == 15:
                    r = await client.delete(f"/api/topics/{topic}/consumer-groups/d")
                    assert r.status_code == 204, r.text
                await asyncio.sleep(0.1)
            producing = False

        async def consume(group: str) -> None:
            if group == "c":
                await c_made.wait()
            idle_since = None
            while True:
                begun = loop.time()
                r = await client.post(
                    "/api/messages/dequeue",
                    json={"topic": topic, "count": 3, "consumer_group": group, "visibility_timeout_seconds": 1},
                )
                if r.status_code == 404 and group == "d":
                    return  # its group was deleted
                assert r.status_code == 200, r.text
                got = r.json()["messages"]
                for m in got:
                    done = acked_at.get((group, m["id"]))
                    assert done is None or done > begun, (group, m["id"], "redelivered after its ack")
                if not got:
                    # done once nothing is produced any more and the group owes nothing (a slow machine can keep
                    # a lapsed lease's delivery away longer than any fixed idle time)
                    if not producing and idle_since is not None and loop.time() - idle_since > 2.5:
                        owes = await db.fetchval(
                            """SELECT count(*) FROM deliveries AS d
                               JOIN consumer_groups AS g ON g.tenant_id = d.tenant_id AND g.id = d.group_id
                               WHERE g.tenant_id = $1 AND g.topic = $2 AND g.name = $3""",
                            tenant.id,
                            topic,
                            group,
                        )
                        if owes == 0:
                            return
                    idle_since = idle_since or loop.time()
                    await asyncio.sleep(0.05)
                    continue
                idle_since = None
                for m in got:
                    fate = rng.random()
                    body = {"receipt": m["receipt"], "consumer_group": group}
                    if fate < 0.1:
                        continue  # left to lapse
                    if fate < 0.2:
                        r = await client.post(f"/api/messages/{m['id']}/nack", json=body | {"delay_seconds": 0})
                        assert r.status_code in (200, 404, 409), r.text
                        continue
                    r = await client.post(f"/api/messages/{m['id']}/ack", json=body)
                    if r.status_code == 204:
                        acked[group][m["id"]] += 1
                        acked_at[(group, m["id"])] = loop.time()
                    else:
                        assert r.status_code in (404, 409), r.text  # lapsed meanwhile, or its group deleted

        async def heal() -> int:
            runs, progress, progressed_at = 0, -1, loop.time()
            while producing or any(not t.done() for t in consumers):
                # bounded by progress, not by the clock: on a loaded machine with a large shared database one pass of
                # every job takes seconds; what must never happen is a minute in which no group acks anything
                done = sum(sum(c.values()) for c in acked.values()) + len(produced)
                if done != progress:
                    progress, progressed_at = done, loop.time()
                elif loop.time() - progressed_at > 60:
                    stuck = await db.fetch(
                        """SELECT g.name, d.message_id, d.status, d.available_at - now() AS due_in, m.id IS NULL AS gone
                           FROM deliveries AS d JOIN consumer_groups AS g ON g.tenant_id = d.tenant_id
                               AND g.id = d.group_id
                           LEFT JOIN messages AS m ON m.tenant_id = d.tenant_id AND m.id = d.message_id
                           WHERE g.tenant_id = $1 AND g.topic = $2 ORDER BY 1 LIMIT 20""",
                        tenant.id,
                        topic,
                    )
                    counters = await db.fetch("SELECT * FROM inflight_counts WHERE tenant_id = $1", tenant.id)
                    raise AssertionError(f"no progress for 60 s: owed {stuck}; counters {counters}")
                for name in HEALING_JOBS:
                    await run_job(db, name, tenant.id)
                    runs += 1
                held = await db.fetch(
                    """SELECT g.name, count(*) AS n FROM deliveries AS d
                       JOIN consumer_groups AS g ON g.tenant_id = d.tenant_id AND g.id = d.group_id
                       WHERE g.tenant_id = $1 AND d.status = 'processing' AND d.available_at > now() GROUP BY 1""",
                    tenant.id,
                )
                assert all(r["n"] <= limit for r in held), held
            return runs

        consumers = [asyncio.create_task(consume(g)) for g in ("a", "b", "c", "d") for _ in range(3)]
        producer = asyncio.create_task(produce())
        runs = await asyncio.wait_for(heal(), timeout=280)
        await asyncio.gather(producer, *consumers)
        assert runs > len(HEALING_JOBS) * 3
        for group in ("a", "b"):
            assert set(acked[group]) == set(produced), group
        assert owed_c | after_c <= set(acked["c"]) <= set(produced)
        for group, counts in acked.items():
            assert all(n == 1 for n in counts.values()), (group, counts.most_common(3))
        assert await _pending(client, topic) == {"a": 0, "b": 0, "c": 0}


async def test_an_earliest_group_made_while_the_last_owing_group_acks_is_never_owed_a_message_gone(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    """Group c is created `earliest` while a, the last group owing two messages, acks them (its transaction not
    committed yet). The backfill waits for the ack: the messages are gone, and c owes nothing. Before the backfill
    locked what it backfills, it minted c's deliveries of messages the ack then deleted: c waited on them forever,
    a lease of one held a slot of a limited topic (found by the race test below, on a loaded machine)."""
    await _group(client, "late", "a")
    ids = await _enqueue_many(client, "late", 2)
    got = await dequeue(client, "late", 10, consumer_group="a")
    assert sorted(m["id"] for m in got) == sorted(ids)
    async with db.acquire() as conn:
        acking = conn.transaction()
        await acking.start()
        acked = await conn.fetch(
            "SELECT id FROM skiplock_group_ack_v2($1, 'a', $2::uuid[], $3::uuid[])",
            tenant.id,
            [m["id"] for m in got],
            [m["receipt"] for m in got],
        )
        assert len(acked) == 2
        create = asyncio.create_task(
            client.post("/api/topics/late/consumer-groups", json={"consumer_group": "c", "start": "earliest"})
        )
        for _ in range(200):  # until the backfill runs (and waits on the ack's rows: on Citus, on a worker)
            running = await db.fetchval(
                """SELECT count(*) FROM pg_stat_activity
                   WHERE state = 'active' AND query LIKE '%WITH live AS%' AND pid <> pg_backend_pid()"""
            )
            if running:
                break
            await asyncio.sleep(0.05)
        assert running, "the backfill never ran"
        await asyncio.sleep(0.5)
        assert not create.done()  # it waits for the ack
        await acking.commit()
    r = await create
    assert r.status_code == 201, r.text
    orphans = await db.fetchval(
        """SELECT count(*) FROM deliveries AS d WHERE d.tenant_id = $1
           AND NOT EXISTS (SELECT FROM messages AS m WHERE m.tenant_id = d.tenant_id AND m.id = d.message_id)""",
        tenant.id,
    )
    assert orphans == 0
    assert await _pending(client, "late") == {"a": 0, "c": 0}


async def test_a_group_deleted_while_an_insert_that_saw_it_commits_still_releases_what_it_minted(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    """An insert reads the topic's groups (stays, gone) and commits only after gone's deletion released what it
    owed: the delivery it minted for gone was invisible to that release (a transaction of the schedules' firer, or
    of a capped insert on Citus; on a loaded cluster a statement alone). The tombstone outlives any transaction
    that may have seen its group, so the settler releases that delivery, and stays' ack deletes the message. When
    the deletion forgot its tombstone at once, the message stayed, owed 1 forever (found on Citus by
    test_groups_created_and_deleted_while_producers_and_consumers_run)."""
    await _group(client, "seen", "stays")
    await _group(client, "seen", "gone")
    row = NewRow("seen", b"x", None, None, 0.0, 0, 3, 0, grouped=True)
    async with db.acquire() as conn:
        inserting = conn.transaction()
        await inserting.start()
        await MessageRepository(db).insert_batch(tenant.id, [uuid7()], [row], conn=conn)
        assert (await client.delete("/api/topics/seen/consumer-groups/gone")).status_code == 204
        await inserting.commit()
    got = await dequeue(client, "seen", 10, consumer_group="stays")
    assert len(got) == 1
    await _ack_all(client, got, "stays")
    await run_job(db, "group_settler")
    assert await db.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1 AND topic = 'seen'", tenant.id) == 0
    # the tombstone stays for its retention (its group's id is never reused), then the settler forgets it
    assert await db.fetchval("SELECT count(*) FROM deleted_groups WHERE tenant_id = $1", tenant.id) == 1
    await _tombstones_aged(db, tenant)
    await run_job(db, "group_settler")
    assert await db.fetchval("SELECT count(*) FROM deleted_groups WHERE tenant_id = $1", tenant.id) == 0
