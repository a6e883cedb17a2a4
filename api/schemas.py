"""Every request and response body of the API, in one place: the OpenAPI document is built from these.

Requests end in `Body` and refuse unknown fields (`Strict`); responses end in `View`, and lists of them come in
one generic `Page` (paged) or a `...ListView`. Bounds, statuses, roles and actions are the core's constants and
`Literal` types, never restated numbers. The views built from what the core gives (`api.views`: messages, topic
summaries, pages, series, bulk jobs) are re-exported here, and `TopicConfig`, the core's own, is the wire shape.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Generic, Literal, TypeVar

import msgspec
from litestar.params import KwargDefinition
from msgspec import Meta

from api.validation_text import readable
from api.views.messages import AckFailureView, BatchAckView, MessageView
from api.views.topics import BulkJobView, MessagePageView, SeriesPointView, SeriesView, TopicSummaryView
from mq.cron import MAX_CRON_LENGTH, MAX_SCHEDULE_LENGTH
from mq.names import ADDRESSABLE_TOPIC_PATTERN, GROUP_PATTERN, SLUG_PATTERN, TOPIC_PATTERN
from mq.queue.types import (
    MAX_BACKOFF_SECONDS,
    MAX_BACKOFF_STEPS,
    MAX_DELAY_SECONDS,
    MAX_DEPTH_LIMIT,
    MAX_DEQUEUE_COUNT,
    MAX_INFLIGHT_LIMIT,
    MAX_KEY_LENGTH,
    MAX_PRIORITY,
    MAX_REPLAY_WINDOW_SECONDS,
    MAX_RETRIES_LIMIT,
    MAX_THROUGHPUT_LIMIT,
    MAX_TTL_SECONDS,
    MAX_VISIBILITY_SECONDS,
    MAX_WAIT_SECONDS,
    MessageStatus,
    NackOutcome,
    TopicConfig,
)
from mq.quotas import MAX_BIGINT, MAX_ENQUEUE_RATE, MAX_TOPICS_LIMIT
from mq.tenancy.grants import MAX_PATTERN_LENGTH, Action, AssignableRole, Role, TenantStatus
from mq.tenancy.passwords import MIN_PASSWORD_LENGTH
from mq.tenancy.service import MAX_PASSWORD_LENGTH, MAX_TENANT_NAME_LENGTH
from mq.topics.types import BulkAction, MessageFilter

__all__ = [
    "AckFailureView",
    "BatchAckView",
    "BulkJobView",
    "MessagePageView",
    "MessageView",
    "SeriesPointView",
    "SeriesView",
    "TopicConfig",
    "TopicSummaryView",
]

T = TypeVar("T")

Topic = Annotated[str, Meta(pattern=TOPIC_PATTERN, description="Topic name")]
#: A topic or its dead-letter topic (`<topic>.dlq`), as dequeue may name.
AddressableTopic = Annotated[
    str, Meta(pattern=ADDRESSABLE_TOPIC_PATTERN, description="Topic name, or a topic's dead-letter topic (<topic>.dlq)")
]
Delay = Annotated[float, Meta(ge=0, le=MAX_DELAY_SECONDS, description="Seconds before the message is visible")]
Priority = Annotated[int, Meta(ge=0, le=MAX_PRIORITY, description="0..9, higher is dequeued first")]
Visibility = Annotated[int, Meta(ge=1, le=MAX_VISIBILITY_SECONDS)]
Payload = Annotated[bytes, Meta(description="Base64 of the raw payload bytes")]
GroupName = Annotated[str, Meta(pattern=GROUP_PATTERN, description="A consumer group of the topic")]
Key = Annotated[str, Meta(min_length=1, max_length=MAX_KEY_LENGTH, description="Upsert key")]
Password = Annotated[str, Meta(min_length=MIN_PASSWORD_LENGTH, max_length=MAX_PASSWORD_LENGTH)]
#: Largest page a list answers.
MAX_PAGE_LIMIT = 200
#: Largest `offset` a page accepts: 2^53 - 1, exact in a JSON number (OpenAPI documents it as one; a bigint
#: bound would print as 9.223372036854776e18 and let larger values look valid).
MAX_OFFSET = 2**53 - 1


class Strict(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    pass


class EnqueueBody(Strict):
    topic: Topic
    payload: Payload
    metadata: dict[str, Any] | None = None
    key: Key | None = None
    delay_seconds: Delay = 0
    priority: Priority = 0


class BatchItem(Strict):
    payload: Payload
    topic: Topic | None = None
    metadata: dict[str, Any] | None = None
    key: Key | None = None
    delay_seconds: Delay = 0
    priority: Priority = 0


class BatchEnqueueBody(Strict):
    messages: Annotated[list[BatchItem], Meta(min_length=1)]
    topic: Topic | None = None


class _LooseBatch(Strict):
    messages: Annotated[list[Any], Meta(min_length=1)]
    topic: str | None = None


_batch_decoder = msgspec.json.Decoder(BatchEnqueueBody)
_loose_batch_decoder = msgspec.json.Decoder(_LooseBatch)


def decode_batch(raw: bytes) -> BatchEnqueueBody:
    """One typed decode for the whole batch; only when it fails, item by item, to find every bad item: each stands in
    the batch as its decoder's message (a `str`, which `mq.commands.messages` reports as that item's problem)."""
    try:
        return _batch_decoder.decode(raw)
    except msgspec.ValidationError:
        loose = _loose_batch_decoder.decode(raw)  # raises for problems outside the items
    items: list[Any] = []
    for entry in loose.messages:
        try:
            items.append(msgspec.convert(entry, BatchItem))
        except msgspec.ValidationError as exc:
            items.append(readable(str(exc)))
    return BatchEnqueueBody(messages=items, topic=loose.topic)


class IdView(msgspec.Struct):
    id: str


class IdsView(msgspec.Struct):
    ids: list[str]


class DequeueBody(Strict):
    topic: AddressableTopic
    count: Annotated[
        int, Meta(ge=1, le=MAX_DEQUEUE_COUNT, description="1..1000 (SKIPLOCK_MAX_BATCH_SIZE may lower it)")
    ] = 1
    visibility_timeout_seconds: Visibility | None = None
    wait_seconds: Annotated[float, Meta(ge=0, le=MAX_WAIT_SECONDS)] = 0
    consumer_group: GroupName | None = None


class ConsumerGroupBody(Strict):
    consumer_group: GroupName
    start: Literal["latest", "earliest"] = "latest"


class DequeueView(msgspec.Struct):
    messages: list[MessageView]


class AckBody(Strict):
    receipt: str | None = None
    consumer_group: GroupName | None = None


class AckItem(Strict):
    id: str
    receipt: str | None = None
    consumer_group: GroupName | None = None


class BatchAckBody(Strict):
    acks: Annotated[list[AckItem], Meta(min_length=1)]


class NackBody(Strict):
    error: str | None = None
    receipt: str | None = None
    delay_seconds: Delay | None = None
    consumer_group: GroupName | None = None
    #: Saved state on a deferral: merged into the message's metadata before the retry.
    metadata: dict[str, Any] | None = None


class NackView(msgspec.Struct):
    outcome: NackOutcome


class ExtendBody(Strict):
    visibility_timeout_seconds: Visibility
    receipt: str | None = None
    consumer_group: GroupName | None = None


class ExtendView(msgspec.Struct):
    visibility_deadline: str


class PurgeBody(Strict):
    statuses: list[MessageStatus] | None = None


class Page(msgspec.Struct, Generic[T]):
    """A page of a list, newest or sorted first: `total` items match, `limit` from `offset` are here."""

    items: list[T]
    total: int
    limit: int
    offset: int


#: A page of MessageViews, under its own name in the OpenAPI document (a generic's default name holds module paths).
MessagePage = Annotated[Page[MessageView], KwargDefinition(schema_component_key="MessagePage")]


class TopicListView(msgspec.Struct):
    items: list[TopicSummaryView]


class StatRowView(msgspec.Struct):
    topic: str
    status: MessageStatus
    count: int


class StatsView(msgspec.Struct):
    topics: list[StatRowView]


class RequeuedView(msgspec.Struct):
    requeued: int


class DeletedView(msgspec.Struct):
    deleted: int


class ExpiredView(msgspec.Struct):
    expired: int


class TopicConfigView(TopicConfig, frozen=True):
    """A topic's config with its topic's name (GET and PUT of one, and the items of GET /api/topic-configs: queue-ti's
    clients read `topic` from each)."""

    topic: str = ""


class TopicConfigListView(msgspec.Struct):
    items: list[TopicConfigView]


# --- topic configs ------------------------------------------------------------------------------------------------


class TopicConfigBody(Strict):
    """PUT /api/topic-configs/{topic}: the whole config; null or omitted = the global default."""

    #: The path's topic again (queue-ti's clients send it); another topic is refused.
    topic: str | None = None
    max_retries: Annotated[int, Meta(ge=0, le=MAX_RETRIES_LIMIT)] | None = None
    message_ttl_seconds: Annotated[int, Meta(ge=0, le=MAX_TTL_SECONDS)] | None = None
    max_depth: Annotated[int, Meta(ge=1, le=MAX_DEPTH_LIMIT)] | None = None
    throughput_limit: Annotated[int, Meta(ge=1, le=MAX_THROUGHPUT_LIMIT)] | None = None
    visibility_timeout_seconds: Visibility | None = None
    retry_backoff_seconds: (
        Annotated[list[Annotated[int, Meta(ge=0, le=MAX_BACKOFF_SECONDS)]], Meta(max_length=MAX_BACKOFF_STEPS)] | None
    ) = None
    dlq_enabled: bool | None = None
    expire_to_dlq: bool | None = None
    #: Keep every acked message in the topic's message log (replay, history).
    replayable: bool | None = None
    #: How long the log keeps an entry; null = until trimmed.
    replay_window_seconds: Annotated[int, Meta(ge=1, le=MAX_REPLAY_WINDOW_SECONDS)] | None = None
    #: At most this many messages processing at once (per consumer group); null = no limit.
    max_inflight: Annotated[int, Meta(ge=1, le=MAX_INFLIGHT_LIMIT)] | None = None


class ReplayBody(Strict):
    """POST /api/topics/{topic}/replay: which logged messages to enqueue again (all, without bounds)."""

    from_time: datetime | None = None
    to_time: datetime | None = None
    key: Annotated[str, Meta(min_length=1, max_length=MAX_KEY_LENGTH)] | None = None
    consumer_group: GroupName | None = None


#: A schema's text at most (a JSON Schema or an Avro schema is a few kilobytes; this is generous).
MAX_SCHEMA_LENGTH = 262_144


class SchemaBody(Strict):
    """PUT /api/topic-schemas/{topic}: the next version of the topic's schema."""

    schema_json: Annotated[str, Meta(min_length=1, max_length=MAX_SCHEMA_LENGTH)]
    format: Literal["avro", "json_schema"] = "avro"
    compatibility: Literal["none", "backward"] = "none"


class PeriodicScheduleBody(Strict):
    """PUT /api/schedules/{name}: the message to enqueue at each tick of `cron` in `timezone`."""

    topic: Topic
    cron: Annotated[str, Meta(min_length=1, max_length=MAX_CRON_LENGTH)]
    payload: Payload
    timezone: Annotated[str, Meta(min_length=1, max_length=64)] = "UTC"
    key: Key | None = None
    metadata: dict[str, Any] | None = None
    priority: Priority = 0
    enabled: bool = True


class TokenLoginBody(msgspec.Struct):
    """POST /api/auth/login (queue-ti's login): a user's credentials. Unknown fields are ignored, as queue-ti's
    server ignores them."""

    username: Annotated[str, Meta(min_length=1, max_length=200)]
    password: Annotated[str, Meta(min_length=1, max_length=MAX_PASSWORD_LENGTH)]


class TokenView(msgspec.Struct):
    """A bearer token: send it as `Authorization: Bearer <token>` (REST and gRPC) until it expires; refresh it
    before (`POST /api/auth/refresh`)."""

    token: str


class PasswordChangeBody(Strict):
    """PUT /api/auth/password: the caller's current password, and the new one."""

    current_password: Annotated[str, Meta(max_length=MAX_PASSWORD_LENGTH)]
    new_password: Password


class PasswordBody(Strict):
    """PUT /api/admin/platform-admins/{username}/password."""

    password: Password


class ScheduleBody(Strict):
    """PUT /api/admin/delete-reaper/schedule: a 5-field cron in UTC, "" = off."""

    schedule: Annotated[str, Meta(max_length=MAX_SCHEDULE_LENGTH)]


class ScheduleView(msgspec.Struct):
    schedule: str
    active: bool
    #: The next times it fires (UTC), none when off.
    next_runs: list[str] = msgspec.field(default_factory=list)


class JobRunView(msgspec.Struct):
    job: str
    finished_at: str
    duration_seconds: float
    rows: int


class MaintenanceView(msgspec.Struct):
    """The scheduled jobs' last runs (whichever instance ran them) and the delete reaper's schedule."""

    jobs: list[JobRunView]
    delete_reaper: ScheduleView


# --- tenants and users ---------------------------------------------------------------------------------------------

TenantName = Annotated[str, Meta(min_length=1, max_length=MAX_TENANT_NAME_LENGTH)]


class Quotas(Strict, omit_defaults=True):
    """Per-tenant limits; each is optional (absent: no limit)."""

    max_topics: Annotated[int, Meta(ge=0, le=MAX_TOPICS_LIMIT)] | None = None
    max_messages: Annotated[int, Meta(ge=0, le=MAX_BIGINT)] | None = None
    max_payload_bytes: Annotated[int, Meta(ge=0, le=MAX_BIGINT)] | None = None
    enqueue_rate: Annotated[int, Meta(ge=1, le=MAX_ENQUEUE_RATE)] | None = None
    max_schedules: (
        Annotated[
            int,
            Meta(
                ge=0,
                le=MAX_TOPICS_LIMIT,
                description="Schedules (periodic messages) the tenant may have; absent: the platform's default "
                "(max_schedules_per_tenant, 1,000).",
            ),
        ]
        | None
    ) = None


class TenantCreateBody(Strict):
    slug: Annotated[str, Meta(description=f"Lower-case letters, digits and '-': {SLUG_PATTERN}")]
    name: TenantName
    quotas: Quotas | None = None


class TenantUpdateBody(Strict):
    name: TenantName | None = None
    status: TenantStatus | None = None
    quotas: Quotas | None = None


class TenantUsageView(msgspec.Struct):
    """What a tenant holds, as the gauge job last counted it (every few seconds), to set against its quotas."""

    topics: int = 0
    messages: int = 0


class TenantView(msgspec.Struct):
    slug: str
    name: str
    status: TenantStatus
    quotas: Quotas
    created_at: str
    usage: TenantUsageView = msgspec.field(default_factory=TenantUsageView)


#: A page of TenantViews, under its own name in the OpenAPI document (a generic's default name holds module paths).
TenantPage = Annotated[Page[TenantView], KwargDefinition(schema_component_key="TenantPage")]


class UserCreateBody(Strict):
    username: str
    password: Password
    role: AssignableRole = "member"


class UserUpdateBody(Strict):
    password: Password | None = None
    role: AssignableRole | None = None


class UserView(msgspec.Struct):
    id: str
    username: str
    role: Role
    tenant: str | None
    created_at: str
    updated_at: str


#: A page of UserViews, under its own name in the OpenAPI document (a generic's default name holds module paths).
UserPage = Annotated[Page[UserView], KwargDefinition(schema_component_key="UserPage")]


class GrantBody(Strict):
    action: Action
    topic_pattern: Annotated[str, Meta(min_length=1, max_length=MAX_PATTERN_LENGTH)]
    #: Only on `consume`: its holder consumes the matching topics only as this group.
    consumer_group: GroupName | None = None


class GrantView(msgspec.Struct):
    id: str
    action: Action
    topic_pattern: str
    created_at: str
    consumer_group: str | None = None


class GrantListView(msgspec.Struct):
    items: list[GrantView]


# --- the caller, and the system routes -----------------------------------------------------------------------------


class MyGrantView(msgspec.Struct):
    action: Action
    topic_pattern: str
    consumer_group: str | None = None


class MeView(msgspec.Struct):
    username: str
    role: Role
    tenant: str | None
    #: A member's grants (what the admin console lets it do); empty for the admin roles, which need none.
    grants: list[MyGrantView] = msgspec.field(default_factory=list)


class HealthView(msgspec.Struct):
    status: Literal["ok"]


class ReadinessView(msgspec.Struct, omit_defaults=True):
    """`checks`: per dependency, "ok" or "failed: <error type>"; when not ready, also the error shape's fields."""

    status: Literal["ready", "not_ready"]
    checks: dict[str, str]
    code: Literal["unavailable"] | None = None
    error: str | None = None


class VersionView(msgspec.Struct):
    version: str


class AuthStatusView(msgspec.Struct):
    auth_required: bool
    methods: list[Literal["basic", "session", "bearer"]]


def strict_body_names() -> set[str]:
    """The names of the request bodies that refuse unknown fields (every `Strict` struct)."""
    found: set[str] = set()
    pending: list[type[Strict]] = [Strict]
    while pending:
        cls = pending.pop()
        found.add(cls.__name__)
        pending.extend(cls.__subclasses__())
    return found


# --- the admin console --------------------------------------------------------------------------------------------

#: Most messages one bulk request names.
MAX_BULK_IDS = 1000


class BulkBody(Strict):
    action: BulkAction
    ids: Annotated[list[str], Meta(min_length=1, max_length=MAX_BULK_IDS)]


class BulkFailureView(msgspec.Struct):
    id: str
    code: str
    error: str


class BulkResultView(msgspec.Struct):
    action: BulkAction
    done: int
    skipped: int
    failures: list[BulkFailureView]


class BulkJobBody(Strict):
    action: BulkAction
    filter: MessageFilter = msgspec.field(default_factory=MessageFilter)
    #: Messages a second at most, 1 to 10,000 (null: as fast as it goes)
    rate_per_second: Annotated[int, Meta(ge=1, le=10_000)] | None = None


class BulkJobListView(msgspec.Struct):
    items: list[BulkJobView]


class PauseView(msgspec.Struct):
    topic: str
    paused: bool


class SchedulePreviewView(msgspec.Struct):
    schedule: str
    next_runs: list[str]
