"""What the message log's routes answer."""

from __future__ import annotations

import msgspec


class LogEntryView(msgspec.Struct, gc=False):
    id: str
    topic: str
    key: str | None
    payload: bytes
    metadata: msgspec.Raw | None
    priority: int
    retry_count: int
    created_at: str
    acked_at: str


class LogPageView(msgspec.Struct):
    items: list[LogEntryView]
    #: Give it back as `cursor` for the next page; null on the last page.
    next_cursor: str | None


class TrimmedView(msgspec.Struct):
    deleted: int


class ReplayedView(msgspec.Struct):
    replayed: int


class ArchiveRunView(msgspec.Struct):
    deleted: int
