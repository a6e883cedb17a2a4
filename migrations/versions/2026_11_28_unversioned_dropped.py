"""The unversioned database functions go: `skiplock_group_ack` and the others that the migrations before
`2026_11_28_versioned_functions` created, called by no release since the one after it (`tests/integration/
test_functions.py`: the database holds the current versions and nothing else). A database made since those
migrations were folded into one (`2026_11_28_baseline`) never had them, hence IF EXISTS.

Revision ID: 2026_11_28_unversioned_dropped
Revises: 2026_11_28_tenant_keys
Create Date: 2026-11-28
"""

from alembic import op

revision = "2026_11_28_unversioned_dropped"
down_revision = "2026_11_28_tenant_keys"
branch_labels = None
depends_on = None

_ADMIT = "bigint, text[], bigint[], bigint[], integer, text[]"
_GROUP_NACK = "bigint, text, uuid, uuid, text, double precision, integer[], boolean, uuid"
#: (name, argument types)
DROPPED = (
    ("skiplock_admit", _ADMIT),
    ("skiplock_admit_copy", "bigint, text, bigint, bigint"),
    ("skiplock_admit_copy_all", _ADMIT),
    ("skiplock_admit_one", "bigint, text, bigint, bigint"),
    ("skiplock_group_ack", "bigint, text, uuid[], uuid[]"),
    ("skiplock_group_done", "uuid[]"),
    ("skiplock_group_done", "uuid[], boolean"),
    ("skiplock_group_nack", _GROUP_NACK),
    ("skiplock_group_nack", f"{_GROUP_NACK}, jsonb"),
    ("skiplock_group_release", "bigint, integer"),
    ("skiplock_group_tombstone", ""),
    ("skiplock_topic_count", "bigint"),
    ("skiplock_topic_exists", "bigint, text"),
)


def upgrade() -> None:
    for name, arguments in DROPPED:
        op.execute(f"DROP FUNCTION IF EXISTS {name}({arguments})")


def downgrade() -> None:
    """Nothing comes back: no release that called them runs on a schema this new."""
