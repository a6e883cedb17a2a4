"""A bulk job's pace (`bulk_jobs.rate_per_second`, NULL: as fast as it goes): a redrive of a DLQ at a rate the
consumers can take, as the SQS console's velocity. A nullable column is added without rewriting the table.

Revision ID: 2026_12_07_bulk_job_rate
Revises: 2026_12_07_group_nack_v5
Create Date: 2026-12-07
"""

from alembic import op

revision = "2026_12_07_bulk_job_rate"
down_revision = "2026_12_07_group_nack_v5"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE bulk_jobs ADD COLUMN rate_per_second integer")


def downgrade() -> None:
    op.execute("ALTER TABLE bulk_jobs DROP COLUMN rate_per_second")
