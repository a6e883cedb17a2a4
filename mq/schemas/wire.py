"""The frames between the API and its schema-check processes (`mq.schemas.sandbox`, `mq.schemas.checks`)."""

from __future__ import annotations

import msgspec

from mq.schemas.formats import SchemaFormat


class Check(msgspec.Struct, tag=True, array_like=True):
    """Payloads to check, each by the key of its schema; `schemas` holds the text of the keys the process has
    not been told yet."""

    schemas: list[tuple[int, SchemaFormat, str]]
    items: list[tuple[int, bytes]]


class Compile(msgspec.Struct, tag=True, array_like=True):
    """A schema to compile (a new version): only whether it compiles."""

    format: SchemaFormat
    schema: str


class Compare(msgspec.Struct, tag=True, array_like=True):
    """A new version against the current one (`compatibility: backward`)."""

    format: SchemaFormat
    current: str
    new: str


Request = Check | Compile | Compare


class Verdict(msgspec.Struct, array_like=True):
    """Why a payload does not fit (`mq.schemas.formats.Violation`)."""

    pointer: str
    reason: str


class Checked(msgspec.Struct, tag=True, array_like=True):
    verdicts: list[Verdict | None]


class Missing(msgspec.Struct, tag=True, array_like=True):
    """Keys the process does not hold (it started again): send their text."""

    keys: list[int]


class Compiled(msgspec.Struct, tag=True, array_like=True):
    error: str | None


class Compared(msgspec.Struct, tag=True, array_like=True):
    problem: str | None


Reply = Checked | Missing | Compiled | Compared
