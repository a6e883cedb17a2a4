"""`mq.schemas.avro_types`: msgspec's verdict on a JSON payload is fastavro's, on generated Avro schemas and on
payloads generated near each schema (fitting, or one step off), and the schemas it must leave to fastavro are left."""

from __future__ import annotations

import json
import warnings
from typing import Any

import avro.schema
import fastavro
import msgspec
import pytest
from fastavro.schema import extract_record_type, schema_name
from fastavro.validation import validate
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bench.schemas import ORDER, ORDER_AVRO
from mq.schemas.avro_types import types_for

_EDGE_INTS = [0, 1, -1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**70]
_TEXTS = ["", "A", "B", "x", "-type", "R0", "ns.R0", "2024-01-01", "6d1c6f0e-3b1a-4c55-8f5e-2b1f0a6c9d10"]
_KEYS = ["a", "b", "c", "d", "-type"]
_LOGICAL = [
    ("long", "timestamp-millis"),
    ("long", "timestamp-micros"),
    ("long", "local-timestamp-millis"),
    ("long", "local-timestamp-micros"),
    ("long", "time-micros"),
    ("int", "time-millis"),
    ("int", "date"),
    ("string", "uuid"),
    ("int", "no-such-logical-type"),
]

ints = st.one_of(st.sampled_from(_EDGE_INTS), st.integers(-(2**65), 2**65))
floats = st.one_of(st.sampled_from([0.0, 1.0, -2.0, 1.5, 1e300]), st.floats(allow_nan=False, allow_infinity=False))
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), ints, floats, st.sampled_from(_TEXTS)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=4),
    max_leaves=8,
)


@st.composite
def avro_schemas(draw: st.DrawFn, depth: int = 0, names: list[str] | None = None) -> Any:
    """An Avro schema of every type; named types get fresh names, and later ones may refer to earlier ones."""
    names = [] if names is None else names
    kinds = ["null", "boolean", "string", "int", "long", "float", "double", "bytes", "fixed", "enum", "logical"]
    if depth < 3:
        kinds += ["array", "map", "record", "record", "union", "union"]
    if names:
        kinds.append("reference")
    # the top is a container, mostly a record, as topic schemas are; the leaves are of every type
    kind = draw(st.sampled_from(["record", "record", "record", "union", "array", "map"] if depth == 0 else kinds))
    if kind == "logical":
        base, logical = draw(st.sampled_from(_LOGICAL))
        return {"type": base, "logicalType": logical}
    if kind == "reference":
        return draw(st.sampled_from(names))
    if kind in ("fixed", "enum", "record"):
        name = f"R{len(names)}"
        named: dict[str, Any] = {"type": kind, "name": name}
        if draw(st.booleans()):
            named["namespace"] = draw(st.sampled_from(["ns", "a.b"]))
        if kind == "fixed":
            named["size"] = 2
        elif kind == "enum":
            named["symbols"] = draw(st.lists(st.sampled_from(["A", "B", "C"]), min_size=1, max_size=3, unique=True))
        else:
            field_names = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4, unique=True))
            named["fields"] = []
            for field_name in field_names:
                field: dict[str, Any] = {"name": field_name, "type": draw(avro_schemas(depth + 1, names))}
                if draw(st.integers(0, 3)) == 0:
                    field["default"] = draw(json_values)
                named["fields"].append(field)
        names.append(f"{named['namespace']}.{name}" if "namespace" in named else name)
        return named
    if kind == "array":
        return {"type": "array", "items": draw(avro_schemas(depth + 1, names))}
    if kind == "map":
        return {"type": "map", "values": draw(avro_schemas(depth + 1, names))}
    if kind == "union":
        return draw(st.lists(avro_schemas(depth + 1, names), min_size=1, max_size=3))
    return kind


@st.composite
def payloads_near(draw: st.DrawFn, node: Any, named: dict[str, Any], field: str = "", depth: int = 0) -> Any:
    """A JSON value that fits the parsed schema `node` at `field` as often as not, or is one value off."""
    if depth > 6 or draw(st.integers(0, 5)) == 0:
        return draw(json_values)
    kind = extract_record_type(node)
    if kind in named:
        return draw(payloads_near(named[kind], named, field, depth + 1))
    if kind == "union":
        return draw(payloads_near(draw(st.sampled_from(node)), named, field, depth + 1))
    if kind == "array":
        return draw(st.lists(payloads_near(node["items"], named, field, depth + 1), max_size=3))
    if kind == "map":
        return draw(st.dictionaries(st.sampled_from(_TEXTS), payloads_near(node["values"], named, field, depth + 1)))
    if kind in ("record", "error"):
        _, full_name = schema_name(node, field)
        value = {}
        for f in node["fields"]:
            if draw(st.integers(0, 4)) > 0:
                value[f["name"]] = draw(payloads_near(f["type"], named, f"{full_name}.{f['name']}", depth + 1))
        if draw(st.integers(0, 4)) == 0:
            value["-type"] = draw(st.sampled_from([full_name, node["name"], "x"]))
        return value
    if kind == "enum":
        return draw(st.sampled_from(node["symbols"]))
    if kind in ("int", "long"):
        return draw(ints)
    if kind in ("float", "double"):
        return draw(st.one_of(ints, floats))
    if kind == "string":
        return draw(st.sampled_from(_TEXTS))
    if kind == "boolean":
        return draw(st.booleans())
    return draw(json_values)


def parsed(schema: Any) -> Any:
    """The schema as `mq.schemas.formats` parses it (both parsers must take it), or the example is discarded."""
    try:
        result = fastavro.parse_schema(schema)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an unknown logical type, which both read as its base type
            avro.schema.parse(json.dumps(schema))
    except Exception:  # whatever either parser refuses is not a schema to compare on
        assume(False)
    return result


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(st.data())
def test_msgspec_gives_fastavros_verdict(data: st.DataObject) -> None:
    schema = parsed(data.draw(avro_schemas()))
    types = types_for(schema)
    assume(types is not None)
    assert types is not None
    named = schema.get("__named_schemas", {}) if isinstance(schema, dict) else {}
    for _ in range(8):
        text = json.dumps(data.draw(payloads_near(schema, named))).encode()
        payload = msgspec.json.decode(text)  # what the server sees
        verdict = validate(payload, schema, raise_errors=False)
        assert types.fits(payload) == verdict, (schema, payload)
        assert types.fits_payload(text) == verdict, (schema, text)
    # a key given twice: JSON takes the last, and the typed decoder leaves that to `fits`
    assert not types.fits_payload(b'{"a": 1, "a": 2}') or validate({"a": 2}, schema, raise_errors=False)


@pytest.mark.parametrize(
    "schema",
    [
        ORDER_AVRO,
        ["null", "string", "int"],
        {"type": "map", "values": {"type": "long", "logicalType": "timestamp-millis"}},
        {"type": "array", "items": {"type": "string", "logicalType": "uuid"}},
    ],
)
def test_the_usual_schemas_are_built(schema: Any) -> None:
    types = types_for(fastavro.parse_schema(schema))
    assert types is not None
    if schema is ORDER_AVRO:
        assert types.fits(ORDER)
        assert not types.fits({**ORDER, "items": [{"sku": "A-1", "qty": 2.0}]})  # not an Avro int, as for fastavro
        assert types.fits_payload(json.dumps(ORDER).encode())
        assert not types.fits_payload(b'{"order_id": "o-1", "amount": 1,')  # not JSON: `fits` decodes it to say so
        twice = json.dumps({**ORDER, "order_id": 5})[:-1] + ', "order_id": "o-2"}'
        assert not types.fits_payload(twice.encode())  # the first is not a string; JSON keeps the second
        assert types.fits(msgspec.json.decode(twice))


@pytest.mark.parametrize(
    "schema",
    [
        "bytes",  # JSON holds no bytes, and msgspec would take a base64 string
        {"type": "fixed", "name": "F", "size": 4},
        {"type": "int", "logicalType": "date"},  # fastavro parses an ISO date string
        ["int", "double"],  # both take a JSON integer: msgspec would try only one
        {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]},  # recursive
    ],
)
def test_what_msgspec_would_judge_otherwise_is_left_to_fastavro(schema: Any) -> None:
    assert types_for(fastavro.parse_schema(schema)) is None
