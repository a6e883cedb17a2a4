"""Long-poll wake-ups: a message wakes one waiting poll, not all of them, and no message is left unseen.

Each poll waits 4 s, less than the 5 s after which a waiting poll looks again by itself: a message that no woken
poll looked for would leave a poll answering empty, which these tests refuse.
"""

from __future__ import annotations

import asyncio

import httpx

from tests.integration.helpers import b64, long_polls_waiting, metric_sum

WAIT = 4


async def _poll(client: httpx.AsyncClient, topic: str, count: int = 1) -> list[dict[str, object]]:
    r = await client.post("/api/messages/dequeue", json={"topic": topic, "count": count, "wait_seconds": WAIT})
    assert r.status_code == 200, r.text
    messages: list[dict[str, object]] = r.json()["messages"]
    return messages


async def _waiting(client: httpx.AsyncClient) -> float:
    return metric_sum((await client.get("/metrics")).text, "skiplock_long_polls_waiting")


async def test_one_message_wakes_one_poll(client: httpx.AsyncClient) -> None:
    before = await _waiting(client)
    polls = [asyncio.create_task(_poll(client, "wake-one")) for _ in range(4)]
    await long_polls_waiting(client.base_url, int(before) + 4)
    r = await client.post("/api/messages", json={"topic": "wake-one", "payload": b64("a")})
    assert r.status_code == 201
    done, pending = await asyncio.wait(polls, return_when=asyncio.FIRST_COMPLETED)
    assert [len(t.result()) for t in done] == [1]
    # The three others still wait; three more messages, one each, find them all.
    await asyncio.gather(
        *(client.post("/api/messages", json={"topic": "wake-one", "payload": b64(str(n))}) for n in range(3))
    )
    answers = await asyncio.gather(*pending)
    assert [len(a) for a in answers] == [1, 1, 1]


async def test_concurrent_messages_each_reach_a_waiting_poll(client: httpx.AsyncClient) -> None:
    for round_ in range(5):
        topic = f"wake-race-{round_}"
        before = await _waiting(client)
        polls = [asyncio.create_task(_poll(client, topic)) for _ in range(8)]
        await long_polls_waiting(client.base_url, int(before) + 8)
        sent = await asyncio.gather(
            *(client.post("/api/messages", json={"topic": topic, "payload": b64(str(n))}) for n in range(8))
        )
        assert all(r.status_code == 201 for r in sent)
        answers = await asyncio.gather(*polls)
        assert sorted(len(a) for a in answers) == [1] * 8, "a message was left without a poll looking for it"
        assert len({a[0]["id"] for a in answers}) == 8


async def test_a_batch_wakes_as_many_polls_as_it_has_messages(client: httpx.AsyncClient) -> None:
    before = await _waiting(client)
    polls = [asyncio.create_task(_poll(client, "wake-batch")) for _ in range(6)]
    await long_polls_waiting(client.base_url, int(before) + 6)
    r = await client.post(
        "/api/messages/batch", json={"topic": "wake-batch", "messages": [{"payload": b64(str(n))} for n in range(6)]}
    )
    assert r.status_code == 201
    answers = await asyncio.gather(*polls)
    assert [len(a) for a in answers] == [1] * 6
