"""Version 5 of a group's nack (`mq.queue.sql.functions`, `skiplock_group_nack`): a group's dead letter names the
message it copies in its last attempt (`copy_of`), so a message's story finds each group's dead letter and a dead
letter leads back to its message (`GET /api/messages/{id}/story`). The release before calls version 4: it stays for
this release's rollout; the next release's migration drops it.

Revision ID: 2026_12_07_group_nack_v5
Revises: 2026_12_07_bulk_skip_reasons
Create Date: 2026-12-07
"""

from alembic import op

revision = "2026_12_07_group_nack_v5"
down_revision = "2026_12_07_bulk_skip_reasons"
branch_labels = None
depends_on = None

CREATED = ("skiplock_group_nack_v5",)


def _released():  # type: ignore[no-untyped-def]
    """The functions' sources, imported when run: loading the revision imports nothing of the code."""
    from mq.queue.sql.functions import RELEASED  # noqa: PLC0415  (see the docstring)

    return RELEASED


def upgrade() -> None:
    released = _released()
    for name in CREATED:
        op.execute(released[name].create())


def downgrade() -> None:
    released = _released()
    for name in reversed(CREATED):
        op.execute(released[name].drop())
