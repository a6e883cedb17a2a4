"""What a schema check can cost, decided before it runs: whether it may run on the event loop.

Every schema check that may be costly runs in a schema-check process within a budget (`mq.schemas.checks`); a
round trip to it costs the API more than a typical check itself (bench/RESULTS.md). A check whose cost is bounded
by construction runs in the API's process instead. The bound: a schema that is a finite tree once its references
are followed (no recursion, nothing that resolves at run time) applies each of its nodes at most once to each
node of the payload, so its check costs at most about (the schema's nodes, references expanded) x (the payload's
bytes) steps. `inline_weight` answers that number of schema nodes (literals such as `enum` weigh by their size),
or None for a schema it cannot bound:

- JSON Schema: a `$ref` that is not a local JSON pointer, a reference cycle (a recursive schema: its cost grows
  with the payload's nesting, and with a fan-out of references, exponentially), `$dynamicRef` and the other
  run-time anchors, `$id` (it moves where references resolve), `uniqueItems` (pairs of items), and a `pattern` or
  `patternProperties` key that needs a backtracking engine (lookaround, backreferences, atomic groups: the linear
  engine takes every other pattern in time linear in the string);
- Avro: a recursive named type (a record that holds itself: its error pass grows with the payload's nesting).

A payload's check then costs about `units`: its bytes (decoding them, and scanning them for each string keyword
of the schema: patterns, lengths, formats) plus the schema's weight times the payload's values (counted in C from
its separators). A request is checked in process when none of its payloads is over `PAYLOAD_UNITS` (bench/RESULTS.md,
"Schema checks in process": at most about 90 ns a unit in the worst shapes measured, so about 3 ms a payload at
the very most, far less for ordinary schemas) and all of them add up to at most `REQUEST_UNITS`; the checks give
the event loop to other requests every couple of milliseconds (`mq.schemas.checks`). Anything else, and any schema
with a None weight, goes to the schema-check processes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mq.schemas.formats import SchemaFormat

#: The units (`Weight.units`) a payload's in-process check may take; a payload over it is checked in a schema-check
#: process.
PAYLOAD_UNITS = 32_000
#: The units a request's in-process checks may add up to; a request over it is checked in the processes.
REQUEST_UNITS = 1_000_000
#: Schema nodes (references expanded) past which a schema is always checked in a schema-check process.
MAX_INLINE_WEIGHT = 5_000

# JSON Schema 2020-12's keywords whose value is a subschema, a list of them, or a map of them (applied in place
# or to the payload's children); `$defs` is applied only through `$ref`.
_ONE = frozenset(
    {"not", "if", "then", "else", "items", "contains", "additionalProperties", "propertyNames"}
    | {"unevaluatedItems", "unevaluatedProperties"}
)
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAP = ("properties", "patternProperties", "dependentSchemas")
_UNBOUNDED = frozenset({"$dynamicRef", "$recursiveRef", "$dynamicAnchor", "$recursiveAnchor", "$id", "$anchor"})
_LITERALS = ("enum", "const")
# Keywords that read a string whole, each a scan of the payload's strings.
_SCANS = frozenset({"pattern", "minLength", "maxLength", "format", "contentEncoding", "contentMediaType"})
# What only a backtracking engine runs: lookaround, backreferences, atomic groups, possessive-free recursion.
_BACKTRACKING = re.compile(r"\(\?<?[=!]|\\[1-9]|\\k<|\(\?>|\(\?P=")


class _Unbounded(Exception):
    pass


@dataclass(frozen=True)
class Weight:
    """A bounded schema: its nodes with references expanded, and how many of them scan a string whole."""

    nodes: int
    scans: int

    @property
    def per_byte(self) -> int:
        """Units per payload byte at the most (a payload has at most as many values as bytes)."""
        return 2 + self.scans + self.nodes

    def units(self, payload: bytes) -> int:
        """About what checking `payload` costs (a unit: tens of nanoseconds at the very most): the bound by its
        size, counted exactly only when that is over a payload's limit."""
        size = len(payload)
        bound = size * self.per_byte
        if bound <= PAYLOAD_UNITS:
            return bound
        values = payload.count(b",") + payload.count(b":") + payload.count(b"[") + payload.count(b"{") + 1
        return size * (2 + self.scans) + self.nodes * values


def inline_weight(schema_format: SchemaFormat, schema_json: str) -> Weight | None:
    """The schema's weight when its checks are bounded by it; None when they are not (or it is too large): such
    checks always run in a schema-check process."""
    try:
        schema = json.loads(schema_json)
        if schema_format == "json_schema":
            nodes = _json_schema(schema)
            scans = _scans(schema)
        else:
            nodes, scans = _avro(schema), 0
    except (_Unbounded, ValueError, RecursionError, TypeError, KeyError, AttributeError):
        return None
    return Weight(nodes, scans) if nodes <= MAX_INLINE_WEIGHT else None


def _scans(schema: Any) -> int:
    """The schema's string-reading keywords, counted over all of it (references expanded or not: an upper bound
    would be the nodes; the keywords themselves are what scan)."""
    count, pending = 0, [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            count += sum(1 for key in node if key in _SCANS) + len(node.get("patternProperties") or ())
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return count


def _json_schema(root: Any) -> int:
    done: dict[int, int] = {}
    expanding: set[int] = set()

    def weight(node: Any) -> int:
        if isinstance(node, bool):
            return 1
        if not isinstance(node, dict):
            raise _Unbounded
        known = done.get(id(node))
        if known is not None:
            return known
        if id(node) in expanding:
            raise _Unbounded  # a reference cycle: a recursive schema
        expanding.add(id(node))
        total = 1
        for key, value in node.items():
            total += _keyword(root, key, value, weight)
            if total > MAX_INLINE_WEIGHT:
                raise _Unbounded
        expanding.discard(id(node))
        done[id(node)] = total
        return total

    return weight(root)


def _keyword(root: Any, key: str, value: Any, weight: Callable[[Any], int]) -> int:
    """What one keyword of a schema object adds to its weight (_Unbounded: it cannot be bounded)."""
    if key in _UNBOUNDED or (key == "uniqueItems" and value is True):
        raise _Unbounded
    if key == "pattern" and isinstance(value, str) and _BACKTRACKING.search(value):
        raise _Unbounded
    if key == "$ref":
        return weight(_local(root, value))
    if key in _ONE:
        return weight(value)
    if key in _LIST and isinstance(value, list):
        return sum(weight(v) for v in value)
    if key in _MAP and isinstance(value, dict):
        if key == "patternProperties" and any(_BACKTRACKING.search(k) for k in value):
            raise _Unbounded
        return sum(weight(v) for v in value.values())
    if key in _LITERALS:
        return len(json.dumps(value)) // 16
    return 0


def _local(root: Any, ref: Any) -> Any:
    """What a local reference (`#`, `#/$defs/name`) names; _Unbounded for any other."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise _Unbounded
    node = root
    for escaped in ref[1:].split("/")[1:]:
        part = escaped.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _avro(root: Any) -> int:
    named: dict[str, Any] = {}
    expanding: set[str] = set()

    def weight(node: Any, namespace: str) -> int:
        if isinstance(node, str):
            return reference(node, namespace)
        if isinstance(node, list):  # a union
            return 1 + sum(weight(branch, namespace) for branch in node)
        if not isinstance(node, dict):
            raise _Unbounded
        kind = node.get("type")
        if isinstance(kind, (dict, list)) or kind not in _AVRO_COMPLEX:
            return weight(kind, namespace)
        name = node.get("name")
        if not isinstance(name, str):
            return 1 + inner(node, kind, namespace)
        namespace = node.get("namespace", name.rpartition(".")[0] or namespace) or ""
        names = {name, name if "." in name or not namespace else f"{namespace}.{name}"}
        for each in names:
            named[each] = node
        expanding.update(names)
        total = 1 + inner(node, kind, namespace)
        expanding.difference_update(names)
        return total

    def reference(name: str, namespace: str) -> int:
        full = name if "." in name or not namespace else f"{namespace}.{name}"
        for each in (full, name):
            if each in expanding:
                raise _Unbounded  # a type that holds itself
            if each in named:
                return weight(named[each], namespace)
        return 1  # a primitive

    def inner(node: dict[str, Any], kind: str, namespace: str) -> int:
        if kind in ("record", "error"):
            total = sum(weight(field["type"], namespace) for field in node["fields"])
        elif kind == "enum":
            total = len(node["symbols"]) // 16
        elif kind == "array":
            total = weight(node["items"], namespace)
        elif kind == "map":
            total = weight(node["values"], namespace)
        else:
            total = 0  # fixed
        if total > MAX_INLINE_WEIGHT:
            raise _Unbounded
        return total

    return weight(root, "")


_AVRO_COMPLEX = ("record", "error", "enum", "fixed", "array", "map")
