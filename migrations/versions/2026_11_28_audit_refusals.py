"""A refused login is recorded with no actor: the name tried goes in its details, never as an actor (anyone can
try any name, so it proves nothing about who acted).

Revision ID: 2026_11_28_audit_refusals
Revises: 2026_11_28_fair_schedules
Create Date: 2026-11-28
"""

from alembic import op

revision = "2026_11_28_audit_refusals"
down_revision = "2026_11_28_fair_schedules"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE audit_log ALTER COLUMN actor DROP NOT NULL")


def downgrade() -> None:
    op.execute("UPDATE audit_log SET actor = '(none)' WHERE actor IS NULL")
    op.execute("ALTER TABLE audit_log ALTER COLUMN actor SET NOT NULL")
