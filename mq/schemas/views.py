"""What the topic schemas' routes answer."""

from __future__ import annotations

from typing import Literal

import msgspec


class SchemaSummaryView(msgspec.Struct):
    """A topic's schema in force (the items of GET /api/topic-schemas, queue-ti's shape and the format)."""

    topic: str
    format: Literal["avro", "json_schema"]
    schema_json: str
    version: int
    updated_at: str


class SchemaListView(msgspec.Struct):
    items: list[SchemaSummaryView]


class SchemaView(msgspec.Struct):
    topic: str
    format: Literal["avro", "json_schema"]
    schema_json: str
    version: int
    updated_at: str
