"""Contract, "Bounds on what one tenant can make the server do": every input the contract bounds is refused with a
4xx and its code, never a 500. NUL characters and lone surrogates in any string (a body's, a query or path
parameter's, a gRPC field's), JSON nested beyond 64 levels in any body, times and cursors out of range: 400
`invalid_request`, whose sentence names the field (`api.input_checks`). The hot routes answer as the framework does,
an empty body included."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import httpx
import pytest

from api.queue_ti import queue_pb2, queue_pb2_grpc
from tests.integration.helpers import assert_error, b64, dequeue, enqueue
from tests.support.servers import ADMIN, Server, start_server, stop_server
from tests.support.tenants import Tenant

JSON = {"content-type": "application/json"}
SOME_ID = "0190c0de-0000-7000-8000-000000000000"


def _nested(depth: int, leaf: Any = 1) -> Any:
    """A JSON object `depth` levels deep (objects and arrays by turns)."""
    value = leaf
    for n in range(depth):
        value = {"k": value} if (depth - n) % 2 else [value]
    return value


def _cursor(text: bytes) -> str:
    return base64.urlsafe_b64encode(text).decode().rstrip("=")


async def _replayable(client: httpx.AsyncClient, topic: str) -> None:
    r = await client.put(f"/api/topic-configs/{topic}", json={"replayable": True})
    assert r.status_code == 200, r.text


# --- login ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (b'{"username": "a\\u0000b", "password": "x"}', "username"),  # was a 500 (Postgres refused the NUL)
        (b'{"username": "ab", "password": "x\\u0000"}', "password"),
        (b'{"username": "a\\ud800b", "password": "x"}', None),  # a lone surrogate: not JSON msgspec takes
        (b'{"username": "a\\udc00", "password": "x"}', None),
        (b"[" * 5000, None),  # was a 500 (RecursionError in the framework's decoder)
        (b"[" * 100 + b"]" * 100, None),  # (the body's type refuses an array at once: no level is decoded)
        (b'{"username": ' + json.dumps(_nested(70)).encode() + b', "password": "x"}', None),
        (b"", "a JSON body is required"),  # was the KeyError's text 'data'
    ],
)
async def test_login_refuses_what_no_name_may_hold(server: Server, body: bytes, named: str | None) -> None:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as anonymous:
        r = await anonymous.post("/api/auth/login", content=body, headers=JSON)
    error = assert_error(r, 400, "invalid_request")["error"]
    assert named is None or named in error, error


# --- query and path parameters --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "parameter"),
    [
        ("/api/audit", "actor"),  # each of these three was a 500
        ("/api/audit", "action"),
        ("/api/audit", "topic"),
        ("/api/audit", "cursor"),
        ("/api/topics/logged/message-log", "key"),  # was a 500
        ("/api/topics/logged/message-log", "cursor"),
        ("/api/topics/logged/messages", "key"),
        ("/api/topics/logged/messages", "cursor"),
        ("/api/topics", "not-a-parameter"),  # a parameter no route reads is text all the same
    ],
)
async def test_a_nul_in_a_query_parameter_is_refused_by_name(
    client: httpx.AsyncClient, path: str, parameter: str
) -> None:
    await _replayable(client, "logged")
    body = assert_error(await client.get(path, params={parameter: "a\x00b"}), 400, "invalid_request")
    assert body["error"] == f"{parameter} must not contain NUL characters"


@pytest.mark.parametrize(
    "path",
    [
        "/api/topics/a%00b/message-log",
        "/api/topic-configs/a%00b",
        "/api/tenants/a%00b",
        "/api/users/a%00b",
        "/api/schedules/a%00b",
    ],
)
async def test_a_nul_in_a_path_parameter_is_refused(client: httpx.AsyncClient, path: str) -> None:
    body = assert_error(await client.get(path), 400, "invalid_request")
    assert "must not contain NUL characters" in body["error"]


async def test_lone_surrogates_cannot_arrive_in_a_url(client: httpx.AsyncClient) -> None:
    """A URL's percent-escapes decode as UTF-8 with replacement: an escaped surrogate arrives as U+FFFD, text that
    Postgres stores (found nothing)."""
    for path in ("/api/audit?actor=%ED%A0%80", "/api/topics/logged/message-log?key=%ED%B0%80"):
        r = await client.get(path)
        assert r.status_code < 500, r.text


# --- times ----------------------------------------------------------------------------------------------------------

OUT_OF_RANGE = [
    "0001-01-01T00:00:00+05:00",  # before year 1 in UTC: each of these was a 500 on every route below
    "0001-01-01T04:59:59.999999+05:00",
    "9999-12-31T23:59:59-05:00",  # after year 9999 in UTC
    "9999-12-31T20:00:00-23:59",
]
IN_RANGE = [
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00-05:00",
    "0001-01-01T05:00:00+05:00",
    "9999-12-31T23:59:59.999999Z",
    "9999-12-31T23:59:59+05:00",
    "0001-01-01T00:00:00",  # no offset: UTC
    "9999-12-31T23:59:59.999999",
]


async def _at(client: httpx.AsyncClient, route: str, field: str, at: str) -> httpx.Response:
    if route == "audit":
        return await client.get("/api/audit", params={field: at})
    if route == "log":
        return await client.get("/api/topics/logged/message-log", params={field: at})
    if route == "trim":
        return await client.delete("/api/topics/logged/message-log", params={field: at})
    return await client.post("/api/topics/logged/replay", json={field: at})


ROUTES = [
    ("audit", "from_time"),
    ("audit", "to_time"),
    ("log", "from_time"),
    ("log", "to_time"),
    ("trim", "before"),
    ("replay", "from_time"),
    ("replay", "to_time"),
]


@pytest.mark.parametrize(("route", "field"), ROUTES)
async def test_times_at_the_ends_of_the_calendar(client: httpx.AsyncClient, route: str, field: str) -> None:
    await _replayable(client, "logged")
    for at in OUT_OF_RANGE:
        body = assert_error(await _at(client, route, field, at), 400, "invalid_request")
        assert body["error"].startswith(f"{field} is out of range"), (at, body)
    for at in IN_RANGE:
        r = await _at(client, route, field, at)
        assert r.status_code == 200, (at, r.text)


# --- cursors --------------------------------------------------------------------------------------------------------


async def test_message_log_cursors_of_odd_shapes(client: httpx.AsyncClient) -> None:
    await _replayable(client, "logged")
    entry = str(uuid.uuid4())
    for cursor in [
        _cursor(f"99999999999999999999.{entry}".encode()),  # was a 500 (OverflowError)
        _cursor(f"-99999999999999999999.{entry}".encode()),
        _cursor(f"{'9' * 5000}.{entry}".encode()),
        _cursor(b"1.not-a-uuid"),
        _cursor(b"no dot"),
        _cursor(b"\xff\xfe"),
        "!!!",
        "\u00e9",
        "A",
    ]:
        r = await client.get("/api/topics/logged/message-log", params={"cursor": cursor})
        assert_error(r, 400, "invalid_request")
    # still a position in the log: before the epoch
    r = await client.get("/api/topics/logged/message-log", params={"cursor": _cursor(f"-9.{entry}".encode())})
    assert r.status_code == 200, r.text


async def test_audit_cursors_of_odd_shapes(client: httpx.AsyncClient) -> None:
    for cursor in ["not-a-uuid", "\u00e9", "0" * 5000, "{" * 100, SOME_ID + "0"]:
        assert_error(await client.get("/api/audit", params={"cursor": cursor}), 400, "invalid_request")


async def test_message_page_cursors_of_odd_shapes(client: httpx.AsyncClient) -> None:
    for cursor in ["AAAA", "\u00e9", _cursor(b"[]"), _cursor(b'"live"'), _cursor(b'["done", "x"]')]:
        assert_error(await client.get("/api/topics/logged/messages", params={"cursor": cursor}), 400, "invalid_request")


@pytest.mark.parametrize(
    "parts",
    [
        b"[" * 5000,
        b"[1]",
        b"[null]",
        b'{"a": 1}',
        b'["live", 1, "0001-01-01T00:00:00+05:00", "' + SOME_ID.encode() + b'"]',
        b'["live", 99999999999, "2020-01-01T00:00:00", "' + SOME_ID.encode() + b'"]',
    ],
)
async def test_message_page_cursors_the_service_does_not_refuse_yet(client: httpx.AsyncClient, parts: bytes) -> None:
    r = await client.get("/api/topics/logged/messages", params={"cursor": _cursor(parts)})
    assert_error(r, 400, "invalid_request")


# --- bodies ---------------------------------------------------------------------------------------------------------


async def test_free_form_json_nested_beyond_64_levels_is_refused_by_name(client: httpx.AsyncClient) -> None:
    # The body is level 1 and its metadata level 2: metadata may nest 63 levels of its own.
    r = await client.post("/api/messages", json={"topic": "t", "payload": b64("x"), "metadata": _nested(63, "ok")})
    assert r.status_code == 201, r.text
    r = await client.post("/api/messages", json={"topic": "t", "payload": b64("x"), "metadata": _nested(64, "no")})
    assert assert_error(r, 400, "invalid_request")["error"] == "metadata is nested deeper than 64 levels"

    items = [{"payload": b64("x")}, {"payload": b64("y"), "metadata": {"a": _nested(200)}}]
    r = await client.post("/api/messages/batch", json={"topic": "t", "messages": items})
    assert assert_error(r, 400, "invalid_request")["error"] == "messages[1].metadata is nested deeper than 64 levels"

    [leased] = await dequeue(client, "t")
    r = await client.post(
        f"/api/messages/{leased['id']}/nack", json={"receipt": leased["receipt"], "metadata": _nested(500)}
    )
    assert assert_error(r, 400, "invalid_request")["error"] == "metadata is nested deeper than 64 levels"

    r = await client.post("/api/topics/t/bulk-jobs", json={"action": "retry", "filter": {"metadata": _nested(80)}})
    assert "nested deeper than 64 levels" in assert_error(r, 400, "invalid_request")["error"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/messages"),
        ("POST", "/api/messages/batch"),
        ("POST", "/api/messages/dequeue"),
        ("POST", f"/api/messages/{SOME_ID}/nack"),
        ("PUT", "/api/topic-configs/t"),
        ("POST", "/api/topics/t/replay"),
        ("POST", "/api/tenants"),
        ("POST", "/api/auth/login"),
    ],
)
async def test_any_body_nested_too_deep_is_refused(client: httpx.AsyncClient, method: str, path: str) -> None:
    """Where the body's type expects an object, its decoder refuses an array at once (a typed field never nests);
    where it leaves a field free, or does not decode the body itself (the login), the nesting is refused."""
    for body in (b"[" * 5000, b'{"a":' * 3000, b"[" * 3000 + b"]" * 3000):
        r = await client.request(method, path, content=body, headers=JSON)
        assert_error(r, 400, "invalid_request")


async def test_free_form_json_too_deep_to_decode_is_refused(client: httpx.AsyncClient) -> None:
    for metadata in (b"[" * 5000, b'{"a":' * 3000, b"[" * 3000 + b"]" * 3000, b'{"k":[' * 1500 + b"1" + b"]}" * 1500):
        body = b'{"topic": "t", "payload": "", "metadata": {"a": ' + metadata + b"}}"
        r = await client.post("/api/messages", content=body, headers=JSON)
        assert assert_error(r, 400, "invalid_request")["error"] in (
            "the body is nested deeper than 64 levels",  # too deep for the decoder: no field to name
            "metadata is nested deeper than 64 levels",
        )


@pytest.mark.parametrize(
    ("method", "path", "body", "named"),
    [
        ("POST", "/api/messages", {"topic": "t", "payload": b64("x"), "key": "a\x00"}, "key"),
        (
            "POST",
            "/api/messages",
            {"topic": "t", "payload": b64("x"), "metadata": {"a": ["ok", "\x00"]}},
            "metadata.a[1]",
        ),
        ("POST", "/api/messages", {"topic": "t", "payload": b64("x"), "metadata": {"\x00": 1}}, "a key of metadata"),
        ("POST", "/api/messages/batch", {"messages": [{"payload": b64("x"), "topic": "t\x00"}]}, "messages[0].topic"),
        ("POST", "/api/topics/logged/replay", {"key": "k\x00"}, "key"),  # was a 500
        ("POST", "/api/tenants", {"slug": "s", "name": "n\x00"}, "name"),
        ("POST", "/api/users", {"username": "u\x00", "password": "a-long-password"}, "username"),
        ("PUT", "/api/topic-schemas/t", {"schema_json": '{"type": "string", "doc": "\x00"}'}, "schema_json"),
    ],
)
async def test_a_nul_anywhere_in_a_body_is_refused_by_name(
    client: httpx.AsyncClient, method: str, path: str, body: Any, named: str
) -> None:
    await _replayable(client, "logged")
    r = await client.request(method, path, json=body)  # json.dumps writes the NUL as the escape \u0000
    assert assert_error(r, 400, "invalid_request")["error"] == f"{named} must not contain NUL characters"


# --- the hot routes and the framework answer alike ------------------------------------------------------------------


@pytest.fixture(scope="module")
def framework(server_env: dict[str, str]) -> Iterator[Server]:
    """A server without the hot routes: the framework answers them (the session's `server` has them)."""
    srv = start_server({**server_env, "SKIPLOCK_HOT_ROUTES": "false", "SKIPLOCK_GRPC_PORT": "0"})
    yield srv
    stop_server(srv)


@pytest.fixture
async def both(server: Server, framework: Server, tenant: Tenant) -> AsyncIterator[list[httpx.AsyncClient]]:
    headers = {"X-Tenant": tenant.slug, "X-Request-ID": "same-id"}
    async with (
        httpx.AsyncClient(base_url=server.base_url, auth=ADMIN, headers=headers, timeout=30) as hot,
        httpx.AsyncClient(base_url=framework.base_url, auth=ADMIN, headers=headers, timeout=30) as slow,
    ):
        yield [hot, slow]


async def _alike(clients: list[httpx.AsyncClient], path: str, body: bytes) -> httpx.Response:
    hot, slow = [await c.post(path, content=body, headers=JSON) for c in clients]
    assert (hot.status_code, hot.content) == (slow.status_code, slow.content)
    return hot


@pytest.mark.parametrize("path", ["/api/messages", "/api/messages/batch", "/api/messages/dequeue", "/api/messages/ack"])
async def test_an_empty_body_is_refused_in_the_same_words(both: list[httpx.AsyncClient], path: str) -> None:
    for body in (b"", b"  \n"):
        r = await _alike(both, path, body)
        assert r.json() == {"code": "invalid_request", "error": "a JSON body is required"}


async def test_an_ack_needs_no_body_on_either_path(both: list[httpx.AsyncClient]) -> None:
    r = await _alike(both, f"/api/messages/{SOME_ID}/ack", b"")
    assert_error(r, 404, "message_not_found")


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/messages", b'{"topic": "t", "payload": "eA==", "key": "a\\u0000"}'),
        ("/api/messages", b'{"topic": "t", "payload": "eA==", "metadata": ' + json.dumps(_nested(70)).encode() + b"}"),
        ("/api/messages", b"[" * 5000),
        ("/api/messages/batch", b'{"topic": "t", "messages": [{"payload": "eA==", "key": "\\u0000"}]}'),
        ("/api/messages/dequeue", b'{"topic": "t", "consumer_group": "\\u0000"}'),
        ("/api/messages/ack", b'{"acks": [{"id": "\\u0000", "receipt": "r"}]}'),
        ("/api/messages/a%00b/ack", b""),  # the path parameter
        (f"/api/messages/{SOME_ID}/ack", b'{"receipt": "\\u0000"}'),
        ("/api/messages?anything=%00", b'{"topic": "t", "payload": "eA=="}'),  # a query parameter no route reads
    ],
)
async def test_the_hot_routes_refuse_as_the_framework_does(
    both: list[httpx.AsyncClient], path: str, body: bytes
) -> None:
    assert_error(await _alike(both, path, body), 400, "invalid_request")


# --- gRPC -----------------------------------------------------------------------------------------------------------


@pytest.fixture
async def stub(server: Server, tenant: Tenant, make_user: Any) -> AsyncIterator[tuple[Any, Any]]:
    username, password = await make_user("tenant_admin", tenant)
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as c:
        r = await c.post("/api/auth/login", json={"username": username, "password": password})
        assert r.status_code == 200, r.text
    auth = (("authorization", f"Bearer {r.json()['token']}"),)
    async with grpc.aio.insecure_channel(server.grpc_address) as channel:
        yield queue_pb2_grpc.QueueServiceStub(channel), auth


def _grpc_calls() -> list[tuple[str, Any, str]]:
    enqueue_ = queue_pb2.EnqueueRequest
    return [
        ("Enqueue", enqueue_(topic="t\x00", payload=b"p"), "topic"),
        ("Enqueue", enqueue_(topic="t", payload=b"p", key="k\x00"), "key"),
        ("Enqueue", enqueue_(topic="t", payload=b"p", metadata={"k": "v\x00"}), "metadata"),
        ("Enqueue", enqueue_(topic="t", payload=b"p", metadata={"k\x00": "v"}), "a key of metadata"),
        ("Dequeue", queue_pb2.DequeueRequest(topic="t\x00"), "topic"),
        ("Dequeue", queue_pb2.DequeueRequest(topic="t", consumer_group="g\x00"), "consumer_group"),
        ("BatchDequeue", queue_pb2.BatchDequeueRequest(topic="t", count=1, consumer_group="\x00"), "consumer_group"),
        ("Ack", queue_pb2.AckRequest(id=SOME_ID + "\x00"), "id"),
        ("Ack", queue_pb2.AckRequest(id=SOME_ID, consumer_group="g\x00"), "consumer_group"),
        ("Nack", queue_pb2.NackRequest(id=SOME_ID, error="boom\x00"), "error"),
        ("Nack", queue_pb2.NackRequest(id=SOME_ID, consumer_group="g\x00"), "consumer_group"),
    ]


async def _refused_as_invalid(call: Any, named: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, refused.value.details()
    assert ("skiplock-code", "invalid_request") in tuple(refused.value.trailing_metadata() or ())
    assert refused.value.details() == f"{named} must not contain NUL characters"


@pytest.mark.parametrize(("method", "request_", "named"), _grpc_calls())
async def test_a_nul_in_any_grpc_field_is_invalid_argument(
    stub: tuple[Any, Any], method: str, request_: Any, named: str
) -> None:
    service, auth = stub
    await _refused_as_invalid(getattr(service, method)(request_, metadata=auth), named)


async def test_a_nul_in_a_subscription_is_invalid_argument(stub: tuple[Any, Any]) -> None:
    service, auth = stub
    for request_, named in [
        (queue_pb2.SubscribeRequest(topic="t\x00"), "topic"),
        (queue_pb2.SubscribeRequest(topic="t", consumer_group="g\x00"), "consumer_group"),
    ]:
        stream = service.Subscribe(request_, metadata=auth)
        await _refused_as_invalid(stream.read(), named)


async def test_a_grpc_client_cannot_send_a_lone_surrogate(stub: tuple[Any, Any]) -> None:
    """protobuf refuses to encode one: a proto3 string is UTF-8."""
    with pytest.raises(UnicodeEncodeError):
        queue_pb2.EnqueueRequest(topic="t\ud800", payload=b"p")


async def test_a_string_field_of_invalid_utf8_is_invalid_argument(server: Server, stub: tuple[Any, Any]) -> None:
    _, auth = stub
    sent = queue_pb2.EnqueueRequest(topic="ab", payload=b"p").SerializeToString().replace(b"ab", b"\xed\xa0")
    async with grpc.aio.insecure_channel(server.grpc_address) as channel:
        raw = channel.unary_unary("/queue.QueueService/Enqueue")  # bytes in, bytes out: no client-side check
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await raw(sent, metadata=auth)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, refused.value.details()
    assert ("skiplock-code", "invalid_request") in tuple(refused.value.trailing_metadata() or ())


async def test_valid_input_still_passes(client: httpx.AsyncClient) -> None:
    """Text with escapes that are not NUL, a literal backslash-u0000 and free-form JSON within the limit."""
    message_id = await enqueue(client, "t", key="caf\u00e9 \\u0000", metadata={"a": "\u2603", "b": _nested(10)})
    r = await client.get("/api/messages", params={"topic": "t"})
    assert r.status_code == 200 and message_id in r.text
