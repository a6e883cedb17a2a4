"""When a consumer group was settled: its strays (messages an instance with a stale cache stored without the
group's delivery, in the moments after the group was created) were found and owed to it.

Revision ID: 2026_11_25_group_settle
Revises: 2026_11_25_group_gauges
Create Date: 2026-11-25
"""

from alembic import op

revision = "2026_11_25_group_settle"
down_revision = "2026_11_25_group_gauges"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE consumer_groups ADD COLUMN settled_at timestamptz")
    op.execute("UPDATE consumer_groups SET settled_at = now()")


def downgrade() -> None:
    op.execute("ALTER TABLE consumer_groups DROP COLUMN settled_at")
