"""Topic schemas (contract, "Topic schemas"): versions, both formats, the errors, every enqueue path checked, a
new version in force on another instance within a second, and tenant isolation."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from typing import Any

import asyncpg
import httpx

from tests.integration.helpers import assert_error, b64, dequeue, enqueue
from tests.support.servers import ADMIN, Server
from tests.support.tenants import Tenant

ORDER = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "minLength": 1},
        "amount": {"type": "number", "minimum": 0},
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"qty": {"type": "integer", "minimum": 1}}},
        },
    },
    "required": ["order_id", "amount"],
}
ORDER_AVRO = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "order_id", "type": "string"}, {"name": "amount", "type": "double"}],
}


def js(value: Any) -> str:
    return json.dumps(value)


async def _put(client: httpx.AsyncClient, topic: str, schema: Any, **body: Any) -> httpx.Response:
    return await client.put(f"/api/topic-schemas/{topic}", json={"schema_json": js(schema), **body})


async def _send(client: httpx.AsyncClient, topic: str, payload: Any) -> httpx.Response:
    return await client.post("/api/messages", json={"topic": topic, "payload": b64(js(payload))})


async def test_versions_are_kept_and_the_highest_is_in_force(client: httpx.AsyncClient) -> None:
    r = await _put(client, "orders", ORDER, format="json_schema")
    assert r.status_code == 200, r.text
    first = r.json()
    assert first["version"] == 1 and first["format"] == "json_schema" and json.loads(first["schema_json"]) == ORDER
    assert (await _send(client, "orders", {"order_id": "o1", "amount": 3})).status_code == 201
    body = assert_error(await _send(client, "orders", {"order_id": "o2", "amount": -1}), 400, "schema_violation")
    assert body["details"]["pointer"] == "/amount" and "minimum" in body["details"]["reason"]
    body = assert_error(
        await _send(client, "orders", {"order_id": "o3", "amount": 1, "items": [{"qty": 0}]}), 400, "schema_violation"
    )
    assert body["details"]["pointer"] == "/items/0/qty"

    looser = {**ORDER, "required": ["order_id"]}
    r = await _put(client, "orders", looser, format="json_schema")
    assert r.json()["version"] == 2
    assert (await _send(client, "orders", {"order_id": "o4"})).status_code == 201  # in force at once here
    old = (await client.get("/api/topic-schemas/orders", params={"version": 1})).json()
    assert old["version"] == 1 and json.loads(old["schema_json"]) == ORDER
    assert (await client.get("/api/topic-schemas/orders")).json()["version"] == 2
    listed = (await client.get("/api/topic-schemas")).json()["items"]
    assert [(s["topic"], s["format"], s["version"]) for s in listed] == [("orders", "json_schema", 2)]
    assert set(listed[0]) == {"topic", "format", "schema_json", "version", "updated_at"}  # queue-ti's shape too
    assert_error(await client.get("/api/topic-schemas/orders", params={"version": 3}), 404, "not_found")

    assert (await client.delete("/api/topic-schemas/orders")).status_code == 204
    assert_error(await client.get("/api/topic-schemas/orders"), 404, "not_found")
    assert (await _send(client, "orders", "anything at all")).status_code == 201
    assert_error(await client.delete("/api/topic-schemas/orders"), 404, "not_found")


async def test_avro_is_the_default_format_and_payloads_are_json_checked_against_it(client: httpx.AsyncClient) -> None:
    r = await _put(client, "avro-orders", ORDER_AVRO)
    assert r.status_code == 200 and r.json()["format"] == "avro", r.text
    assert (await _send(client, "avro-orders", {"order_id": "o1", "amount": 2.5})).status_code == 201
    body = assert_error(
        await _send(client, "avro-orders", {"order_id": "o1", "amount": "lots"}), 400, "schema_violation"
    )
    assert body["details"]["pointer"] == "/amount"
    body = assert_error(await _send(client, "avro-orders", {"amount": 1.0}), 400, "schema_violation")
    assert body["details"]["pointer"] == "/order_id" and "missing" in body["details"]["reason"]
    r = await client.post("/api/messages", json={"topic": "avro-orders", "payload": b64(b"not json")})
    assert assert_error(r, 400, "schema_violation")["details"]["pointer"] == ""


async def test_a_batch_names_every_item_that_does_not_fit_and_stores_nothing(client: httpx.AsyncClient) -> None:
    assert (await _put(client, "batched", ORDER, format="json_schema")).status_code == 200
    good = {"order_id": "o", "amount": 1}
    items = [good, {"order_id": "", "amount": 1}, good, {"amount": 1}]
    r = await client.post(
        "/api/messages/batch", json={"topic": "batched", "messages": [{"payload": b64(js(p))} for p in items]}
    )
    body = assert_error(r, 400, "schema_violation")
    assert [(d["index"], d["code"]) for d in body["details"]] == [(1, "schema_violation"), (3, "schema_violation")]
    assert body["details"][0]["pointer"] == "/order_id" and body["details"][0]["error"].startswith("/order_id: ")
    assert await dequeue(client, "batched", 10) == []  # nothing stored
    r = await client.post(  # a topic without a schema in the same batch is not checked
        "/api/messages/batch",
        json={"messages": [{"topic": "batched", "payload": b64(js(good))}, {"topic": "free", "payload": b64("x")}]},
    )
    assert r.status_code == 201, r.text


async def test_schemas_that_do_not_parse_or_break_compatibility_are_refused(client: httpx.AsyncClient) -> None:
    body = assert_error(await client.put("/api/topic-schemas/strict", json={"schema_json": "{"}), 400, "invalid_schema")
    assert "not JSON" in body["error"]
    r = await _put(client, "strict", {"type": "record", "name": "X"})
    assert "Avro" in assert_error(r, 400, "invalid_schema")["error"]
    r = await _put(client, "strict", {"type": "object", "minProperties": "two"}, format="json_schema")
    assert "JSON Schema" in assert_error(r, 400, "invalid_schema")["error"]
    assert_error(await _put(client, "strict", ORDER, format="yaml"), 400, "invalid_request")
    assert_error(await client.get("/api/topic-schemas/strict"), 404, "not_found")  # nothing stored

    assert (await _put(client, "strict", ORDER, format="json_schema", compatibility="backward")).status_code == 200
    tighter = {**ORDER, "required": ["order_id", "amount", "items"]}
    r = await _put(client, "strict", tighter, format="json_schema", compatibility="backward")
    body = assert_error(r, 409, "incompatible_schema")
    assert "newly required items" in body["error"] and body["details"]["version"] == 1
    r = await _put(client, "strict", tighter, format="json_schema")  # without the check: a new version
    assert r.json()["version"] == 2

    assert (await _put(client, "strict-avro", ORDER_AVRO)).status_code == 200
    added = {**ORDER_AVRO, "fields": [*ORDER_AVRO["fields"], {"name": "note", "type": "string"}]}
    r = await _put(client, "strict-avro", added, compatibility="backward")
    assert "reader_field_missing_default_value" in assert_error(r, 409, "incompatible_schema")["error"]
    defaulted = {**ORDER_AVRO, "fields": [*ORDER_AVRO["fields"], {"name": "note", "type": "string", "default": ""}]}
    assert (await _put(client, "strict-avro", defaulted, compatibility="backward")).json()["version"] == 2


async def test_a_replay_stops_before_the_first_entry_the_schema_refuses(client: httpx.AsyncClient) -> None:
    r = await client.put("/api/topic-configs/replayed", json={"replayable": True})
    assert r.status_code == 200, r.text
    for payload in ({"order_id": "a", "amount": 1}, {"order_id": "b"}, {"order_id": "c", "amount": 2}):
        await enqueue(client, "replayed", js(payload))
        [m] = await dequeue(client, "replayed")
        assert (await client.post(f"/api/messages/{m['id']}/ack", json={"receipt": m["receipt"]})).status_code == 204
    assert (await _put(client, "replayed", ORDER, format="json_schema")).status_code == 200
    body = assert_error(await client.post("/api/topics/replayed/replay", json={}), 400, "schema_violation")
    assert body["details"]["replayed"] == 1 and body["details"]["errors"][0]["pointer"] == ""
    [m] = await dequeue(client, "replayed", 10)
    assert json.loads(base64.b64decode(m["payload"])) == {"order_id": "a", "amount": 1}


async def test_a_new_version_is_in_force_on_another_instance_within_a_second(
    client: httpx.AsyncClient, second_server: Server, tenant: Tenant
) -> None:
    async with httpx.AsyncClient(
        base_url=second_server.base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}, timeout=30
    ) as other:
        assert (await _send(other, "spread", {"any": "thing"})).status_code == 201  # cached there: no schema
        assert (await _put(client, "spread", ORDER, format="json_schema")).status_code == 200
        put_at = time.monotonic()
        while (await _send(other, "spread", {"any": "thing"})).status_code == 201:
            assert time.monotonic() - put_at < 1.0, "the other instance still accepts what the schema refuses"
            await asyncio.sleep(0.02)
        took = time.monotonic() - put_at
        assert (await client.delete("/api/topic-schemas/spread")).status_code == 204
        deleted_at = time.monotonic()
        while (await _send(other, "spread", {"any": "thing"})).status_code != 201:
            assert time.monotonic() - deleted_at < 1.0
            await asyncio.sleep(0.02)
    assert took < 1.0


async def test_another_tenant_never_sees_or_changes_a_tenants_schemas(
    client: httpx.AsyncClient, make_client: Any, db: asyncpg.Pool[Any]
) -> None:
    assert (await _put(client, "private", ORDER, format="json_schema")).status_code == 200
    other_slug = f"t-{uuid.uuid4().hex[:12]}"
    await db.execute("INSERT INTO tenants (slug, name) VALUES ($1, $1)", other_slug)
    other = make_client(headers={"X-Tenant": other_slug})
    assert (await other.get("/api/topic-schemas")).json() == {"items": []}
    assert_error(await other.get("/api/topic-schemas/private"), 404, "not_found")
    assert_error(await other.delete("/api/topic-schemas/private"), 404, "not_found")
    assert (await _send(other, "private", "no schema here")).status_code == 201
    assert (await _put(other, "private", ORDER_AVRO)).json()["version"] == 1  # its own versions
    assert (await client.get("/api/topic-schemas/private")).json()["version"] == 1
    assert (await client.get("/api/topic-schemas/private")).json()["format"] == "json_schema"
