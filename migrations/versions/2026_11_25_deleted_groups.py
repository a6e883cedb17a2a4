"""Deleted consumer groups whose deliveries are still being released (a tombstone per group, gone when the last
delivery is). A trigger writes it for every deleted group, whether deleted by itself or with its tenant (the
deliveries have no foreign key: see the consumer groups migration).

Revision ID: 2026_11_25_deleted_groups
Revises: 2026_11_25_group_settle
Create Date: 2026-11-25
"""

from alembic import op

revision = "2026_11_25_deleted_groups"
down_revision = "2026_11_25_group_settle"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    CREATE TABLE deleted_groups (
        id          bigint PRIMARY KEY,
        deleted_at  timestamptz NOT NULL DEFAULT now()
    )""")
    op.execute("""
    CREATE FUNCTION skiplock_group_tombstone() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO deleted_groups (id) VALUES (OLD.id) ON CONFLICT DO NOTHING;
        RETURN NULL;
    END $$""")
    op.execute("""
    CREATE TRIGGER consumer_groups_tombstone AFTER DELETE ON consumer_groups
    FOR EACH ROW EXECUTE FUNCTION skiplock_group_tombstone()""")


def downgrade() -> None:
    op.execute("DROP TRIGGER consumer_groups_tombstone ON consumer_groups")
    op.execute("DROP FUNCTION skiplock_group_tombstone()")
    op.execute("DROP TABLE deleted_groups")
