"""The schedules' statements (migration `2026_11_25_schedules`)."""

from __future__ import annotations

_COLUMNS = """name, topic, cron, timezone, payload, key, metadata::text AS metadata, priority, enabled, next_run_at,
    last_run_at, last_error"""

LIST = f"SELECT {_COLUMNS} FROM schedules WHERE tenant_id = $1 ORDER BY name"
GET = f"SELECT {_COLUMNS} FROM schedules WHERE tenant_id = $1 AND name = $2"

# Create or replace; a replacement starts from its new cron (next_run_at) and forgets its last refusal.
# $2 name, $3 topic, $4 cron, $5 timezone, $6 payload, $7 key, $8 metadata, $9 priority, $10 enabled, $11 next
PUT = f"""
INSERT INTO schedules AS s (tenant_id, name, topic, cron, timezone, payload, key, metadata, priority, enabled,
                            next_run_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11)
ON CONFLICT (tenant_id, name) DO UPDATE SET
    topic = EXCLUDED.topic, cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, payload = EXCLUDED.payload,
    key = EXCLUDED.key, metadata = EXCLUDED.metadata, priority = EXCLUDED.priority, enabled = EXCLUDED.enabled,
    next_run_at = EXCLUDED.next_run_at, last_error = NULL, updated_at = now()
RETURNING {_COLUMNS}"""

DELETE = "DELETE FROM schedules WHERE tenant_id = $1 AND name = $2"

# The firer: due schedules, oldest tick first, each taken by one worker (SKIP LOCKED); with the database's clock,
# which decides what is due. Plan: Limit <- LockRows <- Nested Loop <- Index Scan using schedules_due_idx
# (Index Cond: next_run_at <= now()), Index Scan using tenants_pkey.
DUE = """
SELECT s.tenant_id, t.slug, t.status, s.name, s.topic, s.cron, s.timezone, s.payload, s.key,
       s.metadata::text AS metadata, s.priority, s.next_run_at, now() AS now
FROM schedules AS s JOIN tenants AS t ON t.id = s.tenant_id
WHERE s.enabled AND s.next_run_at <= now()
ORDER BY s.next_run_at
LIMIT $1
FOR UPDATE OF s SKIP LOCKED"""

# The same transaction moves each fired schedule on: the next tick, the tick fired, and why it was refused (NULL:
# it was not). $1 tenants, $2 names, $3 next ticks, $4 ticks fired, $5 errors
ADVANCE = """
UPDATE schedules AS s SET next_run_at = u.next_run_at, last_run_at = u.last_run_at, last_error = u.last_error,
    updated_at = now()
FROM unnest($1::int8[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::text[])
    AS u(tenant_id, name, next_run_at, last_run_at, last_error)
WHERE s.tenant_id = u.tenant_id AND s.name = u.name"""
