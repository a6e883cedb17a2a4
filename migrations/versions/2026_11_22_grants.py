"""Grants: what a member may do, per action and topic pattern.

Revision ID: 2026_11_22_grants
Revises: 2026_11_22_core
Create Date: 2026-11-22
"""

from alembic import op

revision = "2026_11_22_grants"
down_revision = "2026_11_22_core"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    CREATE TABLE grants (
        id             uuid PRIMARY KEY,
        tenant_id      bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        action         text NOT NULL,
        topic_pattern  text NOT NULL,
        created_at     timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT grants_action_check CHECK (action IN ('produce', 'consume', 'read')),
        CONSTRAINT grants_unique UNIQUE (user_id, action, topic_pattern)
    )""")


def downgrade() -> None:
    op.execute("DROP TABLE grants")
