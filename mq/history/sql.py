"""The message log's statements (contract, "Message history and replay").

`message_log` is partitioned by range of `acked_at`; the ack statements write
it (`mq.queue.sql.log`: a topic's logged ack, `skiplock_group_done`). What a topic shows starts at its visible
floor: the latest of its trim (`message_log_trims`) and now minus its `replay_window_seconds`. Rows below it stay
until their partition is dropped (`mq.history.partitions`): no row-by-row DELETE on the log.
"""

from __future__ import annotations

_COLUMNS = "l.id::text AS id, l.topic, l.key, l.payload, l.metadata::text AS metadata, l.priority, l.retry_count"

# The topic's visible floor. $1 tenant, $2 topic, $3 window seconds (NULL: none)
_FLOOR = """greatest(
    (SELECT t.before FROM message_log_trims AS t WHERE t.tenant_id = $1 AND t.topic = $2),
    now() - make_interval(secs => $3::float8))"""


# A page, oldest first by (acked_at, id), from after the cursor ($4, $5), within [$6, $7) and above the floor; the
# key when given ($9). The cursor and the lower bound are folded into one position, `start`, so that the index
# scan begins there: with the bound as a separate filter, a page deep into 10,000,000 entries read every entry
# before it (350-700 ms). Plan: Nested Loop <- start (one row), Index Scan using message_log_page_idx on each
# partition (Index Cond: tenant_id, topic, ROW(acked_at, id) > ROW(start), acked_at < $7), Limit: the page's rows
# and no more, at any depth. $4 cursor acked_at, $5 cursor id, $6 from, $7 to, $8 limit, $9 key
def _page(columns: str) -> str:
    return f"""
WITH bound AS (SELECT greatest($6::timestamptz, {_FLOOR}) AS lo),
start AS (
    SELECT CASE WHEN $4::timestamptz >= b.lo THEN $4::timestamptz ELSE b.lo - interval '1 microsecond' END AS at,
           CASE WHEN $4::timestamptz >= b.lo THEN $5::uuid ELSE 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid END AS id
    FROM bound AS b
)
SELECT {columns}
FROM start AS s
JOIN message_log AS l ON l.tenant_id = $1 AND l.topic = $2 AND (l.acked_at, l.id) > (s.at, s.id)
WHERE l.acked_at < $7::timestamptz AND ($9::text IS NULL OR l.key = $9::text)
ORDER BY l.acked_at, l.id
LIMIT $8"""


PAGE = _page(f"{_COLUMNS}, l.created_at, l.acked_at")
# The same rows for a replay: what a new message takes from each entry, and where the next page starts.
REPLAY_PAGE = _page("l.id, l.acked_at, l.key, l.payload, l.metadata::text AS metadata, l.priority")


# Trim: entries acked before $4 are hidden from now on (a trim never moves back); answers how many were visible.
# The mark reads the count's step, so the count is taken first on Citus too (which runs a statement's steps one
# after another, each seeing the writes of those before: the count ran after the mark and found nothing).
# A time in the future trims up to now: acks still to come are never hidden by it. $3 window seconds, $4 before
TRIM = f"""
WITH hidden AS MATERIALIZED (
    SELECT count(*) AS n, least($4, now()) AS before FROM message_log AS l
    WHERE l.tenant_id = $1 AND l.topic = $2 AND l.acked_at < least($4, now())
      AND l.acked_at >= coalesce({_FLOOR}, '-infinity')
), mark AS (
    INSERT INTO message_log_trims AS t (tenant_id, topic, before) SELECT $1, $2, h.before FROM hidden AS h
    ON CONFLICT (tenant_id, topic) DO UPDATE SET before = greatest(t.before, EXCLUDED.before)
)
SELECT n FROM hidden"""

# --- partitions ----------------------------------------------------------------------------------------------------

PARTITIONS = """
SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
WHERE i.inhparent = 'message_log'::regclass"""

# The topics that have entries in one partition (a loose index scan: one probe per topic, not a pass over the
# rows), each with its visible floor. Filled in: the partition's name. On Citus, which runs no recursive query over
# a distributed table, a DISTINCT of every shard's (`_CITUS`: a pass over the partition's rows on each worker, once
# an interval).
_PARTITION_FLOORS = """
SELECT t.tenant_id, t.topic, greatest(
    (SELECT x.before FROM message_log_trims AS x WHERE x.tenant_id = t.tenant_id AND x.topic = t.topic),
    now() - make_interval(secs => tc.replay_window_seconds::float8)) AS floor
FROM t LEFT JOIN topic_configs AS tc ON tc.tenant_id = t.tenant_id AND tc.topic = t.topic
     LEFT JOIN tenants AS te ON te.id = t.tenant_id
WHERE te.id IS NOT NULL"""
PARTITION_TOPICS = (
    """
WITH RECURSIVE t AS (
    (SELECT tenant_id, topic FROM {partition} ORDER BY tenant_id, topic LIMIT 1)
    UNION ALL
    SELECT n.tenant_id, n.topic FROM t, LATERAL (
        SELECT p.tenant_id, p.topic FROM {partition} AS p
        WHERE (p.tenant_id, p.topic) > (t.tenant_id, t.topic) ORDER BY p.tenant_id, p.topic LIMIT 1) AS n
)"""
    + _PARTITION_FLOORS
)
PARTITION_TOPICS_CITUS = "\nWITH t AS (SELECT DISTINCT tenant_id, topic FROM {partition})" + _PARTITION_FLOORS
ON_CITUS = "SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')"

# Rows that fell into the default partition (no partition made in time), deleted once below their topic's floor.
# The floor's clock is taken apart from the window (`to_timestamp` of seconds): Citus takes no STABLE function
# with a column in a change (`now() - make_interval(secs => tc...)`).
DEFAULT_TRIM = """
DELETE FROM message_log_p_default AS l
USING (SELECT tenant_id, topic FROM message_log_p_default GROUP BY 1, 2) AS k
LEFT JOIN topic_configs AS tc ON tc.tenant_id = k.tenant_id AND tc.topic = k.topic
WHERE l.tenant_id = k.tenant_id AND l.topic = k.topic AND l.acked_at < greatest(
    (SELECT x.before FROM message_log_trims AS x WHERE x.tenant_id = k.tenant_id AND x.topic = k.topic),
    to_timestamp(extract(epoch FROM now()) - tc.replay_window_seconds::float8))"""


# A message's story (`mq.commands.story`): the log's entries are read from a message's creation on, at most
# `STORY_SCAN` of them (an old message on a busy log is not searched to its end), visible ones only.
STORY_SCAN = 200_000
_STORY_SCANNED = f"""
    SELECT l.id, l.acked_at, l.created_at, l.retry_count, l.metadata FROM message_log AS l
    WHERE l.tenant_id = $1 AND l.topic = $2 AND l.acked_at >= greatest($4::timestamptz, {_FLOOR})
    ORDER BY l.acked_at LIMIT {STORY_SCAN}"""
_STORY_COLUMNS = """l.id::text AS id,
       to_char(l.acked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS acked_at,
       to_char(l.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at, l.retry_count"""
# The message's own entry. $3 window seconds, $4 from (its creation), $5 its id
STORY_ENTRY = f"""
SELECT {_STORY_COLUMNS} FROM ({_STORY_SCANNED}) AS l WHERE l.id = $5 LIMIT 1"""
# The entries of the messages that replayed it (`metadata.skiplock_replay_of`). $5 its id as text
STORY_REPLAYED = f"""
SELECT {_STORY_COLUMNS} FROM ({_STORY_SCANNED}) AS l
WHERE l.metadata @> jsonb_build_object('skiplock_replay_of', $5::text) ORDER BY l.acked_at LIMIT 50"""
