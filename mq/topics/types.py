"""What topic administration takes and gives: filters of a topic's messages, a page of them, a topic's series and
settings, bulk jobs and consumer groups (the API renders them: `api.views.topics`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, NamedTuple

import msgspec

from mq.names import GROUP_PATTERN, check_json_text, check_text
from mq.queue.types import EffectiveConfig, MessageRow, TopicConfig
from mq.queue.validation import check_depth

FilterStatus = Literal["pending", "delayed", "processing", "failed", "expired"]
BulkAction = Literal["delete", "retry", "requeue"]


class MessageFilter(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Which messages of a topic: a status as readers see it, a key, metadata containing an object, and (in a
    dead-letter topic) the consumer group whose delivery was dead-lettered."""

    status: FilterStatus | None = None
    key: str | None = None
    metadata: dict[str, Any] | None = None
    consumer_group: Annotated[str, msgspec.Meta(pattern=GROUP_PATTERN)] | None = None

    def check(self) -> None:
        if self.key is not None:
            check_text(self.key, "key")
        if self.metadata is not None:
            check_depth(self.metadata, "metadata")
            check_json_text(self.metadata, "metadata")


class MessagePage(NamedTuple):
    rows: list[MessageRow]
    #: Give it back as `cursor` for the next page; None at the end.
    next_cursor: str | None
    #: Rows read to answer (a filter that matches little reads a bounded window and answers a short page).
    scanned: int


SeriesRange = Literal["1h", "24h", "7d"]


class SeriesPoint(NamedTuple):
    """One step: the depth at its end (None: no sample), the oldest pending age, and messages per second enqueued,
    acked and moved to the dead-letter topic during it."""

    at: float  # the step's end, Unix time
    pending: int | None
    processing: int | None
    failed: int | None
    expired: int | None
    oldest_pending_age_seconds: float | None
    enqueue_rate: float
    ack_rate: float
    dead_letter_rate: float


class Series(NamedTuple):
    """`topic` None: the whole tenant."""

    topic: str | None
    step_seconds: int
    points: list[SeriesPoint]
    range: SeriesRange


#: Each range's span and step: the last hour from the 30-second samples, a day and a week from 5-minute rollups.
SERIES_RANGES: dict[str, tuple[int, int]] = {"1h": (3600, 30), "24h": (86400, 300), "7d": (7 * 86400, 3600)}


class TopicSettings(NamedTuple):
    """A topic's configuration as it stands: its own overrides (None: none), the global defaults, and the values in
    force (each override, else its default)."""

    topic: str
    paused: bool
    overrides: TopicConfig | None
    defaults: EffectiveConfig
    effective: EffectiveConfig


BulkJobState = Literal["running", "done", "failed", "cancelled", "interrupted"]


class BulkJob(NamedTuple):
    id: str
    topic: str
    action: BulkAction
    filter: MessageFilter
    #: `interrupted`: its instance stopped before it finished; start it again to go on.
    state: BulkJobState
    matched: int
    done: int
    skipped: int
    #: The skipped messages by the contract's code of why: {"key_conflict": 15}.
    skipped_by: dict[str, int]
    error: str | None
    created_by: str
    #: Messages a second at most (None: as fast as it goes)
    rate_per_second: int | None
    created_at: float  # Unix time
    updated_at: float


GroupStart = Literal["latest", "earliest"]


class ConsumerGroup(NamedTuple):
    """A consumer group as created."""

    topic: str
    name: str
    start: GroupStart
    created_at: datetime
