"""`python -m bench.schema_cost`: what an in-process schema check costs per unit of `mq.schemas.cost`, on the
shapes that cost the most (wide `allOf`s on long arrays, bracket-dense payloads, Avro arrays of records, unions),
beside an ordinary one; the worst figure bounds the event loop's time per slice (`PAYLOAD_UNITS`). Only the cheap
pass runs in process (`Checker.quickly`); a schema it cannot bound is reported as such. bench/RESULTS.md keeps the
figures.
"""

from __future__ import annotations

import json
import time
from typing import Any

from bench.schemas import ORDER, ORDER_AVRO, ORDER_JSON_SCHEMA
from mq.schemas.cost import PAYLOAD_UNITS, inline_weight
from mq.schemas.formats import SchemaFormat, compile_schema


def _fan_out(depth: int) -> dict[str, Any]:
    defs: dict[str, Any] = {"d0": {"type": "integer"}}
    for level in range(1, depth + 1):
        defs[f"d{level}"] = {"anyOf": [{"$ref": f"#/$defs/d{level - 1}"}, {"$ref": f"#/$defs/d{level - 1}"}]}
    return {"$defs": defs, "$ref": f"#/$defs/d{depth}"}


def _cases() -> list[tuple[str, SchemaFormat, Any, bytes]]:
    wide_all = {"type": "array", "items": {"allOf": [{"type": "number", "minimum": -i} for i in range(200)]}}
    any_of = {
        "type": "array",
        "items": {"anyOf": [{"type": "object", "required": [f"p{i}"]} for i in range(300)]},
    }
    patterns = {"type": "string", "allOf": [{"pattern": f"^[a-z]*{i}?[a-z]*$"} for i in range(50)]}
    records = [{"type": "record", "name": f"R{i}", "fields": [{"name": "f", "type": "int"}]} for i in range(200)]
    union = {"type": "array", "items": records}
    integers = {"type": "array", "items": {"type": "integer"}}
    avro_items = json.dumps({**ORDER, "items": ORDER["items"] * 150}).encode()  # type: ignore[operator]
    return [
        ("an order (ordinary)", "json_schema", ORDER_JSON_SCHEMA, json.dumps(ORDER).encode()),
        ("fan-out of 10 levels, invalid", "json_schema", _fan_out(10), b'"x"'),
        ("allOf of 200 on 400 numbers", "json_schema", wide_all, json.dumps(list(range(400))).encode()),
        ("anyOf of 300 objects, invalid", "json_schema", any_of, json.dumps([{"q": 1}] * 60).encode()),
        ("50 patterns on a string", "json_schema", patterns, json.dumps("a" * 3000).encode()),
        ("true on 10,000 tiny arrays", "json_schema", True, b"[" + b"[1]," * 10000 + b"[1]]"),
        ("array of 8,000 integers", "json_schema", integers, json.dumps(list(range(8000))).encode()),
        ("Avro: 300 records in an array", "avro", ORDER_AVRO, avro_items),
        ("Avro: union of 200 records", "avro", union, json.dumps([{"zzz": 1}] * 20).encode()),
    ]


def main() -> None:
    worst = 0.0
    print(f"{'shape':34} {'nodes/scans':>11} {'bytes':>7} {'units':>8} {'µs':>8} {'ns/unit':>8}")
    for name, schema_format, schema, payload in _cases():
        text = json.dumps(schema)
        weight = inline_weight(schema_format, text)
        if weight is None:
            print(f"{name:34} not bounded: always in a schema-check process")
            continue
        checker = compile_schema(schema_format, text)
        checker.quickly(payload)
        rounds = 20
        started = time.perf_counter()
        for _ in range(rounds):
            checker.quickly(payload)
        took = (time.perf_counter() - started) / rounds
        units = weight.units(payload)
        worst = max(worst, took / units)
        shape = f"{weight.nodes:>6}/{weight.scans:<4} {len(payload):>7} {units:>8}"
        print(f"{name:34} {shape} {took * 1e6:>8.1f} {took / units * 1e9:>8.2f}")
    slice_ms = worst * PAYLOAD_UNITS * 1e3
    print(f"worst {worst * 1e9:.1f} ns a unit: a payload of {PAYLOAD_UNITS} units takes at most {slice_ms:.2f} ms")


if __name__ == "__main__":
    main()
