"""The audit trail, and each message's attempts: who leased it when, and how each delivery ended.

Revision ID: 2026_11_25_audit_attempts
Revises: 2026_11_24_console
Create Date: 2026-11-25
"""

from alembic import op

revision = "2026_11_25_audit_attempts"
down_revision = "2026_11_24_console"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Who did what to which object. No foreign key to tenants: an entry outlives its tenant (a deleted tenant's
    # deletion is itself an entry), so the tenant's slug is kept beside its id. `id` is a UUIDv7: time-ordered, the
    # key of the newest-first keyset pages.
    op.execute("""
    CREATE TABLE audit_log (
        id          uuid PRIMARY KEY,
        at          timestamptz NOT NULL DEFAULT now(),
        tenant_id   bigint,
        tenant      text,
        actor       text NOT NULL,
        action      text NOT NULL,
        target      text NOT NULL,
        details     jsonb,
        request_id  text
    )""")
    op.execute("CREATE INDEX audit_log_tenant_idx ON audit_log (tenant_id, id)")
    op.execute("CREATE INDEX audit_log_at_idx ON audit_log (at)")
    # Columns without defaults: adding them rewrites nothing. `leased_at` and `leased_by` describe the current (or
    # last) lease; `attempts` the deliveries that ended without an ack, oldest first (`mq.queue.sql.ATTEMPTS_KEPT`).
    op.execute(
        "ALTER TABLE messages ADD COLUMN leased_at timestamptz, ADD COLUMN leased_by text, ADD COLUMN attempts jsonb"
    )


def downgrade() -> None:
    op.execute("ALTER TABLE messages DROP COLUMN leased_at, DROP COLUMN leased_by, DROP COLUMN attempts")
    op.execute("DROP TABLE audit_log")
