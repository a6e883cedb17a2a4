"""Saved state on a deferral: a nack may carry `metadata`, merged into the message's before the retry. A consumer
group's nack keeps it on the group's delivery (`deliveries.metadata`), so that one group's saved state is never
another's; the group's deliveries answer the message's metadata with it merged on top.

Revision ID: 2026_11_25_nack_metadata
Revises: 2026_11_25_message_log
Create Date: 2026-11-25
"""

from alembic import op

revision = "2026_11_25_nack_metadata"
down_revision = "2026_11_25_message_log"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE deliveries ADD COLUMN metadata jsonb")
    # The nack of migration 2026_11_25_consumer_groups with `meta`: merged into the delivery's saved state on a
    # retry; a dead letter's copy carries the message's metadata with the group's state merged on top. The
    # nine-argument version stays as it was, for servers of the previous release during a rolling upgrade.
    op.execute("""
    CREATE FUNCTION skiplock_group_nack(tenant bigint, group_name text, mid uuid, rcpt uuid, err text,
                                        delay float8, backoff_default int4[], dlq_default bool, copy_id uuid,
                                        meta jsonb)
    RETURNS TABLE (outcome text, topic text) LANGUAGE plpgsql AS $$
    DECLARE
        gid bigint; gtopic text; tries int; maxr int; dlq_on bool; backoff int4[]; outc text; ended jsonb;
        saved jsonb;
    BEGIN
        SELECT d.group_id, g.topic, d.retry_count + 1, jsonb_build_object(
                   'attempt', coalesce((d.attempts -> -1 ->> 'attempt')::int, 0) + 1,
                   'leased_at', to_char(d.leased_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                   'leased_by', d.leased_by, 'error', err,
                   'ended_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
               CASE WHEN meta IS NULL THEN d.metadata ELSE coalesce(d.metadata, '{}') || meta END
        INTO gid, gtopic, tries, ended, saved
        FROM consumer_groups AS g JOIN deliveries AS d ON d.group_id = g.id
        WHERE g.tenant_id = tenant AND g.name = group_name AND d.message_id = mid AND d.status = 'processing'
          AND (rcpt IS NULL OR d.receipt = rcpt)
        FOR UPDATE OF d;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        SELECT m.max_retries, coalesce(tc.dlq_enabled, dlq_default), coalesce(tc.retry_backoff_seconds, backoff_default)
        INTO maxr, dlq_on, backoff
        FROM messages AS m LEFT JOIN topic_configs AS tc ON tc.tenant_id = tenant AND tc.topic = m.topic
        WHERE m.id = mid;
        outc := CASE WHEN tries < maxr THEN 'retry' WHEN dlq_on THEN 'dlq' ELSE 'failed' END;
        IF outc = 'retry' THEN
            UPDATE deliveries AS d SET
                status = 'pending', retry_count = tries, receipt = NULL, last_error = err, metadata = saved,
                available_at = now() + make_interval(secs => coalesce(
                    delay, backoff[least(tries, cardinality(backoff))], 0)),
                attempts = (CASE WHEN jsonb_array_length(coalesce(d.attempts, '[]')) >= 20 THEN d.attempts - 0
                            ELSE coalesce(d.attempts, '[]') END)
                           || jsonb_build_array(ended || jsonb_build_object('outcome', 'nacked'))
            WHERE d.group_id = gid AND d.message_id = mid;
        ELSE
            INSERT INTO messages (id, tenant_id, topic, key, payload, metadata, priority, max_retries, status,
                                  retry_count, last_error, original_topic, dlq_moved_at, consumer_group, attempts)
            SELECT copy_id, m.tenant_id, CASE outc WHEN 'dlq' THEN m.topic || '.dlq' ELSE m.topic END, m.key,
                   m.payload, CASE WHEN saved IS NULL THEN m.metadata ELSE coalesce(m.metadata, '{}') || saved END,
                   m.priority, CASE outc WHEN 'dlq' THEN 0 ELSE m.max_retries END,
                   CASE outc WHEN 'dlq' THEN 'pending' ELSE 'failed' END, CASE outc WHEN 'dlq' THEN 0 ELSE tries END,
                   err, CASE outc WHEN 'dlq' THEN m.topic END, CASE outc WHEN 'dlq' THEN now() END, group_name,
                   coalesce(d.attempts, '[]')
                       || jsonb_build_array(ended || jsonb_build_object('outcome', 'dead_lettered'))
            FROM messages AS m JOIN deliveries AS d ON d.group_id = gid AND d.message_id = m.id
            WHERE m.id = mid;
            DELETE FROM deliveries WHERE group_id = gid AND message_id = mid;
            PERFORM skiplock_group_done(ARRAY[mid]);
        END IF;
        RETURN QUERY SELECT outc, gtopic;
    END $$""")


def downgrade() -> None:
    op.execute("DROP FUNCTION skiplock_group_nack(bigint, text, uuid, uuid, text, float8, int4[], bool, uuid, jsonb)")
    op.execute("ALTER TABLE deliveries DROP COLUMN metadata")
