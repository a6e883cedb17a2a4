"""Admission for binary COPY: capped batches go in by COPY too, their gates passed in the COPY statement itself.

Revision ID: 2026_11_22_admission_copy
Revises: 2026_11_22_admission
Create Date: 2026-11-22

COPY cannot run a CTE or take parameters, but `COPY ... FROM STDIN WHERE condition` runs in the COPY's own
transaction, and Postgres simplifies the condition once, before the first row (`eval_const_expressions` in
`DoCopy`), calling every IMMUTABLE function whose arguments are literals. A capped COPY's condition is one call,

    skiplock_admit_copy(<tenant>, '<topic>', <rows>, <cap>)          -- one gate: the common case
    skiplock_admit_copy_all(<tenant>, ARRAY[...], ..., <max_topics>, ARRAY[...])  -- anything else

declared IMMUTABLE so that it is called there, exactly once: it passes the gates through volatile functions (or
the COPY fails whole with SKQ01-03 before any row is read), and the condition becomes the constant true. A volatile
condition would also work but costs far more: it turns off COPY's multi-row inserts (batch 100 into a capped topic:
0.78 of an uncapped COPY, SQL alone, against 0.95 this way). Should a Postgres version ever evaluate the condition
per row instead, every row would pass the gates for the whole batch: refusals would come early, never late.

Postgres CPU per 100-row COPY, 8 connections (SQL alone): 748 µs plain, 775 with an empty immutable call, 798
with one stripe update behind it; a first version (arrays, a setting marking the transaction as admitted) cost 903.
"""

from alembic import op

revision = "2026_11_22_admission_copy"
down_revision = "2026_11_22_admission"
branch_labels = None
depends_on = None

# One gate, no max_topics: this connection's stripe first, as the insert statements do; the full function when
# the stripe has no room.
ADMIT_ONE = r"""
CREATE FUNCTION skiplock_admit_one(p_tenant bigint, p_scope text, p_rows bigint, p_cap bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    UPDATE admission_gates SET bound = bound + p_rows
    WHERE tenant_id = p_tenant AND scope = p_scope AND stripe = pg_backend_pid() % 32 AND bound + p_rows <= alloc;
    IF NOT FOUND THEN
        PERFORM skiplock_admit(p_tenant, ARRAY[p_scope], ARRAY[p_rows], ARRAY[p_cap], NULL, '{}');
    END IF;
    RETURN true;
END $$"""

# Not immutable at all: declared so only to be called at simplification time (above). Use them nowhere else.
ADMIT_COPY = r"""
CREATE FUNCTION skiplock_admit_copy(p_tenant bigint, p_scope text, p_rows bigint, p_cap bigint)
RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN skiplock_admit_one(p_tenant, p_scope, p_rows, p_cap);
END $$"""

ADMIT_COPY_ALL = r"""
CREATE FUNCTION skiplock_admit_copy_all(p_tenant bigint, p_scopes text[], p_counts bigint[], p_caps bigint[],
                                        p_max_topics integer, p_topics text[])
RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN skiplock_admit(p_tenant, p_scopes, p_counts, p_caps, p_max_topics, p_topics);
END $$"""


def upgrade() -> None:
    op.execute(ADMIT_ONE)
    op.execute(ADMIT_COPY)
    op.execute(ADMIT_COPY_ALL)


def downgrade() -> None:
    op.execute("DROP FUNCTION skiplock_admit_copy_all(bigint, text[], bigint[], bigint[], integer, text[])")
    op.execute("DROP FUNCTION skiplock_admit_copy(bigint, text, bigint, bigint)")
    op.execute("DROP FUNCTION skiplock_admit_one(bigint, text, bigint, bigint)")
