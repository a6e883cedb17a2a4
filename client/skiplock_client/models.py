"""The API's bodies as typed structs (msgspec: it decodes base64 payloads to bytes and validates types as it parses).

Field names and types follow the OpenAPI document the server serves; `tests/client/test_models.py` compares each
struct with its schema there, so they cannot drift apart. Unknown fields in answers are ignored: a newer server
may add some.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

import msgspec

T = TypeVar("T")

MessageStatus = Literal["pending", "processing", "failed", "expired"]
NackOutcome = Literal["retry", "dlq", "failed"]
Role = Literal["platform_admin", "tenant_admin", "member"]
Action = Literal["produce", "consume", "read"]
TenantStatus = Literal["active", "suspended"]


class Attempt(msgspec.Struct, frozen=True):
    """One delivery of a message (`Client.message`): when and by whom it was leased, and how it ended."""

    attempt: int
    leased_at: str | None
    leased_by: str | None
    outcome: Literal["processing", "acked", "nacked", "lapsed", "dead_lettered"]
    error: str | None
    ended_at: str | None


class Delivery(msgspec.Struct, frozen=True):
    """A consumer group's delivery of a message it still owes."""

    consumer_group: str
    status: str
    retry_count: int


class StoryEvent(msgspec.Struct, frozen=True):
    """One thing that happened to a message (`Client.story`). `kind`: enqueued, attempt (with `outcome`), dead_lettered,
    requeued, retried, acked, expired, replayed, deleted. `at` is None for what is known but not timed (a consumer
    group's ack of a message other groups still owed); `message_id` names the other message it concerns."""

    at: str | None
    kind: str
    consumer_group: str | None = None
    topic: str | None = None
    attempt: int | None = None
    outcome: str | None = None
    ended_at: str | None = None
    by: str | None = None
    error: str | None = None
    message_id: str | None = None
    note: str | None = None


class StoryGroup(msgspec.Struct, frozen=True):
    """What one consumer group did with a message: pending, processing, acked, dead_lettered, not_owed, expired."""

    consumer_group: str
    state: str
    retry_count: int | None = None
    dead_letter_id: str | None = None


class Message(msgspec.Struct, frozen=True):
    """A message; one from a dequeue also carries its lease (`receipt`, `visibility_deadline`)."""

    id: str
    topic: str
    key: str | None
    payload: bytes
    metadata: dict[str, Any] | None
    status: MessageStatus
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
    #: The consumer group whose delivery was dead-lettered: set on that group's copy in the DLQ.
    consumer_group: str | None = None
    #: The most recent deliveries, oldest first: only `Client.message` (one message) fills it.
    attempts: tuple[Attempt, ...] = ()
    #: Each consumer group's delivery of a message groups still owe (`Client.message` only); None otherwise.
    deliveries: tuple[Delivery, ...] | None = None

    def text(self, encoding: str = "utf-8") -> str:
        """The payload decoded as text."""
        return self.payload.decode(encoding)

    def json(self) -> Any:
        """The payload parsed as JSON."""
        return msgspec.json.decode(self.payload)

    def decode(self, model: type[T]) -> T:
        """The payload parsed as JSON into `model` (a msgspec Struct, a dataclass, a TypedDict, a pydantic model)."""
        validate = getattr(model, "model_validate_json", None)  # pydantic v2
        if validate is not None:
            return validate(self.payload)  # type: ignore[no-any-return]
        return msgspec.json.decode(self.payload, type=model)


class AuditEntry(msgspec.Struct, frozen=True):
    """Who (`actor`) did what (`action`, e.g. `topic.purge`) to which object (`target`), and when."""

    id: str
    at: str
    actor: str
    tenant: str | None
    action: str
    target: str
    details: dict[str, Any] | None
    request_id: str | None


class AuditPage(msgspec.Struct, frozen=True):
    """Newest first; pass `next_cursor` to `Client.audit` for older entries (None: there are none)."""

    items: list[AuditEntry]
    next_cursor: str | None


class Page(msgspec.Struct, Generic[T], frozen=True):
    items: list[T]
    total: int
    limit: int
    offset: int


class ConsumerGroup(msgspec.Struct, frozen=True):
    """A consumer group as created."""

    topic: str
    consumer_group: str
    start: str
    created_at: str


class ConsumerGroupStats(msgspec.Struct, frozen=True):
    """A consumer group with what it still owes, its dead letters and its lag."""

    consumer_group: str
    start: str
    created_at: str
    pending: int
    processing: int
    dead: int
    oldest_pending_age_seconds: float | None


class ConsumerGroups(msgspec.Struct, frozen=True):
    items: list[str]
    groups: list[ConsumerGroupStats]


class TopicConfig(msgspec.Struct, frozen=True, omit_defaults=True):
    """A topic's overrides; None falls back to the server's default."""

    max_retries: int | None = None
    message_ttl_seconds: int | None = None
    max_depth: int | None = None
    throughput_limit: int | None = None
    visibility_timeout_seconds: int | None = None
    retry_backoff_seconds: list[int] | None = None
    dlq_enabled: bool | None = None
    expire_to_dlq: bool | None = None
    replayable: bool | None = None
    replay_window_seconds: int | None = None
    #: At most this many messages processing at once; None: no limit.
    max_inflight: int | None = None


class TopicConfigView(TopicConfig, frozen=True):
    topic: str = ""


SchemaFormat = Literal["avro", "json_schema"]


class TopicSchemaSummary(msgspec.Struct, frozen=True):
    """A topic's schema in force: its format, text and version."""

    topic: str
    format: SchemaFormat
    schema_json: str
    version: int
    updated_at: str


class TopicSchema(msgspec.Struct, frozen=True):
    """One version of a topic's schema, with its text (`schema()` parses it)."""

    topic: str
    format: SchemaFormat
    schema_json: str
    version: int
    updated_at: str

    def schema(self) -> Any:
        return msgspec.json.decode(self.schema_json)


class Topic(msgspec.Struct, frozen=True):
    """A topic's counts by status, and its config if it has one."""

    topic: str
    pending: int
    processing: int
    failed: int
    expired: int
    delayed: int
    oldest_pending_age_seconds: float
    config: TopicConfig | None
    #: Dequeues answer empty until the topic is resumed.
    paused: bool = False
    #: Messages per second over the last minute.
    enqueue_rate: float = 0.0
    ack_rate: float = 0.0


class StatRow(msgspec.Struct, frozen=True):
    topic: str
    status: MessageStatus
    count: int


class AckFailure(msgspec.Struct, frozen=True):
    id: str
    code: str


class BatchAck(msgspec.Struct, frozen=True):
    acked: int
    failed: list[AckFailure]


class Quotas(msgspec.Struct, frozen=True, omit_defaults=True):
    max_topics: int | None = None
    max_messages: int | None = None
    max_payload_bytes: int | None = None
    enqueue_rate: int | None = None
    max_schedules: int | None = None


class TenantUsage(msgspec.Struct, frozen=True):
    """What a tenant holds, as the server last counted it (every few seconds)."""

    topics: int = 0
    messages: int = 0


class Tenant(msgspec.Struct, frozen=True):
    slug: str
    name: str
    status: TenantStatus
    quotas: Quotas
    created_at: str
    usage: TenantUsage = TenantUsage()


class User(msgspec.Struct, frozen=True):
    id: str
    username: str
    role: Role
    tenant: str | None
    created_at: str
    updated_at: str


class Grant(msgspec.Struct, frozen=True):
    id: str
    action: Action
    topic_pattern: str
    created_at: str
    #: On a consume grant: its holder consumes the matching topics only as this group.
    consumer_group: str | None = None


class MyGrant(msgspec.Struct, frozen=True):
    action: Action
    topic_pattern: str
    consumer_group: str | None = None


class Me(msgspec.Struct, frozen=True):
    username: str
    role: Role
    tenant: str | None
    #: A member's grants; empty for the admin roles.
    grants: tuple[MyGrant, ...] = ()


class Schedule(msgspec.Struct, frozen=True):
    schedule: str
    active: bool
    #: When it next runs (UTC, RFC 3339), none when off.
    next_runs: tuple[str, ...] = ()


class Item(msgspec.Struct, frozen=True, omit_defaults=True):
    """One message of `send_batch`: a payload (bytes, str or a JSON-serialisable value) and its options."""

    payload: Any
    key: str | None = None
    metadata: dict[str, Any] | None = None
    delay: float = 0
    priority: int = 0
    topic: str | None = None


# --- wire shapes of requests and small answers (internal) ----------------------------------------------------------


class EnqueueBody(msgspec.Struct, omit_defaults=True):
    payload: bytes
    topic: str | None = None
    metadata: dict[str, Any] | None = None
    key: str | None = None
    delay_seconds: float = 0
    priority: int = 0


class BatchBody(msgspec.Struct, omit_defaults=True):
    messages: list[EnqueueBody]
    topic: str | None = None


class AckItem(msgspec.Struct, omit_defaults=True):
    id: str
    receipt: str | None = None
    consumer_group: str | None = None


class BatchAckBody(msgspec.Struct):
    acks: list[AckItem]


class IdView(msgspec.Struct):
    id: str


class IdsView(msgspec.Struct):
    ids: list[str]


class DequeueView(msgspec.Struct):
    messages: list[Message]


class NackView(msgspec.Struct):
    outcome: NackOutcome


class ExtendView(msgspec.Struct):
    visibility_deadline: str


class PeriodicSchedule(msgspec.Struct, frozen=True):
    """A periodic message: at each tick of `cron` in `timezone` the workers enqueue it once into `topic`
    (`metadata` gains `skiplock_schedule` and `skiplock_tick`). `last_error`: why the last tick was refused."""

    name: str
    topic: str
    cron: str
    timezone: str
    payload: bytes
    key: str | None
    metadata: dict[str, Any] | None
    priority: int
    enabled: bool
    next_run_at: str
    last_run_at: str | None
    last_error: str | None


class LogEntry(msgspec.Struct, frozen=True):
    """A message kept in a replayable topic's message log when it was acked."""

    id: str
    topic: str
    key: str | None
    payload: bytes
    metadata: dict[str, Any] | None
    priority: int
    retry_count: int
    created_at: str
    #: To the microsecond: a `from_time` that resumes exactly here.
    acked_at: str

    def text(self, encoding: str = "utf-8") -> str:
        return self.payload.decode(encoding)


class LogPage(msgspec.Struct, frozen=True):
    items: list[LogEntry]
    next_cursor: str | None


class ReplayedView(msgspec.Struct):
    replayed: int


class CountView(msgspec.Struct):
    """`{requeued: n}`, `{deleted: n}`, `{expired: n}`: whichever the route answers."""

    requeued: int = 0
    deleted: int = 0
    expired: int = 0


class ItemsView(msgspec.Struct, Generic[T]):
    items: list[T]


class StatsView(msgspec.Struct):
    topics: list[StatRow]


class VersionView(msgspec.Struct):
    version: str


def to_bytes(payload: Any) -> bytes:
    """A payload as bytes: bytes as they are, str as UTF-8, anything else as JSON."""
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, bytearray | memoryview):
        return bytes(payload)
    if isinstance(payload, str):
        return payload.encode()
    dump = getattr(payload, "model_dump_json", None)  # a pydantic v2 model
    if dump is not None:
        return dump().encode()  # type: ignore[no-any-return]
    return msgspec.json.encode(payload)


def json_schema_of(model: type[Any]) -> dict[str, Any]:
    """The JSON Schema (2020-12) of a model: a pydantic v2 model's own, or msgspec's for a Struct, a dataclass, a
    TypedDict and the like."""
    own = getattr(model, "model_json_schema", None)
    if own is not None:
        return own()  # type: ignore[no-any-return]
    return msgspec.json.schema(model)


class MessageStory(msgspec.Struct, frozen=True):
    """A message's whole story (`Client.story`): its events oldest first, what each consumer group did with it, and
    the row as stored now (None once it is not: `state` is then acked, deleted or gone)."""

    id: str
    topic: str
    state: Literal["stored", "acked", "deleted", "gone"]
    message: Message | None
    acked_at: str | None
    events: tuple[StoryEvent, ...]
    consumer_groups: tuple[StoryGroup, ...] | None
    replay_of: str | None
    dead_letter_of: str | None


class LeaseHolder(msgspec.Struct, frozen=True):
    """A consumer holding a topic's messages now (`Client.consumers`): the user whose dequeues took the leases."""

    consumer: str
    consumer_group: str | None
    holding: int
    oldest_lease_at: str
    newest_lease_at: str


class ErrorClass(msgspec.Struct, frozen=True):
    """Failed messages sharing the class of their last error (`Client.error_classes`), with the newest of them."""

    error_class: str
    messages: int
    example_id: str
    example_error: str


class Consumers(msgspec.Struct, frozen=True):
    items: tuple[LeaseHolder, ...]


class ErrorClasses(msgspec.Struct, frozen=True):
    items: tuple[ErrorClass, ...]
    scanned: int


class BulkJob(msgspec.Struct, frozen=True):
    """A server-side job acting on every message of a topic a filter matches (`Client.start_bulk_job`,
    `Client.redrive`): its progress (`matched`, `done`, `skipped` and why, `skipped_by`) and its pace."""

    id: str
    topic: str
    action: Literal["delete", "retry", "requeue"]
    filter: dict[str, Any]
    state: Literal["running", "done", "failed", "cancelled", "interrupted"]
    matched: int
    done: int
    skipped: int
    skipped_by: dict[str, int]
    error: str | None
    created_by: str
    rate_per_second: int | None
    created_at: str
    updated_at: str
