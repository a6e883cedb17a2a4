"""Request and response bodies. Unknown fields are refused; bounds come from the contract."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from mq.names import TOPIC_PATTERN
from mq.queue.types import (
    MAX_DELAY_SECONDS,
    MAX_KEY_LENGTH,
    MAX_VISIBILITY_SECONDS,
    MAX_WAIT_SECONDS,
    MessageView,
    TopicSummary,
)
from mq.tenancy.passwords import MIN_PASSWORD_LENGTH

Topic = Annotated[str, Meta(pattern=TOPIC_PATTERN, description="Topic name")]
Delay = Annotated[float, Meta(ge=0, le=MAX_DELAY_SECONDS, description="Seconds before the message is visible")]
Priority = Annotated[int, Meta(ge=0, le=9, description="0..9, higher is dequeued first")]
Visibility = Annotated[int, Meta(ge=1, le=MAX_VISIBILITY_SECONDS)]
Payload = Annotated[bytes, Meta(description="Base64 of the raw payload bytes")]
Key = Annotated[str, Meta(min_length=1, max_length=MAX_KEY_LENGTH, description="Upsert key")]
Password = Annotated[str, Meta(min_length=MIN_PASSWORD_LENGTH, max_length=1024)]


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


class InvalidItem(msgspec.Struct):
    """Stands in a decoded batch for an item that is not a valid `BatchItem`, so that every bad item is reported."""

    error: str


class _LooseBatch(Strict):
    messages: Annotated[list[Any], Meta(min_length=1)]
    topic: str | None = None


_batch_decoder = msgspec.json.Decoder(BatchEnqueueBody)
_loose_batch_decoder = msgspec.json.Decoder(_LooseBatch)


def decode_batch(raw: bytes) -> BatchEnqueueBody:
    """One typed decode for the whole batch; only when it fails, item by item, to find every bad item."""
    try:
        return _batch_decoder.decode(raw)
    except msgspec.ValidationError:
        loose = _loose_batch_decoder.decode(raw)  # raises for problems outside the items
    items: list[Any] = []
    for entry in loose.messages:
        try:
            items.append(msgspec.convert(entry, BatchItem))
        except msgspec.ValidationError as exc:
            items.append(InvalidItem(str(exc)))
    return BatchEnqueueBody(messages=items, topic=loose.topic)


class IdResponse(msgspec.Struct):
    id: str


class IdsResponse(msgspec.Struct):
    ids: list[str]


class DequeueBody(Strict):
    topic: Topic
    count: Annotated[int, Meta(ge=1, le=1000, description="1..1000 (SKIPLOCK_MAX_BATCH_SIZE may lower it)")] = 1
    visibility_timeout_seconds: Visibility | None = None
    wait_seconds: Annotated[float, Meta(ge=0, le=MAX_WAIT_SECONDS)] = 0


class DequeueResponse(msgspec.Struct):
    messages: list[MessageView]


class AckBody(Strict):
    receipt: str | None = None


class AckItem(Strict):
    id: str
    receipt: str | None = None


class BatchAckBody(Strict):
    acks: Annotated[list[AckItem], Meta(min_length=1)]


class NackBody(Strict):
    error: str | None = None
    receipt: str | None = None
    delay_seconds: Delay | None = None


class NackResponse(msgspec.Struct):
    outcome: str


class ExtendBody(Strict):
    visibility_timeout_seconds: Visibility
    receipt: str | None = None


class ExtendResponse(msgspec.Struct):
    visibility_deadline: str


class PurgeBody(Strict):
    statuses: list[str] | None = None


class CountResponse(msgspec.Struct):
    count: int


class MessagePage(msgspec.Struct):
    items: list[MessageView]
    total: int
    limit: int
    offset: int


class TopicsResponse(msgspec.Struct):
    items: list[TopicSummary]


class StatRow(msgspec.Struct):
    topic: str
    status: str
    count: int


class StatsResponse(msgspec.Struct):
    topics: list[StatRow]


# --- topic configs ------------------------------------------------------------------------------------------------


class TopicConfigBody(Strict):
    """PUT /api/topic-configs/{topic}: the whole config; null or omitted = the global default."""

    max_retries: Annotated[int, Meta(ge=0, le=1000)] | None = None
    message_ttl_seconds: Annotated[int, Meta(ge=0, le=31_536_000)] | None = None
    max_depth: Annotated[int, Meta(ge=1, le=2_000_000_000)] | None = None
    throughput_limit: Annotated[int, Meta(ge=1, le=1_000_000)] | None = None
    visibility_timeout_seconds: Annotated[int, Meta(ge=1, le=43200)] | None = None
    retry_backoff_seconds: Annotated[list[Annotated[int, Meta(ge=0, le=86400)]], Meta(max_length=32)] | None = None
    dlq_enabled: bool | None = None
    expire_to_dlq: bool | None = None


class PasswordChangeBody(Strict):
    """PUT /api/auth/password: the caller's current password, and the new one."""

    current_password: Annotated[str, Meta(max_length=1024)]
    new_password: Password


class PasswordBody(Strict):
    """PUT /api/admin/platform-admins/{username}/password."""

    password: Password


class ScheduleBody(Strict):
    """PUT /api/admin/delete-reaper/schedule: a 5-field cron in UTC, "" = off."""

    schedule: Annotated[str, Meta(max_length=200)]


class ScheduleView(msgspec.Struct):
    schedule: str
    active: bool


# --- tenants and users ---------------------------------------------------------------------------------------------

NonNegative = Annotated[int, Meta(ge=0)]
#: Largest value a bigint column or parameter holds.
MAX_BIGINT = 2**63 - 1
#: Largest `offset` a page accepts: 2^53 - 1, exact in a JSON number (OpenAPI documents it as one; a bigint
#: bound would print as 9.223372036854776e18 and let larger values look valid).
MAX_OFFSET = 2**53 - 1


class Quotas(Strict, omit_defaults=True):
    """Per-tenant limits; each is optional (absent: no limit)."""

    max_topics: Annotated[int, Meta(ge=0, le=2**31 - 1)] | None = None
    max_messages: Annotated[int, Meta(ge=0, le=MAX_BIGINT)] | None = None
    max_payload_bytes: Annotated[int, Meta(ge=0, le=MAX_BIGINT)] | None = None
    enqueue_rate: Annotated[int, Meta(ge=1, le=1_000_000_000)] | None = None


class TenantCreateBody(Strict):
    slug: str
    name: Annotated[str, Meta(min_length=1, max_length=200)]
    quotas: Quotas | None = None


class TenantUpdateBody(Strict):
    name: Annotated[str, Meta(min_length=1, max_length=200)] | None = None
    status: Literal["active", "suspended"] | None = None
    quotas: Quotas | None = None


class TenantView(msgspec.Struct):
    slug: str
    name: str
    status: str
    quotas: Quotas
    created_at: str


class TenantPage(msgspec.Struct):
    items: list[TenantView]
    total: int
    limit: int
    offset: int


class UserCreateBody(Strict):
    username: str
    password: Password
    role: Literal["tenant_admin", "member"] = "member"


class UserUpdateBody(Strict):
    password: Password | None = None
    role: Literal["tenant_admin", "member"] | None = None


class UserObject(msgspec.Struct):
    id: str
    username: str
    role: str
    tenant: str | None
    created_at: str
    updated_at: str


class UserPage(msgspec.Struct):
    items: list[UserObject]
    total: int
    limit: int
    offset: int


class GrantBody(Strict):
    action: Literal["produce", "consume", "read"]
    topic_pattern: Annotated[str, Meta(min_length=1, max_length=202)]


class GrantObject(msgspec.Struct):
    id: str
    action: str
    topic_pattern: str
    created_at: str


class GrantList(msgspec.Struct):
    items: list[GrantObject]


def strict_body_names() -> set[str]:
    """The names of the request bodies that refuse unknown fields (every `Strict` struct)."""
    found: set[str] = set()
    pending: list[type[Strict]] = [Strict]
    while pending:
        cls = pending.pop()
        found.add(cls.__name__)
        pending.extend(cls.__subclasses__())
    return found
