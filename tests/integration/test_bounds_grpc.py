"""Contract, "Bounds on what one tenant can make the server do", gRPC: a Subscribe stream checks its caller before
each lease, holds a bounded number of unsettled deliveries, streams are capped per user, a peer gone silent is
dropped and its leases released, `Ack` and `Nack` by id touch only the caller's own lease, and an unexpected error
answers INTERNAL "internal error"."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import asyncpg
import grpc
import httpx
import pytest

from api.queue_ti import queue_pb2, queue_pb2_grpc
from api.queue_ti.service import _abort
from mq import errors
from mq.tenancy.repository import UserRecord
from mq.tenancy.tokens import TokenSigner
from tests.integration.helpers import b64
from tests.support.grpc_calls import bearer, login_token
from tests.support.servers import TOKEN_SECRET, Server, start_server, stop_server
from tests.support.tenants import Tenant

Stub = queue_pb2_grpc.QueueServiceStub


async def _user_id(db: asyncpg.Pool[Any], username: str) -> uuid.UUID:
    found: uuid.UUID = await db.fetchval("SELECT id FROM users WHERE username = $1", username)
    return found


@pytest.fixture
async def member(
    client: httpx.AsyncClient, make_user: Any, tenant: Tenant, db: asyncpg.Pool[Any]
) -> tuple[str, str, uuid.UUID]:
    """A member of the test's tenant with a consume grant on `feed`: (username, password, user id)."""
    username, password = await make_user("member", tenant)
    user_id = await _user_id(db, username)
    r = await client.post(f"/api/users/{user_id}/grants", json={"action": "consume", "topic_pattern": "feed"})
    assert r.status_code == 201, r.text
    return username, password, user_id


async def _ends_at_the_next_lease(
    server: Server,
    channel: grpc.aio.Channel,
    client: httpx.AsyncClient,
    token: str,
    change: Callable[[], Awaitable[Any]],
) -> grpc.StatusCode:
    """A stream receives a message; `change` happens; the next message's lease ends the stream: its status, once
    checked that it came within a second of that message's enqueue."""
    stream = Stub(channel).Subscribe(queue_pb2.SubscribeRequest(topic="feed"), metadata=bearer(token))
    r = await client.post("/api/messages", json={"topic": "feed", "payload": b64(b"first")})
    assert r.status_code == 201, r.text
    first = await asyncio.wait_for(stream.read(), 10)
    assert first.payload == b"first"
    await Stub(channel).Ack(queue_pb2.AckRequest(id=first.id), metadata=bearer(token))
    await change()
    await asyncio.sleep(0.2)  # the change reached every cache (a broadcast)
    started = time.perf_counter()
    r = await client.post("/api/messages", json={"topic": "feed", "payload": b64(b"second")})
    assert r.status_code == 201, r.text
    with pytest.raises(grpc.aio.AioRpcError) as ended:  # (a message read instead fails the test: no error)
        await asyncio.wait_for(stream.read(), 10)
    assert time.perf_counter() - started < 1.5
    listed = (await client.get("/api/messages", params={"topic": "feed", "status": "pending"})).json()
    assert [m["payload"] for m in listed["items"]] == [b64(b"second")]  # not leased to the refused caller
    return ended.value.code()


async def test_a_subscribe_stream_ends_when_its_grant_is_removed(
    server: Server, channel: grpc.aio.Channel, client: httpx.AsyncClient, member: tuple[str, str, uuid.UUID]
) -> None:
    username, password, user_id = member
    token = await login_token(server, username, password)

    async def remove_grant() -> None:
        [grant] = (await client.get(f"/api/users/{user_id}/grants")).json()["items"]
        r = await client.delete(f"/api/users/{user_id}/grants/{grant['id']}")
        assert r.status_code == 204, r.text

    code = await _ends_at_the_next_lease(server, channel, client, token, remove_grant)
    assert code == grpc.StatusCode.PERMISSION_DENIED


@pytest.mark.parametrize("change", ["delete_user", "password", "role", "suspend_tenant"])
async def test_a_subscribe_stream_ends_when_its_user_changes(
    server: Server,
    channel: grpc.aio.Channel,
    client: httpx.AsyncClient,
    member: tuple[str, str, uuid.UUID],
    tenant: Tenant,
    change: str,
) -> None:
    username, password, user_id = member
    token = await login_token(server, username, password)

    async def changed() -> None:
        if change == "delete_user":
            r = await client.delete(f"/api/users/{user_id}")
        elif change == "password":
            r = await client.patch(f"/api/users/{user_id}", json={"password": f"new-{uuid.uuid4().hex}"})
        elif change == "role":
            r = await client.patch(f"/api/users/{user_id}", json={"role": "tenant_admin"})
        else:
            r = await client.patch(f"/api/tenants/{tenant.slug}", json={"status": "suspended"})
        assert r.status_code in (200, 204), r.text

    code = await _ends_at_the_next_lease(server, channel, client, token, changed)
    if change == "suspend_tenant":
        assert code == grpc.StatusCode.PERMISSION_DENIED
        assert (await client.patch(f"/api/tenants/{tenant.slug}", json={"status": "active"})).status_code == 200
    else:
        assert code == grpc.StatusCode.UNAUTHENTICATED


async def test_a_subscribe_stream_ends_when_its_token_expires(
    server: Server,
    channel: grpc.aio.Channel,
    client: httpx.AsyncClient,
    member: tuple[str, str, uuid.UUID],
    db: asyncpg.Pool[Any],
) -> None:
    """A token valid for 3 s (signed with the servers' key as the server signs its own)."""
    row = await db.fetchrow(
        """SELECT u.id, u.username, u.password_hash, u.role, u.tenant_id, t.slug, t.status
           FROM users AS u LEFT JOIN tenants AS t ON t.id = u.tenant_id WHERE u.username = $1""",
        member[0],
    )
    token = TokenSigner(TOKEN_SECRET.encode(), ttl_seconds=3).issue(UserRecord(*row))

    async def expire() -> None:
        await asyncio.sleep(3.5)

    code = await _ends_at_the_next_lease(server, channel, client, token, expire)
    assert code == grpc.StatusCode.UNAUTHENTICATED


async def test_a_stream_holds_at_most_its_unsettled_deliveries(
    channel: grpc.aio.Channel, client: httpx.AsyncClient, admin_token: str
) -> None:
    """A subscriber that reads one message and stops reading holds 32 messages, not the topic's 1,000."""
    items = [{"payload": b64(f"m{n}".encode())} for n in range(1000)]
    assert (await client.post("/api/messages/batch", json={"topic": "flood", "messages": items})).status_code == 201
    stream = Stub(channel).Subscribe(
        queue_pb2.SubscribeRequest(topic="flood", visibility_timeout_seconds=600), metadata=bearer(admin_token)
    )
    await asyncio.wait_for(stream.read(), 10)
    await asyncio.sleep(2)  # time to lease what it would
    processing = await _processing(client, "flood")
    assert 1 <= processing <= 32, processing
    stream.cancel()


async def _processing(client: httpx.AsyncClient, topic: str) -> int:
    r = await client.get("/api/messages", params={"topic": topic, "status": "processing", "limit": 1})
    total: int = r.json()["total"]
    return total


async def test_acked_messages_make_room_for_more(
    channel: grpc.aio.Channel, client: httpx.AsyncClient, admin_token: str
) -> None:
    items = [{"payload": b64(f"m{n}".encode())} for n in range(100)]
    assert (await client.post("/api/messages/batch", json={"topic": "acked", "messages": items})).status_code == 201
    stub, auth = Stub(channel), bearer(admin_token)
    stream = stub.Subscribe(queue_pb2.SubscribeRequest(topic="acked"), metadata=auth)
    for _ in range(100):
        message = await asyncio.wait_for(stream.read(), 10)
        await stub.Ack(queue_pb2.AckRequest(id=message.id), metadata=auth)
    stream.cancel()
    assert (await client.get("/api/messages", params={"topic": "acked"})).json()["total"] == 0


async def test_streams_are_capped_per_user(channel: grpc.aio.Channel, admin_token: str) -> None:
    stub, auth = Stub(channel), bearer(admin_token)
    streams = [stub.Subscribe(queue_pb2.SubscribeRequest(topic="idle"), metadata=auth) for _ in range(64)]
    reads = [asyncio.ensure_future(stream.read()) for stream in streams]  # each waits for a message
    await asyncio.sleep(1)  # each of them is open on the server
    assert not any(read.done() for read in reads)
    extra = stub.Subscribe(queue_pb2.SubscribeRequest(topic="idle"), metadata=auth)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await asyncio.wait_for(extra.read(), 10)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    streams[0].cancel()
    await asyncio.sleep(0.5)
    again = stub.Subscribe(queue_pb2.SubscribeRequest(topic="idle"), metadata=auth)
    with pytest.raises(asyncio.TimeoutError):  # open, waiting: not refused
        await asyncio.wait_for(again.read(), 1)
    for stream in (*streams, again):
        stream.cancel()
    for read in reads:
        read.cancel()


async def test_ack_by_id_touches_only_the_callers_own_lease(
    channel: grpc.aio.Channel, client: httpx.AsyncClient, admin_token: str, quick_keepalive_server: Server
) -> None:
    """A's gRPC lease lapses, B leases the message over REST; A's ack by id is `lease_lost` and B's lease stands:
    B's nack retries the message."""
    stub, auth = Stub(channel), bearer(admin_token)
    r = await client.post("/api/messages", json={"topic": "owned", "payload": b64(b"x")})
    message_id = r.json()["id"]
    a = await stub.Dequeue(queue_pb2.DequeueRequest(topic="owned", visibility_timeout_seconds=1), metadata=auth)
    assert a.id == message_id
    await asyncio.sleep(1.2)
    r = await client.post("/api/messages/dequeue", json={"topic": "owned", "visibility_timeout_seconds": 60})
    [b] = r.json()["messages"]
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.Ack(queue_pb2.AckRequest(id=message_id), metadata=auth)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert ("skiplock-code", "lease_lost") in tuple(refused.value.trailing_metadata() or ())
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.Nack(queue_pb2.NackRequest(id=message_id, error="a"), metadata=auth)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    r = await client.post(f"/api/messages/{message_id}/nack", json={"receipt": b["receipt"], "error": "b"})
    assert r.status_code == 200 and r.json()["outcome"] == "retry", r.text
    # a lease another instance handed out is found by its holder: the same user acks it here
    c = await stub.Dequeue(queue_pb2.DequeueRequest(topic="owned"), metadata=auth)
    async with grpc.aio.insecure_channel(quick_keepalive_server.grpc_address) as elsewhere:
        await Stub(elsewhere).Ack(queue_pb2.AckRequest(id=c.id), metadata=auth)
    assert (await client.get(f"/api/messages/{message_id}")).status_code == 404


async def test_an_unexpected_error_answers_internal_with_a_fixed_text() -> None:
    class Context:
        aborted: tuple[Any, ...] = ()

        async def abort(self, code: Any, details: str, trailer: Any) -> None:
            self.aborted = (code, details, trailer)
            raise grpc.aio.AbortError

    context = Context()
    with pytest.raises(grpc.aio.AbortError):
        await _abort(context, RecursionError("maximum recursion depth exceeded while decoding"))  # type: ignore[arg-type]
    code, details, trailer = context.aborted
    assert code == grpc.StatusCode.INTERNAL and details == "internal error"
    assert ("skiplock-code", "internal") in trailer
    with pytest.raises(grpc.aio.AbortError):
        await _abort(context, errors.LeaseLost())  # type: ignore[arg-type]
    assert context.aborted[0] == grpc.StatusCode.FAILED_PRECONDITION


@pytest.fixture
async def adminlogin_token(server: Server, tenant: Tenant, make_user: Any) -> str:
    return await login_token(server, *(await make_user("tenant_admin", tenant)))


class _Freezer:
    """A TCP relay to the gRPC port that can stop relaying without closing anything: a peer gone silent."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.frozen = False
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.tasks: list[asyncio.Task[None]] = []
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._relay, sock=self.listener)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        self.writers += [writer, upstream_writer]

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            while data := await source.read(65536):
                while self.frozen:
                    await asyncio.sleep(3600)
                sink.write(data)

        self.tasks += [
            asyncio.create_task(pipe(reader, upstream_writer)),
            asyncio.create_task(pipe(upstream_reader, writer)),
        ]

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        for writer in self.writers:
            writer.close()
        self.server.close()


@pytest.fixture(scope="module")
def quick_keepalive_server(server_env: dict[str, str]) -> Iterator[Server]:
    """A server that pings idle gRPC connections every second (the default is 30 s)."""
    srv = start_server(server_env | {"SKIPLOCK_GRPC_KEEPALIVE_SECONDS": "1"})
    yield srv
    stop_server(srv)


async def test_a_peer_gone_silent_is_dropped_and_its_leases_released(
    quick_keepalive_server: Server, tenant: Tenant, make_user: Any
) -> None:
    server = quick_keepalive_server
    token = await login_token(server, *(await make_user("tenant_admin", tenant)))
    host, port = server.grpc_address.rsplit(":", 1)
    freezer = _Freezer((host, int(port)))
    await freezer.start()
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=server.base_url, headers=headers, timeout=30) as rest:
        r = await rest.post("/api/messages", json={"topic": "silent", "payload": b64(b"held")})
        message_id = r.json()["id"]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{freezer.port}") as channel:
            stream = Stub(channel).Subscribe(
                queue_pb2.SubscribeRequest(topic="silent", visibility_timeout_seconds=3600), metadata=bearer(token)
            )
            got = await asyncio.wait_for(stream.read(), 10)
            assert got.id == message_id
            freezer.frozen = True  # the peer neither answers nor closes
            started = time.perf_counter()
            released = None
            while time.perf_counter() - started < 20:
                r = await rest.post("/api/messages/dequeue", json={"topic": "silent"})
                if r.json()["messages"]:
                    released = time.perf_counter() - started
                    break
                await asyncio.sleep(0.25)
            assert released is not None and released < 10, released  # keepalive 1 s: pinged, dropped, released
            stream.cancel()
    with contextlib.suppress(Exception):
        await freezer.close()
