"""Topic administration's SQL (the console's pages, series, pauses and bulk jobs), run only by `TopicRepository`.
`$1` is always the tenant id.

Paging never adds an index to the hot path (each one is written on every enqueue and dequeue; a full
(tenant, topic, id) index cost 19% of batch-insert throughput). A topic's messages are read through the two
indexes it has: live ones (pending, processing) in queue order over `messages_dequeue_idx` (priority first, then
`available_at`, `id` breaking ties), finished ones (failed, expired) newest first over `messages_done_idx`. A page
reads a window of at most `scan` rows of its index from the cursor on and keeps those that match the filter, so a
page costs the same on a topic of 1,000,000 messages as on one of 100, and a filter that matches little answers a
short page with a cursor to go on from instead of scanning the topic. The same list can be walked from its end
(`reverse`): finished messages oldest first, then live ones from the last to be delivered, each index read
backwards.
"""

from __future__ import annotations

from mq.db.fragments import ALIVE, VIEW_STATUS
from mq.queue.sql import NEVER_OWED_TO as _NEVER_OWED_TO
from mq.queue.sql import functions
from mq.queue.sql.common import MESSAGE_COLUMNS
from mq.queue.sql.common import rfc3339 as _rfc3339

#: A filter's status -> the condition on a row read from each index ("live" or "done"); None: none of that index.
STATUS_FILTERS: dict[str, dict[str, str | None]] = {
    "pending": {"live": f"({ALIVE} AND (m.status = 'pending' OR m.available_at <= now()))", "done": None},
    "delayed": {"live": f"({ALIVE} AND m.status = 'pending' AND m.available_at > now())", "done": None},
    "processing": {"live": f"({ALIVE} AND m.status = 'processing' AND m.available_at > now())", "done": None},
    "failed": {"live": None, "done": "m.status = 'failed'"},
    "expired": {"live": f"NOT {ALIVE}", "done": "m.status = 'expired'"},
}

# The window of a live page: from the cursor ($3 priority, $4 available_at, $5 id) in queue order. Two index
# ranges, each in index order: the rest of the cursor's priority, then every lower priority. The first page
# passes priority 10 (above any), so only the second range reads. $6 the window's size.
_LIVE_WINDOW = """
    (SELECT * FROM messages AS m
     WHERE m.tenant_id = $1 AND m.topic = $2 AND m.status IN ('pending', 'processing') AND m.priority = $3
       AND m.available_at >= $4::timestamptz AND (m.available_at, m.id) > ($4::timestamptz, $5::uuid)
     ORDER BY m.available_at, m.id LIMIT $6)
    UNION ALL
    (SELECT * FROM messages AS m
     WHERE m.tenant_id = $1 AND m.topic = $2 AND m.status IN ('pending', 'processing') AND m.priority < $3
     ORDER BY m.priority DESC, m.available_at, m.id LIMIT $6)"""
_LIVE_ORDER = "m.priority DESC, m.available_at, m.id"
_LIVE_LAST = "m.priority, m.available_at DESC, m.id DESC"

# The same walked from the end of the queue (`reverse`): from the cursor backwards, the rest of its priority, then
# every higher one; the index read backwards. The first page passes priority -1 (below any).
_LIVE_WINDOW_REVERSED = """
    (SELECT * FROM messages AS m
     WHERE m.tenant_id = $1 AND m.topic = $2 AND m.status IN ('pending', 'processing') AND m.priority = $3
       AND m.available_at <= $4::timestamptz AND (m.available_at, m.id) < ($4::timestamptz, $5::uuid)
     ORDER BY m.available_at DESC, m.id DESC LIMIT $6)
    UNION ALL
    (SELECT * FROM messages AS m
     WHERE m.tenant_id = $1 AND m.topic = $2 AND m.status IN ('pending', 'processing') AND m.priority > $3
     ORDER BY m.priority, m.available_at DESC, m.id DESC LIMIT $6)"""

# The window of a finished page: newest first from the cursor $3 (an id; the first page passes the largest).
_DONE_WINDOW = """
    SELECT * FROM messages AS m
    WHERE m.tenant_id = $1 AND m.topic = $2 AND m.status IN ('failed', 'expired') AND m.id < $3
    ORDER BY m.id DESC LIMIT $4"""
# Oldest first, from the cursor $3 (the first page passes the smallest id).
_DONE_WINDOW_REVERSED = """
    SELECT * FROM messages AS m
    WHERE m.tenant_id = $1 AND m.topic = $2 AND m.status IN ('failed', 'expired') AND m.id > $3
    ORDER BY m.id LIMIT $4"""


def _page(window: str, order: str, last: str, conditions: list[str], size: str, limit: str) -> str:
    """Rows of the window (its first `size` rows in order) that match `conditions`, at most `limit`; each row also
    carries how many rows the window read and where it ended (`last_*`). A window with no match answers one row
    whose `hit` is null; an empty window answers none. A live window's two ranges may together hold twice `size`
    rows: cut to `size`, so that a window that read fewer rows than `size` means there are no more."""
    where = " AND ".join(conditions) or "true"
    return f"""
WITH w AS MATERIALIZED (SELECT * FROM ({window}) AS m ORDER BY {order} LIMIT {size}),
last AS (SELECT m.priority, m.available_at, m.id, (SELECT count(*) FROM w) AS scanned FROM w AS m
         ORDER BY {last} LIMIT 1),
hits AS (SELECT * FROM w AS m WHERE {where} ORDER BY {order} LIMIT {limit})
SELECT {MESSAGE_COLUMNS}, m.id AS hit, m.available_at AS hit_at, l.scanned, l.priority AS last_priority,
       l.available_at AS last_available_at, l.id AS last_id
FROM last AS l LEFT JOIN hits AS m ON true
ORDER BY {order}"""


def live_page(conditions: list[str], *, key_at: int, metadata_at: int, group_at: int = 0, reverse: bool = False) -> str:
    """$1 tenant, $2 topic, $3..$5 cursor, $6 window, $7 limit, then the key, metadata and consumer group (a dead
    letter's) when the filter has them, from $8 on (their positions given: 0 = none). `reverse`: from the end of
    the queue."""
    filters = _filters(conditions, key_at, metadata_at, group_at)
    if reverse:
        return _page(_LIVE_WINDOW_REVERSED, _LIVE_LAST, _LIVE_ORDER, filters, "$6", "$7")
    return _page(_LIVE_WINDOW, _LIVE_ORDER, _LIVE_LAST, filters, "$6", "$7")


def done_page(conditions: list[str], *, key_at: int, metadata_at: int, group_at: int = 0, reverse: bool = False) -> str:
    """$1 tenant, $2 topic, $3 cursor id, $4 window, $5 limit, then the key, metadata and consumer group as for
    `live_page`, from $6 on. `reverse`: oldest first."""
    filters = _filters(conditions, key_at, metadata_at, group_at)
    if reverse:
        return _page(_DONE_WINDOW_REVERSED, "m.id", "m.id DESC", filters, "$4", "$5")
    return _page(_DONE_WINDOW, "m.id DESC", "m.id", filters, "$4", "$5")


def _filters(conditions: list[str], key_at: int, metadata_at: int, group_at: int) -> list[str]:
    out = list(conditions)
    if key_at:
        out.append(f"m.key = ${key_at}")
    if metadata_at:
        out.append(f"m.metadata @> ${metadata_at}::jsonb")
    if group_at:
        out.append(f"m.consumer_group = ${group_at}")
    return out


# --- pauses --------------------------------------------------------------------------------------------------------

PAUSE = """
INSERT INTO topic_pauses (tenant_id, topic, paused_by) VALUES ($1, $2, $3)
ON CONFLICT (tenant_id, topic) DO NOTHING"""
RESUME = "DELETE FROM topic_pauses WHERE tenant_id = $1 AND topic = $2"

# --- series --------------------------------------------------------------------------------------------------------

# A topic's depth samples and activity buckets since $3 seconds ago (primary-key ranges).
SAMPLES = """
SELECT extract(epoch FROM at)::float8 AS at, pending, processing, failed, expired, oldest_pending_age_seconds
FROM queue_samples WHERE tenant_id = $1 AND topic = $2 AND at >= now() - make_interval(secs => $3) ORDER BY at"""
ACTIVITY = """
SELECT extract(epoch FROM at)::float8 AS at, enqueued, acked, dead_lettered
FROM topic_activity WHERE tenant_id = $1 AND topic = $2 AND at >= now() - make_interval(secs => $3) ORDER BY at"""
# The same for the whole tenant (its dashboard): every topic's rows summed per mark. $2 seconds
TENANT_SAMPLES = """
SELECT extract(epoch FROM at)::float8 AS at, sum(pending)::int8 AS pending, sum(processing)::int8 AS processing,
       sum(failed)::int8 AS failed, sum(expired)::int8 AS expired,
       max(oldest_pending_age_seconds) AS oldest_pending_age_seconds
FROM queue_samples WHERE tenant_id = $1 AND at >= now() - make_interval(secs => $2) GROUP BY at ORDER BY at"""
TENANT_ACTIVITY = """
SELECT extract(epoch FROM at)::float8 AS at, sum(enqueued)::int8 AS enqueued, sum(acked)::int8 AS acked,
       sum(dead_lettered)::int8 AS dead_lettered
FROM topic_activity WHERE tenant_id = $1 AND at >= now() - make_interval(secs => $2) GROUP BY at ORDER BY at"""
# 5-minute rollups of a topic, or of the tenant (topic ''), for the charts over a day and a week. $2 topic, $3 s
ROLLUPS = """
SELECT extract(epoch FROM bucket)::float8 AS at, pending, processing, failed, expired, oldest_pending_age_seconds,
       enqueued, acked, dead_lettered
FROM topic_rollups WHERE tenant_id = $1 AND topic = $2 AND bucket >= now() - make_interval(secs => $3)
ORDER BY bucket"""
NOW = "SELECT extract(epoch FROM now())::float8"

# --- bulk jobs -----------------------------------------------------------------------------------------------------

BULK_CREATE = """
INSERT INTO bulk_jobs (id, tenant_id, topic, action, filter, created_by, rate_per_second)
VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)"""
# Progress of a running job; answers its state (a cancel request shows as 'cancelled'). $2 id, $3..$5 increments
BULK_PROGRESS = """
UPDATE bulk_jobs SET matched = matched + $3, done = done + $4, skipped = skipped + $5, skipped_by = $6::jsonb,
    updated_at = now()
WHERE tenant_id = $1 AND id = $2 RETURNING state"""
BULK_FINISH = """
UPDATE bulk_jobs SET state = $3, error = $4, updated_at = now()
WHERE tenant_id = $1 AND id = $2 AND state = 'running'"""
BULK_CANCEL = """
UPDATE bulk_jobs SET state = 'cancelled', updated_at = now() WHERE tenant_id = $1 AND id = $2 AND state = 'running'
RETURNING id"""
_BULK_COLUMNS = """id::text AS id, topic, action, filter::text AS filter, state, matched, done, skipped,
    skipped_by::text AS skipped_by, error,
    created_by, rate_per_second, extract(epoch FROM created_at)::float8 AS created_at,
    extract(epoch FROM updated_at)::float8 AS updated_at,
    extract(epoch FROM now() - updated_at)::float8 AS idle_seconds"""
BULK_GET = f"SELECT {_BULK_COLUMNS} FROM bulk_jobs WHERE tenant_id = $1 AND id = $2"
BULK_LIST = f"SELECT {_BULK_COLUMNS} FROM bulk_jobs WHERE tenant_id = $1 ORDER BY created_at DESC LIMIT 50"
# Jobs finished a day ago are forgotten.
BULK_FORGET = "DELETE FROM bulk_jobs WHERE tenant_id = $1 AND updated_at < now() - interval '1 day'"

# --- tenants' usage ---------------------------------------------------------------------------------------------------

# Every tenant's topics and messages as the gauge job last counted them (never a scan of messages).
USAGE = """
SELECT t.slug AS tenant, count(DISTINCT g.topic) AS topics, sum(g.messages)::int8 AS messages
FROM topic_gauges AS g JOIN tenants AS t ON t.id = g.tenant_id GROUP BY t.slug"""

# --- consumer groups -----------------------------------------------------------------------------------------------
# (mq/queue/sql.py, "Consumer groups", says how deliveries work.) $2 topic, $3 name, $4 start
GROUP_CREATE = """
INSERT INTO consumer_groups (tenant_id, topic, name, start) VALUES ($1, $2, $3, $4)
ON CONFLICT (tenant_id, topic, name) DO NOTHING
RETURNING id, name, start, created_at"""

# `earliest`: the new group also owes every message already pending or processing in the topic (not expired), in
# the transaction that creates it. A message consumed without groups until now becomes available to the group at
# once; one that other groups owe keeps its place. A never-owed message (`owed` NULL: stored before the topic had
# groups, or a stray, mq/queue/sql.py) is owed as the group settler owes strays (`NEVER_OWED_TO`): to the new
# group and to each group it would have been owed to had its statement seen them, so that a later settle, which
# only looks at never-owed messages, does not find it owed to the new group alone. The live messages are locked, in
# id order as a group's count-down locks them (`functions.GROUP_DONE`): a count-down that deletes a message waits
# for the new group to be owed it, or the backfill skips a message the count-down deleted meanwhile (unlocked, it
# minted a delivery of it, a message gone, owed forever). Plan: Index Scan using
# messages_dequeue_idx (the topic's live messages), a Nested Loop over the topic's groups. $2 topic, $3 group id
GROUP_BACKFILL = f"""
WITH live AS (
    SELECT m.id, m.owed, m.priority, m.expires_at, m.created_at,
           CASE WHEN m.status = 'processing' AND m.owed IS NULL THEN now() ELSE m.available_at END AS available_at
    FROM messages AS m
    WHERE m.tenant_id = $1 AND m.topic = $2 AND m.status IN ('pending', 'processing') AND {ALIVE}
    ORDER BY m.id
    FOR UPDATE OF m
), owed AS (
    INSERT INTO deliveries (tenant_id, group_id, message_id, priority, available_at, expires_at)
    SELECT $1, x.id, l.id, l.priority, l.available_at, l.expires_at
    FROM live AS l JOIN consumer_groups AS x ON x.tenant_id = $1 AND x.topic = $2
    WHERE x.id = $3 OR (l.owed IS NULL AND {_NEVER_OWED_TO.format(m="l")})
    ON CONFLICT DO NOTHING
    RETURNING message_id
)
UPDATE messages AS m SET owed = coalesce(m.owed, 0) + c.n
FROM (SELECT message_id, count(*)::int AS n FROM owed GROUP BY 1) AS c WHERE m.tenant_id = $1 AND m.id = c.message_id"""

# A topic's groups in creation order with their counts: what each still owes (pending: available or delayed, a
# lapsed lease included; processing: leased now), its dead letters in the topic's DLQ, and how long the oldest
# available delivery has waited. Per group: Index Only Scan using deliveries_pkey / deliveries_dequeue_idx.
# $2 topic
# The topics that have a consumer group of this name (a grant pinned to it must name one that exists).
GROUP_TOPICS = "SELECT topic FROM consumer_groups WHERE tenant_id = $1 AND name = $2 ORDER BY topic"

GROUPS_LIST = f"""
SELECT g.name AS consumer_group, g.start, {_rfc3339("g.created_at")} AS created_at,
       coalesce(c.pending, 0) AS pending, coalesce(c.processing, 0) AS processing,
       (SELECT count(*) FROM messages AS x
        WHERE x.tenant_id = $1 AND x.topic = $2 || '.dlq' AND x.consumer_group = g.name) AS dead,
       c.oldest AS oldest_pending_age_seconds
FROM consumer_groups AS g
LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE d.status = 'pending' OR d.available_at <= now()) AS pending,
           count(*) FILTER (WHERE d.status = 'processing' AND d.available_at > now()) AS processing,
           extract(epoch FROM now() - min(d.available_at) FILTER (WHERE d.available_at <= now()))::float8 AS oldest
    FROM deliveries AS d WHERE d.tenant_id = $1 AND d.group_id = g.id
) AS c ON true
WHERE g.tenant_id = $1 AND g.topic = $2
ORDER BY g.id"""

# The group goes, and its tombstone in `deleted_groups` stays until what it owed is released (`GROUP_RELEASE`): in
# the same statement, never a trigger (Citus has none on a distributed table).
# $2 topic, $3 name
GROUP_DELETE = """
WITH gone AS (DELETE FROM consumer_groups WHERE tenant_id = $1 AND topic = $2 AND name = $3 RETURNING tenant_id, id),
tombstone AS (INSERT INTO deleted_groups (tenant_id, id) SELECT tenant_id, id FROM gone ON CONFLICT DO NOTHING)
SELECT id FROM gone"""


# --- Browsing by offset, purge, delete by key, stats, summaries -------------------------------------------------
# Browse, count, purge and delete-by-key work per status group, because each group has its own partial index:
# live messages (pending, processing) are in messages_dequeue_idx, finished ones (failed, expired) in
# messages_done_idx. The planner uses a partial index only when the query names its statuses as literals, so these
# statements are built from fixed fragments: statuses come from the fixed set below, never from input; values are
# always bind parameters. Plans: Bitmap Index Scan on each group's index (BitmapOr for both), then for browsing a
# top-N sort by id: proportional to the topic's size (an admin path, never the queue's).
# A status filter means the status a reader sees (`VIEW_STATUS`): `pending` includes lapsed leases and leaves out
# messages past their TTL, which count as `expired` until a reaper marks them.
#: Statuses by partial index: live ones in messages_dequeue_idx, finished ones in messages_done_idx.
STATUS_GROUPS = (("pending", "processing"), ("failed", "expired"))
KNOWN_STATUSES = frozenset(s for group in STATUS_GROUPS for s in group)
# Per (index group, status seen): the condition on a row of that group.
_SEEN_AS = {
    ("pending", "processing"): {
        "pending": f"({ALIVE} AND (m.status = 'pending' OR m.available_at <= now()))",
        "processing": f"({ALIVE} AND m.status = 'processing' AND m.available_at > now())",
        "expired": f"NOT {ALIVE}",
    },
    ("failed", "expired"): {"failed": "m.status = 'failed'", "expired": "m.status = 'expired'"},
}


def _status_condition(statuses: list[str]) -> str:
    """`(status IN (...group...) AND (seen as one of the chosen)) OR (...)`: one arm per group, literal statuses."""
    arms = []
    for members in STATUS_GROUPS:
        seen = _SEEN_AS[members]
        chosen = [seen[s] for s in sorted(statuses) if s in seen]
        if len(chosen) == len(seen):
            chosen = []  # the whole group: no condition beyond the index's
        in_group = ", ".join(f"'{s}'" for s in members)
        if chosen or any(s in seen for s in statuses):
            condition = f" AND ({' OR '.join(chosen)})" if chosen else ""
            arms.append(f"(m.status IN ({in_group}){condition})")
    return "(" + " OR ".join(arms) + ")"


def _filter(statuses: list[str], *, topic: bool, key: bool, group: bool = False) -> str:
    """WHERE clause: $1 tenant, then $2 topic, the key and the consumer group when present. A group (with a topic)
    keeps the messages it still owes (a probe of its delivery by primary key) and its dead letters."""
    parts = ["m.tenant_id = $1", _status_condition(statuses)]
    if topic:
        parts.append("m.topic = $2")
    if key:
        parts.append(f"m.key = ${3 if topic else 2}")
    if group:
        g = f"${2 + topic + key}"
        parts.append(f"""(m.consumer_group = {g} OR EXISTS (
    SELECT FROM consumer_groups AS g
    JOIN deliveries AS d ON d.tenant_id = $1 AND d.group_id = g.id AND d.message_id = m.id
    WHERE g.tenant_id = $1 AND g.topic = m.topic AND g.name = {g}))""")
    return " AND ".join(parts)


def message_browse(statuses: list[str], *, topic: bool, key: bool, group: bool = False) -> str:
    """Newest first (ids are time-ordered). Parameters: $1 tenant, [$2 topic], [key], [group], then limit, offset."""
    n = 2 + topic + key + group
    return f"""SELECT {MESSAGE_COLUMNS} FROM messages AS m WHERE {_filter(statuses, topic=topic, key=key, group=group)}
ORDER BY m.id DESC LIMIT ${n} OFFSET ${n + 1}"""


def message_count(statuses: list[str], *, topic: bool, key: bool, group: bool = False) -> str:
    return f"SELECT count(*) FROM messages AS m WHERE {_filter(statuses, topic=topic, key=key, group=group)}"


def message_purge(statuses: list[str]) -> str:
    """$1 tenant, $2 topic."""
    return f"DELETE FROM messages AS m WHERE {_filter(statuses, topic=True, key=False)}"


def message_delete_by_key(statuses: list[str]) -> str:
    """$1 tenant, $2 topic, $3 key."""
    return f"DELETE FROM messages AS m WHERE {_filter(statuses, topic=True, key=True)}"


STATS_BY_TOPIC_STATUS = f"""
SELECT m.topic, {VIEW_STATUS} AS status, count(*) AS count FROM messages AS m WHERE m.tenant_id = $1
GROUP BY 1, 2 ORDER BY 1, 2"""

# One row per topic that has messages, a config, a pause or activity in the last hour, counted by the status a
# reader sees (`VIEW_STATUS`): `pending` counts every pending message and lapsed lease, `delayed` the part of them
# not yet available. Rates: messages per second over the last whole minute of `topic_activity`.
TOPIC_SUMMARY = f"""
WITH seen AS (
    SELECT m.topic, {VIEW_STATUS} AS status, m.available_at FROM messages AS m WHERE m.tenant_id = $1
), counts AS (
    SELECT topic,
           count(*) FILTER (WHERE status = 'pending') AS pending,
           count(*) FILTER (WHERE status = 'processing') AS processing,
           count(*) FILTER (WHERE status = 'failed') AS failed,
           count(*) FILTER (WHERE status = 'expired') AS expired,
           count(*) FILTER (WHERE status = 'pending' AND available_at > now()) AS delayed,
           min(available_at) FILTER (WHERE status = 'pending' AND available_at <= now()) AS oldest_available
    FROM seen GROUP BY topic
), rates AS (
    SELECT topic, sum(enqueued) / 60.0 AS enqueue_rate, sum(acked) / 60.0 AS ack_rate FROM topic_activity
    WHERE tenant_id = $1 AND at >= now() - interval '70 seconds' AND at < now() - interval '10 seconds'
    GROUP BY topic
), known AS (
    SELECT topic FROM topic_configs WHERE tenant_id = $1
    UNION SELECT topic FROM topic_pauses WHERE tenant_id = $1
    UNION SELECT topic FROM topic_activity WHERE tenant_id = $1 AND at >= now() - interval '1 hour'
)
SELECT coalesce(c.topic, k.topic) AS topic, coalesce(c.pending, 0) AS pending,
       coalesce(c.processing, 0) AS processing, coalesce(c.failed, 0) AS failed, coalesce(c.expired, 0) AS expired,
       coalesce(c.delayed, 0) AS delayed,
       coalesce(extract(epoch FROM now() - c.oldest_available), 0)::float8 AS oldest_pending_age_seconds,
       EXISTS (SELECT 1 FROM topic_pauses AS p WHERE p.tenant_id = $1 AND p.topic = coalesce(c.topic, k.topic))
           AS paused,
       coalesce(r.enqueue_rate, 0)::float8 AS enqueue_rate, coalesce(r.ack_rate, 0)::float8 AS ack_rate,
       tc.topic IS NOT NULL AS configured, tc.max_retries, tc.message_ttl_seconds, tc.max_depth, tc.throughput_limit,
       tc.visibility_timeout_seconds, tc.retry_backoff_seconds, tc.dlq_enabled, tc.expire_to_dlq, tc.replayable,
       tc.replay_window_seconds, tc.max_inflight
FROM counts AS c
FULL JOIN known AS k ON k.topic = c.topic
LEFT JOIN rates AS r ON r.topic = coalesce(c.topic, k.topic)
LEFT JOIN topic_configs AS tc ON tc.tenant_id = $1 AND tc.topic = coalesce(c.topic, k.topic)
ORDER BY 1"""


# --- Topic configs (read by the data plane's cache: `mq.queue.sql.TOPIC_CONFIG_GET`) ---------------------------
_CONFIG_COLUMNS = """max_retries, message_ttl_seconds, max_depth, throughput_limit, visibility_timeout_seconds,
    retry_backoff_seconds, dlq_enabled, expire_to_dlq, replayable, replay_window_seconds, max_inflight"""

# Create or replace a topic's config (every field; NULL = the global default), in a transaction: a topic new to
# the tenant passes max_topics first (`TOPIC_CONFIG_ADMIT`, only when the tenant has that quota: its gate row stays
# locked until the config is stored), then `TOPIC_CONFIG_PUT`. Two statements, not one: on Citus the admission
# function, delegated to the tenant's worker, cannot run inside a statement routed there ("a distributed query from a
# query on a shard"). The topic's max_depth gate is dropped: the next capped enqueue recounts (a cap set after a time
# without one must not trust a bound nobody kept).
# $2 topic, $3 max_topics
TOPIC_CONFIG_ADMIT = (
    f"SELECT {functions.ADMIT.name}($1, '{{}}'::text[], '{{}}'::int8[], '{{}}'::int8[], $3::int4, ARRAY[$2::text])"
)
# $2 topic, $3 max_retries, $4 ttl s, $5 max_depth, $6 throughput_limit, $7 visibility s, $8 backoff, $9 dlq,
# $10 expire_to_dlq, $11 replayable, $12 replay_window_seconds, $13 max_inflight
TOPIC_CONFIG_PUT = f"""
WITH gate AS (
    DELETE FROM admission_gates WHERE tenant_id = $1 AND scope = $2
)
INSERT INTO topic_configs AS tc (tenant_id, topic, {_CONFIG_COLUMNS})
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (tenant_id, topic) DO UPDATE SET
    max_retries = EXCLUDED.max_retries, message_ttl_seconds = EXCLUDED.message_ttl_seconds,
    max_depth = EXCLUDED.max_depth, throughput_limit = EXCLUDED.throughput_limit,
    visibility_timeout_seconds = EXCLUDED.visibility_timeout_seconds,
    retry_backoff_seconds = EXCLUDED.retry_backoff_seconds, dlq_enabled = EXCLUDED.dlq_enabled,
    expire_to_dlq = EXCLUDED.expire_to_dlq, replayable = EXCLUDED.replayable,
    replay_window_seconds = EXCLUDED.replay_window_seconds, max_inflight = EXCLUDED.max_inflight,
    updated_at = EXCLUDED.updated_at
RETURNING {_CONFIG_COLUMNS}"""

TOPIC_CONFIG_DELETE = """
WITH gate AS (DELETE FROM admission_gates WHERE tenant_id = $1 AND scope = $2)
DELETE FROM topic_configs WHERE tenant_id = $1 AND topic = $2 RETURNING topic"""

TOPIC_CONFIG_LIST = """
SELECT topic, max_retries, message_ttl_seconds, max_depth, throughput_limit, visibility_timeout_seconds,
       retry_backoff_seconds, dlq_enabled, expire_to_dlq, replayable, replay_window_seconds, max_inflight
FROM topic_configs WHERE tenant_id = $1 ORDER BY topic"""


# --- A deleted consumer group's release (its deletion's request, then `mq.jobs.GroupSettler` for what it left) ----
# What a deleted group owed, released a batch at a time (`skiplock_group_release`): its deliveries go, and the
# messages no other group owes with them; leased deliveries locked at that moment are skipped, for a later batch.
# $2 group id, $3 batch
GROUP_RELEASE = f"SELECT {functions.GROUP_RELEASE.name}($1, $2, $3)"
# Whether a deleted group still owes anything (its deletion's request stops releasing when it does not).
GROUP_OWES = "SELECT EXISTS (SELECT 1 FROM deliveries WHERE tenant_id = $1 AND group_id = $2)"
# The tombstone goes once nothing is left and it is older than any transaction that may have read its group before
# the deletion ($3 seconds, `mq.jobs.TOMBSTONE_SECONDS`): an insert that read the topic's groups then mints the
# group a delivery that commits after the deletion's release, and the settler's next release takes it. An absent
# delivery alone proves nothing: one may still be on its way.
GROUP_FORGET = """
DELETE FROM deleted_groups
WHERE tenant_id = $1 AND id = $2 AND deleted_at < now() - make_interval(secs => $3)
  AND NOT EXISTS (SELECT 1 FROM deliveries WHERE tenant_id = $1 AND group_id = $2)
RETURNING id"""
# The tombstones in key order, a page after ($1, $2) (no row lock: on Citus a read of every worker).
DELETED_GROUPS = """
SELECT tenant_id, id FROM deleted_groups WHERE (tenant_id, id) > ($1, $2) ORDER BY tenant_id, id LIMIT 100"""


# --- what the topic page shows of its consumers and its errors -----------------------------------------------

# Who holds the topic's messages now: each consumer (the user whose dequeue took the lease) with how many leases it
# holds, per consumer group (NULL: the topic's own), and its oldest and newest lease; lapsed leases are held by
# nobody. A scan of the topic's live messages (the dequeue index) and, per group, of its deliveries: the console's
# page, never the data plane. $1 tenant, $2 topic
TOPIC_CONSUMERS = f"""
WITH held AS (
    SELECT NULL::text AS consumer_group, m.leased_by, m.leased_at FROM messages AS m
    WHERE m.tenant_id = $1 AND m.topic = $2 AND m.status = 'processing' AND m.available_at > now()
    UNION ALL
    SELECT g.name, d.leased_by, d.leased_at FROM consumer_groups AS g
    JOIN deliveries AS d ON d.tenant_id = $1 AND d.group_id = g.id
    WHERE g.tenant_id = $1 AND g.topic = $2 AND d.status = 'processing' AND d.available_at > now()
)
SELECT coalesce(leased_by, '') AS consumer, consumer_group, count(*) AS holding,
       {_rfc3339("min(leased_at)")} AS oldest_lease_at, {_rfc3339("max(leased_at)")} AS newest_lease_at
FROM held GROUP BY leased_by, consumer_group ORDER BY count(*) DESC, leased_by, consumer_group LIMIT 200"""

# The failed messages of a topic (and, on a DLQ, its dead letters) grouped by the class of their last error: a
# traceback's last line, else the first line, up to its first ':' (`ValueError: bad input` is `ValueError`), at most
# 120 characters. Each class with its count, its newest message (an example to open) and that message's error.
# At most ERRORS_SCAN messages are read, newest first. $1 tenant, $2 topic, $3 a DLQ (its pending dead letters too)
ERRORS_SCAN = 20_000
_LAST_LINE = "(regexp_match(btrim(m.last_error, E' \\n\\t'), '([^\\n]*)$'))[1]"
_FIRST_LINE = "split_part(m.last_error, E'\\n', 1)"
_CLASS = f"""left(btrim(split_part(CASE WHEN m.last_error LIKE 'Traceback%' THEN {_LAST_LINE} ELSE {_FIRST_LINE} END,
    ':', 1)), 120)"""
TOPIC_ERROR_CLASSES = f"""
WITH scanned AS (
    SELECT m.id, m.last_error, {_CLASS} AS error_class FROM messages AS m
    WHERE m.tenant_id = $1 AND m.topic = $2 AND m.last_error IS NOT NULL
      AND (m.status = 'failed' OR ($3 AND m.status IN ('pending', 'processing')))
    ORDER BY m.id DESC LIMIT {ERRORS_SCAN}
)
SELECT error_class, count(*) AS messages, (array_agg(id::text ORDER BY id DESC))[1] AS example_id,
       (array_agg(last_error ORDER BY id DESC))[1] AS example_error, (SELECT count(*) FROM scanned) AS scanned
FROM scanned GROUP BY error_class ORDER BY count(*) DESC, error_class LIMIT 50"""
