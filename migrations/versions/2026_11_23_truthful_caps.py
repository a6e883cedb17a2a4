"""Caps that tell the truth: a refusal recounts without the messages past their TTL that no reaper has marked yet.

Revision ID: 2026_11_23_truthful_caps
Revises: 2026_11_22_workers
Create Date: 2026-11-23

`skiplock_admit` counts a scope's live messages index-only (messages_dequeue_idx holds no expiry), which counts a
message whose `expires_at` passed until the expiry reaper marks it: a topic full of dead messages refused
enqueues and reported a depth nobody could dequeue. The cheap count stays an upper bound for admitting; only when
it would refuse does the function count again, reading `expires_at` from the heap, and it refuses only if that
count has no room either, reporting it. The rest of the function is unchanged (migration 2026_11_22_admission).
"""

from alembic import op

revision = "2026_11_23_truthful_caps"
down_revision = "2026_11_22_workers"
branch_labels = None
depends_on = None

_COUNT_ANY = """
        IF p_scopes[i] = '' THEN
            SELECT count(*) INTO live FROM messages
            WHERE tenant_id = p_tenant AND status IN ('pending', 'processing');
        ELSE
            SELECT count(*) INTO live FROM messages
            WHERE tenant_id = p_tenant AND topic = p_scopes[i] AND status IN ('pending', 'processing');
        END IF;"""

_COUNT_ALIVE = """
        IF live + n > p_caps[i] THEN  -- about to refuse: count only what has not expired
            IF p_scopes[i] = '' THEN
                SELECT count(*) INTO live FROM messages
                WHERE tenant_id = p_tenant AND status IN ('pending', 'processing')
                  AND (expires_at IS NULL OR expires_at > now());
            ELSE
                SELECT count(*) INTO live FROM messages
                WHERE tenant_id = p_tenant AND topic = p_scopes[i] AND status IN ('pending', 'processing')
                  AND (expires_at IS NULL OR expires_at > now());
            END IF;
        END IF;"""

ADMIT = r"""
CREATE OR REPLACE FUNCTION skiplock_admit(p_tenant bigint, p_scopes text[], p_counts bigint[], p_caps bigint[],
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
    IF p_max_topics IS NOT NULL
       AND EXISTS (SELECT FROM unnest(p_topics) AS t(topic) WHERE NOT skiplock_topic_exists(p_tenant, t.topic)) THEN
        INSERT INTO admission_gates (tenant_id, scope, stripe, bound, alloc) VALUES (p_tenant, '#topics', 0, 0, 0)
        ON CONFLICT DO NOTHING;
        PERFORM FROM admission_gates WHERE tenant_id = p_tenant AND scope = '#topics' FOR UPDATE;
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

    FOR i IN 1 .. coalesce(array_length(p_scopes, 1), 0) LOOP
        n := p_counts[i];
        UPDATE admission_gates SET bound = bound + n
        WHERE tenant_id = p_tenant AND scope = p_scopes[i] AND stripe = mine AND bound + n <= alloc;
        CONTINUE WHEN FOUND;
        INSERT INTO admission_gates (tenant_id, scope, stripe, bound, alloc)
        SELECT p_tenant, p_scopes[i], s, 0, 0 FROM generate_series(0, stripes - 1) AS s
        ON CONFLICT DO NOTHING;
        PERFORM FROM admission_gates WHERE tenant_id = p_tenant AND scope = p_scopes[i] ORDER BY stripe FOR UPDATE;
        @COUNT@
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


def upgrade() -> None:
    op.execute(ADMIT.replace("@COUNT@", _COUNT_ANY + _COUNT_ALIVE))


def downgrade() -> None:
    op.execute(ADMIT.replace("@COUNT@", _COUNT_ANY))
