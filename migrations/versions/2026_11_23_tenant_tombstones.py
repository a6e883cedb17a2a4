"""Tombstones of deleted tenants, so that nothing an enqueue racing a forced delete wrote outlives the tenant.

Revision ID: 2026_11_23_tenant_tombstones
Revises: 2026_11_23_truthful_caps
Create Date: 2026-11-23

`messages.tenant_id` has no foreign key on purpose: the referential check runs per inserted row and takes a
FOR KEY SHARE lock on the tenant's row, which every concurrent enqueue of the tenant would share (a MultiXact per
row lock: a known cliff for a hot parent row). Instead a forced delete leaves a tombstone in the same transaction,
and the orphan sweeper (run with the expiry reaper) deletes any row written under that id after the delete's
snapshot, then the tombstone once a sweep found nothing for an hour.
"""

from alembic import op

revision = "2026_11_23_tenant_tombstones"
down_revision = "2026_11_23_truthful_caps"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    CREATE TABLE deleted_tenants (
        tenant_id   bigint PRIMARY KEY,
        deleted_at  timestamptz NOT NULL DEFAULT now()
    )""")


def downgrade() -> None:
    op.execute("DROP TABLE deleted_tenants")
