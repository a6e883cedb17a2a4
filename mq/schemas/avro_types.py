"""An Avro schema as msgspec types: fastavro's verdict on a JSON payload, in about a seventh of its time.

fastavro's `validate` costs about 4.8 µs for the ~170-byte order record of `bench.schemas`; `msgspec.convert` of
the decoded payload into types built from the schema costs 0.7 (bench/RESULTS.md, "Avro checks by msgspec"). Both
libraries decide; this module only builds msgspec's types, and only where msgspec's rules give fastavro's verdict
on every value a JSON payload decodes to (None, bool, int, float, str, list, dict with str keys):

- `null` None; `boolean` a bool; `string` a str; `int` and `long` an int (never a bool, never `1.0`) in their
  ranges; `float` and `double` an int or a float (never a bool); `enum` one of its symbols;
- `array` a list, `map` a dict, of the item or value type; a `record` a dict whose fields fit, with more keys
  allowed, and a field it lacks fits when its default (or null, with none) does; a key `-type` present must be the
  record's full name as fastavro names it (the field path's namespace for a record named without one);
- a `union` fits when one branch does: built only when no two branches take the same kind of JSON value (msgspec
  picks the branch by the value's kind), so `["null", "string", "int"]` is built and `["int", "double"]` is not;
- a logical type fastavro leaves JSON values alone for (timestamps, times, `uuid`) checks as its base type.

`types_for` answers None for anything else (`bytes` and `fixed`, which JSON cannot hold but msgspec would take as
base64; `date`, whose strings fastavro parses; a recursive named type; a union whose branches overlap) and the
caller keeps fastavro. tests/unit/test_avro_types.py checks the two verdicts agree on generated schemas and payloads.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

import msgspec
from fastavro.const import INT_MAX_VALUE, INT_MIN_VALUE, LONG_MAX_VALUE, LONG_MIN_VALUE
from fastavro.logical_writers import LOGICAL_WRITERS
from fastavro.schema import extract_logical_type, extract_record_type, schema_name

_Int = Annotated[int, msgspec.Meta(ge=INT_MIN_VALUE, le=INT_MAX_VALUE)]
_Long = Annotated[int, msgspec.Meta(ge=LONG_MIN_VALUE, le=LONG_MAX_VALUE)]
# What each Avro type takes, by the kind of JSON value; a union is built only when its branches' kinds are disjoint.
_PRIMITIVES: dict[str, tuple[Any, frozenset[str]]] = {
    "null": (None, frozenset({"null"})),
    "boolean": (bool, frozenset({"bool"})),
    "string": (str, frozenset({"str"})),
    "int": (_Int, frozenset({"int"})),
    "long": (_Long, frozenset({"int"})),
    "float": (float, frozenset({"int", "float"})),
    "double": (float, frozenset({"int", "float"})),
}
# fastavro's logical writers that return every JSON value as it is (they convert datetimes, times and UUIDs only).
_LOGICAL_AS_BASE = frozenset(
    {"long-timestamp-millis", "long-local-timestamp-millis", "long-timestamp-micros", "long-local-timestamp-micros"}
    | {"int-time-millis", "long-time-micros", "string-uuid"}
)
_RECORDS = ("record", "error", "request")
_UNIONS = ("union", "error_union")


class _NotBuilt(Exception):
    """A schema msgspec's rules would not judge as fastavro does."""


class AvroTypes:
    """A schema's msgspec type, and its two checks: of a decoded payload, and of the payload's bytes decoded into
    the type at once (0.95 µs for the order record, against 1.5 to decode it as any JSON and 0.7 to convert)."""

    __slots__ = ("_decode", "target")

    def __init__(self, target: Any) -> None:
        self.target = target
        self._decode = msgspec.json.Decoder(target).decode

    def fits(self, datum: Any) -> bool:
        try:
            msgspec.convert(datum, self.target)
        except msgspec.ValidationError:
            return False
        return True

    def fits_payload(self, payload: bytes) -> bool:
        """Whether the JSON text surely fits; False leaves the verdict to `fits` on the text decoded as any JSON
        (text that is not JSON, or a key given twice, which the typed decoder checks each time and JSON takes
        the last of)."""
        try:
            self._decode(payload)
        except msgspec.DecodeError:  # (msgspec.ValidationError included)
            return False
        return True


def types_for(parsed: Any) -> AvroTypes | None:
    """The msgspec types for a schema parsed by `fastavro.parse_schema`, or None where fastavro must decide."""
    named = parsed.get("__named_schemas", {}) if isinstance(parsed, dict) else {}
    try:
        target, _ = _Builder(named).build(parsed, "")
        msgspec.convert(None, target)  # msgspec checks a type's rules on first use: a TypeError here, not later
    except msgspec.ValidationError:
        pass
    except (_NotBuilt, TypeError, ValueError, KeyError, RecursionError):
        return None
    return AvroTypes(target)


class _Builder:
    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named
        self.records: dict[tuple[int, str], Any] = {}
        self.building: set[str] = set()  # the records being built, by name: a reference to one is recursion

    def build(self, node: Any, field: str) -> tuple[Any, frozenset[str]]:
        """The msgspec type for `node` met at `field` (fastavro's namespace for a record named without one) and
        the JSON kinds it takes."""
        kind = extract_record_type(node)
        if not isinstance(kind, str):
            raise _NotBuilt
        logical = extract_logical_type(node)
        if logical and logical not in _LOGICAL_AS_BASE and logical in LOGICAL_WRITERS:
            raise _NotBuilt
        if kind in _PRIMITIVES:
            return _PRIMITIVES[kind]
        if kind in _UNIONS:
            return self._union(node, field)
        if kind in _RECORDS:
            return self._record(node, field), frozenset({"dict"})
        if kind in self.named and kind not in self.building:
            return self.build(self.named[kind], field)
        return self._container(kind, node, field)

    def _container(self, kind: str, node: Any, field: str) -> tuple[Any, frozenset[str]]:
        if kind == "enum":
            symbols = node["symbols"]
            if not symbols or not all(isinstance(s, str) for s in symbols):
                raise _NotBuilt
            return Literal[tuple(symbols)], frozenset({"str"})
        if kind == "array":
            items, _ = self.build(node["items"], field)
            return list[items], frozenset({"list"})  # type: ignore[valid-type]
        if kind == "map":
            values, _ = self.build(node["values"], field)
            return dict[str, values], frozenset({"dict"})  # type: ignore[valid-type]
        raise _NotBuilt  # bytes, fixed, a recursive reference, or a name fastavro does not know

    def _union(self, node: list[Any], field: str) -> tuple[Any, frozenset[str]]:
        branches = [self.build(branch, field) for branch in node]
        taken: set[str] = set()
        for _, kinds in branches:
            if taken & kinds or not kinds:
                raise _NotBuilt
            taken |= kinds
        if not branches:
            raise _NotBuilt
        return Union[tuple(t for t, _ in branches)], frozenset(taken)  # noqa: UP007 (a tuple of types)

    def _record(self, node: dict[str, Any], field: str) -> Any:
        _, full_name = schema_name(node, field)
        key = (id(node), full_name)
        if key in self.records:
            return self.records[key]
        own = node["name"]  # the name references use (fastavro's parsed names)
        if own in self.building:
            raise _NotBuilt
        self.building.add(own)
        try:
            fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
            rename = {"type_": "-type"}
            for n, f in enumerate(node["fields"]):
                attribute, name = f"f{n}", f["name"]
                if name == "-type" or not isinstance(name, str):
                    raise _NotBuilt
                value_type, _ = self.build(f["type"], f"{full_name}.{name}")
                rename[attribute] = name
                if _fits(f.get("default"), value_type):  # fastavro checks a missing field's default (or null)
                    fields.append((attribute, value_type, None))
                else:
                    fields.append((attribute, value_type))
            fields.append(("type_", Literal[full_name], full_name))
            record = msgspec.defstruct("AvroRecord", fields, kw_only=True, rename=rename)
        finally:
            self.building.discard(own)
        self.records[key] = record
        return record


def _fits(value: Any, target: Any) -> bool:
    try:
        msgspec.convert(value, target)
    except msgspec.ValidationError:
        return False
    return True
