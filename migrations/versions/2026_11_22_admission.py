"""Admission gates: exact caps on live messages (a tenant's max_messages, a topic's max_depth) and on a tenant's
number of topics (max_topics), paid for only by the tenants and topics that have one.

Revision ID: 2026_11_22_admission
Revises: 2026_11_22_sessions
Create Date: 2026-11-22

How a cap stays exact without counting on every enqueue (docs/semantics.md, "Quotas and max_depth"): each capped
scope (a topic, or '' for the whole tenant) has 32 rows (stripes) in `admission_gates`. Each stripe has an allowance
(`alloc`), and the allowances add up to the cap; each stripe's `bound` counts the rows admitted through it and
stays within its allowance, so the bounds add up to at most the cap, and never to less than the scope's live
(pending + processing) messages. An enqueue adds its rows to the bound of one stripe (its connection's) in the
same statement that inserts them: one primary-key update, whose row lock is held to commit, so concurrent
enqueues on different connections rarely wait for each other (one row for the whole scope serialised them, and
their commits: batch enqueue into a capped topic ran at half the uncapped rate). Acks, nacks and reapers never
touch the gates, so the bounds only overestimate. When a stripe's allowance runs out, the enqueue locks every
stripe of the scope, counts its live messages (the only time anything is counted), and either refuses or
rebalances: its own stripe's bound becomes the count plus its rows, the others' zero, and the room left is split
evenly between the allowances. Enqueues of uncapped scopes never reach this code.
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
    stripes constant integer := 32;
    mine constant integer := pg_backend_pid() % stripes;
    i integer;
    n bigint;
    live bigint;
    room bigint;
    fresh integer;
    existing bigint;
BEGIN
    -- max_topics first (its lock is always taken before any gate's, so two statements never wait in a cycle),
    -- and only when a topic of this statement is new to the tenant.
    IF p_max_topics IS NOT NULL
       AND EXISTS (SELECT FROM unnest(p_topics) AS t(topic) WHERE NOT skiplock_topic_exists(p_tenant, t.topic)) THEN
        INSERT INTO admission_gates (tenant_id, scope, stripe, bound, alloc) VALUES (p_tenant, '#topics', 0, 0, 0)
        ON CONFLICT DO NOTHING;
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

    -- Live-message caps, in the caller's order ('' first, then topics sorted; stripes in order within a scope).
    FOR i IN 1 .. coalesce(array_length(p_scopes, 1), 0) LOOP
        n := p_counts[i];
        UPDATE admission_gates SET bound = bound + n
        WHERE tenant_id = p_tenant AND scope = p_scopes[i] AND stripe = mine AND bound + n <= alloc;
        CONTINUE WHEN FOUND;
        -- This stripe's allowance is used up (or the gate is new): take every stripe, count, rebalance.
        INSERT INTO admission_gates (tenant_id, scope, stripe, bound, alloc)
        SELECT p_tenant, p_scopes[i], s, 0, 0 FROM generate_series(0, stripes - 1) AS s
        ON CONFLICT DO NOTHING;
        PERFORM FROM admission_gates WHERE tenant_id = p_tenant AND scope = p_scopes[i] ORDER BY stripe FOR UPDATE;
        IF p_scopes[i] = '' THEN
            SELECT count(*) INTO live FROM messages
            WHERE tenant_id = p_tenant AND status IN ('pending', 'processing');
        ELSE
            SELECT count(*) INTO live FROM messages
            WHERE tenant_id = p_tenant AND topic = p_scopes[i] AND status IN ('pending', 'processing');
        END IF;
        IF live + n > p_caps[i] THEN
            RAISE EXCEPTION USING ERRCODE = CASE WHEN p_scopes[i] = '' THEN 'SKQ02' ELSE 'SKQ01' END,
                MESSAGE = 'cap reached', DETAIL = p_scopes[i], HINT = live || '/' || p_caps[i];
        END IF;
        room := p_caps[i] - live - n;
        UPDATE admission_gates AS g
        SET bound = CASE WHEN g.stripe = mine THEN live + n ELSE 0 END,
            alloc = CASE WHEN g.stripe = mine THEN live + n ELSE 0 END + room / stripes
                    + CASE WHEN g.stripe < room % stripes THEN 1 ELSE 0 END
        WHERE g.tenant_id = p_tenant AND g.scope = p_scopes[i];
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
        stripe     smallint NOT NULL,
        bound      bigint NOT NULL,
        alloc      bigint NOT NULL,
        PRIMARY KEY (tenant_id, scope, stripe)
    )""")
    op.execute(TOPIC_EXISTS)
    op.execute(TOPIC_COUNT)
    op.execute(ADMIT)


def downgrade() -> None:
    op.execute("DROP FUNCTION skiplock_admit(bigint, text[], bigint[], bigint[], integer, text[])")
    op.execute("DROP FUNCTION skiplock_topic_count(bigint)")
    op.execute("DROP FUNCTION skiplock_topic_exists(bigint, text)")
    op.execute("DROP TABLE admission_gates")
