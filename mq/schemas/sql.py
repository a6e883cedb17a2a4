"""The topic schemas' statements. A topic's schema in force is its highest
version; the config cache reads it with the topic's config (`mq.queue.sql.TOPIC_CONFIG_GET`)."""

from __future__ import annotations

_COLUMNS = "topic, format, version, created_at"

# Each topic's version in force. Plan: Unique index scan of topic_schemas_pkey (tenant_id), first row per topic.
LIST = f"""
SELECT DISTINCT ON (topic) {_COLUMNS}, schema_json FROM topic_schemas WHERE tenant_id = $1
ORDER BY topic, version DESC"""

# One version ($3), or the one in force ($3 NULL).
GET = f"""
SELECT {_COLUMNS}, schema_json FROM topic_schemas
WHERE tenant_id = $1 AND topic = $2 AND ($3::int IS NULL OR version = $3)
ORDER BY version DESC LIMIT 1"""

# A replacement is one short transaction: this lock orders the PUTs of one topic (the compatibility check reads
# the version it replaces), then the current version, then the insert of the next.
LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('skiplock:topic_schema:' || $1::bigint || ':' || $2::text, 0))"
INSERT = f"""
INSERT INTO topic_schemas (tenant_id, topic, version, format, schema_json) VALUES ($1, $2, $3, $4, $5)
RETURNING {_COLUMNS}, schema_json"""

DELETE = "DELETE FROM topic_schemas WHERE tenant_id = $1 AND topic = $2"
