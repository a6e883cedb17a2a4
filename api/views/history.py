"""The message log: its pages, and what a trim, a replay and the archive reaper did."""

from __future__ import annotations

from typing import Any

import msgspec

from mq.pages import RowPage
from mq.queue.types import rfc3339, rfc3339_precise


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

    @classmethod
    def from_row(cls, row: Any) -> LogEntryView:
        """From a row of the log's page (`mq.history.sql.PAGE`)."""
        return cls(
            id=row["id"],
            topic=row["topic"],
            key=row["key"],
            payload=row["payload"],
            metadata=msgspec.Raw(row["metadata"].encode()) if row["metadata"] is not None else None,
            priority=row["priority"],
            retry_count=row["retry_count"],
            created_at=rfc3339(row["created_at"]) or "",
            acked_at=rfc3339_precise(row["acked_at"]),
        )


class LogPageView(msgspec.Struct):
    items: list[LogEntryView]
    #: Give it back as `cursor` for the next page; null on the last page.
    next_cursor: str | None

    @classmethod
    def of(cls, page: RowPage) -> LogPageView:
        return cls(items=[LogEntryView.from_row(r) for r in page.rows], next_cursor=page.next_cursor)


class TrimmedView(msgspec.Struct):
    deleted: int


class ReplayedView(msgspec.Struct):
    replayed: int


class ArchiveRunView(msgspec.Struct):
    deleted: int
