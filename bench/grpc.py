"""`make bench` part `grpc`: queue-ti's gRPC service against the same work over REST, same server, same run.

- Enqueue: `queue.QueueService/Enqueue` against `POST /api/messages`, one message per call, CLIENTS clients each on
  a channel (connection) of its own.
- Subscribe + Ack: each client reads one message from its `Subscribe` stream and acks it by id (`Ack`), against
  `POST /api/messages/dequeue` for one message and its ack over REST, from a backlog larger than a round drains.

The ratio is gRPC / REST messages per second; server CPU per message (µs) for both. Issue 31 names no target: the
figures say what a queue-ti client pays for its protocol.
"""

from __future__ import annotations

from typing import Any

import asyncpg
import grpc
import httpx
import msgspec

from api.queue_ti import queue_pb2, queue_pb2_grpc
from bench.groups import fill
from bench.harness import ADMIN, CLIENTS, PAYLOAD, PAYLOAD_B64, SECONDS, TENANT, Side, compare, connected, cpu_seconds
from bench.httpclient import HttpConnection

TOPIC = "bench-grpc"


class _Client:
    """One gRPC client: its channel, and its Subscribe stream while a round runs."""

    def __init__(self, address: str, metadata: tuple[tuple[str, str], ...]) -> None:
        self.channel = grpc.aio.insecure_channel(address)
        self.stub = queue_pb2_grpc.QueueServiceStub(self.channel)  # type: ignore[no-untyped-call]
        self.metadata = metadata
        self.stream: Any = None

    def subscribe(self) -> None:
        self.unsubscribe()
        self.stream = self.stub.Subscribe(queue_pb2.SubscribeRequest(topic=TOPIC), metadata=self.metadata)

    def unsubscribe(self) -> None:
        if self.stream is not None:
            self.stream.cancel()
            self.stream = None


async def measure_grpc(
    pool: asyncpg.Pool[Any], base_url: str, grpc_address: str, tenant_id: int, server_pid: int
) -> list[dict[str, Any]]:
    cpu = cpu_seconds(server_pid)
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as rest:
        r = await rest.post("/api/auth/login", json={"username": ADMIN[0], "password": ADMIN[1]})
        r.raise_for_status()
        token = r.json()["token"]
    metadata = (("authorization", f"Bearer {token}"), ("x-tenant", TENANT))
    grpcs = [_Client(grpc_address, metadata) for _ in range(CLIENTS)]
    http = await connected(base_url)
    single = msgspec.json.encode({"topic": TOPIC, "payload": PAYLOAD_B64})

    async def rest_enqueue(c: HttpConnection) -> int:
        status, _ = await c.request("POST", "/api/messages", single)
        assert status == 201, status
        return 1

    async def grpc_enqueue(c: _Client) -> int:
        await c.stub.Enqueue(queue_pb2.EnqueueRequest(topic=TOPIC, payload=PAYLOAD), metadata=c.metadata)
        return 1

    async def rest_consume(c: HttpConnection) -> int:
        status, answer = await c.request("POST", "/api/messages/dequeue", {"topic": TOPIC, "count": 1})
        assert status == 200, status
        if not answer["messages"]:
            return 0
        [m] = answer["messages"]
        status, _ = await c.request("POST", f"/api/messages/{m['id']}/ack", {"receipt": m["receipt"]})
        assert status == 204, status
        return 1

    async def grpc_consume(c: _Client) -> int:
        message = await c.stream.read()
        if message is grpc.aio.EOF:
            return 0
        await c.stub.Ack(queue_pb2.AckRequest(id=message.id), metadata=c.metadata)
        return 1

    async def empty() -> None:
        for c in grpcs:
            c.unsubscribe()
        await pool.execute("TRUNCATE messages")

    async def backlog() -> None:
        await empty()
        await fill(pool, tenant_id, TOPIC, int(8_000 * SECONDS))

    async def subscribed() -> None:
        await backlog()
        for c in grpcs:
            c.subscribe()

    rows = []
    try:
        baseline = "the same work over REST (single enqueue; dequeue 1 + ack)"
        rows.append(
            await compare(
                "grpc_enqueue",
                0.0,
                Side(empty, http, rest_enqueue, cpu),
                Side(empty, grpcs, grpc_enqueue, cpu),
                baseline,
            )
        )
        rows.append(
            await compare(
                "grpc_subscribe_ack",
                0.0,
                Side(backlog, http, rest_consume, cpu),
                Side(subscribed, grpcs, grpc_consume, cpu),
                baseline,
            )
        )
    finally:
        for c in grpcs:
            c.unsubscribe()
            await c.channel.close()
        for h in http:
            await h.close()
        await empty()
    return rows
