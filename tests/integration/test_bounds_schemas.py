"""Contract, "Bounds on what one tenant can make the server do": a topic schema never makes the server fetch, and a
costly check (an exponential `$ref` fan-out, a deeply nested payload, a backtracking pattern, a compatibility
walk) never holds the event loop: it is refused within its budget while another tenant's requests keep their
latency (measured as that tenant's request latency while the check runs)."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import httpx
import pytest

from tests.integration.helpers import assert_error, b64
from tests.support.servers import ADMIN, Server


def _fan_out(depth: int, leaf: Any = None) -> dict[str, Any]:
    """`$defs` whose each level is `anyOf: [$ref previous, $ref previous]`: checking a payload the leaf refuses
    walks 2**depth paths."""
    defs: dict[str, Any] = {"d0": leaf or {"type": "integer"}}
    for level in range(1, depth + 1):
        defs[f"d{level}"] = {"anyOf": [{"$ref": f"#/$defs/d{level - 1}"}, {"$ref": f"#/$defs/d{level - 1}"}]}
    return {"$defs": defs, "$ref": f"#/$defs/d{depth}"}


LINKED_LIST = {
    "type": "record",
    "name": "Node",
    "fields": [{"name": "value", "type": "long"}, {"name": "next", "type": ["null", "Node"], "default": None}],
}


async def _put(client: httpx.AsyncClient, topic: str, schema: Any, **body: Any) -> httpx.Response:
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return await client.put(f"/api/topic-schemas/{topic}", json={"schema_json": text, **body})


async def _send(client: httpx.AsyncClient, topic: str, payload: bytes) -> httpx.Response:
    return await client.post("/api/messages", json={"topic": topic, "payload": b64(payload)})


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server that counts the requests it gets and answers a schema."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"type": "integer", "secret": "from-the-listener"}')

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", hits
    server.shutdown()
    server.server_close()


@pytest.fixture
async def bystander(server: Server, db: asyncpg.Pool[Any]) -> AsyncIterator[httpx.AsyncClient]:
    """Another tenant's admin client."""
    slug = f"t-{uuid.uuid4().hex[:12]}"
    await db.execute("INSERT INTO tenants (slug, name) VALUES ($1, $1)", slug)
    async with httpx.AsyncClient(base_url=server.base_url, auth=ADMIN, headers={"X-Tenant": slug}, timeout=30) as c:
        yield c


async def _latencies_while(bystander: httpx.AsyncClient, work: Any) -> tuple[Any, float]:
    """Run `work` while the bystander enqueues and checks `/healthz` in a loop: the work's result and the
    bystander's slowest request."""
    done = asyncio.Event()
    slowest = 0.0

    async def loop() -> None:
        nonlocal slowest
        while not done.is_set():
            for request in (
                bystander.post("/api/messages", json={"topic": "calm", "payload": b64(b"x")}),
                bystander.get("/healthz"),
            ):
                started = time.perf_counter()
                r = await request
                assert r.status_code in (200, 201), r.text
                slowest = max(slowest, time.perf_counter() - started)

    running = asyncio.create_task(loop())
    await asyncio.sleep(0.2)  # the bystander's connection is warm
    try:
        result = await work
    finally:
        done.set()
        await running
    return result, slowest


async def test_a_schema_never_makes_the_server_fetch(
    client: httpx.AsyncClient, listener: tuple[str, list[str]]
) -> None:
    url, hits = listener
    for schema in (
        {"$schema": f"{url}/meta", "type": "object"},
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
        {"$schema": "file:///etc/passwd"},
    ):
        body = assert_error(await _put(client, "fetch", schema, format="json_schema"), 400, "invalid_schema")
        assert "2020-12" in body["error"]
    texts = set()
    for schema in (
        {"$ref": f"{url}/elsewhere.json"},
        {"$id": f"{url}/", "$ref": "other.json"},
        {"$ref": "file:///etc/passwd"},
        {"$ref": "file:///nonexistent/at/all"},
        {"$ref": "file:///etc/hostname"},
        {"type": "object", "properties": {"a": {"$ref": f"{url}/a.json"}}},
    ):
        body = assert_error(await _put(client, "fetch", schema, format="json_schema"), 400, "invalid_schema")
        texts.add(body["error"])
        assert "from-the-listener" not in json.dumps(body) and "root:" not in json.dumps(body)
    assert len(texts) == 1  # the same text whatever was named: no oracle of what a file or URL holds
    assert hits == []
    for meta in ("https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#"):
        r = await _put(client, "fetch", {"$schema": meta, "type": "integer"}, format="json_schema")
        assert r.status_code == 200, r.text


async def test_an_exponential_schema_check_is_refused_within_its_budget_and_others_keep_their_latency(
    client: httpx.AsyncClient, bystander: httpx.AsyncClient
) -> None:
    """2**26 paths (seconds to minutes of one core): refused as `check_too_costly`, while another tenant's
    enqueues and `/healthz` answer as fast as ever; a payload the schema takes at once still passes."""
    r = await _put(client, "fan", _fan_out(26), format="json_schema")
    assert r.status_code == 200, r.text
    assert (await _send(client, "fan", b"1")).status_code == 201
    started = time.perf_counter()
    r, slowest = await _latencies_while(bystander, _send(client, "fan", b'"not an integer"'))
    took = time.perf_counter() - started
    body = assert_error(r, 400, "schema_violation")
    assert body["details"]["reason"] == "check_too_costly"
    assert took < 5  # the budget is 100 ms of the check's CPU; the rest is the machine's weather
    assert slowest < 0.5, slowest  # before the checks left the event loop: the whole check, seconds
    items = [{"payload": b64(b"2")}, {"payload": b64(b'"x"')}, {"payload": b64(b"3")}]
    r = await client.post("/api/messages/batch", json={"topic": "fan", "messages": items})
    body = assert_error(r, 400, "schema_violation")
    assert [(d["index"], d["reason"]) for d in body["details"]] == [(1, "check_too_costly")]
    assert (await _send(client, "fan", b"4")).status_code == 201  # the topic works on
    listed = (await client.get("/api/messages", params={"topic": "fan"})).json()
    assert listed["total"] == 2  # nothing of the refused batch was stored


async def test_a_payload_nested_beyond_64_levels_is_refused_before_any_check(client: httpx.AsyncClient) -> None:
    r = await _put(client, "deep", {"type": "array"}, format="json_schema")
    assert r.status_code == 200, r.text
    for depth in (65, 3000, 100_000):
        body = assert_error(await _send(client, "deep", b"[" * depth + b"]" * depth), 400, "schema_violation")
        assert "64" in body["error"]
    assert (await _send(client, "deep", b"[" * 64 + b"]" * 64)).status_code == 201
    r = await _put(client, "list", LINKED_LIST)
    assert r.status_code == 200, r.text
    nested: Any = {"value": 1, "next": None}
    for _ in range(60):
        nested = {"value": 1, "next": nested}
    assert (await _send(client, "list", json.dumps(nested).encode())).status_code == 201
    invalid: Any = {"value": "x", "next": None}
    for _ in range(60):
        invalid = {"value": 1, "next": invalid}
    assert_error(await _send(client, "list", json.dumps(invalid).encode()), 400, "schema_violation")
    for _ in range(240):  # 300 deep and invalid: fastavro's error pass took seconds
        invalid = {"value": 1, "next": invalid}
    body = assert_error(await _send(client, "list", json.dumps(invalid).encode()), 400, "schema_violation")
    assert "64" in body["error"]


async def test_a_backtracking_pattern_is_bounded(client: httpx.AsyncClient, bystander: httpx.AsyncClient) -> None:
    schema = {"type": "array", "items": {"type": "string", "pattern": "^(?=(a+)+$)a*$"}}
    assert (await _put(client, "pattern", schema, format="json_schema")).status_code == 200
    payload = json.dumps(["a" * 30 + "!"] * 200).encode()
    r, slowest = await _latencies_while(bystander, _send(client, "pattern", payload))
    assert_error(r, 400, "schema_violation")
    assert slowest < 0.5, slowest


async def test_a_costly_compatibility_check_answers_409_naming_the_reason(
    client: httpx.AsyncClient, bystander: httpx.AsyncClient
) -> None:
    assert (await _put(client, "compat", _fan_out(18), format="json_schema")).status_code == 200
    newer = _fan_out(18, {"type": ["integer", "string"]})
    r, slowest = await _latencies_while(
        bystander, _put(client, "compat", newer, format="json_schema", compatibility="backward")
    )
    body = assert_error(r, 409, "incompatible_schema")
    assert body["details"]["reason"] == "check_too_costly" and "check_too_costly" in body["error"]
    assert slowest < 0.5, slowest
    r = await _put(client, "compat", newer, format="json_schema")  # without compatibility it is stored
    assert r.json()["version"] == 2


async def test_a_topic_keeps_at_most_100_schema_versions(client: httpx.AsyncClient) -> None:
    for version in range(1, 101):
        r = await _put(client, "versions", {"type": "integer", "minimum": -version}, format="json_schema")
        assert r.json()["version"] == version, r.text
    body = assert_error(
        await _put(client, "versions", {"type": "integer"}, format="json_schema"), 403, "quota_exceeded"
    )
    assert "100" in body["error"]
    assert (await client.delete("/api/topic-schemas/versions")).status_code == 204
    assert (await _put(client, "versions", {"type": "integer"}, format="json_schema")).json()["version"] == 1
