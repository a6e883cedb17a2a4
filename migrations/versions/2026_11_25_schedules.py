"""Periodic messages: a tenant's schedules (a cron in a time zone, the message to enqueue at each tick). The
workers take due schedules by `next_run_at` (`schedules_due_idx`), enqueue each tick's message and move
`next_run_at` on in one transaction, so a tick is enqueued exactly once (`mq.schedules.firer`).

Revision ID: 2026_11_25_schedules
Revises: 2026_11_25_topic_schemas
Create Date: 2026-11-25
"""

from alembic import op

revision = "2026_11_25_schedules"
down_revision = "2026_11_25_topic_schemas"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    CREATE TABLE schedules (
        tenant_id    bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        name         text NOT NULL,
        topic        text NOT NULL,
        cron         text NOT NULL,
        timezone     text NOT NULL,
        payload      bytea NOT NULL,
        key          text,
        metadata     jsonb,
        priority     smallint NOT NULL DEFAULT 0,
        enabled      boolean NOT NULL DEFAULT true,
        next_run_at  timestamptz NOT NULL,
        last_run_at  timestamptz,
        last_error   text,
        created_at   timestamptz NOT NULL DEFAULT now(),
        updated_at   timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT schedules_pkey PRIMARY KEY (tenant_id, name)
    )""")
    # The firer's only read: the enabled schedules due first (an index range scan from the oldest next_run_at).
    op.execute("CREATE INDEX schedules_due_idx ON schedules (next_run_at) WHERE enabled")


def downgrade() -> None:
    op.execute("DROP TABLE schedules")
