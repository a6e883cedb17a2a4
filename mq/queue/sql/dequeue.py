"""The dequeue: one statement per delivery plan, composed from named steps.

A topic's own messages and a consumer group's deliveries are leased the same way, in three steps: `picked` (the
available rows, highest priority first, locked with SKIP LOCKED), `leased` (their lease: a new deadline and
receipt; a lapsed lease counted as an attempt), and the answer. A limited topic (`max_inflight`) adds the steps
of its reservation: `claim` before the pick (the pick takes nothing if the reservation is gone), `recorded` (each
lease with its deadline) and `given_back` (the slots reserved and not leased). A group adds `received` (a keyed
message's row lock, so the group gets the row's latest content). `dequeue_statement(plan)` answers the statement
of a plan; the registry (`mq.db.statements.REGISTRY`) lists all four with their plans (`make explain`).

Parameters: $tenant, $topic, $group (a group's id; 0 for a topic's own leases), $group_name (its name), $count,
$visibility (seconds), $secret (32 hex digits: receipts are md5($secret || id)), $dlq_default (the deployment's
dlq_enabled), $consumer (the leasing user's name, the lease's holder), $reservation (a limited dequeue's, from
`INFLIGHT_RESERVE`).
"""

from __future__ import annotations

from mq.db.routed import routed
from mq.db.statements import Fragment, Statement, compose
from mq.queue.sql.common import LEASE_EXPIRED_ERROR, attempt_ended, message_columns, rfc3339
from mq.queue.types import MAX_DEQUEUE_COUNT, DeliveryPlan

# --- The count, and the plans Postgres keeps -------------------------------------------------------------------
# A statement with `LIMIT $count` is planned again at every execution: Postgres estimates a generic plan's LIMIT
# of a parameter at a tenth of the rows it limits (the topic's whole backlog), so that plan never looks cheaper
# than one planned for the count and, where the backlog is large, is worse (a hash join over the tenant's messages
# instead of a probe of the primary key per leased row). Planning the lease was a fifth of Postgres' time per
# message of dequeue 100 + ack (`bench.lease`). So on one Postgres each plan has one statement per power of two,
# `dequeue[plain]:128`: the rows locked are at most that many (`LIMIT 128`, a constant the planner knows), and the
# step that takes them stops at $count (`LIMIT $count`, estimated at a tenth of 128). The lock step is read only as
# far as the step after it reads, so no row past $count is locked. Postgres then keeps the plan that a prepared
# statement made the first times, whatever the count. On Citus (a routed function's or the coordinator's plan) the
# statement keeps `LIMIT $count`: there `cap` is None.
CAPS = tuple(1 << n for n in range((MAX_DEQUEUE_COUNT - 1).bit_length() + 1))


def _cap(count: int) -> int:
    """The power of two a count is leased under (1 for 1, 128 for 65 to 128)."""
    return 1 << (count - 1).bit_length()


def _limit(cap: int | None) -> str:
    return "$count" if cap is None else str(cap)


def _taken(cap: int | None) -> str:
    return "" if cap is None else " LIMIT $count"


# --- A topic's own messages -------------------------------------------------------------------------------------
# Pending messages whose delay passed and processing messages whose lease passed (a crashed consumer's message
# comes back by itself), never expired ones, never a message consumer groups are owed (`owed`); highest priority,
# then earliest available. A lapsed lease counts as a failed attempt, as SQS counts receives: `retry_count` + 1 and
# `last_error` say so, and a message that has used up its `max_retries` this way is not delivered again but
# dead-lettered as a nack would (`fate` 'dlq' or 'failed'; NULL for a delivery). The caller drops those rows from
# the answer. The topic's `dlq_enabled` is looked up only for such a message (a CASE arm).
# Plan: Update on messages <- Nested Loop <- CTE picked: Limit <- LockRows <- Index Scan using
# messages_dequeue_idx (Index Cond: tenant_id, topic, available_at <= now(); Filter: expires_at), then Index Scan
# using messages_pkey per picked row. Rows are read in index order and the LIMIT stops the scan: cost grows with
# the batch size, not the table size (0.6 ms for 1 row, 2 to 4 ms for 100 on the 1M-row table, cold cache).


def _messages_locked(gate: str, cap: int | None) -> Fragment:
    return Fragment(
        "locked",
        f"""
    SELECT id, status = 'processing' AS lapsed, attempts, leased_at, leased_by, available_at,
           CASE WHEN status = 'processing' AND retry_count + 1 >= max_retries THEN
               CASE WHEN original_topic IS NULL AND right(topic, 4) <> '.dlq'
                         AND coalesce((SELECT tc.dlq_enabled FROM topic_configs AS tc
                                       WHERE tc.tenant_id = $tenant AND tc.topic = $topic), $dlq_default::bool)
                    THEN 'dlq' ELSE 'failed' END
           END AS fate
    FROM messages
    WHERE tenant_id = $tenant AND topic = $topic AND status IN ('pending', 'processing') AND available_at <= now()
      AND (expires_at IS NULL OR expires_at > now()) AND owed IS NULL{gate}
    ORDER BY priority DESC, available_at
    LIMIT {_limit(cap)}
    FOR UPDATE SKIP LOCKED""",
    )


# What the lease writes that needs the clock or a STABLE function, computed here rather than in the UPDATE (see
# `mq.queue.sql.common`, on Citus): the time, the new deadline, and a lapsed lease's attempts with it ended.
# On one Postgres it also formats the time and the deadline, once per statement (`formatted`: uncorrelated
# subqueries, evaluated once), which every leased row returns as its `updated_at` and `available_at`: two of the
# three timestamps a lease formats per row (`to_char`, 4.7% of Postgres' time per message of dequeue 100 + ack).
def _messages_picked(cap: int | None, formatted: bool) -> Fragment:
    texts = (
        f""", (SELECT {rfc3339("now()")}) AS now_text,
           (SELECT {rfc3339("(now() + make_interval(secs => $visibility))")}) AS deadline_text"""
        if formatted
        else ""
    )
    return Fragment(
        "picked",
        f"""
    SELECT l.id, l.lapsed, l.fate, now() AS now, now() + make_interval(secs => $visibility) AS deadline{texts},
           CASE WHEN l.lapsed THEN {
            attempt_ended(
                "CASE WHEN l.fate = 'dlq' THEN 'dead_lettered' ELSE 'lapsed' END",
                f"'{LEASE_EXPIRED_ERROR}'",
                "l.available_at",
                row="l",
            )
        } END AS attempts
    FROM locked AS l{_taken(cap)}""",
    )


# A receipt is md5(a random secret of this statement || the message id): unique per message and delivery, not
# guessable without the secret, and about 0.5 µs of Postgres time where gen_random_uuid() costs 4 µs per row
# (dequeue 100 + ack: +10-15% messages/s, SQL alone). After the message's columns: `waited`, seconds from enqueue
# to this delivery if it is the first (for metrics), `fate`, and `lapsed` (the message comes back after a lapsed
# lease).
def _messages_leased(returning: str) -> Fragment:
    return Fragment(
        "leased",
        f"""
UPDATE messages AS m
SET status = CASE WHEN p.fate = 'dlq' THEN 'pending' WHEN p.fate = 'failed' THEN 'failed' ELSE 'processing' END,
    available_at = CASE WHEN p.fate IS NULL THEN p.deadline ELSE p.now END,
    receipt = CASE WHEN p.fate IS NULL THEN md5($secret || m.id::text)::uuid END,
    first_dequeued_at = CASE WHEN p.fate IS NULL THEN coalesce(m.first_dequeued_at, p.now)
                             ELSE m.first_dequeued_at END,
    retry_count = CASE WHEN p.fate = 'dlq' THEN 0 WHEN p.lapsed THEN m.retry_count + 1 ELSE m.retry_count END,
    last_error = CASE WHEN p.lapsed THEN '{LEASE_EXPIRED_ERROR}' ELSE m.last_error END,
    topic = CASE WHEN p.fate = 'dlq' THEN m.topic || '.dlq' ELSE m.topic END,
    original_topic = CASE WHEN p.fate = 'dlq' THEN m.topic ELSE m.original_topic END,
    dlq_moved_at = CASE WHEN p.fate = 'dlq' THEN p.now ELSE m.dlq_moved_at END,
    max_retries = CASE WHEN p.fate = 'dlq' THEN 0 ELSE m.max_retries END,
    expires_at = CASE WHEN p.fate = 'dlq' THEN NULL ELSE m.expires_at END,
    leased_at = CASE WHEN p.fate IS NULL THEN p.now END,
    leased_by = CASE WHEN p.fate IS NULL THEN $consumer::text END,
    attempts = CASE WHEN p.lapsed THEN p.attempts ELSE m.attempts END,
    updated_at = p.now
FROM picked AS p WHERE m.tenant_id = $tenant AND m.id = p.id
RETURNING {returning},
    CASE WHEN m.first_dequeued_at = p.now AND p.fate IS NULL THEN extract(epoch FROM p.now - m.created_at)::float8
    END AS waited, p.fate, p.lapsed""",
    )


# The answer: the leased rows' columns as the contract prints them (`message_columns`), then `waited`, `fate` and
# `lapsed`. On one Postgres the UPDATE returns them so, and is the statement (no step to hold its rows: 6-8% of
# Postgres' time per message of dequeue 100 + ack, `bench.versus`). On Citus a RETURNING may call no STABLE function
# (`to_char`): the UPDATE returns the columns as they are and the answer formats them (`+citus`).
_MESSAGES_LEASED = _messages_leased(
    message_columns(
        "m.status",
        updated_at="p.now_text",
        available_at="CASE WHEN p.fate IS NULL THEN p.deadline_text ELSE p.now_text END",
    )
)
_MESSAGES_LEASED_RAW = _messages_leased(
    """m.id, m.topic, m.key, m.payload, m.metadata, m.status, m.priority, m.retry_count, m.max_retries,
    m.last_error, m.created_at, m.updated_at, m.available_at, m.expires_at, m.original_topic, m.dlq_moved_at,
    m.receipt, m.consumer_group"""
)
_MESSAGES_ANSWER = f"SELECT {message_columns('l.status', m='l')}, l.waited, l.fate, l.lapsed FROM leased AS l"
_MESSAGES_RECORDED = Fragment(
    "recorded",
    """
    INSERT INTO inflight_leases (tenant_id, topic, group_id, receipt, message_id, deadline)
    SELECT $tenant, $topic, $group, l.receipt::uuid, l.id::uuid, now() + make_interval(secs => $visibility)
    FROM leased AS l WHERE l.fate IS NULL""",
)
_MESSAGES_LEASED_COUNT = "(SELECT count(*) FROM leased AS l WHERE l.fate IS NULL)"

# --- A consumer group's deliveries ------------------------------------------------------------------------------
# Its deliveries that are available, in queue order, leased for this group alone; the messages' columns with the
# delivery's status, retry_count, last_error, lease deadline and receipt. A delivery whose lease lapsed comes back
# with retry_count + 1, as a message without groups does; one that has used up max_retries this way is not
# delivered but answered as `fate` 'spent' (its id only), and the caller dead-letters it as a nack would
# (`nack[grouped+lapsed]`, `mq.queue.sql.settle`). A keyed message that a group received leaves the key's unique
# index (status 'processing' on the message row, which no plain statement leases: `owed` is set): a keyed enqueue
# then stores a new message instead of replacing it. Every group's dequeue of a keyed message takes the message
# row's lock (`received`, even when another group flipped it already) and answers the row's latest content: an
# upsert that committed while the dequeue ran is what the group receives, never the content it replaced (the
# drill with three groups found that race: the snapshot's payload, then the upsert's content owed to nobody who
# had already acked).
# Plan: Nested Loop <- CTE picked: Limit <- LockRows <- Index Scan using deliveries_dequeue_idx; Index Scan using
# messages_pkey per leased row.


def _deliveries_locked(gate: str, cap: int | None) -> Fragment:
    return Fragment(
        "locked",
        f"""
    SELECT d.message_id, d.status = 'processing' AS lapsed, d.attempts, d.leased_at, d.leased_by, d.available_at,
           CASE WHEN d.status = 'processing'
                THEN d.retry_count + 1 >= (SELECT m.max_retries FROM messages AS m
                                           WHERE m.tenant_id = $tenant AND m.id = d.message_id)
                ELSE false END AS spent
    FROM deliveries AS d
    WHERE d.tenant_id = $tenant AND d.group_id = $group AND d.available_at <= now()
      AND (d.expires_at IS NULL OR d.expires_at > now()){gate}
    ORDER BY d.priority DESC, d.available_at
    LIMIT {_limit(cap)}
    FOR UPDATE SKIP LOCKED""",
    )


# As `_messages_picked`: the time, the deadline and a lapsed lease's attempts, before the UPDATE.
def _deliveries_picked(cap: int | None) -> Fragment:
    return Fragment(
        "picked",
        f"""
    SELECT l.message_id, l.lapsed, l.spent, now() AS now, now() + make_interval(secs => $visibility) AS deadline,
           CASE WHEN l.lapsed THEN {
            attempt_ended("'lapsed'", f"'{LEASE_EXPIRED_ERROR}'", "l.available_at", row="l")
        } END AS attempts
    FROM locked AS l{_taken(cap)}""",
    )


_DELIVERIES_LEASED = Fragment(
    "leased",
    f"""
    UPDATE deliveries AS d
    SET status = 'processing', available_at = p.deadline,
        receipt = md5($secret || d.message_id::text)::uuid,
        retry_count = CASE WHEN p.lapsed THEN d.retry_count + 1 ELSE d.retry_count END,
        last_error = CASE WHEN p.lapsed THEN '{LEASE_EXPIRED_ERROR}' ELSE d.last_error END,
        attempts = CASE WHEN p.lapsed THEN p.attempts ELSE d.attempts END,
        leased_at = p.now, leased_by = $consumer::text
    FROM picked AS p WHERE d.tenant_id = $tenant AND d.group_id = $group AND d.message_id = p.message_id
      AND NOT p.spent
    RETURNING d.message_id, d.status, d.retry_count, d.last_error, d.available_at, d.receipt, p.lapsed,
        d.metadata AS saved""",
)
_DELIVERIES_RECEIVED = Fragment(
    "received",
    """
    UPDATE messages AS m SET status = 'processing'
    FROM leased AS l WHERE m.tenant_id = $tenant AND m.id = l.message_id AND m.key IS NOT NULL
    RETURNING m.id, m.payload, m.metadata, m.updated_at""",
)
_DELIVERIES_RECORDED = Fragment(
    "recorded",
    """
    INSERT INTO inflight_leases (tenant_id, topic, group_id, receipt, message_id, deadline)
    SELECT $tenant, $topic, $group, l.receipt, l.message_id, l.available_at FROM leased AS l""",
)
_DELIVERIES_LEASED_COUNT = "(SELECT count(*) FROM leased)"
# The answer: each leased delivery with its message's columns (the group's saved metadata over the message's, and
# `consumer_group` the group it was leased for), then the spent ones by id.
_DELIVERIES_ANSWER = f"""
SELECT m.id::text AS id, m.topic, m.key, coalesce(r.payload, m.payload) AS payload,
    CASE WHEN l.saved IS NULL THEN coalesce(r.metadata, m.metadata)
         ELSE coalesce(r.metadata, m.metadata, '{{}}') || l.saved END::text AS metadata, l.status, m.priority,
    l.retry_count, m.max_retries, l.last_error, {rfc3339("m.created_at")} AS created_at,
    {rfc3339("coalesce(r.updated_at, m.updated_at)")} AS updated_at, {rfc3339("l.available_at")} AS available_at,
    {rfc3339("m.expires_at")} AS expires_at, m.original_topic, {rfc3339("m.dlq_moved_at")} AS dlq_moved_at,
    l.receipt::text AS receipt, $group_name::text AS consumer_group, NULL::float8 AS waited, NULL::text AS fate,
    l.lapsed
FROM leased AS l JOIN messages AS m ON m.tenant_id = $tenant AND m.id = l.message_id AND m.topic = $topic
LEFT JOIN received AS r ON r.id = l.message_id
UNION ALL
SELECT p.message_id::text, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, 'spent', true
FROM picked AS p WHERE p.spent"""

# --- Concurrency limits -----------------------------------------------------------------------------------------
# A limited dequeue's lease statement claims its reservation (`INFLIGHT_RESERVE`, and its count as the statement's
# count, so that the planner knows the LIMIT; a plan for an unknown LIMIT merge-joined the leased rows with the whole
# primary key, 2.5 of the statement's 3.6 ms), leases nothing if it was reclaimed, records each lease, and gives
# back what it did not lease as an ended count.
_CLAIM = Fragment(
    "claim",
    "DELETE FROM inflight_reservations WHERE tenant_id = $tenant AND id = $reservation RETURNING n",
    materialized=True,
)
_CLAIMED = "\n      AND EXISTS (SELECT FROM claim)"


def _given_back(leased_count: str) -> Fragment:
    return Fragment(
        "given_back",
        f"""
    INSERT INTO inflight_ended (tenant_id, topic, group_id, n)
    SELECT $tenant, $topic, $group, c.n - {leased_count} FROM claim AS c WHERE c.n > {leased_count}""",
    )


# A limited dequeue's first steps (a topic's: group 0; a consumer group's: its id): the counter row locked, the
# recorded leases past their deadline deleted, the ended ones drained; `freed` counts both, and the room is how many
# leases the dequeue may add. It is a short transaction of its own: up to $count slots reserved, counted in at
# once, and recorded as a reservation row that the lease statement claims. Answers how many were reserved and the
# reservation (NULL: none), or no row when the counter does not exist yet.
INFLIGHT_RESERVE = compose(
    "inflight_reserve",
    [
        Fragment(
            "slot",
            """
    SELECT c.leased, coalesce(tc.max_inflight, 2147483647) AS max_inflight
    FROM inflight_counts AS c LEFT JOIN topic_configs AS tc ON tc.tenant_id = $tenant AND tc.topic = $topic
    WHERE c.tenant_id = $tenant AND c.topic = $topic AND c.group_id = $group
    FOR UPDATE OF c""",
            materialized=True,
        ),
        Fragment(
            "expired",
            """
    DELETE FROM inflight_leases AS l
    WHERE l.tenant_id = $tenant AND l.topic = $topic AND l.group_id = $group AND l.deadline <= now()
      AND EXISTS (SELECT FROM slot)
    RETURNING 1""",
            materialized=True,
        ),
        Fragment(
            "drained",
            """
    DELETE FROM inflight_ended AS e
    WHERE e.tenant_id = $tenant AND e.topic = $topic AND e.group_id = $group AND EXISTS (SELECT FROM slot)
    RETURNING e.n""",
            materialized=True,
        ),
        Fragment(
            "freed",
            "SELECT (SELECT count(*) FROM expired) + (SELECT coalesce(sum(n), 0) FROM drained) AS n",
            materialized=True,
        ),
        Fragment(
            "granted",
            """
    SELECT least($count, coalesce(
        (SELECT greatest(0, s.max_inflight - s.leased + (SELECT n FROM freed)) FROM slot AS s), 0)) AS n
    FROM slot""",
            materialized=True,
        ),
        Fragment(
            "counted",
            """
    UPDATE inflight_counts SET leased = leased - (SELECT n FROM freed) + (SELECT n FROM granted)
    WHERE tenant_id = $tenant AND topic = $topic AND group_id = $group""",
        ),
        Fragment(
            "reserved",
            """
    INSERT INTO inflight_reservations (id, tenant_id, topic, group_id, n) OVERRIDING SYSTEM VALUE
    SELECT $reservation, $tenant, $topic, $group, n FROM granted WHERE n > 0""",
        ),
    ],
    "SELECT g.n, CASE WHEN g.n > 0 THEN $reservation::int8 END AS reservation FROM granted AS g",
)
# A reservation given back by a dequeue whose lease statement failed (best effort: else the keeper drops it).
INFLIGHT_RELEASE = compose(
    "inflight_release",
    [
        Fragment(
            "gone",
            """
    DELETE FROM inflight_reservations WHERE tenant_id = $tenant AND id = $reservation
    RETURNING tenant_id, topic, group_id, n""",
        ),
        Fragment(
            "given_back",
            """
    INSERT INTO inflight_ended (tenant_id, topic, group_id, n) SELECT tenant_id, topic, group_id, n FROM gone""",
        ),
    ],
    "SELECT count(*) AS released FROM gone",
)


def _dequeue(plan: DeliveryPlan, citus: bool, cap: int | None = None) -> Statement:
    gate = _CLAIMED if plan.limited else ""
    if plan.grouped:
        steps = [_deliveries_locked(gate, cap), _deliveries_picked(cap), _DELIVERIES_LEASED, _DELIVERIES_RECEIVED]
        limits = [_DELIVERIES_RECORDED, _given_back(_DELIVERIES_LEASED_COUNT)]
        result = _DELIVERIES_ANSWER
    else:
        steps = [
            _messages_locked(gate, cap),
            _messages_picked(cap, formatted=not citus),
            _MESSAGES_LEASED_RAW if citus else _MESSAGES_LEASED,
        ]
        limits = [_MESSAGES_RECORDED, _given_back(_MESSAGES_LEASED_COUNT)]
        result = _MESSAGES_ANSWER if citus else "SELECT * FROM leased"
    if plan.limited:
        steps = [_CLAIM, *steps, *limits]
    capped = "" if cap is None else f":{cap}"
    return compose(f"dequeue[{plan.name}{'+citus' if citus else ''}]{capped}", steps, result)


_PLANS = DeliveryPlan.every(grouped=True, limited=True)
#: Each plan with `LIMIT $count` (what `make explain` shows, and what Citus routes), and under each cap.
_DEQUEUES = {plan: _dequeue(plan, citus=False) for plan in _PLANS}
_CAPPED = {(plan, cap): _dequeue(plan, citus=False, cap=cap) for plan in _PLANS for cap in CAPS}
#: On Citus, a topic's own dequeue formats its answer in a step of its own (a group's always does), and a limited
#: one records its leases and gives back its slots in a routed function (`mq.db.routed`), as the reservation does.
_CITUS_DEQUEUES = {plan: routed(_dequeue(plan, citus=True) if not plan.grouped else _DEQUEUES[plan]) for plan in _PLANS}
_CITUS_RESERVE = routed(INFLIGHT_RESERVE)
_CITUS_RELEASE = routed(INFLIGHT_RELEASE)


def dequeue_statement(plan: DeliveryPlan, *, citus: bool = False, count: int | None = None) -> Statement:
    """The dequeue of a plan (only its `grouped` and `limited` choose), on one Postgres or on Citus; on one Postgres,
    given the `count` it leases, the statement of that count's cap."""
    key = DeliveryPlan(grouped=plan.grouped, limited=plan.limited)
    if citus:
        return _CITUS_DEQUEUES[key]
    return _DEQUEUES[key] if count is None else _CAPPED[key, _cap(count)]


def reserve_statement(*, citus: bool = False) -> Statement:
    """A limited dequeue's reservation (`INFLIGHT_RESERVE`), on one Postgres or on Citus."""
    return _CITUS_RESERVE if citus else INFLIGHT_RESERVE


def release_statement(*, citus: bool = False) -> Statement:
    """A reservation given back (`INFLIGHT_RELEASE`), on one Postgres or on Citus."""
    return _CITUS_RELEASE if citus else INFLIGHT_RELEASE
