"""Admin UI sessions: server-side, so they survive restarts, work across instances and can be revoked.

Revision ID: 2026_11_22_sessions
Revises: 2026_11_22_grants
Create Date: 2026-11-22
"""

from alembic import op

revision = "2026_11_22_sessions"
down_revision = "2026_11_22_grants"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The cookie's token is never stored: only its SHA-256, so a database dump cannot be replayed as a session.
    op.execute("""
    CREATE TABLE sessions (
        token_hash  bytea PRIMARY KEY,
        user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        csrf_token  text NOT NULL,
        created_at  timestamptz NOT NULL DEFAULT now(),
        expires_at  timestamptz NOT NULL
    )""")
    op.execute("CREATE INDEX sessions_user_idx ON sessions (user_id)")


def downgrade() -> None:
    op.execute("DROP TABLE sessions")
