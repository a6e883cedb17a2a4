"""Version 3 of a group's count-down (`mq.queue.sql.functions`, `skiplock_group_done`): the message log in
statements of its own (on Citus, its INSERT fed by the DELETE and joined to the topics' configs was repartitioned
over every shard: 120 ms for one group's ack), and the versions that call it: the ack's and the release's version
3, the nack's version 4, which also count out a limited group's ended leases themselves
(`skiplock_count_out_v1`: their statements had done it in steps around the call, which Citus cannot run on a
worker). The release before calls version 2 of each: they stay for this release's rollout; the
next release's migration drops them. The nack's version 3, which no release called, goes.

Revision ID: 2026_12_02_group_functions_v3
Revises: 2026_12_01_group_nack_v3
Create Date: 2026-12-02
"""

from alembic import op

revision = "2026_12_02_group_functions_v3"
down_revision = "2026_12_01_group_nack_v3"
branch_labels = None
depends_on = None

CREATED = (
    "skiplock_count_out_v1",
    "skiplock_group_done_v3",
    "skiplock_group_ack_v3",
    "skiplock_group_nack_v4",
    "skiplock_group_release_v3",
)
DROPPED = ("skiplock_group_nack_v3",)


def _released():  # type: ignore[no-untyped-def]
    """The functions' sources, imported when run: loading the revision imports nothing of the code."""
    from mq.queue.sql.functions import RELEASED  # noqa: PLC0415  (see the docstring)

    return RELEASED


def upgrade() -> None:
    released = _released()
    for name in CREATED:
        op.execute(released[name].create())
    for name in DROPPED:
        op.execute(released[name].drop())


def downgrade() -> None:
    released = _released()
    for name in DROPPED:
        op.execute(released[name].create())
    for name in reversed(CREATED):
        op.execute(released[name].drop())
