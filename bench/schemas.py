"""`make bench` part `schemas`: what a topic schema costs on enqueue over HTTP, against the same requests into a
topic without one (the same tenant, the same ~170-byte JSON order objects).

A typical schema, in both formats: an order with an id, an amount, a currency enum, an array of items (sku, qty)
and an optional customer object. Workloads: single enqueue and batch enqueue of 100, into a `json_schema` topic and
into an `avro` topic; interleaved rounds (`bench.harness.compare`) with the server's CPU per request. Targets (issue
30): batch of 100 >= 0.8, single >= 0.9.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import msgspec

from bench.harness import Side, compare, connected, cpu_seconds
from bench.httpclient import HttpConnection

PLAIN = "bench-unchecked"
TOPICS = {"json_schema": "bench-json-schema", "avro": "bench-avro"}
ORDER_JSON_SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "minLength": 1},
        "amount": {"type": "number", "minimum": 0},
        "currency": {"enum": ["EUR", "USD", "GBP"]},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
                "required": ["sku", "qty"],
            },
        },
        "customer": {"type": "object", "properties": {"id": {"type": "integer"}, "email": {"type": "string"}}},
    },
    "required": ["order_id", "amount", "currency", "items"],
}
ORDER_AVRO = {
    "type": "record",
    "name": "Order",
    "namespace": "bench",
    "fields": [
        {"name": "order_id", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "currency", "type": {"type": "enum", "name": "Currency", "symbols": ["EUR", "USD", "GBP"]}},
        {
            "name": "items",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "Item",
                    "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}],
                },
            },
        },
        {
            "name": "customer",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Customer",
                    "fields": [{"name": "id", "type": "long"}, {"name": "email", "type": "string"}],
                },
            ],
            "default": None,
        },
    ],
}
ORDER = {
    "order_id": "o-1234567",
    "amount": 42.5,
    "currency": "EUR",
    "items": [{"sku": "A-1", "qty": 2}, {"sku": "B-7", "qty": 1}],
    "customer": {"id": 991, "email": "ada@example.com"},
}
ORDER_B64 = base64.b64encode(json.dumps(ORDER).encode()).decode()

Op = Callable[[HttpConnection], Awaitable[int]]


async def measure_schemas(
    pool: asyncpg.Pool[Any], base_url: str, tenant_id: int, server_pid: int
) -> list[dict[str, Any]]:
    cpu = cpu_seconds(server_pid)
    http = await connected(base_url)
    for schema_format, schema in (("json_schema", ORDER_JSON_SCHEMA), ("avro", ORDER_AVRO)):
        body = {"schema_json": json.dumps(schema), "format": schema_format}
        status, answer = await http[0].request("PUT", f"/api/topic-schemas/{TOPICS[schema_format]}", body)
        assert status == 200, (status, answer)

    def enqueue(topic: str, rows: int) -> Op:
        if rows == 1:
            path, body = "/api/messages", msgspec.json.encode({"topic": topic, "payload": ORDER_B64})
        else:
            items = [{"payload": ORDER_B64}] * rows
            path, body = "/api/messages/batch", msgspec.json.encode({"topic": topic, "messages": items})

        async def op(c: HttpConnection) -> int:
            status, answer = await c.request("POST", path, body)
            assert status == 201, (status, answer)
            return rows

        return op

    async def empty() -> None:
        await pool.execute("TRUNCATE messages")

    rows = []
    try:
        baseline = "the same requests into a topic without a schema"
        for schema_format, topic in TOPICS.items():
            suffix = "" if schema_format == "json_schema" else "_avro"
            for key, target, count in (
                (f"schemas_single_enqueue{suffix}", 0.9, 1),
                (f"schemas_batch_enqueue_100{suffix}", 0.8, 100),
            ):
                base, measured = (
                    Side(empty, http, enqueue(PLAIN, count), cpu),
                    Side(empty, http, enqueue(topic, count), cpu),
                )
                rows.append(await compare(key, target, base, measured, baseline))
    finally:
        for c in http:
            await c.close()
    return rows
