"""What the queue takes and gives: plain msgspec structs, rendered to JSON as they are."""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec

TOPIC_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$"
TOPIC_RE = re.compile(TOPIC_PATTERN)
DLQ_SUFFIX = ".dlq"
STATUSES = ("pending", "processing", "failed", "expired")
MAX_KEY_LENGTH = 512  # with the topic, keeps a key-index entry under Postgres' btree tuple limit
MAX_ERROR_LENGTH = 4096  # a nack's error text is cut to this many characters
MAX_DELAY_SECONDS = 31_536_000
MAX_VISIBILITY_SECONDS = 43_200
MAX_WAIT_SECONDS = 20


def rfc3339(value: datetime | None) -> str | None:
    """UTC with milliseconds, as the contract says: 2026-11-22T04:38:10.123Z."""
    if value is None:
        return None
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class EnqueueItem(msgspec.Struct, frozen=True, gc=False):
    """A validated message to store."""

    topic: str
    payload: bytes
    metadata_json: str | None = None
    key: str | None = None
    delay_seconds: float = 0
    priority: int = 0


class MessageView(msgspec.Struct, omit_defaults=False, gc=False):
    """A message as the API returns it; `receipt` and `visibility_deadline` are set on processing messages."""

    id: str
    topic: str
    key: str | None
    payload: bytes
    metadata: msgspec.Raw | None
    status: str
    priority: int
    retry_count: int
    max_retries: int
    last_error: str | None
    created_at: str | None
    updated_at: str | None
    available_at: str | None
    expires_at: str | None
    original_topic: str | None
    dlq_moved_at: str | None
    receipt: str | None = None
    visibility_deadline: str | None = None

    @classmethod
    def from_row(cls, row: Any, *, with_lease: bool) -> MessageView:
        return cls.from_rows([row], with_lease=with_lease)[0]

    @classmethod
    def from_rows(cls, rows: Sequence[Any], *, with_lease: bool) -> list[MessageView]:
        """Build from rows of `MESSAGE_COLUMNS`; the lease is shown only to the consumer that holds it.

        Timestamps are formatted once per distinct value: the rows of one dequeue share `updated_at` and the
        lease deadline, and a batch's messages share `created_at`.
        """
        formatted: dict[datetime, str] = {}

        def stamp(value: datetime | None) -> str | None:
            if value is None:
                return None
            text = formatted.get(value)
            if text is None:
                text = formatted[value] = rfc3339(value)  # type: ignore[assignment]
            return text

        views = []
        for row in rows:
            processing = row["status"] == "processing"
            metadata = row["metadata"]
            available_at = stamp(row["available_at"])
            views.append(
                cls(
                    id=str(row["id"]),
                    topic=row["topic"],
                    key=row["key"],
                    payload=row["payload"],
                    metadata=msgspec.Raw(metadata.encode()) if metadata is not None else None,
                    status=row["status"],
                    priority=row["priority"],
                    retry_count=row["retry_count"],
                    max_retries=row["max_retries"],
                    last_error=row["last_error"],
                    created_at=stamp(row["created_at"]),
                    updated_at=stamp(row["updated_at"]),
                    available_at=available_at,
                    expires_at=stamp(row["expires_at"]),
                    original_topic=row["original_topic"],
                    dlq_moved_at=stamp(row["dlq_moved_at"]),
                    receipt=str(row["receipt"]) if with_lease and processing and row["receipt"] else None,
                    visibility_deadline=available_at if processing else None,
                )
            )
        return views


class TopicConfig(msgspec.Struct, frozen=True):
    """A topic's overrides; None falls back to the global default."""

    max_retries: int | None = None
    message_ttl_seconds: int | None = None
    max_depth: int | None = None
    throughput_limit: int | None = None
    visibility_timeout_seconds: int | None = None
    retry_backoff_seconds: list[int] | None = None
    dlq_enabled: bool | None = None


class EffectiveConfig(msgspec.Struct, frozen=True):
    """A topic's settings after falling back to the global defaults."""

    max_retries: int
    message_ttl_seconds: int
    max_depth: int | None
    throughput_limit: int | None
    visibility_timeout_seconds: int
    retry_backoff_seconds: list[int]
    dlq_enabled: bool


class TopicSummary(msgspec.Struct):
    topic: str
    pending: int
    processing: int
    failed: int
    expired: int
    delayed: int
    oldest_pending_age_seconds: float
    config: TopicConfig | None


class AckResult(msgspec.Struct):
    id: str
    code: str


class BatchAckOutcome(msgspec.Struct):
    acked: int
    failed: list[AckResult]


def parse_uuids(values: Sequence[str]) -> list[uuid.UUID | None]:
    """Many UUIDs at once (one C-level decode when all are valid); None for each that is not a UUID."""
    try:
        return list(msgspec.convert(values, list[uuid.UUID]))
    except msgspec.ValidationError:
        return [parse_uuid(v) for v in values]


def parse_uuid(value: str | None) -> uuid.UUID | None:
    """A UUID from text, or None for text that is not one (which then matches nothing)."""
    if value is None:
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        return None
