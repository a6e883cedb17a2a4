"""Topic schemas: each topic's in force, and one version."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from mq.queue.types import rfc3339


class SchemaSummaryView(msgspec.Struct):
    """A topic's schema in force (the items of GET /api/topic-schemas, queue-ti's shape and the format)."""

    topic: str
    format: Literal["avro", "json_schema"]
    schema_json: str
    version: int
    updated_at: str


class SchemaListView(msgspec.Struct):
    items: list[SchemaSummaryView]

    @classmethod
    def from_rows(cls, rows: Sequence[Any]) -> SchemaListView:
        return cls(items=[SchemaSummaryView(*_fields(r)) for r in rows])


class SchemaView(msgspec.Struct):
    topic: str
    format: Literal["avro", "json_schema"]
    schema_json: str
    version: int
    updated_at: str

    @classmethod
    def from_row(cls, row: Any) -> SchemaView:
        """From a row of a schema version (`mq.schemas.sql`'s columns)."""
        return cls(*_fields(row))


def _fields(row: Any) -> tuple[Any, ...]:
    return row["topic"], row["format"], row["schema_json"], row["version"], rfc3339(row["created_at"]) or ""
