"""Every hot-path SQL statement, named `<entity>_<verb>`, run by `MessageRepository`; the maintenance jobs' batches
at the end run through `mq.db.repository.JobConnection`, and `WAKEUP_NOTIFY` on the LISTEN connection.

Conventions: `$1` is always the tenant id, so no statement can touch another tenant's rows; the jobs' too, which
work tenant by tenant: only their reads of which tenants have work (`*_DUE`, no row lock) span tenants, and take a
batch size first. A state change is one statement. `available_at` is when a dequeue may next take a message: the end
of a pending message's delay, or a processing message's visibility deadline (its lease). Plans below were taken with
EXPLAIN (ANALYZE, BUFFERS) on a table of 1,000,000 messages over 20 topics of two tenants (`make explain` prints
them again).
"""

from mq.db.fragments import ALIVE
from mq.db.routed import routed
from mq.db.statements import Fragment, compose
from mq.queue.sql.common import (
    EXPIRE_SET,
    LEASE_EXPIRED_ERROR,
    MESSAGE_COLUMNS,
    expires_to_dlq,
    leased,
    rfc3339,
    uuid_list,
)

# The expiry reaper (`mq.jobs.ExpiryReaper`), tenant by tenant: `EXPIRE_DUE` names the tenants of the oldest due
# messages (index messages_expiry_idx; no row lock, so on Citus it may read every shard), then `EXPIRE_BATCH` takes
# one tenant's, oldest deadline first. A topic whose config (or the global default, $3) says expire_to_dlq moves
# them to its DLQ as pending (no TTL there, or they would expire again); messages already in a DLQ, or of topics
# whose DLQ is disabled ($4: the global default), are marked expired and keep their origin (`EXPIRE_SET`); consumer
# groups that still owed one are owed nothing any more (its deliveries go, `owed` is cleared). Returns, per
# (tenant, topic), how many rows expired: the caller's counts and metrics labels. The rows are locked alone, the
# topic's config joined after (with a join, `FOR UPDATE` makes Citus plan the step apart). Plan: Index Scan using
# messages_expiry_idx; 3,000 due rows among 1,000,000 expired in 33 ms. $1 how many
EXPIRE_DUE = """
SELECT tenant_id FROM messages
WHERE expires_at <= now() AND expires_at IS NOT NULL AND status IN ('pending', 'processing')
ORDER BY expires_at
LIMIT $1"""
# $2 batch
EXPIRE_BATCH = f"""
WITH locked AS (
    SELECT m.id, m.topic, m.original_topic FROM messages AS m
    WHERE m.tenant_id = $1 AND m.expires_at <= now() AND m.expires_at IS NOT NULL
      AND m.status IN ('pending', 'processing')
    ORDER BY m.expires_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), picked AS MATERIALIZED (
    SELECT m.id, m.topic, {expires_to_dlq("$3", "$4")} AS to_dlq, now() AS now
    FROM locked AS m LEFT JOIN topic_configs AS tc ON tc.tenant_id = $1 AND tc.topic = m.topic
), changed AS (
    UPDATE messages AS m SET {EXPIRE_SET}
    FROM picked AS p WHERE m.tenant_id = $1 AND m.id = p.id
    RETURNING m.id, p.topic
), released AS (
    -- an expired message expires for every group that still owed it: their deliveries go (one primary-key probe
    -- per group of the topic; none for a topic without groups)
    DELETE FROM deliveries AS d USING changed AS c, consumer_groups AS g
    WHERE g.tenant_id = $1 AND g.topic = c.topic AND d.tenant_id = $1 AND d.group_id = g.id AND d.message_id = c.id
)
SELECT t.slug AS tenant, c.topic, count(*) AS n FROM changed AS c JOIN tenants AS t ON t.id = $1
GROUP BY 1, 2"""


# The orphan sweeper (`mq.jobs.OrphanSweeper`): rows of deleted tenants (written by enqueues that raced the
# delete), a tenant at a time (`ORPHANS_DUE`, the tombstones), a batch at a time, then each tombstone with nothing
# left under it after an hour. Tombstones are few and usually none. A tenant's rows are found through the two
# partial indexes that lead with tenant_id and together cover every status (live: messages_dequeue_idx; finished:
# messages_done_idx): a plain join of tombstones and messages was a Seq Scan of the whole table as soon as one
# tombstone existed (1.6 s on 10,000,000 messages, every minute). $1 how many
ORPHANS_DUE = "SELECT tenant_id FROM deleted_tenants ORDER BY tenant_id LIMIT $1"
# $1 the deleted tenant, $2 batch
ORPHANS_SWEEP = """
WITH picked AS (
    SELECT m.id FROM messages AS m
    WHERE m.tenant_id = $1 AND m.id IN (
        (SELECT id FROM messages WHERE tenant_id = $1 AND status IN ('pending', 'processing') LIMIT $2)
        UNION ALL
        (SELECT id FROM messages WHERE tenant_id = $1 AND status IN ('failed', 'expired') LIMIT $2)
    )
    LIMIT $2
    FOR UPDATE OF m SKIP LOCKED
), gone AS (
    DELETE FROM messages AS m USING picked AS p WHERE m.tenant_id = $1 AND m.id = p.id
    RETURNING m.topic
), gates AS (
    DELETE FROM admission_gates WHERE tenant_id = $1
)
SELECT $1::bigint::text AS tenant, g.topic, count(*) AS n FROM gone AS g GROUP BY 1, 2"""
ORPHANS_LEFT = "SELECT EXISTS (SELECT FROM messages WHERE tenant_id = $1)"
ORPHANS_BURY = "DELETE FROM deleted_tenants WHERE tenant_id = $1 AND deleted_at < now() - interval '1 hour'"


# --- Consumer groups -------------------------------------------------------------------------------------------
# A topic with groups is consumed through them only. Each group owes each message once: a delivery row per
# (message, group), minted by the statement that stores the message from the groups its topic has then (the
# statement reads them itself, so a group created a moment ago by another instance counts), and `owed` on the
# message counts them. A group's dequeue leases its own rows (`deliveries_dequeue_idx`, queue order, SKIP LOCKED);
# its ack deletes them and counts the messages down, and the message goes when the count reaches 0
# (`functions.GROUP_ACK`).
#
# Why rows and not a cursor per group (Kafka's offsets): a cursor cannot keep the data plane's order (priority,
# then available_at) nor delays, and a position in id or time order passes a message whose transaction commits
# after a later one was read, and never delivers it. Measured at the database level (`python -m
# bench.groups_design`: 1,000,000 waiting messages, 3 groups, 4 connections; bench/RESULTS.md): against the same
# work on a topic without groups, single enqueue 0.83, batch enqueue of 100 0.38, a group's dequeue 100 + ack
# 0.84; a cursor's enqueue costs nothing extra (0.96) but its dequeue serializes a group's consumers on the
# cursor row (0.25-0.28). A delivery row takes about 150 bytes (heap 93, indexes 59).
#
# The insert that mints a message's deliveries and counts `owed`: `mq.queue.sql.insert` (`grouped`).

# The dequeue, and a limited one's reservation: `mq.queue.sql.dequeue`.

# The metadata a nack's own would be merged into (a nack may merge at most `max_metadata_bytes` in all): a processing
# message's, or what a group's delivery of it carries (the message's with the group's saved state on top).
MESSAGE_LEASED_METADATA = f"""
SELECT coalesce(metadata, '{{}}')::text FROM messages
WHERE tenant_id = $1 AND id = $2 AND {leased()} AND owed IS NULL"""
GROUP_LEASED_METADATA = """
SELECT (coalesce(m.metadata, '{}') || coalesce(d.metadata, '{}'))::text
FROM consumer_groups AS g JOIN deliveries AS d ON d.tenant_id = $1 AND d.group_id = g.id
JOIN messages AS m ON m.tenant_id = $1 AND m.id = d.message_id
WHERE g.tenant_id = $1 AND g.name = $3 AND d.message_id = $2 AND d.status = 'processing'"""

# Who holds a message's lease now (gRPC's ack and nack by id act only on the caller's own lease): its receipt, its
# holder's name and whether it is unexpired; no row when the message (the group's delivery) is not processing.
# $2 message id; the group's: $3 group name (a tenant's groups of that name, one per topic: the message picks one).
MESSAGE_LEASE_HOLDER = f"""
SELECT receipt::text, leased_by, available_at > now() AS live FROM messages
WHERE tenant_id = $1 AND id = $2 AND {leased()} AND owed IS NULL"""
GROUP_LEASE_HOLDER = """
SELECT d.receipt::text, d.leased_by, d.available_at > now() AS live
FROM consumer_groups AS g JOIN deliveries AS d ON d.tenant_id = $1 AND d.group_id = g.id
WHERE g.tenant_id = $1 AND g.name = $3 AND d.message_id = $2 AND d.status = 'processing'"""

# --- Concurrency limits ----------------------------------------------------------------------------------------
# A topic with `max_inflight` has a counter row (`inflight_counts`, group 0) and a record of each lease in flight
# with its deadline (`inflight_leases`, by receipt). Its dequeue is two statements. The first (`INFLIGHT_RESERVE`,
# a short transaction of its own) locks the counter row, so the topic's reservations take turns on every instance
# (no two can both see room for the last slot); deletes the recorded leases past their deadline (a lapsed lease
# frees its slot at its deadline, found by their key, never by scanning the queue); and reserves at most
# `max_inflight - leased` slots, counted in at once and kept as a reservation row. The second
# (`dequeue[limited]`, without the counter's lock: the topic's dequeues lease side by side) claims the
# reservation, leases at most that many, records each lease, and gives back what it did not lease. The counter
# thus never counts fewer than the leases in flight. (One statement holding the counter's lock while it leased
# measured 0.43 of an unlimited topic's dequeue 100 + ack: the topic's dequeues took turns for their whole run.)
# An ack or a nack of a tenant with limited topics deletes the recorded
# lease by its key (deadline, receipt) and notes it in `inflight_ended`, which the next dequeue counts out under
# the counter's lock: acks never wait for the counter. `extend[limited]` moves a recorded lease's
# deadline; a lease no longer recorded counts nothing. Topics without a limit have none of these rows, and their
# tenants' statements are the ones above, unchanged.
# `InflightKeeper` (mq.jobs) corrects what other paths leave behind (a purge, a delete, a TTL expiry of a leased
# message): it deletes recorded leases whose message is no longer leased by that receipt and recounts.
# A limited topic's first dequeue makes its counter (a group's first dequeue, the group's), recording the leases in
# flight then (one pass over the topic's live messages, or the group's deliveries). $2 topic, $3 group id (0: none)
INFLIGHT_START = """
INSERT INTO inflight_counts (tenant_id, topic, group_id, leased) VALUES ($1, $2, $3, 0)
ON CONFLICT DO NOTHING RETURNING 1"""
INFLIGHT_START_LEASES = """
WITH recorded AS (
    INSERT INTO inflight_leases (tenant_id, topic, group_id, receipt, message_id, deadline)
    SELECT $1, $2, 0, m.receipt, m.id, m.available_at FROM messages AS m
    WHERE m.tenant_id = $1 AND m.topic = $2 AND m.status = 'processing' AND m.available_at > now()
      AND m.owed IS NULL AND m.receipt IS NOT NULL
    ON CONFLICT DO NOTHING
    RETURNING 1
)
UPDATE inflight_counts SET leased = leased + (SELECT count(*) FROM recorded)
WHERE tenant_id = $1 AND topic = $2 AND group_id = 0"""
GROUP_INFLIGHT_START_LEASES = """
WITH recorded AS (
    INSERT INTO inflight_leases (tenant_id, topic, group_id, receipt, message_id, deadline)
    SELECT $1, $2, $3, d.receipt, d.message_id, d.available_at FROM deliveries AS d
    WHERE d.tenant_id = $1 AND d.group_id = $3 AND d.status = 'processing' AND d.available_at > now()
      AND d.receipt IS NOT NULL
    ON CONFLICT DO NOTHING
    RETURNING 1
)
UPDATE inflight_counts SET leased = leased + (SELECT count(*) FROM recorded)
WHERE tenant_id = $1 AND topic = $2 AND group_id = $3"""
# A topic's limit removed: its counters (its own and its groups') and recorded leases go (a new limit starts
# afresh, recording what is in flight then).
INFLIGHT_DROP = """
WITH leases AS (DELETE FROM inflight_leases WHERE tenant_id = $1 AND topic = $2),
ended AS (DELETE FROM inflight_ended WHERE tenant_id = $1 AND topic = $2),
reserved AS (DELETE FROM inflight_reservations WHERE tenant_id = $1 AND topic = $2)
DELETE FROM inflight_counts WHERE tenant_id = $1 AND topic = $2"""
# The keeper (`mq.jobs.InflightKeeper`): every counter, and whether its topic is still limited (and its group, if
# it is a group's, still exists).
INFLIGHT_COUNTERS = """
SELECT c.tenant_id, c.topic, c.group_id,
       tc.max_inflight IS NOT NULL AND (c.group_id = 0 OR EXISTS (
           SELECT FROM consumer_groups AS g WHERE g.id = c.group_id AND g.tenant_id = c.tenant_id)) AS limited
FROM inflight_counts AS c LEFT JOIN topic_configs AS tc ON tc.tenant_id = c.tenant_id AND tc.topic = c.topic"""
# Then, per counter, in a transaction: its lock (so that the recount below sees every ack, nack and dequeue that
# committed before it)...
INFLIGHT_LOCK = "SELECT 1 FROM inflight_counts WHERE tenant_id = $1 AND topic = $2 AND group_id = $3 FOR UPDATE"
# ... and the recount: recorded leases past their deadline, or whose message (group: delivery) is no longer leased
# by that receipt (purged, deleted, expired by its TTL while leased), are deleted; the counter becomes what is
# left plus the slots reserved and not yet claimed (a lease statement under way: its claim and its records commit
# together, and what it gives back is counted out by the next dequeue). A reservation older than
# `RESERVATION_LOST_SECONDS` ($4) was left by a process that died between its two statements: it is dropped (a
# lease statement that still came would claim nothing and lease nothing). Answers how many leases were deleted.
# A counter no longer wanted (`limited` false) is dropped with its leases.
INFLIGHT_RECOUNT = f"""
WITH stale AS (
    DELETE FROM inflight_leases AS l
    WHERE l.tenant_id = $1 AND l.topic = $2 AND l.group_id = $3
      AND (l.deadline <= now() OR NOT CASE WHEN $3 = 0
          THEN EXISTS (SELECT FROM messages AS m WHERE m.tenant_id = $1 AND m.id = l.message_id
                         AND {leased("m.")} AND m.receipt = l.receipt)
          ELSE EXISTS (SELECT FROM deliveries AS d
                       WHERE d.tenant_id = $1 AND d.group_id = $3 AND d.message_id = l.message_id
                         AND d.status = 'processing' AND d.receipt = l.receipt) END)
    RETURNING 1
), drained AS (
    DELETE FROM inflight_ended WHERE tenant_id = $1 AND topic = $2 AND group_id = $3
), lost AS (
    DELETE FROM inflight_reservations
    WHERE tenant_id = $1 AND topic = $2 AND group_id = $3 AND at < now() - make_interval(secs => $4)
)
UPDATE inflight_counts SET leased = (
    SELECT count(*) FROM inflight_leases WHERE tenant_id = $1 AND topic = $2 AND group_id = $3
) - (SELECT count(*) FROM stale) + (
    SELECT coalesce(sum(n), 0) FROM inflight_reservations
    WHERE tenant_id = $1 AND topic = $2 AND group_id = $3 AND at >= now() - make_interval(secs => $4)
)
WHERE tenant_id = $1 AND topic = $2 AND group_id = $3
RETURNING (SELECT count(*) FROM stale)"""
#: A reservation this old was left behind (its lease statement never came): the keeper drops it.
RESERVATION_LOST_SECONDS = 60.0
INFLIGHT_DROP_GROUP = """
WITH leases AS (DELETE FROM inflight_leases WHERE tenant_id = $1 AND topic = $2 AND group_id = $3),
ended AS (DELETE FROM inflight_ended WHERE tenant_id = $1 AND topic = $2 AND group_id = $3),
reserved AS (DELETE FROM inflight_reservations WHERE tenant_id = $1 AND topic = $2 AND group_id = $3)
DELETE FROM inflight_counts WHERE tenant_id = $1 AND topic = $2 AND group_id = $3"""

# Seconds until the next live message of a topic becomes available (a delay or a lease ending): how long a long
# poll that found nothing may sleep before it looks again, on the database's clock. Runs only on the empty
# long-poll path. A plain min() read every live row of the topic (130 ms for 50k leased or delayed messages on the
# 1M-row table); instead one probe per priority level takes the first entry of messages_dequeue_idx:
# Aggregate <- Nested Loop <- Function Scan on generate_series, Limit <- Index Scan using messages_dequeue_idx
# (10 loops, ~0.1 ms in all).
MESSAGE_NEXT_AVAILABLE = """
SELECT extract(epoch FROM min(first.available_at) - now())::float8
FROM generate_series(0, 9) AS p(priority)
CROSS JOIN LATERAL (
    SELECT available_at FROM messages
    WHERE tenant_id = $1 AND topic = $2 AND priority = p.priority AND status IN ('pending', 'processing')
      AND (expires_at IS NULL OR expires_at > now())
    ORDER BY available_at LIMIT 1
) AS first"""


# Ack, nack and extend: `mq.queue.sql.settle`.

# Whether some topic of the tenant has a max_inflight, and whether some is replayable: the plan of the statements
# that name a message by id (ack, nack, extend), whose topic only the statement finds (the others' stay as they are).
TENANT_PLAN = """
SELECT coalesce(bool_or(max_inflight IS NOT NULL), false) AS limited, coalesce(bool_or(replayable), false) AS logged
FROM topic_configs WHERE tenant_id = $1"""

# Why an ack, nack or extend of one message matched nothing: missing (404) or leased by someone else (409).
MESSAGE_LEASE_PROBE = "SELECT status, receipt, owed FROM messages WHERE tenant_id = $1 AND id = $2"

# The same for many ids at once: the status of those that exist. $2 ids
MESSAGE_LEASE_PROBE_MANY = f"SELECT id, status FROM messages WHERE tenant_id = $1 AND id = ANY({uuid_list('$2')})"


# Strays: an instance whose cached topic config (`mq.queue.configs`) did not know the topic had groups yet, in the
# moments after its first group was created on another instance, stores a message as for a topic without groups:
# no deliveries, `owed` NULL. (A statement that knows the topic has groups reads them itself, `mq.queue.sql.insert`'s
# `minted`, so it owes the message to every group committed before it began: it never leaves one out.) A
# message whose insert raced a group's creation (neither saw the other) is stored the same way.
#
# What tells a stray apart is a fact stored with the message, not a missing row: `owed` is NULL only on a message
# that no statement ever owed to any group. A delivery row goes when its group acks, dead-letters, releases or
# expires it, so "no delivery of group g" also describes a message g has finished: a settle that owed those to g
# again gave a group back what it had acked. `owed` never returns to NULL on a live message of the topic (a
# count-down that reaches 0 deletes it; expiry marks it expired or moves it to the DLQ with `original_topic`).
#
# Who is owed a never-owed message: every group of its topic that exists now and either starts `earliest` or was
# created no later than the message (what the statement that stored it, or an `earliest` backfill, would have
# minted had they seen each other). `NEVER_OWED_TO` is that condition for a group `x` and a message `{m}`; the
# backfill of an `earliest` group (`mq.topics.sql.GROUP_BACKFILL`) applies it too, so a stray it meets is owed to
# the groups it missed as well, not only to the new one.
NEVER_OWED_TO = "(x.start = 'earliest' OR x.created_at <= {m}.created_at)"


def _uuid7_at(instant: str) -> str:
    """The smallest UUIDv7 of `instant`'s millisecond."""
    return f"(lpad(to_hex(floor(extract(epoch FROM {instant}) * 1000)::int8), 12, '0') || repeat('0', 20))::uuid"


# Once the caches' staleness has passed ($1 seconds after a group's creation), the group is settled once: the
# never-owed pending messages of its topic stored around its creation are owed as above. Only that span of the
# topic is read: ids are UUIDv7, so the span is a primary-key range, `low` to `high` ($2 seconds of margin either
# side, for the clocks of the instances that made the ids and for an insert that began before the group).
# `GROUPS_UNSETTLED` reads the groups due with their spans (no row lock: on Citus it may read every shard);
# `GROUP_SETTLE` settles one, named by its tenant, id ($2), topic ($3) and span ($4, $5): each step names the tenant,
# and the span is a value, not a computation on the group's row (Citus refuses a STABLE function over a column in a
# modifying statement, timestamptz - interval here, and planned the settle in steps apart when the strays' range came
# from the updated row; joined to that row, the strays met a Citus fault: invalid input syntax for type uuid:
# "PGCOPY"). A stray a stale instance leased or consumed as a plain message in the meantime is left as
# it is. Returns the tenant, topic and how many messages were settled.
GROUPS_UNSETTLED = f"""
SELECT tenant_id, id, topic, {_uuid7_at("created_at - make_interval(secs => $2)")} AS low,
       {_uuid7_at("created_at + make_interval(secs => $1 + $2)")} AS high
FROM consumer_groups WHERE settled_at IS NULL AND created_at < now() - make_interval(secs => $1)
ORDER BY id LIMIT 100"""
GROUP_SETTLE = f"""
WITH g AS (
    UPDATE consumer_groups SET settled_at = now() WHERE tenant_id = $1 AND id = $2 AND settled_at IS NULL
    RETURNING id, tenant_id, topic
), strays AS (
    SELECT m.id, m.priority, m.available_at, m.expires_at, m.created_at
    FROM messages AS m
    WHERE m.tenant_id = $1 AND m.topic = $3 AND m.id >= $4 AND m.id < $5 AND EXISTS (SELECT FROM g)
      AND m.owed IS NULL AND m.status = 'pending' AND m.original_topic IS NULL AND {ALIVE}
    FOR UPDATE OF m
), minted AS (
    INSERT INTO deliveries (tenant_id, group_id, message_id, priority, available_at, expires_at)
    SELECT $1, x.id, s.id, s.priority, s.available_at, s.expires_at
    FROM strays AS s JOIN consumer_groups AS x ON x.tenant_id = $1 AND x.topic = $3
    WHERE {NEVER_OWED_TO.format(m="s")}
    ON CONFLICT DO NOTHING
    RETURNING message_id
), counted AS (
    UPDATE messages AS m SET owed = coalesce(m.owed, 0) + c.n
    FROM (SELECT message_id, count(*)::int AS n FROM minted GROUP BY 1) AS c
    WHERE m.tenant_id = $1 AND m.id = c.message_id
    RETURNING 1
)
SELECT t.slug AS tenant, g.topic, (SELECT count(*) FROM counted)::int AS n
FROM g JOIN tenants AS t ON t.id = $1"""

# A deleted group's release: `mq.topics.sql.GROUP_RELEASE`.

# Why a group's ack matched nothing: each listed message's delivery status for the group, and whether the tenant
# has a group of that name at all. $2 group name, $3 ids
GROUP_LEASE_PROBE_MANY = f"""
SELECT d.message_id AS id, d.status
FROM consumer_groups AS g JOIN deliveries AS d ON d.tenant_id = $1 AND d.group_id = g.id
WHERE g.tenant_id = $1 AND g.name = $2 AND d.message_id = ANY({uuid_list("$3")})"""
GROUP_EXISTS = "SELECT EXISTS (SELECT 1 FROM consumer_groups WHERE tenant_id = $1 AND name = $2)"

# Expired twins of a key, before a nack's retry or a requeue collides with one: `mq.queue.sql.insert.EXPIRE_TWINS`.

# A dead letter back in its original topic starts afresh, as if enqueued now: retry_count 0, max_retries and the
# TTL from the topic's config or the global defaults $default_max_retries and $default_ttl.
_RESTORE_FROM_DLQ = """
    topic = m.original_topic, original_topic = NULL, dlq_moved_at = NULL, retry_count = 0,
    max_retries = coalesce((SELECT tc.max_retries FROM topic_configs AS tc
                            WHERE tc.tenant_id = $tenant AND tc.topic = m.original_topic), $default_max_retries),
    expires_at = now() + make_interval(secs => nullif(coalesce(
        (SELECT tc.message_ttl_seconds FROM topic_configs AS tc
         WHERE tc.tenant_id = $tenant AND tc.topic = m.original_topic), $default_ttl), 0)),
    status = 'pending', available_at = now(), receipt = NULL, last_error = NULL, updated_at = now()"""

# Which dead letters a requeue takes: pending ones, failed ones (one by one only) and lapsed leases, which are
# available exactly as pending ones are; none past its TTL (gone for every purpose).
_LAPSED = "(m.status = 'processing' AND m.available_at <= now())"
_TAKEABLE = f"((m.status = 'pending' OR {_LAPSED}) AND {ALIVE})"

# Requeue one dead-lettered message to its original topic (`requeue[message]`, $message; a failed message in a
# DLQ may be requeued too), or every pending message of a DLQ (`requeue[topic]`, below).
# A dead letter back in a topic that has consumer groups is owed again: a group's copy (`consumer_group`) to that
# group only, while it exists; any other, as an enqueue would be, to every group the topic has now. `owed` NULL and
# no deliveries for a topic without groups: the plain requeue. The count (`owed`) and the deliveries (`minted`)
# read the groups in one statement, one snapshot; on Citus the deliveries' INSERT makes it a routed function
# (`mq.db.routed`), whose main statement is that one snapshot still (planned in steps there, each with a snapshot of
# its own, a group made or deleted between the two reads had left the count off by one).
_REQUEUED_OWED = """owed = nullif((
        SELECT CASE WHEN bool_or(g.name = m.consumer_group) THEN 1 ELSE count(*) END
        FROM consumer_groups AS g WHERE g.tenant_id = $tenant AND g.topic = m.original_topic), 0)"""
_REQUEUED_MINTED = Fragment(
    "minted",
    """
    INSERT INTO deliveries (tenant_id, group_id, message_id, priority, available_at, expires_at)
    SELECT $tenant, g.id, mv.id, mv.priority, mv.available_at, mv.expires_at
    FROM moved AS mv JOIN consumer_groups AS g ON g.tenant_id = $tenant AND g.topic = mv.topic
    WHERE mv.owed IS NOT NULL AND (g.name = mv.consumer_group OR NOT EXISTS (
        SELECT 1 FROM consumer_groups AS x
        WHERE x.tenant_id = $tenant AND x.topic = mv.topic AND x.name = mv.consumer_group))""",
)
_REQUEUED_RETURNING = "RETURNING m.id, m.topic, m.priority, m.available_at, m.expires_at, m.consumer_group, m.owed"
MESSAGE_REQUEUE = compose(
    "requeue[message]",
    [
        Fragment(
            "moved",
            f"""
    UPDATE messages AS m SET {_RESTORE_FROM_DLQ}, {_REQUEUED_OWED}
    WHERE m.tenant_id = $tenant AND m.id = $message AND m.original_topic IS NOT NULL
      AND (m.status = 'failed' OR {_TAKEABLE})
    {_REQUEUED_RETURNING}""",
        ),
        _REQUEUED_MINTED,
    ],
    "SELECT topic FROM moved",
)

# Retry a finished message (failed, or expired by a reaper or by its TTL) or release a delayed one: pending and
# available now, attempts counted from 0; an expired one gets its TTL again from now. $2 id
# The clock is read by the step that picks the row (Citus refuses a STABLE function in a change's CASE).
MESSAGE_RETRY = f"""
WITH chosen AS (
    SELECT m.id, now() AS now,
           CASE WHEN {ALIVE} THEN m.expires_at ELSE now() + (m.expires_at - m.created_at) END AS expires_at
    FROM messages AS m
    WHERE m.tenant_id = $1 AND m.id = $2
      AND (m.status IN ('failed', 'expired') OR (m.status = 'pending' AND (m.available_at > now() OR NOT {ALIVE})))
    FOR UPDATE
)
UPDATE messages AS m SET status = 'pending', available_at = c.now, retry_count = 0, receipt = NULL,
    expires_at = c.expires_at, updated_at = c.now
FROM chosen AS c
WHERE m.tenant_id = $1 AND m.id = c.id
RETURNING m.topic"""
MESSAGE_TOPIC = "SELECT topic FROM messages WHERE tenant_id = $1 AND id = $2"

# Delete chosen messages of one topic (any status). $2 topic, $3 ids
MESSAGE_DELETE_MANY = "DELETE FROM messages WHERE tenant_id = $1 AND topic = $2 AND id = ANY($3::uuid[]) RETURNING id"

# Before a requeue into a capped topic: the topic it would go to, and how many messages a DLQ holds pending.
MESSAGE_ORIGINAL_TOPIC = "SELECT original_topic FROM messages WHERE tenant_id = $1 AND id = $2"
MESSAGE_DLQ_PENDING = f"""
SELECT count(*) FROM messages AS m
WHERE m.tenant_id = $1 AND m.topic = $2 AND m.original_topic IS NOT NULL AND {_TAKEABLE}"""
# Whether a DLQ holds a requeueable dead letter of a group other than $3's (or of none): a member pinned to those
# groups may not requeue the whole DLQ then.
MESSAGE_DLQ_OTHERS = f"""
SELECT EXISTS (SELECT FROM messages AS m
               WHERE m.tenant_id = $1 AND m.topic = $2 AND m.original_topic IS NOT NULL AND {_TAKEABLE}
                 AND (m.consumer_group IS NULL OR m.consumer_group <> ALL($3::text[])))"""

# Requeue every pending message of a DLQ. Messages whose key has a pending twin in the original topic stay in the
# DLQ (requeueing would break the one-pending-per-key rule); among DLQ messages sharing a key the newest goes.
# $topic: the DLQ; $groups: the consumer groups whose dead letters go (a member pinned to them), NULL: every one.
MESSAGE_REQUEUE_TOPIC = compose(
    "requeue[topic]",
    [
        Fragment(
            "locked",
            f"""
    SELECT m.id, m.key, m.original_topic FROM messages AS m
    WHERE m.tenant_id = $tenant AND m.topic = $topic AND m.original_topic IS NOT NULL AND {_TAKEABLE}
      AND ($groups::text[] IS NULL OR m.consumer_group = ANY($groups::text[]))
    FOR UPDATE OF m SKIP LOCKED""",
        ),
        Fragment(
            "candidates",
            """
    SELECT DISTINCT ON (coalesce(l.key, l.id::text)) l.id
    FROM locked AS l
    WHERE l.key IS NULL OR NOT EXISTS (
        SELECT 1 FROM messages AS t
        WHERE t.tenant_id = $tenant AND t.topic = l.original_topic AND t.key = l.key AND t.status = 'pending'
          AND t.original_topic IS NULL)
    ORDER BY coalesce(l.key, l.id::text), l.id DESC""",
        ),
        Fragment(
            "moved",
            f"""
    UPDATE messages AS m SET {_RESTORE_FROM_DLQ}, {_REQUEUED_OWED}
    FROM candidates AS c
    WHERE m.tenant_id = $tenant AND m.id = c.id
    {_REQUEUED_RETURNING}""",
        ),
        _REQUEUED_MINTED,
    ],
    "SELECT id FROM moved",
)
#: The requeues by whether the database is Citus: there, routed functions (the deliveries' INSERT a sink).
REQUEUE_FORMS = {False: MESSAGE_REQUEUE, True: routed(MESSAGE_REQUEUE)}
REQUEUE_TOPIC_FORMS = {False: MESSAGE_REQUEUE_TOPIC, True: routed(MESSAGE_REQUEUE_TOPIC)}

# The topics of some messages, for checking a member's grants before acting on them by id. $2 ids
MESSAGE_TOPICS = f"""
SELECT id, topic, consumer_group FROM messages WHERE tenant_id = $1 AND id = ANY({uuid_list("$2")})"""


def _attempts_with_lease(row: str) -> str:
    """A message's (`m`) or a group delivery's (`d`) attempts as JSON text, the lease held now last: `processing`,
    or `lapsed` with its error once its deadline passed (recorded only when it is next dequeued)."""
    return f"""(coalesce({row}.attempts, '[]') || CASE WHEN {row}.status = 'processing' AND {row}.leased_at IS NOT NULL
    THEN jsonb_build_array(jsonb_build_object(
        'attempt', coalesce(({row}.attempts -> -1 ->> 'attempt')::int, 0) + 1,
        'leased_at', {rfc3339(f"{row}.leased_at")}, 'leased_by', {row}.leased_by,
        'outcome', CASE WHEN {row}.available_at <= now() THEN 'lapsed' ELSE 'processing' END,
        'error', CASE WHEN {row}.available_at <= now() THEN '{LEASE_EXPIRED_ERROR}' END,
        'ended_at', CASE WHEN {row}.available_at <= now() THEN {rfc3339(f"{row}.available_at")} END))
    ELSE '[]' END)::text"""


MESSAGE_GET = f"SELECT {MESSAGE_COLUMNS} FROM messages AS m WHERE m.tenant_id = $1 AND m.id = $2"
# One message with its attempts as JSON text: the ended ones, then the current lease of a processing message
# (`lapsed` once its deadline passed, until the next dequeue records it so).
MESSAGE_GET_DETAIL = f"""
SELECT {MESSAGE_COLUMNS}, {_attempts_with_lease("m")} AS attempts,
    -- a message that consumer groups owe: each group's delivery (one primary-key probe per group of the topic)
    CASE WHEN m.owed IS NOT NULL THEN (
        SELECT coalesce(jsonb_agg(jsonb_build_object(
            'consumer_group', g.name,
            'status', CASE WHEN d.status = 'processing' AND d.available_at <= now() THEN 'pending' ELSE d.status END,
            'retry_count', d.retry_count) ORDER BY g.id), '[]')
        FROM consumer_groups AS g
        JOIN deliveries AS d ON d.tenant_id = $1 AND d.group_id = g.id AND d.message_id = m.id
        WHERE g.tenant_id = $1 AND g.topic = m.topic)::text
    END AS deliveries
FROM messages AS m WHERE m.tenant_id = $1 AND m.id = $2"""

# A message's story (`mq.commands.story`), beside its detail above: each consumer group of its topic, with the
# group's delivery of it when there is one (its attempts, the lease held now last, as the detail's).
# $1 tenant, $2 message id, $3 topic
STORY_GROUPS = f"""
SELECT g.name, g.start, {rfc3339("g.created_at")} AS created_at, d.status AS delivery_status,
       CASE WHEN d.status = 'processing' AND d.available_at <= now() THEN 'pending' ELSE d.status END AS status,
       d.retry_count,
       {_attempts_with_lease("d")} AS attempts
FROM consumer_groups AS g
LEFT JOIN deliveries AS d ON d.tenant_id = $1 AND d.group_id = g.id AND d.message_id = $2
WHERE g.tenant_id = $1 AND g.topic = $3
ORDER BY g.id"""
# The messages of some topics (a topic and its DLQ) made from one: the consumer groups' dead letters of it (their
# last attempt names it, `copy_of`), or its replays (`metadata.skiplock_replay_of`). At most `STORY_SCAN` rows of
# the topics stored since the message are read. $1 tenant, $2 topics, $3 message id as text, $4 since (its id)
STORY_SCAN = 200_000
_STORY_SCANNED = f"""
    SELECT m.id, m.topic, m.status, m.consumer_group, m.created_at, m.attempts, m.metadata FROM messages AS m
    WHERE m.tenant_id = $1 AND m.topic = ANY($2::text[]) AND m.id > $4 LIMIT {STORY_SCAN}"""
_STORY_MADE = f"""m.id::text AS id, m.topic, m.status, m.consumer_group, {rfc3339("m.created_at")} AS created_at,
       coalesce(m.attempts, '[]')::text AS attempts"""
STORY_DEAD_LETTERS = f"""
SELECT {_STORY_MADE} FROM ({_STORY_SCANNED}) AS m
WHERE m.consumer_group IS NOT NULL AND m.attempts @> jsonb_build_array(jsonb_build_object('copy_of', $3::text))
ORDER BY m.id LIMIT 50"""
STORY_REPLAYS = f"""
SELECT {_STORY_MADE} FROM ({_STORY_SCANNED}) AS m
WHERE m.metadata @> jsonb_build_object('skiplock_replay_of', $3::text)
ORDER BY m.id LIMIT 50"""

MESSAGE_DELETE = "DELETE FROM messages WHERE tenant_id = $1 AND id = $2 RETURNING topic"

# A topic's config (`configured` false: it has none), whether it is paused, its groups and its schema in force
# (the highest version; NULL columns: none): one row, always.
TOPIC_CONFIG_GET = """
SELECT tc.max_retries, tc.message_ttl_seconds, tc.max_depth, tc.throughput_limit, tc.visibility_timeout_seconds,
       tc.retry_backoff_seconds, tc.dlq_enabled, tc.expire_to_dlq, tc.replayable, tc.replay_window_seconds,
       tc.max_inflight, tc.topic IS NOT NULL AS configured,
       EXISTS (SELECT 1 FROM topic_pauses AS p WHERE p.tenant_id = $1 AND p.topic = $2) AS paused,
       ARRAY(SELECT g.name FROM consumer_groups AS g WHERE g.tenant_id = $1 AND g.topic = $2 ORDER BY g.id)
           AS group_names,
       ARRAY(SELECT g.id FROM consumer_groups AS g WHERE g.tenant_id = $1 AND g.topic = $2 ORDER BY g.id)
           AS group_ids,
       s.version AS schema_version, s.format AS schema_format, s.schema_json
FROM (SELECT) AS one LEFT JOIN topic_configs AS tc ON tc.tenant_id = $1 AND tc.topic = $2
LEFT JOIN LATERAL (
    SELECT version, format, schema_json FROM topic_schemas WHERE tenant_id = $1 AND topic = $2
    ORDER BY version DESC LIMIT 1
) AS s ON true"""

# Long-poll wake-ups across instances: one NOTIFY per distinct (tenant, topic) in a flush, outside the enqueue's
# own transaction (a NOTIFY inside it would serialize every enqueue's commit on the notify queue lock).
WAKEUP_CHANNEL = "skiplock_wakeup"
WAKEUP_NOTIFY = f"SELECT pg_notify('{WAKEUP_CHANNEL}', k) FROM unnest($1::text[]) AS k"


# --- maintenance jobs (mq.jobs) ---------------------------------------------------------------------------------

# The delete reaper (`mq.jobs.DeleteReaper`), tenant by tenant: expired messages, and failed ones unchanged for
# $2 seconds (`DELETE_DUE`: their tenants, no row lock), then one tenant's at a time ($3 seconds). Plan: Index Scan
# using messages_done_idx (its predicate covers both) when they are few (3.5 ms for 172 among 1,000,000); a Seq
# Scan stopping at the LIMIT when they are many. $1 how many
DELETE_DUE = """
SELECT tenant_id FROM messages
WHERE status = 'expired' OR (status = 'failed' AND updated_at < now() - make_interval(secs => $2))
LIMIT $1"""
# $2 batch
DELETE_BATCH = """
WITH picked AS (
    SELECT id FROM messages
    WHERE tenant_id = $1
      AND (status = 'expired' OR (status = 'failed' AND updated_at < now() - make_interval(secs => $3)))
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM messages AS m USING picked AS p WHERE m.tenant_id = $1 AND m.id = p.id
    RETURNING m.topic
)
SELECT t.slug AS tenant, g.topic, count(*) AS n FROM gone AS g JOIN tenants AS t ON t.id = $1
GROUP BY 1, 2"""


# --- activity (mq.queue.activity) -------------------------------------------------------------------------------

# Add one instance's counts to the current 10-second bucket of each topic. $1 tenant ids, $2 topics, $3 enqueued,
# $4 acked, $5 dead-lettered.
ACTIVITY_ADD = """
INSERT INTO topic_activity AS a (tenant_id, topic, at, enqueued, acked, dead_lettered)
SELECT t, p, to_timestamp(floor(extract(epoch FROM now()) / 10) * 10), e, k, d
FROM unnest($1::int8[], $2::text[], $3::int8[], $4::int8[], $5::int8[]) AS u (t, p, e, k, d)
ON CONFLICT (tenant_id, topic, at) DO UPDATE SET enqueued = a.enqueued + EXCLUDED.enqueued,
                                                 acked = a.acked + EXCLUDED.acked,
                                                 dead_lettered = a.dead_lettered + EXCLUDED.dead_lettered"""
