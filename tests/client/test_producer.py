"""Sending: payload round trips, batch order and chunking, retries on 429 and their limits."""

from __future__ import annotations

import asyncio
import os

import aiohttp
import pytest
from skiplock_client import AsyncClient, Item, QueueFull, ReservedTopic, RetryPolicy
from skiplock_client._version import __version__

from tests.support.servers import ADMIN, Server
from tests.support.tenants import Tenant
from tests.support.waiting import eventually


async def test_arbitrary_bytes_text_and_json_round_trip(sk: AsyncClient) -> None:
    every_byte = bytes(range(256)) + os.urandom(4096)
    sent = {
        await sk.send("bytes", every_byte): every_byte,
        await sk.send("bytes", "naïve ☃ text"): "naïve ☃ text".encode(),
        await sk.send("bytes", {"amount": 99, "items": [1, 2]}): b'{"amount":99,"items":[1,2]}',
        await sk.send("bytes", b""): b"",
    }
    received = await sk.receive("bytes", 10)
    assert {m.id: m.payload for m in received} == sent
    by_id = {m.id: m for m in received}
    assert by_id[next(iter(sent))].receipt
    json_id = list(sent)[2]
    assert by_id[json_id].json() == {"amount": 99, "items": [1, 2]}
    assert by_id[list(sent)[1]].text() == "naïve ☃ text"


async def test_options_reach_the_message(sk: AsyncClient) -> None:
    mid = await sk.send("opts", b"x", key="k-1", metadata={"trace": "abc"}, priority=7, delay=30)
    message = await sk.message(mid)
    assert (message.key, message.metadata, message.priority, message.status) == ("k-1", {"trace": "abc"}, 7, "pending")
    assert await sk.receive("opts") == []  # delayed
    again = await sk.send("opts", b"y", key="k-1", priority=7, delay=30)
    assert again == mid  # a keyed send upserts: a retry of it is harmless
    assert (await sk.message(mid)).payload == b"y"


def _traced(seen: list[tuple[str, dict[str, str]]]) -> aiohttp.ClientSession:
    """A session that records each request's path and headers."""

    async def record(_session: object, _context: object, params: aiohttp.TraceRequestStartParams) -> None:
        seen.append((params.url.path, dict(params.headers)))

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(record)
    return aiohttp.ClientSession(trace_configs=[trace])


async def test_a_batch_is_chunked_and_keeps_input_order(server: Server, tenant: Tenant) -> None:
    seen: list[tuple[str, dict[str, str]]] = []
    session = _traced(seen)
    async with AsyncClient(server.base_url, auth=ADMIN, session=session, tenant=tenant.slug, batch_size=7) as sk:
        items = [f"m{n}" for n in range(20)] + [Item(payload={"n": 20}, key="k20", priority=9)]
        ids = await sk.send_batch("ordered", items)
        assert [path for path, _ in seen] == ["/api/messages/batch"] * 3  # 7 + 7 + 7
        assert len(ids) == len(set(ids)) == 21
        stored = [await sk.message(i) for i in ids]
        assert [m.payload for m in stored[:20]] == [f"m{n}".encode() for n in range(20)]
        assert (stored[20].key, stored[20].priority, stored[20].json()) == ("k20", 9, {"n": 20})
        assert await sk.send_batch("ordered", []) == []
    await session.close()


async def test_items_may_name_their_own_topic(sk: AsyncClient) -> None:
    ids = await sk.send_batch(None, [Item(b"a", topic="left"), Item(b"b", topic="right")])
    assert [(await sk.message(i)).topic for i in ids] == ["left", "right"]


async def test_a_4xx_that_will_not_change_is_not_retried(sk: AsyncClient) -> None:
    with pytest.raises(ReservedTopic) as raised:
        await sk.send("orders.dlq", b"x")
    assert raised.value.status == 400 and raised.value.request_id


async def test_a_full_topic_drained_by_a_consumer_takes_every_message_once(sk: AsyncClient) -> None:
    """A producer of 300 messages into a topic capped at 20, while a consumer drains it: the producer's 429s are
    retried (honouring Retry-After) until it has sent everything; the consumer sees each message exactly once."""
    await sk.set_topic_config("capped", max_depth=20)
    received: list[bytes] = []

    async def handle(message) -> None:  # type: ignore[no-untyped-def]
        received.append(message.payload)

    consumer = sk.consumer("capped", handle, concurrency=4, wait_seconds=1, handle_signals=False)
    consuming = asyncio.create_task(consumer.run())
    sent = [f"n{n}".encode() for n in range(300)]
    for chunk in range(0, 300, 10):
        await sk.send_batch("capped", sent[chunk : chunk + 10])
    await eventually(lambda: len(received) >= 300, timeout=60, what="every message consumed")
    consumer.stop()
    await consuming
    assert sorted(received) == sorted(sent)
    assert (await sk.messages("capped")).total == 0


async def test_the_retry_budget_ends_with_the_refusal(server: Server, tenant: Tenant) -> None:
    async with AsyncClient(
        server.base_url, auth=ADMIN, tenant=tenant.slug, retry=RetryPolicy(attempts=3, base_seconds=0.01)
    ) as sk:
        await sk.set_topic_config("tiny", max_depth=1)
        await sk.send("tiny", b"one")
        with pytest.raises(QueueFull) as raised:
            await sk.send("tiny", b"two")
        assert raised.value.retry_after is not None and raised.value.request_id


async def test_the_user_agent_names_the_client(server: Server, tenant: Tenant) -> None:
    seen: list[tuple[str, dict[str, str]]] = []
    session = _traced(seen)
    async with AsyncClient(server.base_url, auth=ADMIN, tenant=tenant.slug, session=session) as sk:
        await sk.topics()
    await session.close()
    headers = seen[0][1]
    assert headers["User-Agent"].startswith(f"skiplock-client/{__version__} ")
    assert headers["X-Tenant"] == tenant.slug and headers["Authorization"].startswith("Basic ")
