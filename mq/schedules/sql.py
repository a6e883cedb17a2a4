"""The schedules' statements."""

from __future__ import annotations

_COLUMNS = """name, topic, cron, timezone, payload, key, metadata::text AS metadata, priority, enabled, next_run_at,
    last_run_at, last_error"""

LIST = f"SELECT {_COLUMNS} FROM schedules WHERE tenant_id = $1 ORDER BY name"
GET = f"SELECT {_COLUMNS} FROM schedules WHERE tenant_id = $1 AND name = $2"

# Create or replace; a replacement starts from its new cron (next_run_at). It forgets its last refusal when it
# changes what is sent or when (topic, cron, zone, message); enabling or disabling it keeps that evidence.
# $2 name, $3 topic, $4 cron, $5 timezone, $6 payload, $7 key, $8 metadata, $9 priority, $10 enabled, $11 next
PUT = f"""
INSERT INTO schedules AS s (tenant_id, name, topic, cron, timezone, payload, key, metadata, priority, enabled,
                            next_run_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11)
ON CONFLICT (tenant_id, name) DO UPDATE SET
    topic = EXCLUDED.topic, cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, payload = EXCLUDED.payload,
    key = EXCLUDED.key, metadata = EXCLUDED.metadata, priority = EXCLUDED.priority, enabled = EXCLUDED.enabled,
    next_run_at = EXCLUDED.next_run_at, updated_at = EXCLUDED.updated_at,
    last_error = CASE WHEN (s.topic, s.cron, s.timezone, s.payload, s.key, s.metadata, s.priority)
                           IS NOT DISTINCT FROM (EXCLUDED.topic, EXCLUDED.cron, EXCLUDED.timezone, EXCLUDED.payload,
                                                 EXCLUDED.key, EXCLUDED.metadata, EXCLUDED.priority)
                      THEN s.last_error END
RETURNING {_COLUMNS}"""

DELETE = "DELETE FROM schedules WHERE tenant_id = $1 AND name = $2"

# The firer: due schedules, each taken by one worker (SKIP LOCKED), with the database's clock, which decides what
# is due; fairly across tenants and tenant by tenant (on Citus, a tenant's schedules are on one worker, and a row
# lock across workers is refused): `DUE_TENANTS` names the tenants with a due schedule, and each takes at most an
# equal share of the batch (`DUE`, in a transaction of its own), its oldest due ticks first, so one tenant's backlog
# of due ticks never holds another tenant's tick back for more than a batch. (A batch may then be smaller than the
# firer's while one tenant has more due: the firer goes on while batches find any.) The tenants with enabled
# schedules are found by a skip scan of schedules_tenant_due_idx (one probe per such tenant); each one's share is
# locked by its own index entries, SKIP LOCKED, so racing workers take different rows. Plan: Recursive Union (Index
# Only Scan using schedules_tenant_due_idx per tenant), then per tenant a Limit <- LockRows <- Index Scan using
# schedules_tenant_due_idx (Index Cond: tenant_id, next_run_at <= now()). Tenants are few next to schedules.
DUE_TENANTS = """
WITH RECURSIVE owners AS (
    (SELECT tenant_id FROM schedules WHERE enabled ORDER BY tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT s.tenant_id FROM schedules AS s WHERE s.enabled AND s.tenant_id > o.tenant_id
            ORDER BY s.tenant_id LIMIT 1)
    FROM owners AS o WHERE o.tenant_id IS NOT NULL
)
SELECT o.tenant_id FROM owners AS o
WHERE EXISTS (SELECT FROM schedules AS s WHERE s.tenant_id = o.tenant_id AND s.enabled AND s.next_run_at <= now())"""
# On Citus (no recursive query over a distributed table): each worker's due tenants, merged.
DUE_TENANTS_CITUS = "SELECT DISTINCT tenant_id FROM schedules WHERE enabled AND next_run_at <= now()"
# $1 tenant, $2 its share. The rows are locked alone and the tenant joined after (a join beside `FOR UPDATE` makes
# Citus plan the step apart).
DUE = """
WITH due AS (
    SELECT x.* FROM schedules AS x
    WHERE x.tenant_id = $1 AND x.enabled AND x.next_run_at <= now()
    ORDER BY x.next_run_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
SELECT s.tenant_id, t.slug, t.status, s.name, s.topic, s.cron, s.timezone, s.payload, s.key,
       s.metadata::text AS metadata, s.priority, s.next_run_at, now() AS now
FROM due AS s JOIN tenants AS t ON t.id = $1"""

# A new schedule counts against its tenant's limit (`max_schedules`, or the platform's default): the tenant's
# schedules are counted under a lock of the tenant's own, so two creations cannot both take the last place; a
# replacement is never refused. $1 tenant, $2 name
SCHEDULES_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('skiplock:schedules:' || $1::bigint, 0))"
SCHEDULE_EXISTS = "SELECT EXISTS (SELECT FROM schedules WHERE tenant_id = $1 AND name = $2)"
SCHEDULES_COUNT = "SELECT count(*) FROM schedules WHERE tenant_id = $1"

# The same transaction moves each fired schedule on: the next tick, the tick fired, and why it was refused (NULL:
# it was not). $1 tenants, $2 names, $3 next ticks, $4 ticks fired, $5 errors
ADVANCE = """
UPDATE schedules AS s SET next_run_at = u.next_run_at, last_run_at = u.last_run_at, last_error = u.last_error,
    updated_at = now()
FROM unnest($1::int8[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::text[])
    AS u(tenant_id, name, next_run_at, last_run_at, last_error)
WHERE s.tenant_id = u.tenant_id AND s.name = u.name"""
