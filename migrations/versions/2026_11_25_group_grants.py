"""A `consume` grant may pin a consumer group: its holder consumes the matching topics only as that group.

Revision ID: 2026_11_25_group_grants
Revises: 2026_11_25_consumer_groups
Create Date: 2026-11-25
"""

from alembic import op

revision = "2026_11_25_group_grants"
down_revision = "2026_11_25_consumer_groups"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE grants ADD COLUMN consumer_group text")
    op.execute("""
    ALTER TABLE grants ADD CONSTRAINT grants_consumer_group_check
        CHECK (consumer_group IS NULL OR action = 'consume')""")
    # The same pattern may be granted unpinned and pinned to several groups; each once.
    op.execute("ALTER TABLE grants DROP CONSTRAINT grants_unique")
    op.execute("""
    ALTER TABLE grants ADD CONSTRAINT grants_unique
        UNIQUE NULLS NOT DISTINCT (user_id, action, topic_pattern, consumer_group)""")


def downgrade() -> None:
    op.execute("DELETE FROM grants WHERE consumer_group IS NOT NULL")
    op.execute("ALTER TABLE grants DROP CONSTRAINT grants_unique")
    op.execute("ALTER TABLE grants ADD CONSTRAINT grants_unique UNIQUE (user_id, action, topic_pattern)")
    op.execute("ALTER TABLE grants DROP CONSTRAINT grants_consumer_group_check")
    op.execute("ALTER TABLE grants DROP COLUMN consumer_group")
