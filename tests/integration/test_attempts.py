"""A message's attempts: each delivery's lease (when, by whom) and how it ended, shown by GET /api/messages/{id}."""

from __future__ import annotations

import asyncio

import httpx

from tests.integration.helpers import dequeue, enqueue


async def _attempts(client: httpx.AsyncClient, message_id: str) -> list[dict[str, object]]:
    r = await client.get(f"/api/messages/{message_id}")
    assert r.status_code == 200, r.text
    attempts: list[dict[str, object]] = r.json()["attempts"]
    return attempts


async def test_each_delivery_and_its_end_are_kept(client: httpx.AsyncClient, make_client, make_user, tenant) -> None:  # type: ignore[no-untyped-def]
    worker_name, worker_password = await make_user("tenant_admin", tenant)
    worker = make_client(auth=(worker_name, worker_password))
    assert (await client.put("/api/topic-configs/att", json={"max_retries": 3})).status_code == 200
    mid = await enqueue(client, "att")
    assert await _attempts(client, mid) == []

    (first,) = await dequeue(worker, "att")
    (current,) = await _attempts(client, mid)
    assert current["attempt"] == 1 and current["leased_by"] == worker_name and current["outcome"] == "processing"
    assert current["leased_at"] and current["ended_at"] is None and current["error"] is None
    r = await worker.post(f"/api/messages/{mid}/nack", json={"error": "payment service down", "delay_seconds": 0})
    assert r.json()["outcome"] == "retry"

    (second,) = await dequeue(client, "att", visibility_timeout_seconds=1)
    await asyncio.sleep(1.2)  # the lease lapses: shown as lapsed at once, recorded by the next dequeue
    shown = await _attempts(client, mid)
    assert [a["outcome"] for a in shown] == ["nacked", "lapsed"]
    (third,) = await dequeue(worker, "att")
    attempts = await _attempts(client, mid)
    assert [(a["attempt"], a["outcome"]) for a in attempts] == [(1, "nacked"), (2, "lapsed"), (3, "processing")]
    assert attempts[0]["error"] == "payment service down" and attempts[0]["leased_by"] == worker_name
    assert attempts[1]["leased_by"] == "admin" and "lease expired" in str(attempts[1]["error"])
    assert attempts[1]["ended_at"] and attempts[0]["ended_at"]
    assert attempts[2]["leased_by"] == worker_name

    r = await worker.post(f"/api/messages/{mid}/nack", json={"error": "still down", "receipt": third["receipt"]})
    assert r.json()["outcome"] == "dlq"
    attempts = await _attempts(client, mid)
    assert [a["outcome"] for a in attempts] == ["nacked", "lapsed", "dead_lettered"]
    assert attempts[-1]["error"] == "still down"
    assert first["id"] == second["id"] == third["id"] == mid


async def test_only_the_most_recent_attempts_are_kept(client: httpx.AsyncClient) -> None:
    assert (await client.put("/api/topic-configs/many", json={"max_retries": 100})).status_code == 200
    mid = await enqueue(client, "many")
    for n in range(25):
        (m,) = await dequeue(client, "many")
        await client.post(f"/api/messages/{m['id']}/nack", json={"error": f"e{n}", "delay_seconds": 0})
    attempts = await _attempts(client, mid)
    assert len(attempts) >= 10
    assert attempts[-1]["attempt"] == 25 and attempts[-1]["error"] == "e24"
    assert [a["attempt"] for a in attempts] == list(range(26 - len(attempts), 26))
