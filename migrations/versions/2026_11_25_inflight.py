"""Concurrency limits: a topic's `max_inflight` (per consumer group on a grouped topic). For a limited topic, a
counter row per (tenant, topic, group) serializes its dequeues and holds how many of its leases are in flight,
and `inflight_leases` holds each lease's deadline, so that a lapsed lease frees its slot at its deadline without
scanning the queue (`mq.queue.sql`, "Concurrency limits"). Group 0 is the topic itself. Topics without a limit
have neither and pay nothing.

Revision ID: 2026_11_25_inflight
Revises: 2026_11_25_schedules
Create Date: 2026-11-25
"""

from alembic import op

revision = "2026_11_25_inflight"
down_revision = "2026_11_25_schedules"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE topic_configs ADD COLUMN max_inflight integer")
    op.execute("""
    CREATE TABLE inflight_counts (
        tenant_id  bigint NOT NULL,
        topic      text NOT NULL,
        group_id   bigint NOT NULL DEFAULT 0,
        leased     integer NOT NULL DEFAULT 0,
        CONSTRAINT inflight_counts_pkey PRIMARY KEY (tenant_id, topic, group_id)
    )""")
    # One row per lease in flight of a limited topic: its deadline and receipt (each delivery has its own). One
    # index, the key: the dequeue finds the leases past their deadline by it, an ack or a nack its lease by its
    # deadline (the message's available_at) and receipt.
    op.execute("""
    CREATE TABLE inflight_leases (
        tenant_id   bigint NOT NULL,
        topic       text NOT NULL,
        group_id    bigint NOT NULL DEFAULT 0,
        receipt     uuid NOT NULL,
        message_id  uuid NOT NULL,
        deadline    timestamptz NOT NULL,
        CONSTRAINT inflight_leases_pkey PRIMARY KEY (tenant_id, topic, group_id, deadline, receipt)
    )""")
    # Leases that ended (acked, nacked), by how many, for the topic's next dequeue to count out: an ack never waits
    # for the counter row, which the topic's dequeues hold in turn.
    op.execute("""
    CREATE TABLE inflight_ended (
        tenant_id  bigint NOT NULL,
        topic      text NOT NULL,
        group_id   bigint NOT NULL DEFAULT 0,
        n          integer NOT NULL
    )""")
    op.execute("CREATE INDEX inflight_ended_topic_idx ON inflight_ended (tenant_id, topic, group_id)")
    op.execute("""ALTER TABLE inflight_ended SET (autovacuum_vacuum_scale_factor = 0,
                  autovacuum_vacuum_threshold = 1000)""")
    op.execute("""ALTER TABLE inflight_leases SET (autovacuum_vacuum_scale_factor = 0,
                  autovacuum_vacuum_threshold = 1000, fillfactor = 70)""")


def downgrade() -> None:
    op.execute("DROP TABLE inflight_ended")
    op.execute("DROP TABLE inflight_leases")
    op.execute("DROP TABLE inflight_counts")
    op.execute("ALTER TABLE topic_configs DROP COLUMN max_inflight")
