"""Named statements on the operational tables (job runs, worker settings, stored gauges, advisory locks) and the
few small reads outside the message plane (a tenant's quotas, the readiness probe). The message plane's statements
are in `mq.queue.sql`; every statement runs through a repository (`mq.db.repository`, `mq.queue.repository`)."""

from __future__ import annotations

from mq.db.fragments import VIEW_STATUS

LOCK_WAIT = "SELECT pg_advisory_lock($1)"
LOCK_TRY = "SELECT pg_try_advisory_lock($1)"
LOCK_RELEASE = "SELECT pg_advisory_unlock($1)"
ON_CITUS = "SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')"

RECORD_RUN = """
INSERT INTO job_runs (job, finished_at, duration_seconds, rows) VALUES ($1, now(), $2, $3)
ON CONFLICT (job) DO UPDATE SET finished_at = now(), duration_seconds = $2, rows = $3"""

JOB_RUNS = "SELECT job, extract(epoch FROM finished_at)::float8, duration_seconds, rows FROM job_runs ORDER BY job"

# One pass over the table by the leader every few seconds, never per scrape. Each message counts under the status
# a reader sees (`VIEW_STATUS`, as the console's counts: a lapsed lease is pending, a message past its TTL expired),
# so the metrics, the console's chart and its counts agree. A message that consumer groups owe is left out of the
# oldest pending age: each group's lag is its own gauge (`GROUP_GAUGES`). The dequeue's partial
# index does not hold the status, so this is a sequential scan: 0.22-0.28 s on 1,000,000 messages of 2 tenants and
# 20 topics.
# A table larger than `GAUGES_PAGES_PER_STATEMENT` pages is counted a range of pages at a time instead
# (`GAUGES_RANGE`, a TID range scan), with pauses between ranges: see `mq.db.repository.JobConnection`.
GAUGES = f"""
SELECT v.tenant_id, v.topic, v.status, count(*) AS messages,
       extract(epoch FROM now() - min(v.available_at) FILTER (
           WHERE v.status = 'pending' AND v.available_at <= now() AND v.owed IS NULL))::float8
           AS oldest_pending_age_seconds
FROM (SELECT m.tenant_id, m.topic, {VIEW_STATUS} AS status, m.available_at, m.owed FROM messages AS m) AS v
GROUP BY 1, 2, 3"""

MESSAGES_PAGES = "SELECT pg_relation_size('messages') / current_setting('block_size')::int8"

# The count of one range of heap pages, [$1, $2).
GAUGES_RANGE = f"""
SELECT v.tenant_id, v.topic, v.status, count(*) AS messages,
       extract(epoch FROM now() - min(v.available_at) FILTER (
           WHERE v.status = 'pending' AND v.available_at <= now() AND v.owed IS NULL))::float8
           AS oldest_pending_age_seconds
FROM (SELECT m.tenant_id, m.topic, {VIEW_STATUS} AS status, m.available_at, m.owed FROM messages AS m
      WHERE m.ctid >= format('(%s,0)', $1::int8)::tid AND m.ctid < format('(%s,0)', $2::int8)::tid) AS v
GROUP BY 1, 2, 3"""

# The stored gauges, keyed by tenant id; a read names each tenant by its slug, the label of its metrics (the rows of
# a deleted tenant's leftovers, which the orphan sweeper deletes, are not shown).
GAUGES_CLEAR = "DELETE FROM topic_gauges"
GAUGES_TABLE = "topic_gauges"
GAUGES_COLUMNS = ("tenant_id", "topic", "status", "messages", "oldest_pending_age_seconds")
GAUGES_READ = """
SELECT t.slug AS tenant, g.topic, g.status, g.messages, g.oldest_pending_age_seconds
FROM topic_gauges AS g JOIN tenants AS t ON t.id = g.tenant_id
ORDER BY t.slug, g.messages DESC, g.topic"""

# Every consumer group's deliveries (the lag a platform team alerts on), read through each group's dequeue index
# (`deliveries_dequeue_idx`, by tenant and group): no groups, no work. A delivery whose lease lapsed counts as
# pending, as the console's list counts it (`mq.topics.sql.GROUPS_LIST`).
GROUP_GAUGES = """
SELECT g.tenant_id, g.topic, g.name AS consumer_group, coalesce(c.pending, 0) AS pending,
       coalesce(c.processing, 0) AS processing, c.oldest AS oldest_pending_age_seconds
FROM consumer_groups AS g
LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE d.status = 'pending' OR d.available_at <= now()) AS pending,
           count(*) FILTER (WHERE d.status = 'processing' AND d.available_at > now()) AS processing,
           extract(epoch FROM now() - min(d.available_at) FILTER (WHERE d.available_at <= now()))::float8 AS oldest
    FROM deliveries AS d WHERE d.tenant_id = g.tenant_id AND d.group_id = g.id
) AS c ON true"""
GROUP_GAUGES_CLEAR = "DELETE FROM consumer_group_gauges"
GROUP_GAUGES_TABLE = "consumer_group_gauges"
GROUP_GAUGES_COLUMNS = ("tenant_id", "topic", "consumer_group", "pending", "processing", "oldest_pending_age_seconds")
GROUP_GAUGES_READ = """
SELECT t.slug AS tenant, g.topic, g.consumer_group, g.pending, g.processing, g.oldest_pending_age_seconds
FROM consumer_group_gauges AS g JOIN tenants AS t ON t.id = g.tenant_id
ORDER BY t.slug, g.pending DESC, g.topic, g.consumer_group"""

# The admin console's depth chart: the gauges just stored, one sample per topic and 30-second mark (the first run in
# a mark writes it), and samples and activity older than an hour and a bit dropped (their `at` indexes).
SAMPLES_RECORD = """
INSERT INTO queue_samples (tenant_id, topic, at, pending, processing, failed, expired, oldest_pending_age_seconds)
SELECT g.tenant_id, g.topic, to_timestamp(floor(extract(epoch FROM now()) / 30) * 30),
       coalesce(sum(g.messages) FILTER (WHERE g.status = 'pending'), 0),
       coalesce(sum(g.messages) FILTER (WHERE g.status = 'processing'), 0),
       coalesce(sum(g.messages) FILTER (WHERE g.status = 'failed'), 0),
       coalesce(sum(g.messages) FILTER (WHERE g.status = 'expired'), 0),
       max(g.oldest_pending_age_seconds)
FROM topic_gauges AS g JOIN tenants AS t ON t.id = g.tenant_id
GROUP BY g.tenant_id, g.topic
ON CONFLICT (tenant_id, topic, at) DO NOTHING"""
SAMPLES_FORGET = "DELETE FROM queue_samples WHERE at < now() - interval '65 minutes'"

# The charts over a day and a week: each topic's (and, as topic '', each tenant's) depth at the last sample of a
# 5-minute bucket, the oldest pending age's maximum and the sums of its activity, for the last two completed buckets
# (a run that missed one fills it in; upserts, so a bucket written twice is the same). Reads an hour's samples and
# activity by their `at` indexes: 10 + 30 rows per topic and bucket.
ROLLUP_SECONDS = 300
ROLLUPS_RECORD = """
WITH bounds AS (
    SELECT date_bin('5 minutes', now(), 'epoch') - interval '10 minutes' AS lo,
           date_bin('5 minutes', now(), 'epoch') AS hi
), s AS (
    SELECT tenant_id, topic, date_bin('5 minutes', at, 'epoch') AS bucket,
           (array_agg(pending ORDER BY at DESC))[1] AS pending,
           (array_agg(processing ORDER BY at DESC))[1] AS processing,
           (array_agg(failed ORDER BY at DESC))[1] AS failed, (array_agg(expired ORDER BY at DESC))[1] AS expired,
           max(oldest_pending_age_seconds) AS oldest
    FROM queue_samples, bounds WHERE at >= bounds.lo AND at < bounds.hi
    GROUP BY 1, 2, 3
), a AS (
    SELECT tenant_id, topic, date_bin('5 minutes', at, 'epoch') AS bucket,
           sum(enqueued) AS enqueued, sum(acked) AS acked, sum(dead_lettered) AS dead_lettered
    FROM topic_activity, bounds WHERE at >= bounds.lo AND at < bounds.hi
    GROUP BY 1, 2, 3
), j AS (
    SELECT tenant_id, topic, bucket, coalesce(s.pending, 0) AS pending, coalesce(s.processing, 0) AS processing,
           coalesce(s.failed, 0) AS failed, coalesce(s.expired, 0) AS expired, s.oldest,
           coalesce(a.enqueued, 0) AS enqueued, coalesce(a.acked, 0) AS acked,
           coalesce(a.dead_lettered, 0) AS dead_lettered
    FROM s FULL JOIN a USING (tenant_id, topic, bucket)
)
INSERT INTO topic_rollups AS r (tenant_id, topic, bucket, pending, processing, failed, expired,
                                oldest_pending_age_seconds, enqueued, acked, dead_lettered)
SELECT tenant_id, coalesce(topic, ''), bucket, sum(pending), sum(processing), sum(failed), sum(expired), max(oldest),
       sum(enqueued), sum(acked), sum(dead_lettered)
FROM j GROUP BY GROUPING SETS ((tenant_id, topic, bucket), (tenant_id, bucket))
ON CONFLICT (tenant_id, topic, bucket) DO UPDATE SET pending = EXCLUDED.pending, processing = EXCLUDED.processing,
    failed = EXCLUDED.failed, expired = EXCLUDED.expired,
    oldest_pending_age_seconds = EXCLUDED.oldest_pending_age_seconds, enqueued = EXCLUDED.enqueued,
    acked = EXCLUDED.acked, dead_lettered = EXCLUDED.dead_lettered"""
ROLLUPS_FORGET = "DELETE FROM topic_rollups WHERE bucket < now() - interval '8 days'"
ACTIVITY_FORGET = "DELETE FROM topic_activity WHERE at < now() - interval '65 minutes'"

SETTING_GET = "SELECT value FROM worker_settings WHERE name = $1"
SETTING_PUT = """
INSERT INTO worker_settings (name, value) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET value = $2, updated_at = now()"""

QUOTAS_OF_TENANT = "SELECT quotas::text FROM tenants WHERE id = $1"

PING = "SELECT 1"

# What a scrape reads beside the gauges: the limits topics set (a handful of rows: only topics that set one) ...
TOPIC_LIMITS_READ = """
SELECT t.slug AS tenant, c.topic, c.max_inflight, c.max_depth, c.throughput_limit
FROM topic_configs AS c JOIN tenants AS t ON t.id = c.tenant_id
WHERE c.max_inflight > 0 OR c.max_depth > 0 OR c.throughput_limit > 0
ORDER BY t.slug, c.topic"""

# ... and Postgres' connection slots: client backends open, and max_connections less those reserved (for
# superusers; from Postgres 16 also for `pg_use_reserved_connections`): an ordinary role is refused past it. On
# Citus these are the coordinator's.
CONNECTIONS = """
SELECT (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'),
       current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int
       - coalesce(current_setting('reserved_connections', true), '0')::int"""

# The listening connection's session (mq.db.listener): a notification needs no durability, so the NOTIFY statements
# it sends do not wait for a WAL flush.
LISTENER_SESSION = "SET synchronous_commit = off"

NOTIFY = "SELECT pg_notify($1, $2)"
