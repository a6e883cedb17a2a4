"""Every tenant-scoped table's key leads with its tenant: `messages`, `consumer_groups`, `inflight_reservations` and
`bulk_jobs` by (tenant_id, id), `deliveries` by (tenant_id, group_id, message_id) and its dequeue index by
(tenant_id, group_id, priority DESC, available_at). Each new key replaces the old one (never beside it: a second
key on deliveries measured +39% per minted delivery), so every lookup by id names its tenant, as every statement of
the release before already does (`deliveries.tenant_id` came with it).

The release before calls the consumer groups' version 2 functions and mints deliveries with their tenant: version 1
and the trigger that filled in a delivery's tenant for the release before it go. The unversioned functions of the
first migrations go in the next one (`2026_11_28_unversioned_dropped`).

The new keys are built CONCURRENTLY (writers go on meanwhile); only the swap of each primary key takes its table's
lock, for as long as a catalog change takes.

Revision ID: 2026_11_28_tenant_keys
Revises: 2026_11_28_deliveries_tenant
Create Date: 2026-11-28
"""

from alembic import op

revision = "2026_11_28_tenant_keys"
down_revision = "2026_11_28_deliveries_tenant"
branch_labels = None
depends_on = None

#: (table, its key before, its key now)
KEYS = (
    ("messages", "id", "tenant_id, id"),
    ("deliveries", "group_id, message_id", "tenant_id, group_id, message_id"),
    ("consumer_groups", "id", "tenant_id, id"),
    ("inflight_reservations", "id", "tenant_id, id"),
    ("bulk_jobs", "id", "tenant_id, id"),
)
DEQUEUE_BEFORE = "group_id, priority DESC, available_at"
DEQUEUE_NOW = "tenant_id, group_id, priority DESC, available_at"
#: Called by the release before the one before, and by nothing now.
DROPPED = (
    "skiplock_group_done_v1",
    "skiplock_group_ack_v1",
    "skiplock_group_nack_v1",
    "skiplock_group_release_v1",
    "skiplock_group_tombstone_v1",
    "skiplock_deliveries_tenant_v1",
)


def _released():  # type: ignore[no-untyped-def]
    """The functions' sources, imported when run: loading the revision imports nothing of the code."""
    from mq.queue.sql.functions import RELEASED  # noqa: PLC0415  (see the docstring)

    return RELEASED


def _swap_keys(keys: list[tuple[str, str]], dequeue: str) -> None:
    """Each table's primary key becomes `keys`' columns, built first without blocking writers."""
    with op.get_context().autocommit_block():
        for table, columns in keys:
            op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {table}_new_key")  # a build that failed before
            op.execute(f"CREATE UNIQUE INDEX CONCURRENTLY {table}_new_key ON {table} ({columns})")
        op.execute("DROP INDEX CONCURRENTLY IF EXISTS deliveries_new_dequeue_idx")
        op.execute(f"CREATE INDEX CONCURRENTLY deliveries_new_dequeue_idx ON deliveries ({dequeue})")
    for table, _ in keys:
        op.execute(f"""
        ALTER TABLE {table} DROP CONSTRAINT {table}_pkey,
            ADD CONSTRAINT {table}_pkey PRIMARY KEY USING INDEX {table}_new_key""")
    op.execute("DROP INDEX deliveries_dequeue_idx")
    op.execute("ALTER INDEX deliveries_new_dequeue_idx RENAME TO deliveries_dequeue_idx")


def upgrade() -> None:
    _swap_keys([(table, now) for table, _, now in KEYS], DEQUEUE_NOW)
    op.execute("DROP TRIGGER deliveries_tenant ON deliveries")
    released = _released()
    for name in DROPPED:
        op.execute(released[name].drop())


def downgrade() -> None:
    released = _released()
    for name in DROPPED:
        op.execute(released[name].create())
    op.execute("""
    CREATE TRIGGER deliveries_tenant BEFORE INSERT ON deliveries
    FOR EACH ROW WHEN (NEW.tenant_id IS NULL) EXECUTE FUNCTION skiplock_deliveries_tenant_v1()""")
    _swap_keys([(table, before) for table, before, _ in KEYS], DEQUEUE_BEFORE)
