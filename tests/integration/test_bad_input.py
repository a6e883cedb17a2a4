"""Bad input gets a 4xx with a stable code and loses nothing; a client error is never a 500."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.integration.helpers import assert_error, b64, dequeue, enqueue


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"topic": "t"}, "invalid_request"),  # payload missing
        ({"topic": "t", "payload": "not base64!"}, "invalid_request"),
        ({"topic": "t", "payload": "YQ"}, "invalid_request"),  # bad padding
        ({"topic": "t", "payload": 12}, "invalid_request"),
        ({"topic": "t", "payload": "YQ==", "unknown": 1}, "invalid_request"),
        ({"topic": "t", "payload": "YQ==", "priority": 10}, "invalid_request"),
        ({"topic": "t", "payload": "YQ==", "priority": -1}, "invalid_request"),
        ({"topic": "t", "payload": "YQ==", "priority": "high"}, "invalid_request"),
        ({"topic": "t", "payload": "YQ==", "delay_seconds": -5}, "invalid_request"),
        ({"topic": "t", "payload": "YQ==", "delay_seconds": 31536001}, "invalid_request"),
        ({"topic": "t", "payload": "YQ==", "metadata": [1, 2]}, "invalid_request"),
        ({"topic": "t", "payload": "YQ==", "metadata": "x"}, "invalid_request"),
        ({"topic": "t", "payload": "YQ==", "metadata": {"a": "nul\u0000"}}, "invalid_request"),
        ({"topic": "t", "payload": "YQ==", "metadata": {"big": "x" * 17000}}, "invalid_request"),
        ({"topic": "t", "payload": "YQ==", "key": ""}, "invalid_request"),
        ({"topic": "t", "payload": "YQ==", "key": "k" * 513}, "invalid_request"),
        ({"topic": "t", "payload": "YQ==", "key": "nul\u0000key"}, "invalid_request"),
        ({"topic": "", "payload": "YQ=="}, "invalid_request"),
        ({"topic": "-starts-with-dash", "payload": "YQ=="}, "invalid_request"),
        ({"topic": "has space", "payload": "YQ=="}, "invalid_request"),
        ({"topic": "ünïcode", "payload": "YQ=="}, "invalid_request"),
        ({"topic": "t" * 201, "payload": "YQ=="}, "invalid_request"),
        ({"topic": "orders.dlq", "payload": "YQ=="}, "reserved_topic"),
        ([1, 2, 3], "invalid_request"),
    ],
)
async def test_enqueue_rejects(client: httpx.AsyncClient, body: object, code: str) -> None:
    assert_error(await client.post("/api/messages", json=body), 400, code)


async def test_malformed_json_and_wrong_content(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/api/messages", content=b'{"topic": "t", "payload": ', headers={"content-type": "application/json"}
    )
    assert_error(r, 400, "invalid_request")
    r = await client.post("/api/messages", content=b"\xff\xfe\x00garbage", headers={"content-type": "application/json"})
    assert_error(r, 400, "invalid_request")


async def test_lone_surrogates_and_odd_unicode(client: httpx.AsyncClient) -> None:
    raw = b'{"topic": "t", "payload": "YQ==", "key": "\\ud800"}'
    r = await client.post("/api/messages", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    raw = b'{"topic": "t", "payload": "YQ==", "metadata": {"\\udfff": 1}}'
    r = await client.post("/api/messages", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    # Valid unusual Unicode is stored and returned as is.
    key = "ключ-🔑-\u200b-\u202e"
    mid = await enqueue(client, "uni", key=key, metadata={"emoji": "🐘", "rtl": "\u202e"})
    m = (await client.get(f"/api/messages/{mid}")).json()
    assert m["key"] == key and m["metadata"] == {"emoji": "🐘", "rtl": "\u202e"}


async def test_payload_size_limit(client: httpx.AsyncClient) -> None:
    ok = b"x" * (256 * 1024)
    await enqueue(client, "size", ok)
    r = await client.post("/api/messages", json={"topic": "size", "payload": b64(ok + b"x")})
    assert_error(r, 413, "payload_too_large")
    r = await client.post(
        "/api/messages/batch",
        json={"topic": "size", "messages": [{"payload": b64("small")}, {"payload": b64(ok + b"x")}]},
    )
    body = assert_error(r, 413, "payload_too_large")
    assert body["details"][0]["index"] == 1


async def test_huge_body_is_413_not_500(client: httpx.AsyncClient) -> None:
    huge = b'{"topic": "t", "payload": "' + b"A" * (33 * 1024 * 1024) + b'"}'
    r = await client.post("/api/messages", content=huge, headers={"content-type": "application/json"})
    assert_error(r, 413, "payload_too_large")


@pytest.mark.parametrize(
    "body",
    [
        {"topic": "t", "count": 0},
        {"topic": "t", "count": 1001},
        {"topic": "t", "count": -1},
        {"topic": "t", "visibility_timeout_seconds": 0},
        {"topic": "t", "visibility_timeout_seconds": 43201},
        {"topic": "t", "wait_seconds": 21},
        {"topic": "t", "wait_seconds": -1},
        {"topic": "bad topic"},
        {"topic": "t", "extra": True},
        {},
        {"topic": "t", "count": "3"},
    ],
)
async def test_dequeue_rejects(client: httpx.AsyncClient, body: object) -> None:
    assert_error(await client.post("/api/messages/dequeue", json=body), 400, "invalid_request")


async def test_dequeue_from_a_dlq_is_allowed(client: httpx.AsyncClient) -> None:
    assert await dequeue(client, "orders.dlq") == []


async def test_ids_that_are_not_uuids_are_404(client: httpx.AsyncClient) -> None:
    for path in ("/api/messages/xyz", "/api/messages/1%20OR%201=1"):
        assert_error(await client.get(path), 404, "message_not_found")
    assert_error(await client.post("/api/messages/xyz/ack"), 404, "message_not_found")
    assert_error(await client.post("/api/messages/xyz/nack"), 404, "message_not_found")
    assert_error(await client.delete("/api/messages/xyz"), 404, "message_not_found")


async def test_receipt_that_is_not_a_uuid_is_409_for_a_leased_message(client: httpx.AsyncClient) -> None:
    mid = await enqueue(client, "r")
    await dequeue(client, "r")
    assert_error(await client.post(f"/api/messages/{mid}/ack", json={"receipt": "nope"}), 409, "lease_lost")
    assert_error(
        await client.post(f"/api/messages/{uuid.uuid4()}/ack", json={"receipt": "nope"}), 404, "message_not_found"
    )


async def test_nack_rejects_bad_fields(client: httpx.AsyncClient) -> None:
    mid = await enqueue(client, "n")
    [m] = await dequeue(client, "n")
    assert_error(await client.post(f"/api/messages/{mid}/nack", json={"delay_seconds": -1}), 400, "invalid_request")
    assert_error(await client.post(f"/api/messages/{mid}/nack", json={"error": 5}), 400, "invalid_request")
    assert_error(await client.post(f"/api/messages/{mid}/nack", json={"error": "a\u0000b"}), 400, "invalid_request")
    # Nothing was lost: the message is still leased and can be nacked properly, with a long error cut short.
    r = await client.post(f"/api/messages/{mid}/nack", json={"receipt": m["receipt"], "error": "e" * 10000})
    assert r.json()["outcome"] == "retry"
    assert len((await client.get(f"/api/messages/{mid}")).json()["last_error"]) == 4096


async def test_browse_rejects_bad_query(client: httpx.AsyncClient) -> None:
    for params in (
        {"limit": 0},
        {"limit": 201},
        {"offset": -1},
        {"status": "deleted"},
        {"limit": "x"},
        {"topic": "bad topic"},
    ):
        assert_error(await client.get("/api/messages", params=params), 400, "invalid_request")


async def test_purge_rejects_unknown_status(client: httpx.AsyncClient) -> None:
    assert_error(await client.post("/api/topics/t/purge", json={"statuses": ["gone"]}), 400, "invalid_request")


async def test_unknown_route_and_wrong_method_use_the_error_shape(client: httpx.AsyncClient) -> None:
    assert_error(await client.get("/api/nope"), 404, "not_found")
    outside = await client.get("/nope")
    if outside.headers.get("content-type", "").startswith("text/html"):  # the admin console is built: a client route
        assert outside.status_code == 200
    else:
        assert_error(outside, 404, "not_found")
    r = await client.put("/api/messages/dequeue", json={})
    assert r.status_code == 405 and r.json()["code"] == "invalid_request"
