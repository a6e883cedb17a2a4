"""Consumer groups' depth and oldest pending age, as the leader last counted them for /metrics.

Revision ID: 2026_11_25_group_gauges
Revises: 2026_11_25_group_grants
Create Date: 2026-11-25
"""

from alembic import op

revision = "2026_11_25_group_gauges"
down_revision = "2026_11_25_group_grants"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Replaced whole by the gauge job with `queue_gauges`; a scrape reads this small table, never `deliveries`.
    op.execute("""
    CREATE TABLE group_gauges (
        tenant          text NOT NULL,
        topic           text NOT NULL,
        consumer_group  text NOT NULL,
        pending         bigint NOT NULL,
        processing      bigint NOT NULL,
        oldest_pending_age_seconds double precision,
        PRIMARY KEY (tenant, topic, consumer_group)
    )""")


def downgrade() -> None:
    op.execute("DROP TABLE group_gauges")
