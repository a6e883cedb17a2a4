"""Charts over a day and a week: 5-minute rollups of each topic's depth and rates (and the tenant's, topic ''), and
dead-lettered counts beside the enqueued and acked ones.

Revision ID: 2026_11_25_rollups
Revises: 2026_11_25_audit_attempts
Create Date: 2026-11-25
"""

from alembic import op

revision = "2026_11_25_rollups"
down_revision = "2026_11_25_audit_attempts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A constant default: adding the column rewrites nothing.
    op.execute("ALTER TABLE topic_activity ADD COLUMN dead_lettered bigint NOT NULL DEFAULT 0")
    # Written by the gauge job for each completed 5-minute bucket from `queue_samples` (depth at the bucket's last
    # sample, the oldest age's maximum) and `topic_activity` (sums); topic '' is the tenant's total. Kept 8 days.
    op.execute("""
    CREATE TABLE topic_rollups (
        tenant_id      bigint NOT NULL,
        topic          text NOT NULL,
        bucket         timestamptz NOT NULL,
        pending        bigint NOT NULL,
        processing     bigint NOT NULL,
        failed         bigint NOT NULL,
        expired        bigint NOT NULL,
        oldest_pending_age_seconds double precision,
        enqueued       bigint NOT NULL,
        acked          bigint NOT NULL,
        dead_lettered  bigint NOT NULL,
        PRIMARY KEY (tenant_id, topic, bucket)
    )""")
    op.execute("CREATE INDEX topic_rollups_bucket_idx ON topic_rollups (bucket)")


def downgrade() -> None:
    op.execute("DROP TABLE topic_rollups")
    op.execute("ALTER TABLE topic_activity DROP COLUMN dead_lettered")
