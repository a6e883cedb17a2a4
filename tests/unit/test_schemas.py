"""Schema formats and compatibility (`mq.schemas`): the libraries' answers as the contract's errors, and the
`backward` rule for JSON Schema proven sound against the validator itself on generated schemas and instances."""

from __future__ import annotations

import json
import os
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mq import errors
from mq.schemas.compatibility import first_break
from mq.schemas.formats import Violation, compile_schema

ORDER_AVRO = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "order_id", "type": "string"},
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
    ],
}


def check(schema_format: str, schema: Any, payload: Any) -> Violation | None:
    return compile_schema(schema_format, json.dumps(schema))(json.dumps(payload).encode())  # type: ignore[arg-type]


def test_json_schema_violations_name_a_pointer_and_a_reason() -> None:
    schema = {"type": "object", "properties": {"items": {"type": "array", "prefixItems": [{"type": "integer"}]}}}
    assert check("json_schema", schema, {"items": [1]}) is None
    assert check("json_schema", schema, {"items": ["x"]}) == Violation("/items/0", '"x" is not of type "integer"')
    assert check("json_schema", {"type": "object"}, "x") is not None
    bad = compile_schema("json_schema", "{}")(b"{nope")
    assert bad is not None and bad.pointer == "" and "not JSON" in bad.reason


def test_avro_violations_name_where_in_the_payload() -> None:
    ok = {"order_id": "o1", "items": [{"sku": "a", "qty": 1}]}
    assert check("avro", ORDER_AVRO, ok) is None
    wrong = {"order_id": "o1", "items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": "two"}]}
    assert check("avro", ORDER_AVRO, wrong) == Violation("/items/1/qty", 'qty: "two" is not int')
    missing = {"order_id": "o1", "items": [{"sku": "a", "qty": 1}, {"qty": 2}]}
    assert check("avro", ORDER_AVRO, missing) == Violation("/items/1/sku", "sku: missing (expected string)")
    assert check("avro", ORDER_AVRO, [1]) == Violation("", "the payload is not the record's type")


@pytest.mark.parametrize(
    ("schema_format", "text", "says"),
    [
        ("json_schema", "nope", "not JSON"),
        ("json_schema", '{"type": 12}', "not a valid JSON Schema"),
        ("json_schema", '{"$ref": "https://example.com/elsewhere.json"}', "references resolve within the schema only"),
        ("json_schema", "[1]", "a JSON Schema is an object"),
        ("avro", '{"type": "record", "name": "X"}', "not a valid Avro schema"),
        ("avro", '{"type": "recordz", "name": "X", "fields": []}', "not a valid Avro schema"),
        ("avro", '{"type": "record", "name": "X", "fields": [{"name": "a", "type": "int", "default": "x"}]}', "Avro"),
    ],
)
def test_a_schema_that_does_not_parse_or_compile_is_invalid_with_the_reason(
    schema_format: str, text: str, says: str
) -> None:
    with pytest.raises(errors.InvalidSchema) as refused:
        compile_schema(schema_format, text)  # type: ignore[arg-type]
    assert says in refused.value.message


def test_avro_backward_compatibility_follows_schema_resolution() -> None:
    old = json.dumps(ORDER_AVRO)
    with_default = json.loads(old)
    with_default["fields"].append({"name": "note", "type": "string", "default": ""})
    assert first_break("avro", old, json.dumps(with_default)) is None
    without = json.loads(old)
    without["fields"].append({"name": "note", "type": "string"})
    problem = first_break("avro", old, json.dumps(without))
    assert problem is not None and "/fields/2" in problem and "reader_field_missing_default_value" in problem


def test_json_schema_backward_compatibility_allows_relaxing_only() -> None:
    old = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 10}}, "required": ["n"]}
    relaxed = {"type": "object", "properties": {"n": {"type": "number", "maximum": 20}}}
    assert first_break("json_schema", json.dumps(old), json.dumps(relaxed)) is None
    tighter = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}}, "required": ["n"]}
    assert (
        first_break("json_schema", json.dumps(old), json.dumps(tighter))
        == "at /properties/n/maximum: lowered from 10 to 5"
    )
    required = {**old, "required": ["n", "m"]}
    assert first_break("json_schema", json.dumps(old), json.dumps(required)) == "at /required: newly required m"
    closed = {**old, "additionalProperties": False}
    assert "additionalProperties" in (first_break("json_schema", json.dumps(old), json.dumps(closed)) or "")
    opened = {**closed, "additionalProperties": True, "properties": {**old["properties"], "x": {"type": "string"}}}
    assert first_break("json_schema", json.dumps(closed), json.dumps(opened)) is None  # x was never allowed


# --- soundness, against the validator ------------------------------------------------------------------------------

_leaf = st.one_of(
    st.just({}),
    st.builds(lambda t: {"type": t}, st.sampled_from(["integer", "number", "string", ["integer", "string"]])),
    st.builds(lambda m: {"type": "integer", "maximum": m}, st.integers(-2, 2)),
    st.builds(lambda m: {"minimum": m}, st.integers(-2, 2)),
    st.builds(lambda e: {"enum": e}, st.lists(st.sampled_from([0, 1, "a", None]), min_size=1, max_size=3, unique=True)),
    st.builds(lambda n: {"type": "string", "maxLength": n}, st.integers(0, 2)),
)


def _object(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    names = st.sampled_from(["a", "b", "c"])
    return st.builds(
        lambda props, required, extra: {
            "type": "object",
            "properties": props,
            "required": sorted(required),
            **({} if extra is None else {"additionalProperties": extra}),
        },
        st.dictionaries(names, children, max_size=3),
        st.sets(names, max_size=2),
        st.one_of(st.none(), st.booleans(), children),
    )


_schema = st.recursive(
    _leaf,
    lambda children: st.one_of(
        _object(children),
        st.builds(
            lambda p, i: {"type": "array", "prefixItems": p, **({} if i is None else {"items": i})},
            st.lists(children, min_size=1, max_size=2),
            st.one_of(st.none(), st.just(False), children),
        ),
    ),
    max_leaves=6,
)
_instance = st.recursive(
    st.one_of(st.integers(-3, 3), st.sampled_from(["", "a", "ab"]), st.none(), st.just(1.5)),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=600, deadline=None)
@given(old=_schema, new=_schema, instances=st.lists(_instance, min_size=1, max_size=20))
def test_what_the_json_schema_rule_calls_compatible_accepts_every_instance_the_current_version_does(
    old: Any, new: Any, instances: list[Any]
) -> None:
    if first_break("json_schema", json.dumps(old), json.dumps(new)) is not None:
        return
    before, after = jsonschema_rs.Draft202012Validator(old), jsonschema_rs.Draft202012Validator(new)
    for instance in instances:
        if before.is_valid(instance):
            assert after.is_valid(instance), (old, new, instance)


@settings(max_examples=300, deadline=None)
@given(schema=_schema)
def test_a_schema_is_compatible_with_itself_and_with_accepting_everything(schema: Any) -> None:
    assert first_break("json_schema", json.dumps(schema), json.dumps(schema)) is None
    assert first_break("json_schema", json.dumps(schema), "{}") is None


def _mutate(schema: Any, data: st.DataObject) -> Any:
    """A nearby schema: one edit somewhere (a bound moved, a type or enum entry added or removed, a property or
    `required` entry added or removed, `additionalProperties` changed, a keyword dropped)."""
    if not isinstance(schema, dict) or not schema:
        return data.draw(_leaf)
    schema = dict(schema)
    key = data.draw(st.sampled_from(sorted(schema)))
    value = schema[key]
    edit = data.draw(st.integers(0, 3))
    if edit == 0:
        del schema[key]
    elif isinstance(value, bool) or value is None:
        schema[key] = not value
    elif isinstance(value, int):
        schema[key] = value + data.draw(st.sampled_from([-1, 1]))
    elif isinstance(value, list) and key in ("required", "enum", "type"):
        pool = {"required": ["a", "b", "c"], "enum": [0, 1, "a", None], "type": ["integer", "number", "string"]}[key]
        extra = data.draw(st.sampled_from(pool))
        changed = [v for v in value if v != extra] if extra in value else [*value, extra]
        if changed:
            schema[key] = changed
    elif isinstance(value, str) and key == "type":
        schema[key] = data.draw(st.sampled_from(["integer", "number", "string", ["integer", "string"]]))
    elif isinstance(value, dict) and key == "properties":
        name = data.draw(st.sampled_from(["a", "b", "c"]))
        if name in value and edit == 1:
            schema[key] = {k: v for k, v in value.items() if k != name}
        else:
            schema[key] = {**value, name: _mutate(value.get(name, {}), data)}
    elif isinstance(value, dict):
        schema[key] = _mutate(value, data)
    elif isinstance(value, list) and value:
        n = data.draw(st.integers(0, len(value) - 1))
        schema[key] = [*value[:n], _mutate(value[n], data), *value[n + 1 :]]
    return schema


# 500 in the suite (about 6 s); SKIPLOCK_SCHEMA_EXAMPLES=5000 for a long run
@settings(max_examples=int(os.environ.get("SKIPLOCK_SCHEMA_EXAMPLES", "500")), deadline=None)
@given(old=_schema, data=st.data(), instances=st.lists(_instance, min_size=5, max_size=30))
def test_nearby_schemas_the_rule_calls_compatible_accept_what_the_current_version_does(
    old: Any, data: st.DataObject, instances: list[Any]
) -> None:
    new = old
    for _ in range(data.draw(st.integers(1, 3))):
        new = _mutate(new, data)
    if first_break("json_schema", json.dumps(old), json.dumps(new)) is not None:
        return
    before, after = jsonschema_rs.Draft202012Validator(old), jsonschema_rs.Draft202012Validator(new)
    for instance in instances:
        if before.is_valid(instance):
            assert after.is_valid(instance), (old, new, instance)


def test_local_references_are_compared_by_what_they_name() -> None:
    def model(name: str, required: list[str]) -> dict[str, Any]:
        return {
            "$ref": f"#/$defs/{name}",
            "$defs": {name: {"type": "object", "properties": {"a": {"type": "integer"}}, "required": required}},
        }

    assert first_break("json_schema", js(model("Order", ["a"])), js(model("OrderV2", []))) is None  # renamed, relaxed
    problem = first_break("json_schema", js(model("Order", [])), js(model("OrderV2", ["a"])))
    assert problem == "at /required: newly required a"
    recursive = {"$ref": "#/$defs/N", "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}}
    assert first_break("json_schema", js(recursive), js(recursive)) is None


def js(value: Any) -> str:
    return json.dumps(value)
