"""The audit trail's statements, run by `AuditRepository` (`AUDIT_TRIM`, a batch of the audit trimmer's, by the
job's connection: `mq.db.repository.JobConnection`). Entries are written by control-plane and administrative
actions only, never by the data plane."""

from __future__ import annotations

AUDIT_INSERT = """
INSERT INTO audit_log (id, tenant_id, tenant, actor, action, target, details, request_id)
VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8)"""


def audit_page(conditions: list[str]) -> str:
    """Newest first, after the cursor (an entry's id: UUIDv7, time-ordered). A tenant's page takes
    the key (tenant_id, id) backwards, every tenant's audit_log_id_idx; the filters are checked on the way."""
    where = " AND ".join(["($1::bigint IS NULL OR tenant_id = $1)", "($2::uuid IS NULL OR id < $2)", *conditions])
    return f"""
SELECT id::text AS id, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at, actor, tenant, action,
       target, details::text AS details, request_id
FROM audit_log WHERE {where}
ORDER BY id DESC LIMIT $3"""


# The entries about some targets (a message's id, its topic's replays) since an id (a message's: UUIDv7, so the
# walk over the tenant's key (tenant_id, id) starts at the message's creation), oldest first. $1 tenant, $2 since id,
# $3 targets, $4 actions (NULL: any), $5 limit
AUDIT_ABOUT = """
SELECT to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at, actor, action, target,
       details::text AS details
FROM audit_log
WHERE tenant_id = $1 AND id >= $2 AND target = ANY($3::text[]) AND ($4::text[] IS NULL OR action = ANY($4::text[]))
ORDER BY id LIMIT $5"""


# Entries past the retention, tenant by tenant (`AUDIT_DUE`: the tenants of the oldest, by audit_log_at_idx, no
# row lock), oldest first, a batch at a time (`mq.jobs.AuditTrimmer`). $1 how many, $2 retention s
AUDIT_DUE = """
SELECT tenant_id FROM audit_log WHERE at < now() - make_interval(secs => $2) ORDER BY at LIMIT $1"""
# $1 tenant, $2 batch, $3 retention s
AUDIT_TRIM = """
WITH gone AS (
    DELETE FROM audit_log WHERE tenant_id = $1 AND id IN (
        SELECT id FROM audit_log WHERE tenant_id = $1 AND at < now() - make_interval(secs => $3) ORDER BY at LIMIT $2)
    RETURNING 1)
SELECT '' AS tenant, '' AS topic, count(*) AS n FROM gone"""
