"""What the queue takes and gives: validated items, resolved rows, configs, plans and results (the API renders
them: `api.views`)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple, get_args

import msgspec
from asyncpg.pgproto import pgproto

from mq.queue.admission import AdmitArguments

#: Deepest nesting of a message's `metadata` (objects and arrays).
MAX_METADATA_DEPTH = 64
MessageStatus = Literal["pending", "processing", "failed", "expired"]
STATUSES: tuple[MessageStatus, ...] = get_args(MessageStatus)
#: What a nack did: the message waits for another attempt, moved to its DLQ, or failed for good.
NackOutcome = Literal["retry", "dlq", "failed"]
#: Why one ack of a batch failed (the contract's codes of a single ack's 404 and 409).
AckFailureCode = Literal["message_not_found", "lease_lost"]
MAX_PRIORITY = 9
MAX_DEQUEUE_COUNT = 1000
MAX_KEY_LENGTH = 512  # with the topic, keeps a key-index entry under Postgres' btree tuple limit
MAX_ERROR_LENGTH = 4096  # a nack's error text is cut to this many characters
MAX_DELAY_SECONDS = 31_536_000
MAX_VISIBILITY_SECONDS = 43_200
MAX_WAIT_SECONDS = 20
# Bounds of a topic config's fields.
MAX_RETRIES_LIMIT = 1000
MAX_TTL_SECONDS = 31_536_000
#: The longest a message log keeps an entry: ten years.
MAX_REPLAY_WINDOW_SECONDS = 315_360_000
#: A topic's max_inflight at most.
MAX_INFLIGHT_LIMIT = 1_000_000
MAX_DEPTH_LIMIT = 2_000_000_000
MAX_THROUGHPUT_LIMIT = 1_000_000
MAX_BACKOFF_SECONDS = 86_400
MAX_BACKOFF_STEPS = 32


def rfc3339(value: datetime | None) -> str | None:
    """UTC with milliseconds, as the contract says: 2026-11-22T04:38:10.123Z."""
    if value is None:
        return None
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def rfc3339_precise(at: datetime) -> str:
    """UTC to the microsecond (a log entry's `acked_at`, so that `from_time` and `resume_from` resume exactly)."""
    return at.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class EnqueueItem(msgspec.Struct, frozen=True, gc=False):
    """A validated message to store."""

    topic: str
    payload: bytes
    metadata_json: str | None = None
    key: str | None = None
    delay_seconds: float = 0
    priority: int = 0

    def resolved(self, max_retries: int, ttl_seconds: int, grouped: bool = False) -> NewRow:
        """This message as the row to insert, with its topic's max_retries and TTL, and whether the topic has
        consumer groups."""
        return NewRow(
            self.topic,
            self.payload,
            self.metadata_json,
            self.key,
            self.delay_seconds,
            self.priority,
            max_retries,
            ttl_seconds,
            grouped,
        )


class NewRow(msgspec.Struct, frozen=True, gc=False):
    """A message resolved against its topic's configuration: one row to insert (`EnqueueItem.resolved`)."""

    topic: str
    payload: bytes
    metadata_json: str | None
    key: str | None
    delay_seconds: float
    priority: int
    max_retries: int
    ttl_seconds: int
    #: The topic has consumer groups: the row is stored with its deliveries (`mq.queue.sql`, "Consumer groups").
    grouped: bool = False
    #: The one consumer group the message is for (a replay's, `mq.history`); None: every group of its topic.
    consumer_group: str | None = None


class AdmittedTicks(NamedTuple):
    """Schedules' messages of one tenant and topic, past the checks made before their statement
    (`QueueService.admit_ticks`): the rows, the caps their statement must still pass (None: none), and how many
    waiting polls each message wakes (one per consumer group of the topic)."""

    tenant_id: int
    rows: list[NewRow]
    admit: AdmitArguments | None
    polls: int

    @property
    def plain(self) -> bool:
        """Nothing can refuse them and they mint nothing: keyless, uncapped, on a topic without groups."""
        return self.admit is None and not any(r.grouped or r.key is not None for r in self.rows)


#: A row of a message's columns, in order (`mq.queue.sql.common.message_columns`: ids and timestamps as the
#: contract prints them): what a dequeue, a page of messages and a message's detail give (`api.views` renders them).
MessageRow = Any
AttemptOutcome = Literal["processing", "acked", "nacked", "lapsed", "dead_lettered"]


class AckFailure(NamedTuple):
    """One ack of a batch that did not take, and why."""

    id: str
    code: AckFailureCode


class AckResults(NamedTuple):
    """What a batch of acks did: how many took, and each failure."""

    acked: int
    failed: list[AckFailure]


class QueueDefaults(msgspec.Struct, frozen=True):
    """The global defaults a topic without a config takes, as statements that route messages need them."""

    max_retries: int = 3
    message_ttl_seconds: int = 0
    dlq_enabled: bool = True
    expire_to_dlq: bool = False


class DeadLettered(msgspec.Struct, frozen=True):
    """A message a dequeue took but did not deliver: its lease had lapsed once too often (see
    `mq.queue.sql.dequeue`). `fate` is `dlq` or `failed`; `topic` the one it was taken from."""

    topic: str
    fate: str


class TopicConfig(msgspec.Struct, frozen=True):
    """A topic's overrides; None falls back to the global default."""

    max_retries: int | None = None
    message_ttl_seconds: int | None = None
    max_depth: int | None = None
    throughput_limit: int | None = None
    visibility_timeout_seconds: int | None = None
    retry_backoff_seconds: list[int] | None = None
    dlq_enabled: bool | None = None
    expire_to_dlq: bool | None = None
    #: Every acked message is kept in the topic's message log (contract, "Message history and replay").
    replayable: bool | None = None
    #: How long the log keeps an entry (None: until trimmed).
    replay_window_seconds: int | None = None
    #: At most this many messages processing with an unexpired lease at once (per consumer group); None: no limit.
    max_inflight: int | None = None


class DeliveryPlan(NamedTuple):
    """What a data-plane request's statement must do besides the common steps, resolved once per request from the
    cached topic config: the statements (`mq.queue.sql`) are composed per plan from named steps, and a new
    variant is a new field here and a new step there."""

    #: a consumer group's deliveries, not the topic's own messages
    grouped: bool = False
    #: the topic has `max_inflight`: leases are reserved, recorded and counted out (for a request by message id,
    #: whose topic is known only to the statement: some topic of the tenant has one)
    limited: bool = False
    #: acks keep the message in the message log: the topic is replayable (by message id: some topic of the tenant)
    logged: bool = False

    @property
    def name(self) -> str:
        """The plan in a statement's name: its fields that are set, `+`-joined, or `plain`."""
        return "+".join(field for field in self._fields if getattr(self, field)) or "plain"

    @classmethod
    def every(cls, **fields: bool) -> list[DeliveryPlan]:
        """Each plan over the fields named true (the others false)."""
        names = [name for name, wanted in fields.items() if wanted]
        plans = [cls()]
        for name in names:
            plans += [plan._replace(**{name: True}) for plan in plans]
        return plans


#: The plan of a topic without groups, limits or a log.
PLAIN = DeliveryPlan()


class Lease(NamedTuple):
    """A dequeue as the statements see it: what to lease, for whom, how long, and under which plan."""

    tenant_id: int
    topic: str
    #: how many at most
    limit: int
    #: seconds
    visibility: int
    #: the leasing user's name, kept as the lease's holder
    consumer: str | None
    #: the consumer group whose deliveries are leased (`plan.grouped`), or None
    group_id: int | None
    plan: DeliveryPlan
    #: that group's name, which each delivery's view names (`consumer_group`)
    group_name: str | None = None


class SchemaRef(msgspec.Struct, frozen=True, array_like=True):
    """The topic's schema in force: its version, format and text (`mq.schemas`)."""

    version: int
    format: Literal["avro", "json_schema"]
    schema_json: str


class EffectiveConfig(msgspec.Struct, frozen=True):
    """A topic's settings after falling back to the global defaults."""

    max_retries: int
    message_ttl_seconds: int
    max_depth: int | None
    throughput_limit: int | None
    visibility_timeout_seconds: int
    retry_backoff_seconds: list[int]
    dlq_enabled: bool
    expire_to_dlq: bool
    replayable: bool = False
    replay_window_seconds: int | None = None
    max_inflight: int | None = None
    #: Dequeues answer empty (enqueues are accepted) until the topic is resumed.
    paused: bool = False
    #: The topic's consumer groups, (name, id) in creation order: with any, it is consumed through them only, and
    #: its enqueues mint their deliveries.
    groups: tuple[tuple[str, int], ...] = ()
    #: The schema every enqueue into the topic is checked against; None: the topic has none.
    schema: SchemaRef | None = None

    @property
    def grouped(self) -> bool:
        return bool(self.groups)

    def group_id(self, name: str) -> int | None:
        return next((gid for gname, gid in self.groups if gname == name), None)


def parse_uuids(values: Sequence[str]) -> list[uuid.UUID | None]:
    """`parse_uuid` of each value."""
    return [parse_uuid(v) for v in values]


def parse_uuid(value: str | None) -> uuid.UUID | None:
    """A UUID from text (32 hex digits, dashes allowed), or None for text that is not one (which then matches
    nothing). asyncpg's C UUID: parsed in about a tenth of the time of `uuid.UUID`, and sent to Postgres as is."""
    if value is None:
        return None
    try:
        return pgproto.UUID(value)
    except ValueError:
        return None
