"""What the release before kept for its own rollout goes (the contract step of `2026_11_29_gauges_by_tenant`):

- the audit trail's key becomes (tenant_id, id): its platform-wide entries, written with a NULL tenant before
  (`mq.audit.types.PLATFORM_TENANT_ID`), are under tenant 0, the column is NOT NULL, the index by (tenant_id, id)
  that the key now is goes, and one by id alone serves every tenant's page (a platform admin's);
- `queue_gauges` and `group_gauges`, the gauges keyed by the tenant's slug, which no instance of the release before
  reads or writes (it recounts into `topic_gauges` and `consumer_group_gauges`);
- the trigger `consumer_groups_tombstone` and its function `skiplock_group_tombstone_v2`: the release before writes
  a deleted group's tombstone in the statement that deletes it (and in a tenant's deletion).

Each step is idempotent (a Citus coordinator's distribution already made the audit key, dropped the trigger): the
key is built CONCURRENTLY and swapped in, the NOT NULL proven by a constraint validated without blocking writers, so
only the swap takes the table's lock, for as long as a catalog change takes.

Revision ID: 2026_11_30_tenant_keys_contract
Revises: 2026_11_29_gauges_by_tenant
Create Date: 2026-11-30
"""

from alembic import op

revision = "2026_11_30_tenant_keys_contract"
down_revision = "2026_11_29_gauges_by_tenant"
branch_labels = None
depends_on = None

_AUDIT_KEY = """
SELECT array(SELECT a.attname::text FROM pg_constraint AS c, unnest(c.conkey) WITH ORDINALITY AS k(attnum, position)
             JOIN pg_attribute AS a ON a.attrelid = 'audit_log'::regclass AND a.attnum = k.attnum
             WHERE c.conname = 'audit_log_pkey' AND c.conrelid = 'audit_log'::regclass ORDER BY k.position)"""


def _released():  # type: ignore[no-untyped-def]
    """The functions' sources, imported when run: loading the revision imports nothing of the code."""
    from mq.queue.sql.functions import RELEASED  # noqa: PLC0415  (see the docstring)

    return RELEASED


def upgrade() -> None:
    bind = op.get_bind()
    # every tenant's page of the audit trail (a platform admin's) reads it by id alone, as the key did
    with op.get_context().autocommit_block():
        op.execute("CREATE INDEX CONCURRENTLY IF NOT EXISTS audit_log_id_idx ON audit_log (id)")
    if list(bind.exec_driver_sql(_AUDIT_KEY).scalar() or []) == ["id"]:
        op.execute("UPDATE audit_log SET tenant_id = 0 WHERE tenant_id IS NULL")
        op.execute("ALTER TABLE audit_log ADD CONSTRAINT audit_log_tenant_set CHECK (tenant_id IS NOT NULL) NOT VALID")
        with op.get_context().autocommit_block():
            op.execute("ALTER TABLE audit_log VALIDATE CONSTRAINT audit_log_tenant_set")  # writers go on meanwhile
            op.execute("DROP INDEX CONCURRENTLY IF EXISTS audit_log_new_key")  # a build that failed before
            op.execute("CREATE UNIQUE INDEX CONCURRENTLY audit_log_new_key ON audit_log (tenant_id, id)")
        op.execute("ALTER TABLE audit_log ALTER COLUMN tenant_id SET NOT NULL")  # proven by the check: no scan
        op.execute("ALTER TABLE audit_log DROP CONSTRAINT audit_log_tenant_set")
        op.execute("ALTER TABLE audit_log DROP CONSTRAINT audit_log_pkey")
        op.execute("ALTER TABLE audit_log ADD CONSTRAINT audit_log_pkey PRIMARY KEY USING INDEX audit_log_new_key")
    op.execute("DROP INDEX IF EXISTS audit_log_tenant_idx")  # what the key is now
    op.execute("DROP TABLE IF EXISTS queue_gauges")
    op.execute("DROP TABLE IF EXISTS group_gauges")
    op.execute("DROP TRIGGER IF EXISTS consumer_groups_tombstone ON consumer_groups")
    op.execute("DROP FUNCTION IF EXISTS skiplock_group_tombstone_v2()")


def downgrade() -> None:
    released = _released()
    op.execute(released["skiplock_group_tombstone_v2"].create())
    op.execute("""
    CREATE TRIGGER consumer_groups_tombstone AFTER DELETE ON consumer_groups
    FOR EACH ROW EXECUTE FUNCTION skiplock_group_tombstone_v2()""")
    op.execute("""
CREATE TABLE group_gauges (
    tenant text NOT NULL,
    topic text NOT NULL,
    consumer_group text NOT NULL,
    pending bigint NOT NULL,
    processing bigint NOT NULL,
    oldest_pending_age_seconds double precision,
    CONSTRAINT group_gauges_pkey PRIMARY KEY (tenant, topic, consumer_group)
)""")
    op.execute("""
CREATE TABLE queue_gauges (
    tenant text NOT NULL,
    topic text NOT NULL,
    status text NOT NULL,
    messages bigint NOT NULL,
    oldest_pending_age_seconds double precision,
    CONSTRAINT queue_gauges_pkey PRIMARY KEY (tenant, topic, status)
)""")
    op.execute("CREATE INDEX audit_log_tenant_idx ON audit_log (tenant_id, id)")
    op.execute("ALTER TABLE audit_log DROP CONSTRAINT audit_log_pkey")
    op.execute("ALTER TABLE audit_log ADD CONSTRAINT audit_log_pkey PRIMARY KEY (id)")
    op.execute("ALTER TABLE audit_log ALTER COLUMN tenant_id DROP NOT NULL")
    op.execute("DROP INDEX audit_log_id_idx")
