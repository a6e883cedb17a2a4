"""Consumer groups: a topic's groups, a delivery row per (message, group) it owes, and the count on the message.

Revision ID: 2026_11_25_consumer_groups
Revises: 2026_11_25_rollups
Create Date: 2026-11-25
"""

from alembic import op

revision = "2026_11_25_consumer_groups"
down_revision = "2026_11_25_rollups"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # `id` orders a topic's groups by creation (queue-ti's list is in creation order).
    op.execute("""
    CREATE TABLE consumer_groups (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tenant_id   bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        topic       text NOT NULL,
        name        text NOT NULL,
        start       text NOT NULL,
        created_at  timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT consumer_groups_start_check CHECK (start IN ('latest', 'earliest')),
        CONSTRAINT consumer_groups_name_uq UNIQUE (tenant_id, topic, name)
    )""")
    # One row per (message, group) that the group still owes: its own lease, receipt, retries and attempts. No
    # foreign keys: each would cost an index probe per row written, on the hot path; the statements that write
    # these rows keep them consistent with messages and groups (mq/queue/sql.py, "Consumer groups").
    op.execute("""
    CREATE TABLE deliveries (
        group_id      bigint NOT NULL,
        message_id    uuid NOT NULL,
        status        text NOT NULL DEFAULT 'pending',
        priority      smallint NOT NULL,
        available_at  timestamptz NOT NULL,
        expires_at    timestamptz,
        retry_count   integer NOT NULL DEFAULT 0,
        receipt       uuid,
        leased_at     timestamptz,
        leased_by     text,
        last_error    text,
        attempts      jsonb,
        PRIMARY KEY (group_id, message_id),
        CONSTRAINT deliveries_status_check CHECK (status IN ('pending', 'processing'))
    )""")
    op.execute("CREATE INDEX deliveries_dequeue_idx ON deliveries (group_id, priority DESC, available_at)")
    # `owed`: how many groups still owe the message (NULL: its topic had no groups when it was enqueued);
    # `consumer_group`: the group a dead letter was dead-lettered by.
    op.execute("ALTER TABLE messages ADD COLUMN owed smallint, ADD COLUMN consumer_group text")
    # A group's ack, and the release of what a deleted group owed: delete the group's deliveries, count their
    # messages down, and delete the messages no group owes any more. Each statement of a function sees what
    # committed before it started: two groups acking a message's last deliveries at once serialize on the
    # message's row in the count-down (the second one counts from the first one's result), and the delete that
    # follows sees 0. One statement could not do this: under READ COMMITTED each of two racing statements still
    # sees the other's delivery row, and neither would delete the message.
    op.execute("""
    CREATE FUNCTION skiplock_group_done(owed_by uuid[]) RETURNS void LANGUAGE plpgsql AS $$
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
        IF gone IS NOT NULL THEN
            DELETE FROM messages WHERE id = ANY(gone) AND owed <= 0;
        END IF;
    END $$""")
    # An ack names the group, not its topic: the tenant's groups of that name (one per topic that has one) are
    # looked up here, and each listed message's delivery by the primary key (group, message).
    op.execute("""
    CREATE FUNCTION skiplock_group_ack(tenant bigint, group_name text, ids uuid[], receipts uuid[])
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
    # A group's nack: below max_retries its delivery is pending again after the delay (or the topic's backoff);
    # reached, the group's delivery is dead-lettered: a copy of the message goes to `<topic>.dlq` (pending,
    # retry_count 0, max_retries 0, `original_topic` and `consumer_group` set), or stays in the topic as `failed`
    # for that group when the DLQ is off; the delivery goes and the message is counted down. `copy_id` is the
    # copy's id (a UUIDv7 from the caller). Answers the outcome and the group's topic; no row: nothing matched.
    op.execute("""
    CREATE FUNCTION skiplock_group_nack(tenant bigint, group_name text, mid uuid, rcpt uuid, err text,
                                        delay float8, backoff_default int4[], dlq_default bool, copy_id uuid)
    RETURNS TABLE (outcome text, topic text) LANGUAGE plpgsql AS $$
    DECLARE
        gid bigint; gtopic text; tries int; maxr int; dlq_on bool; backoff int4[]; outc text; ended jsonb;
    BEGIN
        SELECT d.group_id, g.topic, d.retry_count + 1,
               jsonb_build_object(
                   'attempt', coalesce((d.attempts -> -1 ->> 'attempt')::int, 0) + 1,
                   'leased_at', to_char(d.leased_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                   'leased_by', d.leased_by, 'error', err,
                   'ended_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
        INTO gid, gtopic, tries, ended
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
                status = 'pending', retry_count = tries, receipt = NULL, last_error = err,
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
                   m.payload, m.metadata, m.priority, CASE outc WHEN 'dlq' THEN 0 ELSE m.max_retries END,
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
    op.execute("""
    CREATE FUNCTION skiplock_group_release(g bigint, batch int) RETURNS int LANGUAGE plpgsql AS $$
    DECLARE released uuid[];
    BEGIN
        WITH picked AS (
            SELECT message_id FROM deliveries WHERE group_id = g LIMIT batch FOR UPDATE SKIP LOCKED
        ), gone AS (
            DELETE FROM deliveries AS d USING picked AS p WHERE d.group_id = g AND d.message_id = p.message_id
            RETURNING d.message_id
        )
        SELECT array_agg(message_id) INTO released FROM gone;
        IF released IS NULL THEN
            RETURN 0;
        END IF;
        PERFORM skiplock_group_done(released);
        RETURN cardinality(released);
    END $$""")


def downgrade() -> None:
    op.execute("DROP FUNCTION skiplock_group_release(bigint, int)")
    op.execute("DROP FUNCTION skiplock_group_nack(bigint, text, uuid, uuid, text, float8, int4[], bool, uuid)")
    op.execute("DROP FUNCTION skiplock_group_ack(bigint, text, uuid[], uuid[])")
    op.execute("DROP FUNCTION skiplock_group_done(uuid[])")
    op.execute("ALTER TABLE messages DROP COLUMN owed, DROP COLUMN consumer_group")
    op.execute("DROP TABLE deliveries")
    op.execute("DROP TABLE consumer_groups")
