"""`compatibility: "backward"` on a schema's replacement: every message valid under the current version must be
valid under the new one. The first break is named, or None.

- `avro`: Avro's schema resolution rules, as the Apache `avro` package decides them
  (`ReaderWriterCompatibilityChecker`, the new version reading what the current one wrote): a field added without
  a default, a type narrowed, an enum symbol removed... each with its location in the new schema.
- `json_schema`: a rule that can be proven, not guessed: the new schema may only **relax** the current one. Walked
  side by side, each keyword of the new schema must be the same as in the current one, or a relaxation of it
  (`required` and `enum` lists with no new entry / no entry removed, `minimum`-like bounds lowered, `maximum`-like
  bounds raised, `type` with more types), or a subschema that again only relaxes; keywords the current version had
  and the new one drops remove constraints. A property the current version did not name may be added only where
  the current one said `additionalProperties: false` (no valid message had it). Local references
  (`#/$defs/...`) are compared by what they name, so a renamed definition (a model's new class name) is no
  change. Everything else, including a changed remote or recursive `$ref`, is a break. Sound (what it accepts is
  backward compatible), and conservative: a change it cannot prove safe is refused; replace without
  `compatibility` to force it. A JSON object may carry members its schema does not name, so adding a property is
  a break unless the current version closed the object (`additionalProperties: false`).
"""

from __future__ import annotations

import json
from typing import Any

import avro.compatibility
import avro.schema

from mq.schemas.formats import SchemaFormat, parse_json

_LOWER_IS_LOOSER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains")
_HIGHER_IS_LOOSER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains")
#: Keywords whose value is a subschema (or a map or list of them) that may relax in turn.
_SUBSCHEMA = (
    "items",
    "additionalProperties",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")
_ANNOTATIONS = (
    "title",
    "description",
    "examples",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "$schema",
    "$id",
)


def first_break(schema_format: SchemaFormat, current_json: str, new_json: str) -> str | None:
    if schema_format == "avro":
        return _avro(current_json, new_json)
    current, new = parse_json(current_json), parse_json(new_json)
    return _relaxes(_inline(current, current), _inline(new, new), "")


def _inline(schema: Any, root: Any, expanding: frozenset[str] = frozenset()) -> Any:
    """The schema with each local `$ref` (`#/$defs/<name>`) replaced by what it names, where nothing but
    definitions and annotations stand beside it (then the two are the same schema): two versions can name their
    definitions differently (a model renamed) and still be compared. A recursive reference stays a `$ref`."""
    if isinstance(schema, list):
        return [_inline(item, root, expanding) for item in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    target = _local(root, ref) if isinstance(ref, str) and ref not in expanding else None
    if target is not None and all(k in ("$ref", "$defs", *_ANNOTATIONS) for k in schema):
        inlined = _inline(target, root, expanding | {str(ref)})
        if isinstance(inlined, dict):
            return {**{k: v for k, v in schema.items() if k != "$ref"}, **inlined}
        return inlined
    return {k: _inline(v, root, expanding) for k, v in schema.items()}


def _local(root: Any, ref: str) -> Any:
    """What `#/$defs/<name>` names in the root schema, or None."""
    prefix = "#/$defs/"
    if not ref.startswith(prefix) or not isinstance(root, dict):
        return None
    found = root.get("$defs", {}).get(ref[len(prefix) :].replace("~1", "/").replace("~0", "~"))
    return found if isinstance(found, (dict, bool)) else None


def _avro(current_json: str, new_json: str) -> str | None:
    writer, reader = avro.schema.parse(current_json), avro.schema.parse(new_json)
    checker = avro.compatibility.ReaderWriterCompatibilityChecker()  # type: ignore[no-untyped-call]
    result = checker.get_compatibility(reader, writer)
    if result.compatibility is avro.compatibility.SchemaCompatibilityType.compatible:
        return None
    kinds = ", ".join(sorted(i.value for i in result.incompatibilities))
    where = ", ".join(sorted(result.locations)) or "/"
    return f"at {where}: {kinds} ({', '.join(sorted(str(m) for m in result.messages))})"


def _relaxes(old: Any, new: Any, at: str) -> str | None:
    """None when `new` accepts everything `old` does (by the rule above), else where and why not."""
    if new is True or new == {} or old is False or old == new:
        return None
    if new is False or old is True or not isinstance(old, dict) or not isinstance(new, dict):
        return f"at {at or '/'}: the schema accepts less"
    for keyword, value in new.items():
        if keyword in _ANNOTATIONS:
            continue
        here = f"{at}/{keyword}"
        if keyword not in old:
            if keyword == "$defs" or (keyword == "properties" and old.get("additionalProperties") is False):
                continue  # definitions constrain nothing by themselves; properties no valid message had
            return f"at {here}: a constraint the current version does not have"
        problem = _keyword(keyword, old[keyword], value, here, old)
        if problem is not None:
            return problem
    return _dropped(old, new, at)


def _dropped(old: dict[str, Any], new: dict[str, Any], at: str) -> str | None:
    """Keywords the new version drops remove constraints, except where another keyword then applies instead: a
    property no longer named falls under `additionalProperties`, an item no longer in `prefixItems` under
    `items`."""
    if _constrains(new.get("additionalProperties")) or "unevaluatedProperties" in new:
        kept = new.get("properties", {})
        for name in old.get("properties", {}):
            if name not in kept:
                return f"at {at or '/'}/properties/{name}: no longer named, and other properties are constrained"
        if old.get("patternProperties", {}).keys() - new.get("patternProperties", {}).keys():
            return f"at {at or '/'}/patternProperties: a pattern removed, and other properties are constrained"
    if (_constrains(new.get("items")) or "unevaluatedItems" in new) and len(new.get("prefixItems", [])) < len(
        old.get("prefixItems", [])
    ):
        return f"at {at or '/'}/prefixItems: fewer, and the other items are constrained"
    return None


def _constrains(subschema: Any) -> bool:
    return subschema is not None and subschema is not True and subschema != {}


def _keyword(keyword: str, old: Any, new: Any, here: str, old_schema: dict[str, Any]) -> str | None:
    if old == new:
        return None
    if keyword in _SUBSCHEMA:
        return _relaxes(old, new, here)
    if keyword in _SUBSCHEMA_MAPS and isinstance(old, dict) and isinstance(new, dict):
        return _relaxes_map(keyword, old, new, here, old_schema)
    if keyword in _LOWER_IS_LOOSER or keyword in _HIGHER_IS_LOOSER:
        return _bound(keyword, old, new, here)
    check = _LISTS.get(keyword)
    if check is not None and isinstance(old, (list, str)) and isinstance(new, (list, str)):
        return check(old, new, here)
    return f"at {here}: changed"


def _bound(keyword: str, old: Any, new: Any, here: str) -> str | None:
    if not (_number(old) and _number(new)):
        return f"at {here}: changed"
    if keyword in _LOWER_IS_LOOSER:
        return None if new <= old else f"at {here}: raised from {old} to {new}"
    return None if new >= old else f"at {here}: lowered from {old} to {new}"


def _required(old: Any, new: Any, here: str) -> str | None:
    added = sorted(set(new) - set(old))
    return f"at {here}: newly required {', '.join(added)}" if added else None


def _enum(old: Any, new: Any, here: str) -> str | None:
    removed = [v for v in old if v not in new]
    return f"at {here}: no longer allows {json.dumps(removed)}" if removed else None


def _type(old: Any, new: Any, here: str) -> str | None:
    old_types = {old} if isinstance(old, str) else set(old)
    new_types = {new} if isinstance(new, str) else set(new)
    if "number" in new_types:
        new_types.add("integer")
    missing = sorted(old_types - new_types)
    return f"at {here}: no longer allows type {', '.join(missing)}" if missing else None


def _prefix_items(old: Any, new: Any, here: str) -> str | None:
    """Each listed item relaxed; fewer listed is fine here (the rest fall under `items`, see `_dropped`)."""
    if len(new) > len(old):
        return f"at {here}: more items listed"
    return next((p for n, s in enumerate(new) if (p := _relaxes(old[n], s, f"{here}/{n}"))), None)


def _any_of(old: Any, new: Any, here: str) -> str | None:
    """Every current alternative kept in its place (relaxed or not), and maybe more."""
    if len(new) < len(old):
        return f"at {here}: an alternative removed"
    return next((p for n, s in enumerate(old) if (p := _relaxes(s, new[n], f"{here}/{n}"))), None)


_LISTS = {"required": _required, "enum": _enum, "type": _type, "prefixItems": _prefix_items, "anyOf": _any_of}


def _relaxes_map(
    keyword: str, old: dict[str, Any], new: dict[str, Any], here: str, old_schema: dict[str, Any]
) -> str | None:
    for name, subschema in new.items():
        if name in old:
            problem = _relaxes(old[name], subschema, f"{here}/{name}")
        elif keyword == "$defs" or (keyword == "properties" and old_schema.get("additionalProperties") is False):
            problem = None  # a definition constrains nothing by itself; a property no valid message had
        else:
            problem = f"at {here}/{name}: a constraint the current version does not have"
        if problem is not None:
            return problem
    return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
