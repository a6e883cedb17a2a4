"""Admission gates: exact caps on live messages (a tenant's max_messages, a topic's max_depth) and on a tenant's
number of topics (max_topics), paid for only by the tenants and topics that have one.

Revision ID: 2026_11_22_admission
Revises: 2026_11_22_sessions
Create Date: 2026-11-22

How a cap stays exact without counting on every enqueue (docs/semantics.md, "Quotas and max_depth"): each capped
scope (a topic, or '' for the whole tenant) has one `admission_gates` row whose `bound` is never below the scope's
live (pending + processing) messages. An enqueue adds its rows to the bound in the same statement that inserts
them, while the bound stays within the cap: one primary-key update, whose row lock orders concurrent enqueues of
the scope. Acks, nacks and reapers never touch the gate, so the bound only overestimates; when an enqueue would
push it past the cap, the gate recounts the scope's live messages under its lock (the only time anything is
counted) and either admits with the exact count or refuses. Enqueues of uncapped scopes never reach this code.
"""

from alembic import op

revision = "2026_11_22_admission"
down_revision = "2026_11_22_sessions"
branch_labels = None
depends_on = None

# Refusals carry their own SQLSTATE (class SK is not used by Postgres), DETAIL = the scope, HINT = 'used/cap'.
# SKQ01: a topic's max_depth, SKQ02: the tenant's max_messages, SKQ03: the tenant's max_topics.
ADMIT = r"""
CREATE FUNCTION skiplock_admit(p_tenant bigint, p_scopes text[], p_counts bigint[], p_caps bigint[],
                               p_max_topics integer, p_topics text[])
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    i integer;
    bound_now bigint;
    live bigint;
    fresh integer;
    existing bigint;
BEGIN
    -- max_topics first (its lock is always taken before any gate's, so two statements never wait in a cycle),
    -- and only when a topic of this statement is new to the tenant.
    IF p_max_topics IS NOT NULL
       AND EXISTS (SELECT FROM unnest(p_topics) AS t(topic) WHERE NOT skiplock_topic_exists(p_tenant, t.topic)) THEN
        INSERT INTO admission_gates (tenant_id, scope, bound) VALUES (p_tenant, '#topics', 0) ON CONFLICT DO NOTHING;
        PERFORM FROM admission_gates WHERE tenant_id = p_tenant AND scope = '#topics' FOR UPDATE;
        -- Under the lock, every statement that created a topic before us has committed: look again.
        SELECT count(*) INTO fresh FROM unnest(p_topics) AS t(topic)
        WHERE NOT skiplock_topic_exists(p_tenant, t.topic);
        IF fresh > 0 THEN
            existing := skiplock_topic_count(p_tenant);
            IF existing + fresh > p_max_topics THEN
                RAISE EXCEPTION USING ERRCODE = 'SKQ03', MESSAGE = 'max_topics reached', DETAIL = '',
                    HINT = existing || '/' || p_max_topics;
            END IF;
        END IF;
    END IF;

    -- Live-message caps, in the caller's order ('' first, then topics sorted).
    FOR i IN 1 .. coalesce(array_length(p_scopes, 1), 0) LOOP
        LOOP
            UPDATE admission_gates SET bound = bound + p_counts[i]
            WHERE tenant_id = p_tenant AND scope = p_scopes[i] AND bound + p_counts[i] <= p_caps[i];
            EXIT WHEN FOUND;
            SELECT bound INTO bound_now FROM admission_gates
            WHERE tenant_id = p_tenant AND scope = p_scopes[i] FOR UPDATE;
            IF p_scopes[i] = '' THEN
                SELECT count(*) INTO live FROM messages
                WHERE tenant_id = p_tenant AND status IN ('pending', 'processing');
            ELSE
                SELECT count(*) INTO live FROM messages
                WHERE tenant_id = p_tenant AND topic = p_scopes[i] AND status IN ('pending', 'processing');
            END IF;
            IF live + p_counts[i] > p_caps[i] THEN
                RAISE EXCEPTION USING ERRCODE = CASE WHEN p_scopes[i] = '' THEN 'SKQ02' ELSE 'SKQ01' END,
                    MESSAGE = 'cap reached', DETAIL = p_scopes[i], HINT = live || '/' || p_caps[i];
            END IF;
            IF bound_now IS NOT NULL THEN
                UPDATE admission_gates SET bound = live + p_counts[i]
                WHERE tenant_id = p_tenant AND scope = p_scopes[i];
                EXIT;
            END IF;
            -- No gate yet: create it with the count just taken. A statement that created it meanwhile has
            -- committed its rows by the time ON CONFLICT gives up; start over through its gate.
            INSERT INTO admission_gates (tenant_id, scope, bound) VALUES (p_tenant, p_scopes[i], live + p_counts[i])
            ON CONFLICT DO NOTHING;
            EXIT WHEN FOUND;
        END LOOP;
    END LOOP;
    RETURN true;
END $$"""

# A topic exists when it, or its dead-letter topic, holds messages in any status, or it has a config. Five index
# probes: each status group has its own partial index.
TOPIC_EXISTS = r"""
CREATE FUNCTION skiplock_topic_exists(p_tenant bigint, p_topic text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT FROM topic_configs WHERE tenant_id = p_tenant AND topic = p_topic)
        OR EXISTS (SELECT FROM messages WHERE tenant_id = p_tenant AND status IN ('pending', 'processing')
                   AND topic IN (p_topic, p_topic || '.dlq'))
        OR EXISTS (SELECT FROM messages WHERE tenant_id = p_tenant AND status IN ('failed', 'expired')
                   AND topic IN (p_topic, p_topic || '.dlq'))
$$"""

# A tenant's topics (a dead-letter topic counts with its topic): a skip scan over each partial index, one probe
# per distinct topic instead of a read of every message.
TOPIC_COUNT = r"""
CREATE FUNCTION skiplock_topic_count(p_tenant bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$
    WITH RECURSIVE live(topic) AS (
        (SELECT topic FROM messages WHERE tenant_id = p_tenant AND status IN ('pending', 'processing')
         ORDER BY topic LIMIT 1)
        UNION ALL
        SELECT (SELECT m.topic FROM messages AS m
                WHERE m.tenant_id = p_tenant AND m.status IN ('pending', 'processing') AND m.topic > live.topic
                ORDER BY m.topic LIMIT 1)
        FROM live WHERE live.topic IS NOT NULL
    ), done(topic) AS (
        (SELECT topic FROM messages WHERE tenant_id = p_tenant AND status IN ('failed', 'expired')
         ORDER BY topic LIMIT 1)
        UNION ALL
        SELECT (SELECT m.topic FROM messages AS m
                WHERE m.tenant_id = p_tenant AND m.status IN ('failed', 'expired') AND m.topic > done.topic
                ORDER BY m.topic LIMIT 1)
        FROM done WHERE done.topic IS NOT NULL
    )
    SELECT count(DISTINCT regexp_replace(t.topic, '\.dlq$', ''))
    FROM (SELECT topic FROM live UNION ALL SELECT topic FROM done
          UNION ALL SELECT topic FROM topic_configs WHERE tenant_id = p_tenant) AS t
    WHERE t.topic IS NOT NULL
$$"""


def upgrade() -> None:
    op.execute("""
    CREATE TABLE admission_gates (
        tenant_id  bigint NOT NULL,
        scope      text NOT NULL,
        bound      bigint NOT NULL,
        PRIMARY KEY (tenant_id, scope)
    )""")
    op.execute(TOPIC_EXISTS)
    op.execute(TOPIC_COUNT)
    op.execute(ADMIT)


def downgrade() -> None:
    op.execute("DROP FUNCTION skiplock_admit(bigint, text[], bigint[], bigint[], integer, text[])")
    op.execute("DROP FUNCTION skiplock_topic_count(bigint)")
    op.execute("DROP FUNCTION skiplock_topic_exists(bigint, text)")
    op.execute("DROP TABLE admission_gates")
