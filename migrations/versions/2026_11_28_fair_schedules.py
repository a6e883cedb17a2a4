"""Schedules fired fairly across tenants: the firer takes each tenant's due schedules through their own index
entries, in turns (`mq.schedules.sql.DUE`), so one tenant's backlog of due ticks never holds another's back.

Revision ID: 2026_11_28_fair_schedules
Revises: 2026_11_25_inflight_reservations
Create Date: 2026-11-28
"""

from alembic import op

revision = "2026_11_28_fair_schedules"
down_revision = "2026_11_25_inflight_reservations"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # (tenant, next tick) of the enabled schedules: a tenant's first entry tells whether it has one due, and its
    # due ones come in order. It replaces the index by next tick alone, which only the old firer read.
    op.execute("CREATE INDEX schedules_tenant_due_idx ON schedules (tenant_id, next_run_at) WHERE enabled")
    op.execute("DROP INDEX schedules_due_idx")


def downgrade() -> None:
    op.execute("CREATE INDEX schedules_due_idx ON schedules (next_run_at) WHERE enabled")
    op.execute("DROP INDEX schedules_tenant_due_idx")
