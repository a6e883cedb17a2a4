"""queue-ti's own Python client (PyPI `queue-ti-client`, unchanged) against a Skiplock server: login for a bearer
token, publish with metadata over gRPC, Subscribe with concurrency and acks, nacks to retries and the DLQ, batch
consumption per consumer group, and a forged token refused with UNAUTHENTICATED (contract, "queue-ti wire
compatibility")."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import httpx
import jwt
import pytest
from queueti import (
    AdminOptions,
    AsyncAdminClient,
    AsyncClient,
    BatchOptions,
    ConnectOptions,
    ConsumerOptions,
    Message,
    PublishError,
    PublishOptions,
    QueueTiAuth,
    TopicConfig,
    connect,
)
from queueti.pb import queue_pb2, queue_pb2_grpc

from tests.support.servers import Server
from tests.support.tenants import Tenant


@pytest.fixture
async def login(server: Server, tenant: Tenant, make_user: Any) -> QueueTiAuth:
    username, password = await make_user("tenant_admin", tenant)
    return await asyncio.to_thread(QueueTiAuth.login, server.base_url, username, password)


@pytest.fixture
async def queue_ti(server: Server, login: QueueTiAuth) -> AsyncIterator[AsyncClient]:
    assert login.token, "Skiplock requires authentication"
    options = ConnectOptions(token=login.token, insecure=True, token_refresher=login.async_refresh)
    client = await connect(server.grpc_address, options)
    yield client
    await client.close()


async def _until(check: Callable[[], Awaitable[bool] | bool], seconds: float = 15) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        result = check()
        if await result if asyncio.iscoroutine(result) else result:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("not reached in time")


def _rest(server: Server, login: QueueTiAuth) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.base_url, headers={"Authorization": f"Bearer {login.token}"}, timeout=30)


async def test_publish_and_subscribe_with_concurrency_and_acks(
    queue_ti: AsyncClient, server: Server, login: QueueTiAuth
) -> None:
    producer = queue_ti.producer()
    ids = [
        await producer.publish("orders", f"order-{n}".encode(), PublishOptions(metadata={"n": str(n)}))
        for n in range(20)
    ]
    seen: dict[str, Message] = {}
    busy = 0
    most_busy = 0

    async def handle(message: Message) -> None:
        nonlocal busy, most_busy
        busy += 1
        most_busy = max(most_busy, busy)
        await asyncio.sleep(0.02)
        seen[message.id] = message
        busy -= 1

    consumer = queue_ti.consumer("orders", ConsumerOptions(concurrency=4))
    task = asyncio.create_task(consumer.consume(handle))
    async with _rest(server, login) as rest:

        async def all_acked() -> bool:
            r = await rest.get("/api/messages", params={"topic": "orders"})
            return r.json()["items"] == []

        # the consumer runs until its acks are in: cancelled as soon as the last message was handled, its acks
        # still in flight were cancelled with it (a loaded CI machine), and those messages waited for their lease
        await _until(lambda: len(seen) == 20)
        await _until(all_acked)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert sorted(seen) == sorted(ids) and 1 < most_busy <= 4
    assert {m.payload for m in seen.values()} == {f"order-{n}".encode() for n in range(20)}
    assert all(m.metadata == {"n": m.payload.decode().split("-")[1]} and m.retry_count == 0 for m in seen.values())


async def test_a_failing_handler_nacks_to_retries_then_the_dlq(
    queue_ti: AsyncClient, server: Server, login: QueueTiAuth
) -> None:
    async with _rest(server, login) as rest:
        assert (await rest.put("/api/topic-configs/flaky", json={"max_retries": 2})).status_code == 200
        attempts: list[int] = []

        async def handle(message: Message) -> None:
            attempts.append(message.retry_count)
            raise RuntimeError("boom")

        await queue_ti.producer().publish("flaky", b"poison")
        task = asyncio.create_task(queue_ti.consumer("flaky").consume(handle))

        async def dead() -> bool:
            r = await rest.get("/api/messages", params={"topic": "flaky.dlq"})
            return len(r.json()["items"]) == 1

        await _until(dead)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        [letter] = (await rest.get("/api/messages", params={"topic": "flaky.dlq"})).json()["items"]
        assert attempts == [0, 1] and base64.b64decode(letter["payload"]) == b"poison"
        assert letter["last_error"] == "boom"


async def test_batch_consumption_per_consumer_group(queue_ti: AsyncClient, server: Server, login: QueueTiAuth) -> None:
    async with _rest(server, login) as rest:
        for group in ("billing", "audit"):
            r = await rest.post("/api/topics/invoices/consumer-groups", json={"consumer_group": group})
            assert r.status_code == 201, r.text
    for n in range(5):
        await queue_ti.producer().publish("invoices", f"invoice-{n}".encode())
    for group in ("billing", "audit"):
        got: list[bytes] = []

        async def handle(batch: list[Message], got: list[bytes] = got) -> None:
            for message in batch:
                got.append(message.payload)
                await message.ack()

        consumer = queue_ti.consumer("invoices")
        task = asyncio.create_task(consumer.consume_batch(BatchOptions(batch_size=3, consumer_group=group), handle))
        await _until(lambda got=got: len(got) == 5)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert sorted(got) == [f"invoice-{n}".encode() for n in range(5)]


async def test_the_clients_token_refresh_gives_a_working_token(queue_ti: AsyncClient, login: QueueTiAuth) -> None:
    """The client's refresher (its `token_refresher` hook) logs in again; the new token works over gRPC, and the
    first stays valid until it expires (a refresh revokes nothing): the fresh token publishes, the first receives
    exactly that message."""
    first = login.token
    assert first
    # Tokens are signed claims with second-resolution times: a login in the first's second would return the same
    # string, and "the first still works" would then prove nothing about the first.
    issued = jwt.decode(first, options={"verify_signature": False})["iat"]
    await asyncio.sleep(max(0.0, issued + 1 - time.time()))
    fresh = await login.async_refresh()
    assert fresh and fresh == login.token and fresh != first
    queue_ti.set_token(fresh)
    published = await queue_ti.producer().publish(
        "refreshed", b"after a refresh", PublishOptions(metadata={"by": "the fresh token"})
    )
    queue_ti.set_token(first)
    received: list[Message] = []

    async def handle(message: Message) -> None:
        received.append(message)

    task = asyncio.create_task(queue_ti.consumer("refreshed").consume(handle))
    await _until(lambda: bool(received))
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    [message] = received
    assert (message.id, message.topic, message.payload, message.metadata) == (
        published,
        "refreshed",
        b"after a refresh",
        {"by": "the fresh token"},
    )


async def test_a_forged_token_is_refused_with_unauthenticated(server: Server) -> None:
    channel = grpc.aio.insecure_channel(server.grpc_address)
    stub = queue_pb2_grpc.QueueServiceStub(channel)
    try:
        for token in ("forged.not.valid", ""):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.Enqueue(
                    queue_pb2.EnqueueRequest(topic="t", payload=b"x"),
                    metadata=(("authorization", f"Bearer {token}"),),
                )
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert ("skiplock-code", "unauthorized") in tuple(refused.value.trailing_metadata() or ())
    finally:
        await channel.close()


async def test_the_admin_client_manages_configs_schemas_groups_and_reads_stats(
    queue_ti: AsyncClient, server: Server, login: QueueTiAuth
) -> None:
    async with AsyncAdminClient(server.base_url, AdminOptions(token=login.token)) as admin:
        config = await admin.upsert_topic_config(
            "admin-topic", TopicConfig(topic="admin-topic", replayable=False, max_retries=4, max_depth=100)
        )
        assert (config.topic, config.max_retries, config.max_depth, config.replayable) == ("admin-topic", 4, 100, False)
        assert "admin-topic" in [c.topic for c in await admin.list_topic_configs()]
        schema = '{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}'
        stored = await admin.upsert_topic_schema("admin-topic", schema)  # queue-ti's default format: Avro
        assert (stored.topic, stored.version) == ("admin-topic", 1) and stored.updated_at
        assert (await admin.get_topic_schema("admin-topic")).schema_json == stored.schema_json
        assert [s.topic for s in await admin.list_topic_schemas()] == ["admin-topic"]
        await admin.register_consumer_group("admin-topic", "reports")
        assert await admin.list_consumer_groups("admin-topic") == ["reports"]
        await queue_ti.producer().publish("admin-topic", b'{"id": "o-1"}')
        with pytest.raises(PublishError):  # the schema holds over gRPC too
            await queue_ti.producer().publish("admin-topic", b'{"id": 7}')
        stats = {(s.topic, s.status): s.count for s in await admin.stats()}
        assert stats[("admin-topic", "pending")] == 1
        await admin.unregister_consumer_group("admin-topic", "reports")
        await admin.delete_topic_schema("admin-topic")
        await admin.delete_topic_config("admin-topic")
        assert "admin-topic" not in [c.topic for c in await admin.list_topic_configs()]
