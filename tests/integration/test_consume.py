"""Dequeue, leases and receipts, ack, nack, retries, dead letters and requeue."""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx

from tests.integration.helpers import assert_error, dequeue, enqueue, long_polls_waiting, unb64
from tests.support.waiting import eventually


async def test_ack_deletes_and_second_ack_is_404(client: httpx.AsyncClient) -> None:
    mid = await enqueue(client, "t")
    [m] = await dequeue(client, "t")
    assert m["status"] == "processing" and m["receipt"] and m["visibility_deadline"]
    r = await client.post(f"/api/messages/{mid}/ack", json={"receipt": m["receipt"]})
    assert r.status_code == 204
    assert_error(await client.post(f"/api/messages/{mid}/ack"), 404, "message_not_found")
    assert_error(await client.get(f"/api/messages/{mid}"), 404, "message_not_found")


async def test_each_message_of_a_dequeue_gets_its_own_receipt(client: httpx.AsyncClient) -> None:
    for _ in range(5):
        await enqueue(client, "receipts")
    got = await dequeue(client, "receipts", count=5)
    receipts = [m["receipt"] for m in got]
    assert len(set(receipts)) == 5 and all(uuid.UUID(r) for r in receipts)
    # A receipt belongs to its message only: crossing them acks nothing.
    first, second = got[0], got[1]
    crossed = {"acks": [{"id": first["id"], "receipt": second["receipt"]}]}
    r = await client.post("/api/messages/ack", json=crossed)
    assert r.json() == {"acked": 0, "failed": [{"id": first["id"], "code": "lease_lost"}]}
    r = await client.post(f"/api/messages/{first['id']}/ack", json={"receipt": second["receipt"]})
    assert_error(r, 409, "lease_lost")


async def test_ack_of_pending_message_is_404(client: httpx.AsyncClient) -> None:
    mid = await enqueue(client, "t")
    assert_error(await client.post(f"/api/messages/{mid}/ack"), 404, "message_not_found")


async def test_unacked_message_comes_back_after_visibility_timeout_and_old_receipt_is_refused(
    client: httpx.AsyncClient,
) -> None:
    mid = await enqueue(client, "vt", b"work")
    [first] = await dequeue(client, "vt", visibility_timeout_seconds=1)
    assert await dequeue(client, "vt") == []  # invisible inside the window
    [second] = await dequeue(client, "vt", wait_seconds=5)  # the long poll wakes when the lease ends
    assert second["id"] == mid and second["receipt"] != first["receipt"]
    assert unb64(second["payload"]) == b"work"
    stale = {"receipt": first["receipt"]}
    assert_error(await client.post(f"/api/messages/{mid}/ack", json=stale), 409, "lease_lost")
    assert_error(await client.post(f"/api/messages/{mid}/nack", json=stale), 409, "lease_lost")
    assert_error(
        await client.post(f"/api/messages/{mid}/visibility", json={**stale, "visibility_timeout_seconds": 5}),
        409,
        "lease_lost",
    )
    r = await client.post(f"/api/messages/{mid}/ack", json={"receipt": second["receipt"]})
    assert r.status_code == 204


async def test_extend_keeps_the_message_invisible(client: httpx.AsyncClient) -> None:
    await enqueue(client, "hb")
    [m] = await dequeue(client, "hb", visibility_timeout_seconds=1)
    r = await client.post(
        f"/api/messages/{m['id']}/visibility", json={"receipt": m["receipt"], "visibility_timeout_seconds": 30}
    )
    assert r.status_code == 200 and r.json()["visibility_deadline"] > m["visibility_deadline"]
    await asyncio.sleep(1.3)
    assert await dequeue(client, "hb") == []


async def test_nack_retries_then_dead_letters_then_requeue(client: httpx.AsyncClient) -> None:
    mid = await enqueue(client, "jobs", b"p", key="k1")
    outcomes = []
    for _ in range(3):
        [m] = await dequeue(client, "jobs")
        r = await client.post(f"/api/messages/{mid}/nack", json={"receipt": m["receipt"], "error": "boom"})
        assert r.status_code == 200
        outcomes.append(r.json()["outcome"])
    assert outcomes == ["retry", "retry", "dlq"]
    dead = (await client.get(f"/api/messages/{mid}")).json()
    assert dead["topic"] == "jobs.dlq" and dead["original_topic"] == "jobs" and dead["status"] == "pending"
    assert dead["retry_count"] == 0 and dead["max_retries"] == 0 and dead["dlq_moved_at"]
    assert dead["last_error"] == "boom"
    assert await dequeue(client, "jobs") == []
    # DLQ processors may consume it; a nack there fails it for good.
    [d] = await dequeue(client, "jobs.dlq")
    r = await client.post(f"/api/messages/{mid}/nack", json={"receipt": d["receipt"]})
    assert r.json()["outcome"] == "failed"
    assert (await client.get(f"/api/messages/{mid}")).json()["status"] == "failed"
    # A failed DLQ message can still be requeued by hand.
    assert (await client.post(f"/api/messages/{mid}/requeue")).status_code == 204
    back = (await client.get(f"/api/messages/{mid}")).json()
    assert back["topic"] == "jobs" and back["status"] == "pending" and back["retry_count"] == 0
    assert back["max_retries"] == 3 and back["original_topic"] is None and back["dlq_moved_at"] is None
    [again] = await dequeue(client, "jobs")
    assert again["id"] == mid


async def test_nack_with_delay(client: httpx.AsyncClient) -> None:
    mid = await enqueue(client, "d")
    [m] = await dequeue(client, "d")
    r = await client.post(f"/api/messages/{mid}/nack", json={"receipt": m["receipt"], "delay_seconds": 1})
    assert r.json()["outcome"] == "retry"
    assert await dequeue(client, "d") == []
    started = time.monotonic()
    [again] = await dequeue(client, "d", wait_seconds=5)
    assert again["id"] == mid and again["retry_count"] == 1
    assert time.monotonic() - started < 3


async def test_requeue_topic_moves_every_pending_dlq_message(client: httpx.AsyncClient, db, tenant) -> None:  # type: ignore[no-untyped-def]
    ids = [await enqueue(client, "bulk") for _ in range(3)]
    await db.execute("UPDATE messages SET max_retries = 1 WHERE tenant_id = $1", tenant.id)
    for _ in ids:
        [m] = await dequeue(client, "bulk")
        assert (await client.post(f"/api/messages/{m['id']}/nack")).json()["outcome"] == "dlq"
    r = await client.post("/api/topics/bulk/requeue")
    assert r.status_code == 200 and r.json() == {"requeued": 3}
    got = await dequeue(client, "bulk", count=10)
    assert sorted(m["id"] for m in got) == sorted(ids)
    assert (await client.post("/api/topics/bulk/requeue")).json() == {"requeued": 0}


async def test_requeue_conflicting_key_is_409(client: httpx.AsyncClient, db, tenant) -> None:  # type: ignore[no-untyped-def]
    mid = await enqueue(client, "kq", b"old", key="same")
    await db.execute("UPDATE messages SET max_retries = 1 WHERE id = $1::uuid", mid)
    await dequeue(client, "kq")
    assert (await client.post(f"/api/messages/{mid}/nack")).json()["outcome"] == "dlq"
    await enqueue(client, "kq", b"new", key="same")
    assert_error(await client.post(f"/api/messages/{mid}/requeue"), 409, "key_conflict")
    assert (await client.post("/api/topics/kq/requeue")).json() == {"requeued": 0}


async def test_requeue_of_a_message_outside_a_dlq_is_400(client: httpx.AsyncClient) -> None:
    mid = await enqueue(client, "plain")
    assert_error(await client.post(f"/api/messages/{mid}/requeue"), 400, "invalid_request")
    assert_error(await client.post(f"/api/messages/{uuid.uuid4()}/requeue"), 404, "message_not_found")


async def test_nack_retry_superseded_by_newer_pending_twin(client: httpx.AsyncClient) -> None:
    old = await enqueue(client, "sup", b"v1", key="k")
    [m] = await dequeue(client, "sup")
    new = await enqueue(client, "sup", b"v2", key="k")
    r = await client.post(f"/api/messages/{old}/nack", json={"receipt": m["receipt"]})
    assert r.json()["outcome"] == "retry"
    [next_] = await dequeue(client, "sup", count=5)
    assert next_["id"] == new and unb64(next_["payload"]) == b"v2"


async def test_batch_ack_reports_each_failure(client: httpx.AsyncClient) -> None:
    for _ in range(4):
        await enqueue(client, "ba")
    got = await dequeue(client, "ba", count=4)
    pending = await enqueue(client, "ba")
    acks = [{"id": m["id"], "receipt": m["receipt"]} for m in got[:3]]
    acks.append({"id": got[3]["id"], "receipt": str(uuid.uuid4())})  # stale receipt
    acks.append({"id": str(uuid.uuid4())})  # unknown
    acks.append({"id": "not-a-uuid"})
    acks.append({"id": pending})  # not leased
    acks.append({"id": got[0]["id"], "receipt": got[0]["receipt"]})  # again: acks apply in order, so it is gone
    r = await client.post("/api/messages/ack", json={"acks": acks})
    assert r.status_code == 200
    body = r.json()
    assert body["acked"] == 3
    codes = {f["id"]: f["code"] for f in body["failed"]}
    assert codes == {
        got[3]["id"]: "lease_lost",
        acks[4]["id"]: "message_not_found",
        "not-a-uuid": "message_not_found",
        pending: "message_not_found",
        got[0]["id"]: "message_not_found",
    }
    assert len(body["failed"]) == 5


async def test_long_poll_wakes_on_enqueue(client: httpx.AsyncClient) -> None:
    started = time.monotonic()
    waiter = asyncio.create_task(dequeue(client, "lp", wait_seconds=15))
    await long_polls_waiting(client.base_url)
    assert not waiter.done()
    mid = await enqueue(client, "lp")
    got = await asyncio.wait_for(waiter, 5)
    assert [m["id"] for m in got] == [mid]
    assert time.monotonic() - started < 3


async def test_long_poll_times_out_empty(client: httpx.AsyncClient) -> None:
    started = time.monotonic()
    assert await dequeue(client, "nothing", wait_seconds=1) == []
    assert 0.9 < time.monotonic() - started < 4


async def test_many_long_polls_hold_no_connections(client: httpx.AsyncClient, make_client, tenant) -> None:  # type: ignore[no-untyped-def]
    # More waiting requests than the server's pool has connections (10): they must all be answered.
    c = make_client(headers={"X-Tenant": tenant.slug}, limits=httpx.Limits(max_connections=100))
    waiters = [asyncio.create_task(dequeue(c, "many", wait_seconds=15)) for _ in range(40)]
    await long_polls_waiting(client.base_url, 40)
    r = await client.post(
        "/api/messages/batch", json={"topic": "many", "messages": [{"payload": "eA=="} for _ in range(40)]}
    )
    assert r.status_code == 201
    results = await asyncio.wait_for(asyncio.gather(*waiters), 20)
    delivered = [m["id"] for batch in results for m in batch]
    assert len(delivered) == len(set(delivered))
    # Every waiter woke; one that lost a race looked again at once, so every message went out.
    assert len(delivered) == 40


async def test_long_poll_wakes_on_an_enqueue_through_another_instance(server_env, tenant) -> None:  # type: ignore[no-untyped-def]
    from tests.support.servers import ADMIN, start_server, stop_server

    first, second = await asyncio.gather(
        asyncio.to_thread(start_server, server_env), asyncio.to_thread(start_server, server_env)
    )
    try:
        headers = {"X-Tenant": tenant.slug}
        async with (
            httpx.AsyncClient(base_url=first.base_url, auth=ADMIN, headers=headers, timeout=30) as a,
            httpx.AsyncClient(base_url=second.base_url, auth=ADMIN, headers=headers, timeout=30) as b,
        ):
            waiter = asyncio.create_task(dequeue(b, "cross", wait_seconds=15))
            await long_polls_waiting(second.base_url)
            started = time.monotonic()
            mid = await enqueue(a, "cross")
            got = await asyncio.wait_for(waiter, 10)
            assert [m["id"] for m in got] == [mid]
            assert time.monotonic() - started < 2  # woken by the notification, not by a periodic recheck
    finally:
        stop_server(first)
        stop_server(second)


async def test_a_long_poll_whose_client_left_leases_nothing(client: httpx.AsyncClient, make_client, tenant) -> None:  # type: ignore[no-untyped-def]
    """A consumer gives up on its long poll (closes the connection); a message enqueued afterwards must go to the
    next dequeue, not to the departed poll, where it would sit leased to nobody for its visibility timeout."""
    leaving = make_client(headers={"X-Tenant": tenant.slug})
    poll = asyncio.create_task(dequeue(leaving, "left", wait_seconds=20, visibility_timeout_seconds=300))
    await long_polls_waiting(client.base_url)
    poll.cancel()
    await asyncio.gather(poll, return_exceptions=True)
    await leaving.aclose()  # the connection goes with it
    await eventually(lambda: _no_long_polls(client), what="the server noticed the departure")
    mid = await enqueue(client, "left")
    assert [m["id"] for m in await dequeue(client, "left")] == [mid]


async def _no_long_polls(client: httpx.AsyncClient) -> bool:
    from tests.integration.helpers import metric_sum

    return metric_sum((await client.get("/metrics")).text, "skiplock_long_polls_waiting") == 0
