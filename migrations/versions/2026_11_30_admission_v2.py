"""Version 2 of the admission's functions (`mq.queue.sql.functions`): `skiplock_topic_exists` and
`skiplock_topic_count` in plpgsql instead of SQL (Citus plans no query of a distributed table that takes an SQL
function's parameters), and the functions that call them (`skiplock_admit`, `_one`, `_copy`, `_copy_all`). Version 1
stays for this release's rollout (instances of the release before call it); the next release's migration drops it.

Revision ID: 2026_11_30_admission_v2
Revises: 2026_11_30_tenant_keys_contract
Create Date: 2026-11-30
"""

from alembic import op

revision = "2026_11_30_admission_v2"
down_revision = "2026_11_30_tenant_keys_contract"
branch_labels = None
depends_on = None

#: In the order they are made (each after those it calls).
CREATED = (
    "skiplock_topic_exists_v2",
    "skiplock_topic_count_v2",
    "skiplock_admit_v2",
    "skiplock_admit_one_v2",
    "skiplock_admit_copy_v2",
    "skiplock_admit_copy_all_v2",
)


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
