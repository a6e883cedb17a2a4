"""A body's validation error in plain words: msgspec's message ("Expected `str` of length <= 512 - at `$.key`")
said as a person would ("at most 512 characters - at `$.key`"). The ` - at `$.field`` part stays: clients and the
console place the message at that field. A message this does not know is passed on as it is."""

from __future__ import annotations

import re
from collections.abc import Callable

from mq.names import ADDRESSABLE_TOPIC_PATTERN, GROUP_PATTERN, SLUG_PATTERN, TOPIC_PATTERN

_KINDS = {
    "int": "a whole number",
    "float": "a number",
    "str": "text (a JSON string)",
    "bool": "true or false",
    "object": "a JSON object",
    "array": "a JSON array",
    "null": "null",
    "bytes": "base64 text",
    "datetime": "a time in RFC 3339 (2026-12-07T09:30:00Z)",
    "uuid": "an id (a UUID)",
}
_NAMED_FORMS = {
    TOPIC_PATTERN: "a topic name: 1 to 200 letters, digits, '.', '_' or '-', starting with a letter or digit",
    ADDRESSABLE_TOPIC_PATTERN: (
        "a topic name (or <topic>.dlq): 1 to 200 letters, digits, '.', '_' or '-', starting with a letter or digit"
    ),
    GROUP_PATTERN: "a consumer group name: 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit",
    SLUG_PATTERN: "a slug: 1 to 63 lowercase letters, digits or '-', starting with a letter or digit",
}
_BOUNDS = {">=": "at least", "<=": "at most", ">": "more than", "<": "less than"}


def _kind(name: str) -> str:
    return _KINDS.get(name, f"`{name}`")


def _length(m: re.Match[str]) -> str:
    kind, op, n = m[1], m[2], int(m[3])
    unit = {"str": "character", "array": "item", "object": "entry", "bytes": "byte"}.get(kind, "item")
    if kind == "str" and op == ">=" and n == 1:
        return "must not be empty"
    plural = "entries" if unit == "entry" else f"{unit}s"
    return f"must be {_BOUNDS[op]} {n} {unit if n == 1 else plural}"


def _bound(m: re.Match[str]) -> str:
    return f"must be {_kind(m[1])}, {_BOUNDS[m[2]]} {m[3]}"


def _pattern(m: re.Match[str]) -> str:
    pattern = m[1].replace("\\\\", "\\")  # msgspec shows the pattern as a Python literal would
    form = _NAMED_FORMS.get(pattern)
    return f"must be {form}" if form else f"is not in the accepted form (the pattern {pattern})"


_RULES: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = [
    (re.compile(r"^Expected `(\w+)` of length (>=|<=|>|<) (\d+)$"), _length),
    (re.compile(r"^Expected `(int|float)` (>=|<=|>|<) (-?[\d.e+]+)$"), _bound),
    (re.compile(r"^Expected `str` matching regex '(.*)'$"), _pattern),
    (re.compile(r"^Expected `([\w |]+)`, got `(\w+)`$"), lambda m: f"must be {_either(m[1])}, not {_kind(m[2])}"),
    (re.compile(r"^Object missing required field `(\w+)`$"), lambda m: f"`{m[1]}` is required"),
    (re.compile(r"^Object contains unknown field `(\w+)`$"), lambda m: f"`{m[1]}` is not a field of this request"),
    (re.compile(r"^Invalid enum value (.+)$"), lambda m: f"{m[1]} is not one of the accepted values"),
    (re.compile(r"^Invalid RFC3339 encoded datetime$"), lambda m: f"must be {_KINDS['datetime']}"),
    (re.compile(r"^Invalid base64 encoded string$"), lambda m: "must be base64 text"),
    (re.compile(r"^Invalid UUID$"), lambda m: f"must be {_KINDS['uuid']}"),
]


def _either(kinds: str) -> str:
    names = [_kind(k.strip()) for k in kinds.split("|")]
    return " or ".join(names)


def readable(message: str) -> str:
    """`message` (msgspec's) in plain words, its ` - at `$.field`` kept."""
    text, sep, where = message.partition(" - at `")
    for pattern, say in _RULES:
        m = pattern.match(text)
        if m:
            return f"{say(m)}{sep}{where}"
    return message
