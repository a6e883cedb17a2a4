"""SQLAlchemy models: the schema's description for control-plane CRUD and for checking the migrations.

The hot path (enqueue, dequeue, ack, nack) does not use these classes; it runs the named SQL in `mq.queue.sql`.
The schema itself is created only by Alembic (`migrations/`); a test checks that the two agree.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Double,
    ForeignKey,
    Identity,
    Index,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    SmallInteger,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    slug: Mapped[str] = mapped_column(Text, unique=True)
    name: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(Text, server_default="active")
    quotas: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    __table_args__ = (CheckConstraint("status IN ('active', 'suspended')", name="tenants_status_check"),)


class User(Base):
    __tablename__ = "users"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    tenant_id: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("tenants.id", ondelete="CASCADE"))
    username: Mapped[str] = mapped_column(Text, unique=True)
    password_hash: Mapped[str] = mapped_column(Text)
    role: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    __table_args__ = (
        CheckConstraint("role IN ('platform_admin', 'tenant_admin', 'member')", name="users_role_check"),
        # Platform admins belong to no tenant; everyone else to exactly one.
        CheckConstraint("(role = 'platform_admin') = (tenant_id IS NULL)", name="users_tenant_check"),
        Index("users_tenant_idx", "tenant_id"),
    )


class Grant(Base):
    """What a member may do: `action` on the topics `topic_pattern` matches (see mq.tenancy.grants)."""

    __tablename__ = "grants"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("tenants.id", ondelete="CASCADE"))
    user_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), ForeignKey("users.id", ondelete="CASCADE"))
    action: Mapped[str] = mapped_column(Text)
    topic_pattern: Mapped[str] = mapped_column(Text)
    #: A `consume` grant may pin a consumer group: its holder consumes the matching topics only as that group.
    consumer_group: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    __table_args__ = (
        CheckConstraint("action IN ('produce', 'consume', 'read')", name="grants_action_check"),
        CheckConstraint("consumer_group IS NULL OR action = 'consume'", name="grants_consumer_group_check"),
        UniqueConstraint(
            "user_id",
            "action",
            "topic_pattern",
            "consumer_group",
            name="grants_unique",
            postgresql_nulls_not_distinct=True,
        ),
    )


class Session(Base):
    """An admin UI session: the SHA-256 of the cookie's token (never the token) and the CSRF token it requires."""

    __tablename__ = "sessions"

    token_hash: Mapped[bytes] = mapped_column(LargeBinary, primary_key=True)
    user_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), ForeignKey("users.id", ondelete="CASCADE"))
    csrf_token: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (Index("sessions_user_idx", "user_id"),)


class TopicConfig(Base):
    __tablename__ = "topic_configs"

    tenant_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    topic: Mapped[str] = mapped_column(Text, primary_key=True)
    max_retries: Mapped[int | None] = mapped_column(Integer)
    message_ttl_seconds: Mapped[int | None] = mapped_column(Integer)
    max_depth: Mapped[int | None] = mapped_column(Integer)
    throughput_limit: Mapped[int | None] = mapped_column(Integer)
    visibility_timeout_seconds: Mapped[int | None] = mapped_column(Integer)
    retry_backoff_seconds: Mapped[list[int] | None] = mapped_column(ARRAY(Integer))
    dlq_enabled: Mapped[bool | None] = mapped_column(Boolean)
    expire_to_dlq: Mapped[bool | None] = mapped_column(Boolean)
    replayable: Mapped[bool | None] = mapped_column(Boolean)
    replay_window_seconds: Mapped[int | None] = mapped_column(Integer)
    #: At most this many messages processing at once (per consumer group).
    max_inflight: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class AdmissionGate(Base):
    """One stripe of an exact cap's gate: the rows admitted through it
    (`bound`) and its share of the cap (`alloc`). `scope` is a topic, '' for the whole tenant, or '#topics', the
    lock that orders the creation of new topics. Only the SQL function `skiplock_admit` reads and writes it."""

    __tablename__ = "admission_gates"

    tenant_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    scope: Mapped[str] = mapped_column(Text, primary_key=True)
    stripe: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    bound: Mapped[int] = mapped_column(BigInteger)
    alloc: Mapped[int] = mapped_column(BigInteger)


class Message(Base):
    """One message. `available_at` is when a dequeue may next take it: for a pending message the end of its delay,
    for a processing one its visibility deadline. One column for both lets one index range serve the dequeue.
    There is no foreign key to tenants: it would cost a lookup per inserted row; deleting a tenant deletes its
    messages explicitly."""

    __tablename__ = "messages"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    tenant_id: Mapped[int] = mapped_column(BigInteger)
    topic: Mapped[str] = mapped_column(Text)
    key: Mapped[str | None] = mapped_column(Text)
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    metadata_: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSONB)
    status: Mapped[str] = mapped_column(Text, server_default="pending")
    priority: Mapped[int] = mapped_column(SmallInteger, server_default="0")
    retry_count: Mapped[int] = mapped_column(Integer, server_default="0")
    max_retries: Mapped[int] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    receipt: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    available_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    first_dequeued_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    original_topic: Mapped[str | None] = mapped_column(Text)
    dlq_moved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    leased_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    leased_by: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONB)
    #: Groups that still owe the message; NULL when its topic had none (mq/queue/sql.py, "Consumer groups").
    owed: Mapped[int | None] = mapped_column(SmallInteger)
    #: The group whose delivery of the message was dead-lettered (a dead letter's copy).
    consumer_group: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        # Every key leads with the tenant (migration `2026_11_28_tenant_keys`): a lookup by id names its tenant.
        PrimaryKeyConstraint("tenant_id", "id", name="messages_pkey"),
        CheckConstraint("status IN ('pending', 'processing', 'failed', 'expired')", name="messages_status_check"),
        CheckConstraint("priority BETWEEN 0 AND 9", name="messages_priority_check"),
        # The dequeue: live messages of one topic, highest priority first, then earliest available. Also serves
        # browsing, purging and requeueing live messages of a topic. Every index here is written on every
        # enqueue and (a non-HOT update) every dequeue, so there are as few and as narrow ones as the hot path
        # allows: an `id` column here cost 13% of batch-insert throughput, a full (tenant, topic, id) index 19%.
        Index(
            "messages_dequeue_idx",
            "tenant_id",
            "topic",
            text("priority DESC"),
            "available_at",
            postgresql_where=text("status IN ('pending', 'processing')"),
        ),
        # Key upsert: at most one pending message per (tenant, topic, key) outside dead-letter topics.
        Index(
            "messages_pending_key_uq",
            "tenant_id",
            "topic",
            "key",
            unique=True,
            postgresql_where=text("key IS NOT NULL AND status = 'pending' AND original_topic IS NULL"),
        ),
        # Finished messages of a topic (failed, expired), newest first: for browsing, purging and the reapers.
        # The hot path never writes it.
        Index(
            "messages_done_idx",
            "tenant_id",
            "topic",
            "id",
            postgresql_where=text("status IN ('failed', 'expired')"),
        ),
        # The expiry reaper: live messages with a TTL, by deadline.
        Index(
            "messages_expiry_idx",
            "expires_at",
            postgresql_where=text("expires_at IS NOT NULL AND status IN ('pending', 'processing')"),
        ),
    )


class ConsumerGroup(Base):
    """A topic's consumer group: every message enqueued while it exists
    (and, `earliest`, every one stored when it was created) is delivered to it once, apart from other groups."""

    __tablename__ = "consumer_groups"

    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True))
    tenant_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("tenants.id", ondelete="CASCADE"))
    topic: Mapped[str] = mapped_column(Text)
    name: Mapped[str] = mapped_column(Text)
    start: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    #: When its strays were settled (`mq.jobs.GroupSettler`); null until the caches' staleness has passed.
    settled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        PrimaryKeyConstraint("tenant_id", "id", name="consumer_groups_pkey"),
        CheckConstraint("start IN ('latest', 'earliest')", name="consumer_groups_start_check"),
        UniqueConstraint("tenant_id", "topic", "name", name="consumer_groups_name_uq"),
    )


class Delivery(Base):
    """What a group still owes of a message: the group's own status, lease, receipt, retries and attempts."""

    __tablename__ = "deliveries"

    #: The group's tenant (migration `2026_11_28_deliveries_tenant`), first in every key.
    tenant_id: Mapped[int] = mapped_column(BigInteger)
    group_id: Mapped[int] = mapped_column(BigInteger)
    message_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    status: Mapped[str] = mapped_column(Text, server_default=text("'pending'"))
    priority: Mapped[int] = mapped_column(SmallInteger)
    available_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    retry_count: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    receipt: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    leased_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    leased_by: Mapped[str | None] = mapped_column(Text)
    last_error: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONB)
    #: The group's saved state: what its nacks carried (merged over the message's metadata when delivered).
    metadata_: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSONB)

    __table_args__ = (
        PrimaryKeyConstraint("tenant_id", "group_id", "message_id", name="deliveries_pkey"),
        CheckConstraint("status IN ('pending', 'processing')", name="deliveries_status_check"),
        # A group's dequeue: highest priority first, then earliest available (every row is live).
        Index("deliveries_dequeue_idx", "tenant_id", "group_id", text("priority DESC"), "available_at"),
    )


class TopicSchema(Base):
    """One version of a topic's schema; the highest is in force."""

    __tablename__ = "topic_schemas"

    tenant_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    topic: Mapped[str] = mapped_column(Text, primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    format: Mapped[str] = mapped_column(Text)
    schema_json: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    __table_args__ = (
        CheckConstraint("format IN ('avro', 'json_schema')", name="topic_schemas_format_check"),
        CheckConstraint("version >= 1", name="topic_schemas_version_check"),
    )


class PeriodicSchedule(Base):
    """A tenant's periodic message: at each tick of `cron` in `timezone` the
    workers enqueue `payload` into `topic`, once."""

    __tablename__ = "schedules"

    tenant_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(Text, primary_key=True)
    topic: Mapped[str] = mapped_column(Text)
    cron: Mapped[str] = mapped_column(Text)
    timezone: Mapped[str] = mapped_column(Text)
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    key: Mapped[str | None] = mapped_column(Text)
    metadata_: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSONB)
    priority: Mapped[int] = mapped_column(SmallInteger, server_default=text("0"))
    enabled: Mapped[bool] = mapped_column(Boolean, server_default=text("true"))
    next_run_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_run_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    __table_args__ = (Index("schedules_tenant_due_idx", "tenant_id", "next_run_at", postgresql_where=text("enabled")),)


class InflightCount(Base):
    """How many messages of a limited topic (or one of its groups: group_id; 0 is the topic) are processing."""

    __tablename__ = "inflight_counts"

    tenant_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    topic: Mapped[str] = mapped_column(Text, primary_key=True)
    group_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, server_default=text("0"))
    leased: Mapped[int] = mapped_column(Integer, server_default=text("0"))


class InflightLease(Base):
    """A lease in flight of a limited topic (or group), with its deadline: it frees its slot when acked, nacked
    or past its deadline."""

    __tablename__ = "inflight_leases"

    tenant_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    topic: Mapped[str] = mapped_column(Text, primary_key=True)
    group_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, server_default=text("0"))
    deadline: Mapped[datetime] = mapped_column(DateTime(timezone=True), primary_key=True)
    receipt: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    message_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))


class InflightEnded(Base):
    """Leases of a limited topic that ended (acked, nacked), for its next dequeue to count out. No key: rows are
    appended by acks and taken by the topic's dequeue."""

    __tablename__ = "inflight_ended"
    __mapper_args__ = {
        "primary_key": ["tenant_id", "topic", "group_id", "n"]
    }  # (the ORM wants one; the table has none)

    tenant_id: Mapped[int] = mapped_column(BigInteger)
    topic: Mapped[str] = mapped_column(Text)
    group_id: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    n: Mapped[int] = mapped_column(Integer)

    __table_args__ = (Index("inflight_ended_topic_idx", "tenant_id", "topic", "group_id"),)


class InflightReservation(Base):
    """Slots of a limited topic (or group) reserved by a dequeue's first statement and not yet claimed by its
    lease statement."""

    __tablename__ = "inflight_reservations"

    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True))
    tenant_id: Mapped[int] = mapped_column(BigInteger)
    topic: Mapped[str] = mapped_column(Text)
    group_id: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    n: Mapped[int] = mapped_column(Integer)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    __table_args__ = (
        PrimaryKeyConstraint("tenant_id", "id", name="inflight_reservations_pkey"),
        Index("inflight_reservations_topic_idx", "tenant_id", "topic", "group_id"),
    )


class WorkerSetting(Base):
    """A runtime override of a setting, shared by every instance (the delete reaper's schedule)."""

    __tablename__ = "worker_settings"

    name: Mapped[str] = mapped_column(Text, primary_key=True)
    value: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class JobRun(Base):
    """The last run of a job (`mq.jobs`), whichever replica ran it."""

    __tablename__ = "job_runs"

    job: Mapped[str] = mapped_column(Text, primary_key=True)
    finished_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    duration_seconds: Mapped[float] = mapped_column(Double)
    rows: Mapped[int] = mapped_column(BigInteger)


class TopicGauge(Base):
    """Messages by tenant, topic and status, as the leader last counted them for /metrics."""

    __tablename__ = "topic_gauges"

    tenant_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    topic: Mapped[str] = mapped_column(Text, primary_key=True)
    status: Mapped[str] = mapped_column(Text, primary_key=True)
    messages: Mapped[int] = mapped_column(BigInteger)
    oldest_pending_age_seconds: Mapped[float | None] = mapped_column(Double)


class DeletedGroup(Base):
    """A deleted consumer group whose deliveries are still being released (`mq.topics.groups.ConsumerGroups`, then
    `mq.jobs.GroupSettler` for what a request left); gone with its last delivery."""

    __tablename__ = "deleted_groups"

    tenant_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    deleted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


#: The message log's partitions (made and dropped by `mq.history`): not in these models, so migrations' checks
#: leave them alone.
LOG_PARTITION_PREFIX = "message_log_p"


def is_log_partition(name: str | None) -> bool:
    return bool(name and name.startswith(LOG_PARTITION_PREFIX))


def include_name(name: str | None, type_: str, _parent: object) -> bool:
    """Alembic's `include_name`: everything but the log's partitions."""
    return not (type_ == "table" and is_log_partition(name))


class MessageLog(Base):
    """Acked messages of replayable topics, partitioned by range of
    `acked_at`; no primary key (a partitioned table's would have to hold `acked_at`), one index for the page."""

    __tablename__ = "message_log"

    tenant_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    topic: Mapped[str] = mapped_column(Text, primary_key=True)
    acked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), primary_key=True)
    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    key: Mapped[str | None] = mapped_column(Text)
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    metadata_: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSONB)
    priority: Mapped[int] = mapped_column(SmallInteger)
    retry_count: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        Index("message_log_page_idx", "tenant_id", "topic", "acked_at", "id"),
        {"postgresql_partition_by": "RANGE (acked_at)"},
    )


class MessageLogTrim(Base):
    """Where a topic's message log was trimmed: entries acked before `before` are hidden, and go with their
    partition."""

    __tablename__ = "message_log_trims"

    tenant_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    topic: Mapped[str] = mapped_column(Text, primary_key=True)
    before: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ConsumerGroupGauge(Base):
    """A consumer group's deliveries by status and its oldest pending age, as the leader last counted them."""

    __tablename__ = "consumer_group_gauges"

    tenant_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    topic: Mapped[str] = mapped_column(Text, primary_key=True)
    consumer_group: Mapped[str] = mapped_column(Text, primary_key=True)
    pending: Mapped[int] = mapped_column(BigInteger)
    processing: Mapped[int] = mapped_column(BigInteger)
    oldest_pending_age_seconds: Mapped[float | None] = mapped_column(Double)


class DeletedTenant(Base):
    """A tenant deleted with its messages. An enqueue that raced the
    delete may have committed rows after it; `mq.jobs.OrphanSweeper` deletes what is left under these ids, then
    the tombstone. Tenant ids are never reused, so such rows are unreachable meanwhile."""

    __tablename__ = "deleted_tenants"

    tenant_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    deleted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class TopicPause(Base):
    """A paused topic: enqueues are accepted, dequeues answer empty."""

    __tablename__ = "topic_pauses"

    tenant_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    topic: Mapped[str] = mapped_column(Text, primary_key=True)
    paused_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    paused_by: Mapped[str] = mapped_column(Text)


class TopicActivity(Base):
    """Messages enqueued and acked in one topic during one 10-second bucket, summed over every API instance."""

    __tablename__ = "topic_activity"

    tenant_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    topic: Mapped[str] = mapped_column(Text, primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), primary_key=True)
    enqueued: Mapped[int] = mapped_column(BigInteger)
    acked: Mapped[int] = mapped_column(BigInteger)
    dead_lettered: Mapped[int] = mapped_column(BigInteger, server_default="0")

    __table_args__ = (Index("topic_activity_at_idx", "at"),)


class TopicRollup(Base):
    """A topic's depth and counts over one 5-minute bucket (topic '': the tenant's total), kept 8 days for the
    console's charts over a day and a week (`mq.db.sql.ROLLUPS_RECORD`)."""

    __tablename__ = "topic_rollups"

    tenant_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    topic: Mapped[str] = mapped_column(Text, primary_key=True)
    bucket: Mapped[datetime] = mapped_column(DateTime(timezone=True), primary_key=True)
    pending: Mapped[int] = mapped_column(BigInteger)
    processing: Mapped[int] = mapped_column(BigInteger)
    failed: Mapped[int] = mapped_column(BigInteger)
    expired: Mapped[int] = mapped_column(BigInteger)
    oldest_pending_age_seconds: Mapped[float | None] = mapped_column(Double)
    enqueued: Mapped[int] = mapped_column(BigInteger)
    acked: Mapped[int] = mapped_column(BigInteger)
    dead_lettered: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (Index("topic_rollups_bucket_idx", "bucket"),)


class QueueSample(Base):
    """A topic's depth by status at one 30-second mark, copied from `topic_gauges` by the gauge job."""

    __tablename__ = "queue_samples"

    tenant_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    topic: Mapped[str] = mapped_column(Text, primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), primary_key=True)
    pending: Mapped[int] = mapped_column(BigInteger)
    processing: Mapped[int] = mapped_column(BigInteger)
    failed: Mapped[int] = mapped_column(BigInteger)
    expired: Mapped[int] = mapped_column(BigInteger)
    oldest_pending_age_seconds: Mapped[float | None] = mapped_column(Double)

    __table_args__ = (Index("queue_samples_at_idx", "at"),)


class BulkJob(Base):
    """A bulk action on the messages of a topic that match a filter (`mq.topics.service`)."""

    __tablename__ = "bulk_jobs"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    tenant_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("tenants.id", ondelete="CASCADE"))
    topic: Mapped[str] = mapped_column(Text)
    action: Mapped[str] = mapped_column(Text)
    filter: Mapped[dict[str, Any]] = mapped_column(JSONB)
    state: Mapped[str] = mapped_column(Text, server_default="running")
    matched: Mapped[int] = mapped_column(BigInteger, server_default="0")
    done: Mapped[int] = mapped_column(BigInteger, server_default="0")
    skipped: Mapped[int] = mapped_column(BigInteger, server_default="0")
    #: The skipped messages by the contract's code of why each was skipped: {"key_conflict": 15}.
    skipped_by: Mapped[dict[str, int]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    error: Mapped[str | None] = mapped_column(Text)
    created_by: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    #: Messages a second at most (NULL: as fast as it goes): a redrive's pace.
    rate_per_second: Mapped[int | None] = mapped_column(Integer)

    __table_args__ = (
        PrimaryKeyConstraint("tenant_id", "id", name="bulk_jobs_pkey"),
        CheckConstraint("action IN ('delete', 'retry', 'requeue')", name="bulk_jobs_action_check"),
        CheckConstraint("state IN ('running', 'done', 'failed', 'cancelled')", name="bulk_jobs_state_check"),
        Index("bulk_jobs_tenant_idx", "tenant_id", "created_at"),
    )


class AuditEntry(Base):
    """Who did what to which object (`mq.audit`). Outlives its tenant, hence no foreign key and the slug kept. A
    platform-wide entry's `tenant_id` is `mq.audit.types.PLATFORM_TENANT_ID`."""

    __tablename__ = "audit_log"

    tenant_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    tenant: Mapped[str | None] = mapped_column(Text)
    actor: Mapped[str | None] = mapped_column(Text)
    action: Mapped[str] = mapped_column(Text)
    target: Mapped[str] = mapped_column(Text)
    details: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    request_id: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (Index("audit_log_id_idx", "id"), Index("audit_log_at_idx", "at"))
