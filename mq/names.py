"""Rules on names and text shared by the queue and the tenancy: topic names (and their dead-letter topics),
tenant slugs, and text Postgres can store. Pure functions and constants, no I/O."""

from __future__ import annotations

import re

from mq import errors

TOPIC_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$"
TOPIC_RE = re.compile(TOPIC_PATTERN)  # use with fullmatch: in Python `$` also matches before a final newline
#: A topic's dead-letter topic is the topic's name with this suffix.
DLQ_SUFFIX = ".dlq"
#: Every topic a route may address: a topic, or the dead-letter topic of one (up to 204 characters: the dead letters
#: of a 200-character topic must be listed, requeued and purged like any other's).
ADDRESSABLE_TOPIC_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}(\.dlq)?$"
ADDRESSABLE_TOPIC_RE = re.compile(ADDRESSABLE_TOPIC_PATTERN)
# A consumer group's name: the topic-name rule, 1..100 characters.
GROUP_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
GROUP_RE = re.compile(GROUP_PATTERN)

SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,62}$"
_SLUG_RE = re.compile(SLUG_PATTERN)


def is_topic(value: str) -> bool:
    """Whether `value` can name a topic."""
    return TOPIC_RE.fullmatch(value) is not None


def is_slug(value: str) -> bool:
    """Whether `value` can be a tenant's slug (fullmatch: in Python `$` also matches before a final newline).
    Lookups of anything else answer "no such tenant" without asking the database."""
    return _SLUG_RE.fullmatch(value) is not None


def check_text(value: str, field: str) -> None:
    """Postgres text holds neither NUL nor lone surrogates: refuse them as bad input, not a server error."""
    if "\x00" in value:
        raise errors.InvalidRequest(f"{field} must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise errors.InvalidRequest(f"{field} is not valid Unicode") from None


def check_json_text(value: object, field: str) -> None:
    """Every string of a JSON value, keys included, as `check_text` checks text: jsonb holds no NUL either (it
    refuses the escape `\\u0000`). Walked without recursion: depth is the caller's to limit."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            check_text(item, field)
        elif isinstance(item, dict):
            for key, inner in item.items():
                check_text(key, field)
                pending.append(inner)
        elif isinstance(item, list):
            pending.extend(item)


#: How deep a JSON value may nest (a request body, a payload checked against a schema): beyond it, decoders and
#: validators recurse once per level.
MAX_JSON_DEPTH = 64
# JSON strings (brackets inside them do not nest), and every byte but a bracket.
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))


def json_depth_exceeds(text: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether JSON `text` nests deeper than `limit`, read before decoding it (a decoder recurses per level), in C
    string operations only: text with at most `limit` opening brackets cannot; otherwise its strings are dropped,
    then its brackets alone are kept, and each pass deletes the innermost pairs: a value `limit` deep is gone after
    `limit` passes. (Malformed text is the decoder's to refuse.)"""
    if text.count(b"[") + text.count(b"{") <= limit:
        return False
    brackets = _JSON_STRING.sub(b"", text).translate(None, _NOT_BRACKETS)
    for _ in range(limit):
        inner = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if len(inner) == len(brackets):
            return False
        brackets = inner
    return bool(brackets)
