"""Workers and observability: expired messages to the DLQ per topic, the delete reaper's schedule, the last run of
every job, and the queue gauges the leader refreshes for /metrics.

Revision ID: 2026_11_22_workers
Revises: 2026_11_22_admission_copy
Create Date: 2026-11-22
"""

from alembic import op

revision = "2026_11_22_workers"
down_revision = "2026_11_22_admission_copy"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE topic_configs ADD COLUMN expire_to_dlq boolean")
    # Runtime overrides of settings, shared by every instance (today: the delete reaper's cron schedule).
    op.execute("""
    CREATE TABLE worker_settings (
        name        text PRIMARY KEY,
        value       text NOT NULL,
        updated_at  timestamptz NOT NULL DEFAULT now()
    )""")
    # The last run of each job, whichever replica ran it: what /metrics reports as the reapers' last run.
    op.execute("""
    CREATE TABLE job_runs (
        job               text PRIMARY KEY,
        finished_at       timestamptz NOT NULL,
        duration_seconds  double precision NOT NULL,
        rows              bigint NOT NULL
    )""")
    # Messages by tenant, topic and status, replaced as a whole by the leader every few seconds: a scrape of any
    # instance reads this small table, never the messages table.
    op.execute("""
    CREATE TABLE queue_gauges (
        tenant      text NOT NULL,
        topic       text NOT NULL,
        status      text NOT NULL,
        messages    bigint NOT NULL,
        oldest_pending_age_seconds double precision,
        PRIMARY KEY (tenant, topic, status)
    )""")


def downgrade() -> None:
    op.execute("DROP TABLE queue_gauges")
    op.execute("DROP TABLE job_runs")
    op.execute("DROP TABLE worker_settings")
    op.execute("ALTER TABLE topic_configs DROP COLUMN expire_to_dlq")
