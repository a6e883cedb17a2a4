"""Concurrency limits (contract, "Concurrency limits and saved state"): `max_inflight` holds exactly under racing
consumers on two instances (per consumer group on a grouped topic), a dequeue answers fewer (never an error), a
waiting long poll is answered when an ack makes room, a lapsed lease frees its slot at its deadline, and what a
purge leaves counted the keeper frees."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import asyncpg
import httpx
import pytest

from mq.db.repository import OperationsRepository
from mq.jobs import InflightKeeper
from mq.queue.sql.dequeue import INFLIGHT_RESERVE
from tests.integration.helpers import assert_error, b64, dequeue, long_polls_waiting
from tests.support.servers import ADMIN, Server
from tests.support.tenants import Tenant


async def _limit(client: httpx.AsyncClient, topic: str, n: int | None, **config: Any) -> None:
    r = await client.put(f"/api/topic-configs/{topic}", json={"max_inflight": n, **config})
    assert r.status_code == 200, r.text


async def _fill(client: httpx.AsyncClient, topic: str, n: int) -> None:
    body = {"topic": topic, "messages": [{"payload": b64(f"m{i}")} for i in range(n)]}
    assert (await client.post("/api/messages/batch", json=body)).status_code == 201


async def _ack(client: httpx.AsyncClient, m: dict[str, Any]) -> None:
    assert (await client.post(f"/api/messages/{m['id']}/ack", json={"receipt": m["receipt"]})).status_code == 204


async def test_a_dequeue_answers_what_the_limit_leaves_room_for(client: httpx.AsyncClient) -> None:
    await _limit(client, "limited", 2)
    await _fill(client, "limited", 6)
    first = await dequeue(client, "limited", 5)
    assert len(first) == 2
    assert await dequeue(client, "limited", 5) == []  # fewer, never an error
    await _ack(client, first[0])
    [third] = await dequeue(client, "limited", 5)
    r = await client.post(f"/api/messages/{first[1]['id']}/nack", json={"receipt": first[1]["receipt"]})
    assert r.json() == {"outcome": "retry"}
    again = await dequeue(client, "limited", 5)
    assert len(again) == 1  # the nack freed a slot
    r = await client.post(
        f"/api/messages/{third['id']}/visibility", json={"receipt": third["receipt"], "visibility_timeout_seconds": 60}
    )
    assert r.status_code == 200, r.text
    assert await dequeue(client, "limited", 5) == []
    await _limit(client, "limited", None)  # the limit removed: no limit
    assert len(await dequeue(client, "limited", 5)) == 3


async def test_a_lapsed_lease_frees_its_slot_at_its_deadline_and_cannot_be_extended(client: httpx.AsyncClient) -> None:
    await _limit(client, "lapsing-limit", 1)
    await _fill(client, "lapsing-limit", 3)
    [m] = await dequeue(client, "lapsing-limit", 3, visibility_timeout_seconds=1)
    assert await dequeue(client, "lapsing-limit", 3) == []
    await asyncio.sleep(1.2)
    assert len(await dequeue(client, "lapsing-limit", 3)) == 1  # the lapsed lease's slot is free again
    late = {"receipt": m["receipt"], "visibility_timeout_seconds": 30}
    assert_error(await client.post(f"/api/messages/{m['id']}/visibility", json=late), 409, "lease_lost")


async def test_a_waiting_long_poll_is_answered_when_an_ack_makes_room(client: httpx.AsyncClient) -> None:
    await _limit(client, "polled-limit", 1)
    await _fill(client, "polled-limit", 2)
    [m] = await dequeue(client, "polled-limit")
    started = time.monotonic()
    poll = asyncio.create_task(
        client.post("/api/messages/dequeue", json={"topic": "polled-limit", "wait_seconds": 10}, timeout=30)
    )
    await long_polls_waiting(client.base_url)  # the poll waits: the limit leaves no room
    assert not poll.done()
    await _ack(client, m)
    answered = await poll
    assert len(answered.json()["messages"]) == 1 and time.monotonic() - started < 3


@pytest.mark.parametrize("group", [None, "g"], ids=["topic", "consumer-group"])
async def test_the_limit_holds_exactly_under_racing_consumers_on_two_instances(
    client: httpx.AsyncClient,
    server: Server,
    second_server: Server,
    tenant: Tenant,
    db: asyncpg.Pool[Any],
    group: str | None,
) -> None:
    limit, total = 5, 240
    topic = f"raced-limit-{group or 'topic'}"
    if group is not None:
        await _group(client, topic, group)
    await _limit(client, topic, limit)
    await _fill(client, topic, total)
    acked: list[str] = []
    most = 0
    done = asyncio.Event()
    held_now = (
        "SELECT count(*) FROM messages WHERE tenant_id = $1 AND topic = $2 AND status = 'processing' "
        "AND available_at > now()"
        if group is None
        else "SELECT count(*) FROM consumer_groups AS g JOIN deliveries AS d "
        "ON d.tenant_id = g.tenant_id AND d.group_id = g.id "
        "WHERE g.tenant_id = $1 AND g.topic = $2 AND d.status = 'processing' AND d.available_at > now()"
    )

    async def watch() -> None:
        nonlocal most
        while not done.is_set():
            most = max(most, await db.fetchval(held_now, tenant.id, topic))
            await asyncio.sleep(0.002)

    async def consumer(base_url: str) -> None:
        async with httpx.AsyncClient(base_url=base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}, timeout=30) as c:
            idle = 0
            while len(acked) < total and idle < 200:
                got = await dequeue(c, topic, 3, **({"consumer_group": group} if group else {}))
                if not got:
                    idle += 1
                    await asyncio.sleep(0.005)
                    continue
                idle = 0
                await asyncio.sleep(0.01)  # work
                body = {"acks": [{"id": m["id"], "receipt": m["receipt"], "consumer_group": group} for m in got]}
                assert (await c.post("/api/messages/ack", json=body)).json()["acked"] == len(got)
                acked.extend(m["id"] for m in got)

    watcher = asyncio.create_task(watch())
    await asyncio.gather(*(consumer(b) for b in [server.base_url, second_server.base_url] * 4))
    done.set()
    await watcher
    assert len(acked) == total and len(set(acked)) == total
    assert 0 < most <= limit, most
    # at rest, what the counter holds is what the next dequeue counts out (ended leases, slots given back)
    leased = """SELECT (SELECT sum(leased) FROM inflight_counts WHERE tenant_id = $1 AND topic = $2)
                     - (SELECT coalesce(sum(n), 0) FROM inflight_ended WHERE tenant_id = $1 AND topic = $2),
                       (SELECT count(*) FROM inflight_reservations WHERE tenant_id = $1 AND topic = $2)"""
    assert tuple(await db.fetchrow(leased, tenant.id, topic)) == (0, 0)


async def test_the_keeper_frees_what_a_purge_left_counted(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    await _limit(client, "purged-limit", 2)
    await _fill(client, "purged-limit", 4)
    assert len(await dequeue(client, "purged-limit", 4)) == 2
    r = await client.post("/api/topics/purged-limit/purge", json={"statuses": ["processing"]})
    assert r.status_code == 200, r.text
    assert await dequeue(client, "purged-limit", 4) == []  # still counted
    result = await InflightKeeper(OperationsRepository(db)).run_once(wait=True)
    assert result.rows >= 2
    assert len(await dequeue(client, "purged-limit", 4)) == 2


async def _group(client: httpx.AsyncClient, topic: str, name: str) -> None:
    r = await client.post(f"/api/topics/{topic}/consumer-groups", json={"consumer_group": name})
    assert r.status_code == 201, r.text


async def test_each_consumer_group_has_the_limit_of_its_own(client: httpx.AsyncClient) -> None:
    await _group(client, "grouped-limit", "billing")  # the groups first, then the limit
    await _limit(client, "grouped-limit", 2)
    await _group(client, "grouped-limit", "audit")  # and a group made on a limited topic
    await _fill(client, "grouped-limit", 5)
    billing = await dequeue(client, "grouped-limit", 5, consumer_group="billing")
    assert len(billing) == 2 and await dequeue(client, "grouped-limit", 5, consumer_group="billing") == []
    assert len(await dequeue(client, "grouped-limit", 5, consumer_group="audit")) == 2  # its own slots
    body = {"receipt": billing[0]["receipt"], "consumer_group": "billing"}
    assert (await client.post(f"/api/messages/{billing[0]['id']}/ack", json=body)).status_code == 204
    [third] = await dequeue(client, "grouped-limit", 5, consumer_group="billing")
    body = {"receipt": billing[1]["receipt"], "consumer_group": "billing", "delay_seconds": 30}
    assert (await client.post(f"/api/messages/{billing[1]['id']}/nack", json=body)).json() == {"outcome": "retry"}
    [fourth] = await dequeue(client, "grouped-limit", 5, consumer_group="billing")  # the nack freed a slot
    body = {"receipt": third["receipt"], "consumer_group": "billing", "visibility_timeout_seconds": 60}
    assert (await client.post(f"/api/messages/{third['id']}/visibility", json=body)).status_code == 200
    assert await dequeue(client, "grouped-limit", 5, consumer_group="billing") == []
    acks = [{"id": m["id"], "receipt": m["receipt"], "consumer_group": "billing"} for m in (third, fourth)]
    assert (await client.post("/api/messages/ack", json={"acks": acks})).json()["acked"] == 2
    assert len(await dequeue(client, "grouped-limit", 5, consumer_group="billing")) == 1  # the last one left
    assert await dequeue(client, "grouped-limit", 5, consumer_group="audit") == []  # audit still holds 2


async def test_a_groups_lapsed_lease_frees_its_slot_and_cannot_be_extended(client: httpx.AsyncClient) -> None:
    await _group(client, "grouped-lapse", "g")
    await _limit(client, "grouped-lapse", 1)
    await _fill(client, "grouped-lapse", 3)
    [m] = await dequeue(client, "grouped-lapse", 3, consumer_group="g", visibility_timeout_seconds=1)
    assert await dequeue(client, "grouped-lapse", 3, consumer_group="g") == []
    await asyncio.sleep(1.2)
    assert len(await dequeue(client, "grouped-lapse", 3, consumer_group="g")) == 1
    late = {"receipt": m["receipt"], "consumer_group": "g", "visibility_timeout_seconds": 30}
    assert_error(await client.post(f"/api/messages/{m['id']}/visibility", json=late), 409, "lease_lost")


async def test_a_groups_waiting_long_poll_is_answered_when_its_ack_makes_room(client: httpx.AsyncClient) -> None:
    await _group(client, "grouped-poll", "g")
    await _limit(client, "grouped-poll", 1)
    await _fill(client, "grouped-poll", 2)
    [m] = await dequeue(client, "grouped-poll", consumer_group="g")
    started = time.monotonic()
    body = {"topic": "grouped-poll", "wait_seconds": 10, "consumer_group": "g"}
    poll = asyncio.create_task(client.post("/api/messages/dequeue", json=body, timeout=30))
    await long_polls_waiting(client.base_url)  # the poll waits: the limit leaves no room
    assert not poll.done()
    ack = {"receipt": m["receipt"], "consumer_group": "g"}
    assert (await client.post(f"/api/messages/{m['id']}/ack", json=ack)).status_code == 204
    answered = await poll
    assert len(answered.json()["messages"]) == 1 and time.monotonic() - started < 3


async def test_a_deleted_groups_counter_goes_with_the_keeper(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    await _group(client, "grouped-gone", "g")
    await _limit(client, "grouped-gone", 2)
    await _fill(client, "grouped-gone", 2)
    assert len(await dequeue(client, "grouped-gone", 2, consumer_group="g")) == 2
    assert (await client.delete("/api/topics/grouped-gone/consumer-groups/g")).status_code == 204
    await InflightKeeper(OperationsRepository(db)).run_once(wait=True)
    count = "SELECT count(*) FROM inflight_counts WHERE tenant_id = $1 AND topic = 'grouped-gone'"
    assert await db.fetchval(count, tenant.id) == 0


async def test_the_keeper_counts_reservations_under_way_and_drops_lost_ones(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant
) -> None:
    """A dequeue reserves its slots, then leases: the keeper's recount keeps a reservation whose lease statement
    is under way, and drops one left by a process that died between the two (older than a minute)."""
    await _limit(client, "reserved-limit", 3)
    await _fill(client, "reserved-limit", 6)
    assert len(await dequeue(client, "reserved-limit", 1)) == 1  # the counter exists, 1 leased
    reserve = {"tenant": tenant.id, "topic": "reserved-limit", "group": 0, "count": 1}  # (its id: the caller's)
    [(fresh, fresh_id)] = await db.fetch(INFLIGHT_RESERVE.text, *INFLIGHT_RESERVE.args(**reserve, reservation=1))
    [(lost, _)] = await db.fetch(INFLIGHT_RESERVE.text, *INFLIGHT_RESERVE.args(**reserve, reservation=2))
    assert (fresh, lost) == (1, 1)
    await db.execute(
        "UPDATE inflight_reservations SET at = now() - interval '2 minutes' WHERE tenant_id = $1 AND id <> $2",
        tenant.id,
        fresh_id,
    )
    assert await dequeue(client, "reserved-limit", 3) == []  # 1 leased + 2 reserved
    await InflightKeeper(OperationsRepository(db)).run_once(wait=True)
    assert len(await dequeue(client, "reserved-limit", 3)) == 1  # the lost one's slot is free; the fresh one holds
    left = await db.fetchval(
        "SELECT count(*) FROM inflight_reservations WHERE tenant_id = $1 AND id = $2", tenant.id, fresh_id
    )
    assert left == 1
