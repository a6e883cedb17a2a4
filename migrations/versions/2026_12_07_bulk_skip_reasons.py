"""A bulk job's skipped messages by the reason each was skipped (`bulk_jobs.skipped_by`: the contract's code of the
refusal, and how many): "0 done, 15 skipped" said why (15 x key_conflict). A column with a constant default is
added without rewriting the table (Postgres 11+), and on Citus to every shard alike.

Revision ID: 2026_12_07_bulk_skip_reasons
Revises: 2026_12_02_group_functions_v3
Create Date: 2026-12-07
"""

from alembic import op

revision = "2026_12_07_bulk_skip_reasons"
down_revision = "2026_12_02_group_functions_v3"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE bulk_jobs ADD COLUMN skipped_by jsonb NOT NULL DEFAULT '{}'::jsonb")


def downgrade() -> None:
    op.execute("ALTER TABLE bulk_jobs DROP COLUMN skipped_by")
