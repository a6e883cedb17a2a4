"""Topics as administrators read them: summaries, settings, pages of messages and series, bulk jobs and consumer
groups."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from api.views.messages import MessageView
from mq.queue.types import EffectiveConfig, TopicConfig, rfc3339
from mq.topics.types import (
    BulkAction,
    BulkJob,
    BulkJobState,
    ConsumerGroup,
    GroupStart,
    MessageFilter,
    MessagePage,
    Series,
    SeriesRange,
    TopicSettings,
)

_CONFIG_FIELDS = TopicConfig.__struct_fields__


class TopicSummaryView(msgspec.Struct):
    topic: str
    pending: int
    processing: int
    failed: int
    expired: int
    delayed: int
    oldest_pending_age_seconds: float
    config: TopicConfig | None
    paused: bool = False
    #: Messages per second enqueued and acked over the last minute (summed over every API instance).
    enqueue_rate: float = 0.0
    ack_rate: float = 0.0

    @classmethod
    def from_row(cls, row: Any) -> TopicSummaryView:
        """From a row of the topics' summary (`mq.topics.sql.TOPIC_SUMMARY`: counts, the config's fields with
        `configured`, `paused` and the rates)."""
        return cls(
            topic=row["topic"],
            pending=row["pending"],
            processing=row["processing"],
            failed=row["failed"],
            expired=row["expired"],
            delayed=row["delayed"],
            oldest_pending_age_seconds=row["oldest_pending_age_seconds"],
            config=TopicConfig(**{f: row[f] for f in _CONFIG_FIELDS}) if row["configured"] else None,
            paused=row["paused"],
            enqueue_rate=row["enqueue_rate"],
            ack_rate=row["ack_rate"],
        )


class MessagePageView(msgspec.Struct):
    items: list[MessageView]
    #: Give it back as `cursor` for the next page; null at the end.
    next_cursor: str | None
    #: Rows read to answer (a filter that matches little reads a bounded window and answers a short page).
    scanned: int

    @classmethod
    def of(cls, page: MessagePage) -> MessagePageView:
        return cls(MessageView.from_rows(page.rows, with_lease=False), page.next_cursor, page.scanned)


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

    @classmethod
    def of(cls, series: Series) -> SeriesView:
        points = [SeriesPointView(iso_epoch(p.at), *p[1:]) for p in series.points]
        return cls(series.topic, series.step_seconds, points, series.range)


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

    @classmethod
    def of(cls, settings: TopicSettings) -> TopicSettingsView:
        defaults, effective = ConfigValuesView.of(settings.defaults), ConfigValuesView.of(settings.effective)
        return cls(settings.topic, settings.paused, settings.overrides, defaults, effective)


class BulkJobView(msgspec.Struct):
    id: str
    topic: str
    action: BulkAction
    filter: MessageFilter
    #: `interrupted`: its instance stopped before it finished; start it again to go on.
    state: BulkJobState
    matched: int
    done: int
    skipped: int
    #: The skipped messages by the contract's code of why each was skipped: `{"key_conflict": 15}`.
    skipped_by: dict[str, int]
    error: str | None
    created_by: str
    #: Messages a second at most (null: as fast as it goes)
    rate_per_second: int | None
    created_at: str
    updated_at: str

    @classmethod
    def of(cls, job: BulkJob) -> BulkJobView:
        return cls(*job[:-2], created_at=iso_epoch(job.created_at), updated_at=iso_epoch(job.updated_at))


class ConsumerGroupView(msgspec.Struct):
    """A consumer group as created."""

    topic: str
    consumer_group: str
    start: GroupStart
    created_at: str

    @classmethod
    def of(cls, group: ConsumerGroup) -> ConsumerGroupView:
        return cls(group.topic, group.name, group.start, rfc3339(group.created_at) or "")


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

    @classmethod
    def from_rows(cls, rows: Sequence[Any]) -> ConsumerGroupsView:
        """From the rows of a topic's groups (`mq.topics.sql.GROUPS_LIST`: its columns are the stats' fields)."""
        stats = [ConsumerGroupStatsView(**dict(r)) for r in rows]
        return cls(items=[g.consumer_group for g in stats], groups=stats)


def iso_epoch(epoch: float) -> str:
    """Unix time as the contract prints a time (UTC, milliseconds)."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(epoch * 1000) % 1000:03d}Z"


class ConsumerView(msgspec.Struct):
    """One consumer holding a topic's messages now: the user whose dequeues took the leases, for a consumer group
    (null: the topic's own messages), how many it holds and since when (its oldest and newest lease)."""

    consumer: str
    consumer_group: str | None
    holding: int
    oldest_lease_at: str
    newest_lease_at: str


class ConsumersView(msgspec.Struct):
    """Who holds a topic's messages now, most first (lapsed leases are held by nobody)."""

    items: list[ConsumerView]

    @classmethod
    def from_rows(cls, rows: Sequence[Any]) -> ConsumersView:
        """From the rows of `mq.topics.sql.TOPIC_CONSUMERS` (its columns are the view's fields)."""
        return cls(items=[ConsumerView(**dict(r)) for r in rows])


class ErrorClassView(msgspec.Struct):
    """Failed messages that share the class of their last error (a traceback's last line, else the first, up to
    its first `:`), with the newest of them to open and its error."""

    error_class: str
    messages: int
    example_id: str
    example_error: str


class ErrorClassesView(msgspec.Struct):
    """A topic's failed messages (a DLQ's dead letters too) grouped by error class, most first; `scanned`: how many
    were read (the newest 20,000 at most)."""

    items: list[ErrorClassView]
    scanned: int

    @classmethod
    def from_rows(cls, rows: Sequence[Any]) -> ErrorClassesView:
        """From the rows of `mq.topics.sql.TOPIC_ERROR_CLASSES`."""
        items = [ErrorClassView(r["error_class"], r["messages"], r["example_id"], r["example_error"]) for r in rows]
        return cls(items=items, scanned=rows[0]["scanned"] if rows else 0)
