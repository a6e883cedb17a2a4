"""What topic administration answers (`mq.topics.service.TopicAdmin`), as the API returns it."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from mq.names import GROUP_PATTERN, check_json_text, check_text
from mq.queue.types import EffectiveConfig, MessageView, TopicConfig
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


class MessagePageView(msgspec.Struct):
    items: list[MessageView]
    #: Give it back as `cursor` for the next page; null at the end.
    next_cursor: str | None
    #: Rows read to answer (a filter that matches little reads a bounded window and answers a short page).
    scanned: int


class SeriesPointView(msgspec.Struct):
    """One step: the depth at its end (null: no sample), the oldest pending age, and messages per second enqueued,
    acked and moved to the dead-letter topic during it."""

    at: str
    pending: int | None
    processing: int | None
    failed: int | None
    expired: int | None
    oldest_pending_age_seconds: float | None
    enqueue_rate: float
    ack_rate: float
    dead_letter_rate: float = 0.0


class SeriesView(msgspec.Struct):
    """`topic` null: the whole tenant."""

    topic: str | None
    step_seconds: int
    points: list[SeriesPointView]
    range: SeriesRange = "1h"


SeriesRange = Literal["1h", "24h", "7d"]
#: Each range's span and step: the last hour from the 30-second samples, a day and a week from 5-minute rollups.
SERIES_RANGES: dict[str, tuple[int, int]] = {"1h": (3600, 30), "24h": (86400, 300), "7d": (7 * 86400, 3600)}


class ConfigValuesView(msgspec.Struct):
    """Every setting of a topic with its value (`max_depth`, `throughput_limit`: null = unlimited)."""

    max_retries: int
    message_ttl_seconds: int
    max_depth: int | None
    throughput_limit: int | None
    visibility_timeout_seconds: int
    retry_backoff_seconds: list[int]
    dlq_enabled: bool
    expire_to_dlq: bool
    replayable: bool
    replay_window_seconds: int | None
    max_inflight: int | None

    @classmethod
    def of(cls, config: EffectiveConfig) -> ConfigValuesView:
        return cls(**{name: getattr(config, name) for name in cls.__struct_fields__})


class TopicSettingsView(msgspec.Struct):
    """A topic's configuration as it stands: its own overrides (null: none), the global defaults, and the values
    in force (each override, else its default)."""

    topic: str
    paused: bool
    overrides: TopicConfig | None
    defaults: ConfigValuesView
    effective: ConfigValuesView


class BulkJobView(msgspec.Struct):
    id: str
    topic: str
    action: BulkAction
    filter: MessageFilter
    #: `interrupted`: its instance stopped before it finished; start it again to go on.
    state: Literal["running", "done", "failed", "cancelled", "interrupted"]
    matched: int
    done: int
    skipped: int
    error: str | None
    created_by: str
    created_at: str
    updated_at: str


GroupStart = Literal["latest", "earliest"]


class ConsumerGroupView(msgspec.Struct):
    """A consumer group as created."""

    topic: str
    consumer_group: str
    start: GroupStart
    created_at: str


class ConsumerGroupStatsView(msgspec.Struct):
    """A consumer group with what it still owes: pending (a lapsed lease included), processing (leased now), its
    dead letters in the topic's DLQ, and how long its oldest available delivery has waited (its lag)."""

    consumer_group: str
    start: GroupStart
    created_at: str
    pending: int
    processing: int
    dead: int
    oldest_pending_age_seconds: float | None


class ConsumerGroupsView(msgspec.Struct):
    """`items`: the names in creation order (queue-ti's shape); `groups`: each with its counts."""

    items: list[str]
    groups: list[ConsumerGroupStatsView]
