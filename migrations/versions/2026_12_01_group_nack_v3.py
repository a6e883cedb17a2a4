"""Version 3 of a group's nack (`mq.queue.sql.functions`, `skiplock_group_nack`): the dead letter's copy asks its
outcome with a searched `CASE` (a simple `CASE outc WHEN`, in its INSERT ... SELECT, was sent to a Citus worker as
`text = boolean` and refused: a group's dead letter failed on Citus). Version 2 stays for this release's rollout
(instances of the release before call it); the next release's migration drops it.

Revision ID: 2026_12_01_group_nack_v3
Revises: 2026_11_30_admission_v2
Create Date: 2026-12-01
"""

from alembic import op

revision = "2026_12_01_group_nack_v3"
down_revision = "2026_11_30_admission_v2"
branch_labels = None
depends_on = None

CREATED = ("skiplock_group_nack_v3",)


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
