"""Admission for binary COPY: capped batches go in by COPY too, their gates passed in the COPY statement itself.

Revision ID: 2026_11_22_admission_copy
Revises: 2026_11_22_admission
Create Date: 2026-11-22

COPY cannot run a CTE or take parameters, but `COPY ... FROM STDIN WHERE condition` runs in the COPY's own
transaction, and Postgres simplifies the condition once, before the first row (`eval_const_expressions` in
`DoCopy`), calling every IMMUTABLE function whose arguments are literals. A capped COPY's condition is

    current_setting('skiplock.admitted', true) = '<token>' OR skiplock_admit_copy('<token>', <literals>)

`skiplock_admit_copy` is declared IMMUTABLE so that it is called there, exactly once: it passes the gates through
the volatile `skiplock_admit_once` (or the COPY fails whole with SKQ01-03 before any row is read), and the
condition becomes the constant true. A volatile condition would also work but costs far more: it turns off COPY's
multi-row inserts (batch 100 into a capped topic: 0.78 of an uncapped COPY, SQL alone, against 0.95 this way).
Should a Postgres version ever evaluate the condition per row instead, the first row passes the gates and sets the
token, and every later row is admitted by the setting lookup: still exact, only slower.
"""

from alembic import op

revision = "2026_11_22_admission_copy"
down_revision = "2026_11_22_admission"
branch_labels = None
depends_on = None

# The one-gate case without max_topics tries this connection's stripe first, as the insert statements do.
ADMIT_ONCE = r"""
CREATE FUNCTION skiplock_admit_once(p_token text, p_tenant bigint, p_scopes text[], p_counts bigint[],
                                    p_caps bigint[], p_max_topics integer, p_topics text[])
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(p_scopes) = 1 AND p_max_topics IS NULL THEN
        UPDATE admission_gates SET bound = bound + p_counts[1]
        WHERE tenant_id = p_tenant AND scope = p_scopes[1] AND stripe = pg_backend_pid() % 32
          AND bound + p_counts[1] <= alloc;
        IF NOT FOUND THEN
            PERFORM skiplock_admit(p_tenant, p_scopes, p_counts, p_caps, p_max_topics, p_topics);
        END IF;
    ELSE
        PERFORM skiplock_admit(p_tenant, p_scopes, p_counts, p_caps, p_max_topics, p_topics);
    END IF;
    PERFORM set_config('skiplock.admitted', p_token, true);
    RETURN true;
END $$"""


# Not immutable at all: declared so only to be called at simplification time (above). Use it nowhere else.
ADMIT_COPY = r"""
CREATE FUNCTION skiplock_admit_copy(p_token text, p_tenant bigint, p_scopes text[], p_counts bigint[],
                                    p_caps bigint[], p_max_topics integer, p_topics text[])
RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN skiplock_admit_once(p_token, p_tenant, p_scopes, p_counts, p_caps, p_max_topics, p_topics);
END $$"""

_ARGUMENTS = "text, bigint, text[], bigint[], bigint[], integer, text[]"


def upgrade() -> None:
    op.execute(ADMIT_ONCE)
    op.execute(ADMIT_COPY)


def downgrade() -> None:
    op.execute(f"DROP FUNCTION skiplock_admit_copy({_ARGUMENTS})")
    op.execute(f"DROP FUNCTION skiplock_admit_once({_ARGUMENTS})")
