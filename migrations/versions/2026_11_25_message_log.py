"""Message history: `replayable` topics keep every acked message in `message_log`, a table partitioned by range of
`acked_at` (native declarative partitioning: any managed Postgres has it), so that retention drops whole
partitions instead of deleting rows.

Revision ID: 2026_11_25_message_log
Revises: 2026_11_25_deleted_groups
Create Date: 2026-11-25
"""

from alembic import op

revision = "2026_11_25_message_log"
down_revision = "2026_11_25_deleted_groups"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE topic_configs ADD COLUMN replayable boolean, ADD COLUMN replay_window_seconds integer")
    # Narrow: what a replay and the log's page need, nothing of the lease. One index, the page's keyset order. The
    # partitions are made ahead by the archive reaper (`mq.history`); the default partition only catches rows
    # when none was made in time, so that an ack never fails for want of one.
    op.execute("""
    CREATE TABLE message_log (
        tenant_id    bigint NOT NULL,
        topic        text NOT NULL,
        acked_at     timestamptz NOT NULL,
        id           uuid NOT NULL,
        key          text,
        payload      bytea NOT NULL,
        metadata     jsonb,
        priority     smallint NOT NULL,
        retry_count  integer NOT NULL,
        created_at   timestamptz NOT NULL
    ) PARTITION BY RANGE (acked_at)""")
    op.execute("CREATE INDEX message_log_page_idx ON message_log (tenant_id, topic, acked_at, id)")
    op.execute("CREATE TABLE message_log_p_default PARTITION OF message_log DEFAULT")
    # What `DELETE /api/topics/{topic}/message-log?before=` trimmed: hidden from then on, gone with its partition.
    op.execute("""
    CREATE TABLE message_log_trims (
        tenant_id  bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        topic      text NOT NULL,
        before     timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, topic)
    )""")
    # The last group's ack keeps the message in the log of a replayable topic, in the ack's transaction; a
    # count-down by a nack (dead letter) or a deleted group is no ack and keeps nothing.
    op.execute("""
    CREATE FUNCTION skiplock_group_done(owed_by uuid[], acked boolean) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE gone uuid[];
    BEGIN
        -- in id order, so that two count-downs over the same messages wait for each other instead of deadlocking
        PERFORM 1 FROM messages WHERE id = ANY(owed_by) ORDER BY id FOR UPDATE;
        WITH counted AS (
            UPDATE messages AS m SET owed = m.owed - n.k
            FROM (SELECT id, count(*)::int2 AS k FROM unnest(owed_by) AS x(id) GROUP BY id) AS n
            WHERE m.id = n.id AND m.owed IS NOT NULL
            RETURNING m.id, m.owed
        )
        SELECT array_agg(id) INTO gone FROM counted WHERE owed <= 0;
        IF gone IS NULL THEN
            RETURN;
        END IF;
        IF NOT acked THEN
            DELETE FROM messages WHERE id = ANY(gone) AND owed <= 0;
            RETURN;
        END IF;
        WITH done AS (
            DELETE FROM messages WHERE id = ANY(gone) AND owed <= 0
            RETURNING tenant_id, topic, id, key, payload, metadata, priority, retry_count, created_at
        )
        INSERT INTO message_log (tenant_id, topic, acked_at, id, key, payload, metadata, priority, retry_count,
                                 created_at)
        SELECT d.tenant_id, d.topic, now(), d.id, d.key, d.payload, d.metadata, d.priority, d.retry_count,
               d.created_at
        FROM done AS d JOIN topic_configs AS tc ON tc.tenant_id = d.tenant_id AND tc.topic = d.topic
        WHERE tc.replayable;
    END $$""")
    op.execute("""
    CREATE OR REPLACE FUNCTION skiplock_group_done(owed_by uuid[]) RETURNS void LANGUAGE sql AS $$
        SELECT skiplock_group_done(owed_by, false)
    $$""")
    op.execute("""
    CREATE OR REPLACE FUNCTION skiplock_group_ack(tenant bigint, group_name text, ids uuid[], receipts uuid[])
    RETURNS TABLE (id uuid, receipt uuid, topic text) LANGUAGE plpgsql AS $$
    DECLARE acked uuid[]; ended uuid[]; topics text[];
    BEGIN
        WITH gone AS (
            DELETE FROM deliveries AS d
            USING unnest(ids, receipts) AS w(id, receipt), consumer_groups AS g
            WHERE g.tenant_id = tenant AND g.name = group_name AND d.group_id = g.id AND d.message_id = w.id
              AND d.status = 'processing' AND (w.receipt IS NULL OR w.receipt = d.receipt)
            RETURNING d.message_id, d.receipt, g.topic
        )
        SELECT array_agg(gone.message_id), array_agg(gone.receipt), array_agg(gone.topic)
        INTO acked, ended, topics FROM gone;
        IF acked IS NULL THEN
            RETURN;
        END IF;
        PERFORM skiplock_group_done(acked, true);
        RETURN QUERY SELECT * FROM unnest(acked, ended, topics);
    END $$""")


def downgrade() -> None:
    op.execute("""
    CREATE OR REPLACE FUNCTION skiplock_group_ack(tenant bigint, group_name text, ids uuid[], receipts uuid[])
    RETURNS TABLE (id uuid, receipt uuid, topic text) LANGUAGE plpgsql AS $$
    DECLARE acked uuid[]; ended uuid[]; topics text[];
    BEGIN
        WITH gone AS (
            DELETE FROM deliveries AS d
            USING unnest(ids, receipts) AS w(id, receipt), consumer_groups AS g
            WHERE g.tenant_id = tenant AND g.name = group_name AND d.group_id = g.id AND d.message_id = w.id
              AND d.status = 'processing' AND (w.receipt IS NULL OR w.receipt = d.receipt)
            RETURNING d.message_id, d.receipt, g.topic
        )
        SELECT array_agg(gone.message_id), array_agg(gone.receipt), array_agg(gone.topic)
        INTO acked, ended, topics FROM gone;
        IF acked IS NULL THEN
            RETURN;
        END IF;
        PERFORM skiplock_group_done(acked);
        RETURN QUERY SELECT * FROM unnest(acked, ended, topics);
    END $$""")
    op.execute("""
    CREATE OR REPLACE FUNCTION skiplock_group_done(owed_by uuid[]) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE gone uuid[];
    BEGIN
        PERFORM 1 FROM messages WHERE id = ANY(owed_by) ORDER BY id FOR UPDATE;
        WITH counted AS (
            UPDATE messages AS m SET owed = m.owed - n.k
            FROM (SELECT id, count(*)::int2 AS k FROM unnest(owed_by) AS x(id) GROUP BY id) AS n
            WHERE m.id = n.id AND m.owed IS NOT NULL
            RETURNING m.id, m.owed
        )
        SELECT array_agg(id) INTO gone FROM counted WHERE owed <= 0;
        IF gone IS NOT NULL THEN
            DELETE FROM messages WHERE id = ANY(gone) AND owed <= 0;
        END IF;
    END $$""")
    op.execute("DROP FUNCTION skiplock_group_done(uuid[], boolean)")
    op.execute("DROP TABLE message_log_trims")
    op.execute("DROP TABLE message_log")
    op.execute("ALTER TABLE topic_configs DROP COLUMN replay_window_seconds, DROP COLUMN replayable")
