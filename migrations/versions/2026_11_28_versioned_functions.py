"""The database's functions by versioned name, from their one source (`mq.queue.sql.functions`): each is created
as `<name>_v1`, and the consumer groups' tombstone trigger calls its versioned function. The unversioned functions
stay for the instances of the release before during a rolling upgrade; the migration after drops them.

Revision ID: 2026_11_28_versioned_functions
Revises: 2026_11_28_audit_refusals
Create Date: 2026-11-28
"""

from alembic import op

revision = "2026_11_28_versioned_functions"
down_revision = "2026_11_28_audit_refusals"
branch_labels = None
depends_on = None

CREATED = (
    "skiplock_topic_exists_v1",
    "skiplock_topic_count_v1",
    "skiplock_admit_v1",
    "skiplock_admit_one_v1",
    "skiplock_admit_copy_v1",
    "skiplock_admit_copy_all_v1",
    "skiplock_group_done_v1",
    "skiplock_group_ack_v1",
    "skiplock_group_nack_v1",
    "skiplock_group_release_v1",
    "skiplock_group_tombstone_v1",
)


def _released():  # type: ignore[no-untyped-def]
    """The functions' sources, imported when run: loading the revision (`alembic history`, a server checking the
    schema) imports nothing of the code."""
    from mq.queue.sql.functions import RELEASED  # noqa: PLC0415  (see the docstring)

    return RELEASED


def upgrade() -> None:
    released = _released()
    for name in CREATED:
        op.execute(released[name].create())
    op.execute("DROP TRIGGER consumer_groups_tombstone ON consumer_groups")
    op.execute("""
    CREATE TRIGGER consumer_groups_tombstone AFTER DELETE ON consumer_groups
    FOR EACH ROW EXECUTE FUNCTION skiplock_group_tombstone_v1()""")


def downgrade() -> None:
    op.execute("DROP TRIGGER consumer_groups_tombstone ON consumer_groups")
    op.execute("""
    CREATE TRIGGER consumer_groups_tombstone AFTER DELETE ON consumer_groups
    FOR EACH ROW EXECUTE FUNCTION skiplock_group_tombstone()""")
    released = _released()
    for name in reversed(CREATED):
        op.execute(released[name].drop())
