"""The two schema formats, compiled once per schema and cached: what checks a payload on enqueue.

- `json_schema`: JSON Schema draft 2020-12, by `jsonschema-rs` (a Rust validator: about 0.5 µs per valid
  ~170-byte order object once compiled, 1.3 µs with the payload's JSON decode, against ~300 µs for the `jsonschema`
  package; `fastjsonschema` knows drafts 4-7 only and ignores 2020-12 keywords such as `prefixItems`). A schema is
  checked against the 2020-12 meta-schema when it is stored, and names no other (`$schema`): the meta-schema is
  the library's own copy. A schema never makes the server fetch anything: `$ref`s resolve within the schema only
  (a retriever that refuses every URI), and the error for one that does not is the same whatever it
  named (no file or URL oracle). Patterns run with a backtracking limit.
- `avro`: queue-ti's default. The payload is JSON, decoded and validated as a datum of the Avro schema by
  `fastavro` (1-5 µs per record, compiled); the cheap pass converts it into msgspec types built from the schema
  instead wherever they give fastavro's verdict (`mq.schemas.avro_types`: 0.7 µs for an order record, against
  4.8), and fastavro explains what does not fit. A schema must parse for both `fastavro` and the Apache `avro` package,
  the stricter of the two (a record without fields, say), which also decides compatibility
  (`mq.schemas.compatibility`).

No schema checking is written here: each library decides validity; this module only turns its answers into the
contract's errors (a JSON pointer and a reason). A payload nested deeper than `MAX_JSON_DEPTH` is refused before
it is decoded. Checks run in the schema-check processes (`mq.schemas.sandbox`), within a time budget.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

import avro.errors
import avro.schema
import fastavro
import jsonschema_rs
import msgspec
from fastavro.validation import ValidationError as AvroValidationError
from fastavro.validation import validate as avro_validate

from mq import errors
from mq.names import MAX_JSON_DEPTH, json_depth_exceeds
from mq.schemas.avro_types import types_for

SchemaFormat = Literal["avro", "json_schema"]
FORMATS: tuple[SchemaFormat, ...] = ("avro", "json_schema")
_DECODE = msgspec.json.decode
#: The only `$schema` a JSON Schema may name: draft 2020-12's meta-schema (the library's built-in copy).
META_SCHEMA_URIS = ("https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#")
#: Backtracking steps a pattern may take per string (fancy-regex's limit: past it, the check fails).
PATTERN_BACKTRACK_LIMIT = 100_000
#: A JSON or Avro schema's own nesting limit (the parsers recurse per level).
MAX_SCHEMA_DEPTH = 128
_OUTSIDE = (
    "a $ref does not resolve within the schema: references resolve within the schema only (put definitions under $defs)"
)


class Violation(msgspec.Struct, frozen=True):
    """Why a payload does not fit: where (a JSON pointer into the payload, "" for the whole) and why."""

    pointer: str
    reason: str


#: `Checker.quickly`'s answer for a payload that does not fit, before anyone says why.
UNEXPLAINED = Violation("", "does not fit the schema")


class Checker:
    """A compiled schema's payload check, in two passes: `fits` (the decoded payload fits: the validators' cheap
    answer, no error built) and `explain` (why it does not: where and what, which for a schema of many branches
    costs far more). Called, it answers the Violation, or None when the payload fits."""

    __slots__ = ("explain", "fits", "fits_payload")

    def __init__(
        self,
        fits: Callable[[Any], bool],
        explain: Callable[[Any], Violation | None],
        fits_payload: Callable[[bytes], bool] | None = None,
    ) -> None:
        self.fits = fits
        self.explain = explain
        # where the format has one, `fits` on the JSON text, decoded and checked at once: True when it surely
        # fits, False to leave it to `fits` on the decoded payload (which says why text is not JSON)
        self.fits_payload = fits_payload

    def __call__(self, payload: bytes) -> Violation | None:
        decoded = _decoded(payload)
        if isinstance(decoded, Violation):
            return decoded
        return None if self.fits(decoded) else self.explain(decoded)

    def quickly(self, payload: bytes) -> Violation | None:
        """The cheap pass alone: None when the payload fits, a Violation when it is not JSON or nests too deep,
        `UNEXPLAINED` when it does not fit (the explanation is left to `__call__`)."""
        if self.fits_payload is not None and not _too_deep(payload) and self.fits_payload(payload):
            return None
        decoded = _decoded(payload)
        if isinstance(decoded, Violation):
            return decoded
        return None if self.fits(decoded) else UNEXPLAINED


def parse_json(schema_json: str) -> Any:
    try:
        if json_depth_exceeds(schema_json.encode(), MAX_SCHEMA_DEPTH):
            raise errors.InvalidSchema(f"schema_json nests deeper than {MAX_SCHEMA_DEPTH} levels")
        return json.loads(schema_json)
    except ValueError as exc:
        raise errors.InvalidSchema(f"schema_json is not JSON: {exc}") from None


def compile_schema(schema_format: SchemaFormat, schema_json: str) -> Checker:
    """A payload checker for the schema; raises InvalidSchema naming the problem."""
    schema = parse_json(schema_json)
    if schema_format == "json_schema":
        return _json_schema(schema)
    return _avro(schema)


def _decoded(payload: bytes) -> Any | Violation:
    """The payload as JSON, or why it cannot be checked."""
    if _too_deep(payload):
        return Violation("", f"the payload nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        return _DECODE(payload)
    except msgspec.DecodeError as exc:
        return Violation("", f"the payload is not JSON: {exc}")


def _too_deep(payload: bytes) -> bool:
    return len(payload) > MAX_JSON_DEPTH and json_depth_exceeds(payload)  # (shorter text cannot nest that deep)


def _fetch_nothing(uri: str) -> Any:
    raise ValueError("references resolve within the schema only")


def _json_schema(schema: Any) -> Checker:
    if not isinstance(schema, (dict, bool)):
        raise errors.InvalidSchema("a JSON Schema is an object (or a boolean)")
    meta = schema.get("$schema") if isinstance(schema, dict) else None
    if meta is not None and meta not in META_SCHEMA_URIS:
        raise errors.InvalidSchema(f"$schema must be {META_SCHEMA_URIS[0]} (draft 2020-12), or left out")
    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as exc:
        raise errors.InvalidSchema(f"not a valid JSON Schema (draft 2020-12): {_first_line(exc)}") from None
    except (jsonschema_rs.ReferencingError, ValueError):
        raise errors.InvalidSchema(_OUTSIDE) from None
    try:
        validator = jsonschema_rs.Draft202012Validator(
            schema,
            retriever=_fetch_nothing,
            pattern_options=jsonschema_rs.FancyRegexOptions(backtrack_limit=PATTERN_BACKTRACK_LIMIT),
        )
    except jsonschema_rs.ValidationError as exc:
        if isinstance(exc.kind, jsonschema_rs.ValidationErrorKind.Referencing):  # its text names what was tried
            raise errors.InvalidSchema(_OUTSIDE) from None
        raise errors.InvalidSchema(f"not a valid JSON Schema (draft 2020-12): {_first_line(exc)}") from None
    except (jsonschema_rs.ReferencingError, ValueError):
        raise errors.InvalidSchema(_OUTSIDE) from None

    def explain(instance: Any) -> Violation | None:
        try:  # the first error only (collecting every error of every `anyOf` branch would cost more still)
            validator.validate(instance)
        except jsonschema_rs.ValidationError as error:
            return Violation(_pointer(error.instance_path), error.message)
        return None

    return Checker(validator.is_valid, explain)


def _avro(schema: Any) -> Checker:
    try:
        parsed = fastavro.parse_schema(schema)
        avro.schema.parse(json.dumps(schema))
    except (fastavro.schema.SchemaParseException, fastavro.schema.UnknownType, avro.errors.AvroException) as exc:
        raise errors.InvalidSchema(f"not a valid Avro schema: {exc}") from None
    except (TypeError, ValueError, KeyError, AttributeError) as exc:  # the parsers' answer to odd shapes
        raise errors.InvalidSchema(f"not a valid Avro schema: {type(exc).__name__}: {exc}") from None

    def fastavro_fits(datum: Any) -> bool:
        return bool(avro_validate(datum, parsed, raise_errors=False))  # (with raise_errors, 18 µs instead of 5.7)

    def explain(datum: Any) -> Violation | None:
        try:
            avro_validate(datum, parsed, raise_errors=True)
        except AvroValidationError as exc:
            return _avro_violation(datum, exc, parsed)
        return None

    types = types_for(parsed)  # msgspec's types where they give fastavro's verdict: 0.7 µs not 4.8
    if types is not None:
        return Checker(types.fits, explain, types.fits_payload)
    return Checker(fastavro_fits, explain)


def _avro_violation(datum: Any, exc: AvroValidationError, parsed: Any) -> Violation:
    """fastavro names the failing field by its record's full name (`shop.Item.qty`) and gives the value: the
    pointer is where in the payload a record of that type holds that value there (or lacks the field)."""
    data = exc.errors[0]
    expected = data.schema if isinstance(data.schema, str) else "the record's type"
    if not data.field:
        return Violation("", f"the payload is not {expected}")
    record, _, field = data.field.rpartition(".")
    named = parsed.get("__named_schemas", {}) if isinstance(parsed, dict) else {}
    fields = {f["name"] for f in named.get(record, {}).get("fields", [])} or {field}
    found = _find(datum, fields, field, data.datum)
    missing = data.datum is None and (found is None or not _holds(datum, found))
    reason = f"missing (expected {expected})" if missing else f"{_short(data.datum)} is not {expected}"
    return Violation(found or f"/{_escape(field)}", f"{field}: {reason}")


def _find(value: Any, fields: set[str], field: str, wanted: Any, path: str = "") -> str | None:
    """The pointer of `field` in the first object (depth first) that looks like the record (its keys are among
    the record's fields) and holds `wanted` there, or lacks it when `wanted` is None."""
    if isinstance(value, dict):
        if value.keys() <= fields and (
            (field in value and value[field] == wanted) or (wanted is None and field not in value)
        ):
            return f"{path}/{_escape(field)}"
        children: Any = ((str(k), v) for k, v in value.items())
    elif isinstance(value, list):
        children = ((str(n), v) for n, v in enumerate(value))
    else:
        return None
    for name, child in children:
        found = _find(child, fields, field, wanted, f"{path}/{_escape(name)}")
        if found is not None:
            return found
    return None


def _holds(value: Any, pointer: str) -> bool:
    """Whether the pointer names a member that is there."""
    for part in pointer.split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return False
    return True


def _pointer(path: list[str | int]) -> str:
    return "".join(f"/{_escape(str(part))}" for part in path)


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
