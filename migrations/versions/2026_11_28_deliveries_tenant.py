"""`deliveries` and `deleted_groups` carry their tenant; every statement and the consumer groups' functions look
each row up through it (version 2 of each, `mq.queue.sql.functions`).

Two steps, as every schema change ships (docs/deploy.md, "Upgrades without downtime"). This migration adds
`deliveries.tenant_id` (filled from each delivery's message) and the version 2 functions, and keeps what the release
before uses: the version 1 functions, and the keys, which still lead with the group: the release before looks
deliveries up by group alone, and a key leading with the tenant would be of no use to it. That release mints
deliveries without a tenant; a trigger gives each such row its group's tenant on the way in
(`skiplock_deliveries_tenant_v1`, only on a row without one: measured, no cost to a row that has one). The migration
of the release after, whose instances and the one before it all name the tenant, leads the primary key and the
dequeue index with the tenant and drops the old functions and the trigger. (A key by tenant beside the old one in
this release would have cost every delivery a third index entry: 37 against 27 µs per message of three deliveries,
the insert of 100 messages into a topic with 3 groups, measured at the database)

Revision ID: 2026_11_28_deliveries_tenant
Revises: 2026_11_28_versioned_functions
Create Date: 2026-11-28
"""

from alembic import op

revision = "2026_11_28_deliveries_tenant"
down_revision = "2026_11_28_versioned_functions"
branch_labels = None
depends_on = None

CREATED = (
    "skiplock_group_done_v2",
    "skiplock_group_ack_v2",
    "skiplock_group_nack_v2",
    "skiplock_group_release_v2",
    "skiplock_group_tombstone_v2",
    "skiplock_deliveries_tenant_v1",
)


def _released():  # type: ignore[no-untyped-def]
    """The functions' sources, imported when run: loading the revision imports nothing of the code."""
    from mq.queue.sql.functions import RELEASED  # noqa: PLC0415  (see the docstring)

    return RELEASED


def upgrade() -> None:
    op.execute("ALTER TABLE deliveries ADD COLUMN tenant_id bigint")
    # A delivery's tenant is its message's (or, for a message already gone, its group's); a row with neither owes
    # nothing anyone could receive or release.
    op.execute("UPDATE deliveries AS d SET tenant_id = m.tenant_id FROM messages AS m WHERE m.id = d.message_id")
    op.execute("""
    UPDATE deliveries AS d SET tenant_id = g.tenant_id FROM consumer_groups AS g
    WHERE d.tenant_id IS NULL AND g.id = d.group_id""")
    op.execute("DELETE FROM deliveries WHERE tenant_id IS NULL")
    op.execute("ALTER TABLE deliveries ALTER COLUMN tenant_id SET NOT NULL")
    # A deleted group's tombstone: its tenant from what it still owes (none left: nothing to release).
    op.execute("ALTER TABLE deleted_groups ADD COLUMN tenant_id bigint")
    op.execute("""
    UPDATE deleted_groups AS x
    SET tenant_id = (SELECT d.tenant_id FROM deliveries AS d WHERE d.group_id = x.id LIMIT 1)""")
    op.execute("DELETE FROM deleted_groups WHERE tenant_id IS NULL")
    op.execute("ALTER TABLE deleted_groups ALTER COLUMN tenant_id SET NOT NULL")
    op.execute("ALTER TABLE deleted_groups DROP CONSTRAINT deleted_groups_pkey, ADD PRIMARY KEY (tenant_id, id)")

    released = _released()
    for name in CREATED:
        op.execute(released[name].create())
    op.execute("""
    CREATE TRIGGER deliveries_tenant BEFORE INSERT ON deliveries
    FOR EACH ROW WHEN (NEW.tenant_id IS NULL) EXECUTE FUNCTION skiplock_deliveries_tenant_v1()""")
    op.execute("DROP TRIGGER consumer_groups_tombstone ON consumer_groups")
    op.execute("""
    CREATE TRIGGER consumer_groups_tombstone AFTER DELETE ON consumer_groups
    FOR EACH ROW EXECUTE FUNCTION skiplock_group_tombstone_v2()""")


def downgrade() -> None:
    op.execute("DROP TRIGGER consumer_groups_tombstone ON consumer_groups")
    op.execute("""
    CREATE TRIGGER consumer_groups_tombstone AFTER DELETE ON consumer_groups
    FOR EACH ROW EXECUTE FUNCTION skiplock_group_tombstone_v1()""")
    op.execute("DROP TRIGGER deliveries_tenant ON deliveries")
    released = _released()
    for name in reversed(CREATED):
        op.execute(released[name].drop())
    op.execute("ALTER TABLE deleted_groups DROP CONSTRAINT deleted_groups_pkey, ADD PRIMARY KEY (id)")
    op.execute("ALTER TABLE deleted_groups DROP COLUMN tenant_id")
    op.execute("ALTER TABLE deliveries DROP COLUMN tenant_id")
