"""queue-ti's gRPC service (contract, "queue-ti wire compatibility"): REST errors as gRPC status codes with the
contract's code in the `skiplock-code` trailer; Subscribe woken by an enqueue, not polling; a stream cut while it
holds leases releases them (nothing lost); tenants isolated; and no request, however odd, answered INTERNAL."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import Any

import grpc
import httpx
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from api.queue_ti import queue_pb2, queue_pb2_grpc
from tests.integration.helpers import long_polls_waiting
from tests.support.grpc_calls import bearer, login_token
from tests.support.servers import Server, start_server, stop_server
from tests.support.tenants import Tenant

Stub = queue_pb2_grpc.QueueServiceStub


async def _refused(call: Any, code: grpc.StatusCode, contract_code: str) -> None:
    """The call fails with `code`, and the contract's code is in the status details (an ErrorInfo) and in the
    `skiplock-code` trailer."""
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call
    assert refused.value.code() == code, refused.value.details()
    assert ("skiplock-code", contract_code) in tuple(refused.value.trailing_metadata() or ()), refused.value
    status = rpc_status.from_call(refused.value)
    assert status is not None and status.code == code.value[0]
    [detail] = status.details
    info = error_details_pb2.ErrorInfo()
    assert detail.Unpack(info) and (info.reason, info.domain) == (contract_code, "skiplock")


async def test_rest_errors_are_grpc_status_codes(
    channel: grpc.aio.Channel, admin_token: str, server: Server, tenant: Tenant, make_user: Any
) -> None:
    stub, auth = Stub(channel), bearer(admin_token)
    await _refused(
        stub.Enqueue(queue_pb2.EnqueueRequest(topic="x.dlq", payload=b"p"), metadata=auth),
        grpc.StatusCode.INVALID_ARGUMENT,
        "reserved_topic",
    )
    await _refused(
        stub.Enqueue(queue_pb2.EnqueueRequest(topic="", payload=b"p"), metadata=auth),
        grpc.StatusCode.INVALID_ARGUMENT,
        "invalid_request",
    )
    await _refused(
        stub.Dequeue(queue_pb2.DequeueRequest(topic="empty"), metadata=auth), grpc.StatusCode.NOT_FOUND, "not_found"
    )
    await _refused(
        stub.Ack(queue_pb2.AckRequest(id="0190a5b0-0000-7000-8000-000000000000"), metadata=auth),
        grpc.StatusCode.NOT_FOUND,
        "message_not_found",
    )
    headers = {"Authorization": f"Bearer {admin_token}"}
    async with httpx.AsyncClient(base_url=server.base_url, headers=headers, timeout=30) as rest:
        assert (await rest.put("/api/topic-configs/capped", json={"max_depth": 1})).status_code == 200
        r = await rest.post("/api/topics/grouped/consumer-groups", json={"consumer_group": "g"})
        assert r.status_code == 201, r.text
    await stub.Enqueue(queue_pb2.EnqueueRequest(topic="capped", payload=b"1"), metadata=auth)
    await _refused(
        stub.Enqueue(queue_pb2.EnqueueRequest(topic="capped", payload=b"2"), metadata=auth),
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "queue_full",
    )
    await _refused(
        stub.BatchDequeue(queue_pb2.BatchDequeueRequest(topic="grouped", count=5), metadata=auth),
        grpc.StatusCode.INVALID_ARGUMENT,
        "consumer_group_required",
    )
    member = await login_token(server, *(await make_user("member", tenant)))
    await _refused(
        stub.Enqueue(queue_pb2.EnqueueRequest(topic="capped", payload=b"3"), metadata=bearer(member)),
        grpc.StatusCode.PERMISSION_DENIED,
        "forbidden",
    )
    await _refused(
        stub.Enqueue(queue_pb2.EnqueueRequest(topic="t", payload=b"p")), grpc.StatusCode.UNAUTHENTICATED, "unauthorized"
    )


async def test_subscribe_is_woken_by_an_enqueue(channel: grpc.aio.Channel, admin_token: str, server: Server) -> None:
    stub, auth = Stub(channel), bearer(admin_token)
    stream = stub.Subscribe(queue_pb2.SubscribeRequest(topic="woken"), metadata=auth)
    await long_polls_waiting(server.base_url)  # the stream waits: nothing to deliver
    started = time.monotonic()
    sent = await stub.Enqueue(
        queue_pb2.EnqueueRequest(topic="woken", payload=b"now", metadata={"k": "v"}, key="the-key"), metadata=auth
    )
    got = await asyncio.wait_for(stream.read(), 5)
    assert got.id == sent.id and got.payload == b"now" and dict(got.metadata) == {"k": "v"}
    assert time.monotonic() - started < 1.0  # a wake-up, not a polling loop's next turn
    await stub.Ack(queue_pb2.AckRequest(id=got.id), metadata=auth)
    stream.cancel()


async def test_a_stream_cut_with_leases_releases_them(
    channel: grpc.aio.Channel, admin_token: str, server: Server
) -> None:
    stub, auth = Stub(channel), bearer(admin_token)
    ids = {
        (await stub.Enqueue(queue_pb2.EnqueueRequest(topic="cut", payload=f"m{n}".encode()), metadata=auth)).id
        for n in range(3)
    }
    request = queue_pb2.SubscribeRequest(topic="cut", visibility_timeout_seconds=600)
    stream = stub.Subscribe(request, metadata=auth)
    received = {(await stream.read()).id for _ in range(3)}
    assert received == ids
    stream.cancel()  # three leases of 10 minutes held, none acked
    async with httpx.AsyncClient(
        base_url=server.base_url, headers={"Authorization": f"Bearer {admin_token}"}, timeout=30
    ) as rest:
        again: set[str] = set()
        deadline = time.monotonic() + 10
        while again != ids and time.monotonic() < deadline:
            r = await rest.post("/api/messages/dequeue", json={"topic": "cut", "count": 10})
            again |= {m["id"] for m in r.json()["messages"]}
            await asyncio.sleep(0.1)
        assert again == ids  # released at once, not after 10 minutes: nothing lost


async def test_tenants_are_isolated_over_grpc(
    channel: grpc.aio.Channel, admin_token: str, server: Server, make_user: Any, db: Any
) -> None:
    stub = Stub(channel)
    other_slug = f"t-{time.monotonic_ns()}"
    other_id = await db.fetchval("INSERT INTO tenants (slug, name) VALUES ($1, $1) RETURNING id", other_slug)
    other = bearer(await login_token(server, *(await make_user("tenant_admin", Tenant(other_id, other_slug)))))
    mine = await stub.Enqueue(
        queue_pb2.EnqueueRequest(topic="shared-name", payload=b"mine"), metadata=bearer(admin_token)
    )
    await stub.Enqueue(queue_pb2.EnqueueRequest(topic="shared-name", payload=b"theirs"), metadata=other)
    got = await stub.BatchDequeue(queue_pb2.BatchDequeueRequest(topic="shared-name", count=10), metadata=other)
    assert [m.payload for m in got.messages] == [b"theirs"]
    await _refused(
        stub.Ack(queue_pb2.AckRequest(id=mine.id), metadata=other), grpc.StatusCode.NOT_FOUND, "message_not_found"
    )
    await _refused(
        stub.Enqueue(queue_pb2.EnqueueRequest(topic="t", payload=b"p"), metadata=(*other, ("x-tenant", "not-theirs"))),
        grpc.StatusCode.PERMISSION_DENIED,
        "forbidden",
    )


_TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
# Valid names and timeouts alongside arbitrary ones: with arbitrary text alone nearly every request was refused as
# invalid before it reached a lease, and Subscribe almost never streamed a message back.
_TOPIC = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,30}", fullmatch=True) | _TEXT
_GROUP = st.just("") | _TEXT  # "": no consumer group; a made-up one is not registered (NOT_FOUND)
#: How long each example reads its Subscribe stream: refusals and deliveries take milliseconds, and a stream still
#: open after it is waiting for messages; a longer window would only add its length to most examples.
SUBSCRIBE_WINDOW_SECONDS = 0.1


#: `make fuzz` runs the recorded run with more (SKIPLOCK_GRPC_FUZZ_EXAMPLES, docs/reliability.md).
GRPC_FUZZ_EXAMPLES = int(os.environ.get("SKIPLOCK_GRPC_FUZZ_EXAMPLES", "150"))


@settings(max_examples=GRPC_FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    topic=_TOPIC,
    payload=st.binary(max_size=2048),
    metadata=st.dictionaries(_TEXT, _TEXT, max_size=4),
    key=st.none() | _TEXT,
    count=st.integers(0, 2**32 - 1),
    visibility=st.none() | st.integers(1, 43200) | st.integers(0, 2**32 - 1),
    group=_GROUP,
    message_id=_TEXT,
)
def test_no_request_is_answered_internal(
    server: Server,
    admin_token: str,
    topic: str,
    payload: bytes,
    metadata: dict[str, str],
    key: str | None,
    count: int,
    visibility: int | None,
    group: str,
    message_id: str,
) -> None:
    """Hypothesis over the proto's messages, every method (Subscribe's stream read briefly, then cancelled): every
    answer is a success or a refusal, never INTERNAL or UNKNOWN."""

    async def run() -> None:
        failures: list[grpc.aio.AioRpcError] = []
        async with grpc.aio.insecure_channel(server.grpc_address) as channel:
            stub, auth = Stub(channel), bearer(admin_token)
            extra = {} if visibility is None else {"visibility_timeout_seconds": visibility}
            calls = [
                stub.Enqueue(
                    queue_pb2.EnqueueRequest(topic=topic, payload=payload, metadata=metadata, key=key), metadata=auth
                ),
                stub.Dequeue(queue_pb2.DequeueRequest(topic=topic, consumer_group=group, **extra), metadata=auth),
                stub.BatchDequeue(
                    queue_pb2.BatchDequeueRequest(topic=topic, count=count, consumer_group=group, **extra),
                    metadata=auth,
                ),
                stub.Ack(queue_pb2.AckRequest(id=message_id, consumer_group=group), metadata=auth),
                stub.Nack(queue_pb2.NackRequest(id=message_id, error=topic, consumer_group=group), metadata=auth),
            ]
            for call in calls:
                try:
                    await call
                except grpc.aio.AioRpcError as exc:
                    failures.append(exc)
            stream = stub.Subscribe(
                queue_pb2.SubscribeRequest(topic=topic, consumer_group=group, **extra), metadata=auth
            )
            delivered, outcome = 0, "ended"
            try:
                # A refusal comes at once and so does what the topic holds; then a valid stream waits on its long poll
                # (20 s), which the window ends. The cancel releases whatever the stream leased.
                async with asyncio.timeout(SUBSCRIBE_WINDOW_SECONDS):
                    while await stream.read() is not grpc.aio.EOF:
                        delivered += 1
            except TimeoutError:
                outcome = "waiting"
            except grpc.aio.AioRpcError as exc:
                failures.append(exc)
                outcome = exc.code().name
            finally:
                stream.cancel()
            # What Subscribe met, in --hypothesis-show-statistics: refusals alone would leave the streaming untried.
            event(f"Subscribe {outcome}, {'with' if delivered else 'without'} deliveries")
            assert all(e.code() not in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN) for e in failures), failures

    asyncio.run(run())


async def test_a_graceful_shutdown_ends_subscribe_streams(
    server_env: dict[str, str], tenant: Tenant, make_user: Any
) -> None:
    """SIGTERM: a waiting Subscribe stream ends at once (its long poll answers), and the process exits cleanly
    within the HTTP server's graceful shutdown."""
    own = start_server(server_env)
    try:
        token = await login_token(own, *(await make_user("tenant_admin", tenant)))
        async with grpc.aio.insecure_channel(own.grpc_address) as channel:
            stream = Stub(channel).Subscribe(queue_pb2.SubscribeRequest(topic="draining"), metadata=bearer(token))
            reading = asyncio.create_task(stream.read())
            await long_polls_waiting(own.base_url)
            assert not reading.done()  # waiting: nothing to deliver
            started = time.monotonic()
            own.process.send_signal(signal.SIGTERM)
            ended: Any
            try:
                ended = await asyncio.wait_for(reading, 15)
            except grpc.aio.AioRpcError as exc:  # or the server went away under it
                ended = exc.code()
            assert ended in (grpc.aio.EOF, grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED), ended
            assert await asyncio.to_thread(own.process.wait, 30) == 0
            assert time.monotonic() - started < 20
    finally:
        stop_server(own)
