"""The admin console: paused topics, per-topic activity and depth samples for the charts, and bulk jobs.

Revision ID: 2026_11_24_console
Revises: 2026_11_23_tenant_tombstones
Create Date: 2026-11-24
"""

from alembic import op

revision = "2026_11_24_console"
down_revision = "2026_11_23_tenant_tombstones"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A paused topic accepts enqueues and answers dequeues empty. Its own table, not a topic_configs column: a PUT
    # of a topic config replaces every override, and a DELETE removes the row.
    op.execute("""
    CREATE TABLE topic_pauses (
        tenant_id  bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        topic      text NOT NULL,
        paused_at  timestamptz NOT NULL DEFAULT now(),
        paused_by  text NOT NULL,
        PRIMARY KEY (tenant_id, topic)
    )""")
    # Messages enqueued and acked per topic and 10-second bucket, added to by every API instance every few seconds
    # (`mq.console.activity`); kept an hour.
    op.execute("""
    CREATE TABLE topic_activity (
        tenant_id  bigint NOT NULL,
        topic      text NOT NULL,
        at         timestamptz NOT NULL,
        enqueued   bigint NOT NULL,
        acked      bigint NOT NULL,
        PRIMARY KEY (tenant_id, topic, at)
    )""")
    op.execute("CREATE INDEX topic_activity_at_idx ON topic_activity (at)")
    # Depth per topic every 30 s, copied from queue_gauges by the gauge job (never a scan of messages); kept an
    # hour.
    op.execute("""
    CREATE TABLE queue_samples (
        tenant_id   bigint NOT NULL,
        topic       text NOT NULL,
        at          timestamptz NOT NULL,
        pending     bigint NOT NULL,
        processing  bigint NOT NULL,
        failed      bigint NOT NULL,
        expired     bigint NOT NULL,
        oldest_pending_age_seconds double precision,
        PRIMARY KEY (tenant_id, topic, at)
    )""")
    op.execute("CREATE INDEX queue_samples_at_idx ON queue_samples (at)")
    # A bulk action on every message of a topic matching a filter, run in batches by the instance that took it.
    op.execute("""
    CREATE TABLE bulk_jobs (
        id           uuid PRIMARY KEY,
        tenant_id    bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        topic        text NOT NULL,
        action       text NOT NULL,
        filter       jsonb NOT NULL,
        state        text NOT NULL DEFAULT 'running',
        matched      bigint NOT NULL DEFAULT 0,
        done         bigint NOT NULL DEFAULT 0,
        skipped      bigint NOT NULL DEFAULT 0,
        error        text,
        created_by   text NOT NULL,
        created_at   timestamptz NOT NULL DEFAULT now(),
        updated_at   timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT bulk_jobs_action_check CHECK (action IN ('delete', 'retry', 'requeue')),
        CONSTRAINT bulk_jobs_state_check CHECK (state IN ('running', 'done', 'failed', 'cancelled'))
    )""")
    op.execute("CREATE INDEX bulk_jobs_tenant_idx ON bulk_jobs (tenant_id, created_at)")


def downgrade() -> None:
    op.execute("DROP TABLE bulk_jobs")
    op.execute("DROP TABLE queue_samples")
    op.execute("DROP TABLE topic_activity")
    op.execute("DROP TABLE topic_pauses")
