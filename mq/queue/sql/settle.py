"""A lease settled: ack, nack, extend, and a nacked message superseded by its key's twin; one statement per plan.

Each is composed from named steps (`mq.db.statements`) by its `DeliveryPlan`: `grouped` (a consumer group's
delivery, named by the group's name: the functions of `mq.queue.sql.functions` do a group's count-down),
`limited` (the tenant has topics with `max_inflight`: the ended leases are counted out, `counted_out`), `logged`
(the tenant has replayable topics: an ack keeps its messages in the message log, `mq.queue.sql.log`; a group's
last ack does so in `skiplock_group_done`). `ack_statement(plan)` and the others answer the statement of a plan;
the registry lists them all (`make explain`).

Looking a message up by id: the key is (tenant_id, id) (migration `2026_11_28_tenant_keys`), and each lookup
names both, so the planner takes the primary key, a unique match, whatever the statistics say. Before, with the key
by id alone and the tenant beside it, a tenant the statistics did not know yet (new, or grown since the last
ANALYZE) was estimated at a handful of rows, and with `status = 'processing'` (which implies messages_dequeue_idx's
predicate) the planner read every live message of the tenant through messages_dequeue_idx instead: 525 ms for one
message among a tenant's 1,000,000 rather than 0.01 ms (`tests/integration/test_plans.py` keeps it so).

Parameters: $tenant; $ids and $receipts (comma-separated uuids; an empty receipt: any holder) of an ack;
$message, $receipt (NULL: any holder) of a nack or an extend; $group_name (a group's plans); a nack's $error,
$delay (seconds, NULL: the backoff), $backoff_default, $dlq_default, $copy_id (a group's dead letter's id),
$metadata (merged: JSON to merge into the metadata, or the group's saved state); an extend's $seconds.
"""

from __future__ import annotations

from mq.db.routed import routed
from mq.db.statements import Fragment, Statement, compose
from mq.queue.sql import functions
from mq.queue.sql.common import LEASE_EXPIRED_ERROR, attempt_ended, freed_leases, leased, uuid_list
from mq.queue.sql.log import log_acked
from mq.queue.types import DeliveryPlan


# --- Counting out the leases of limited topics ------------------------------------------------------------------
def counted_out(rows: str, group: str, *, citus: bool = False) -> list[Fragment]:
    """The steps that count out leases of limited topics that ended (acked, nacked): `rows` has `topic`,
    `deadline` and `receipt` (and `group_id` when `group` reads it; a topic's own leases are group 0). Their records
    are deleted (by the key: each is one probe; found first by a LATERAL ... LIMIT 1 per row, then deleted by their
    ctids, because a join let the planner, whose statistics of this churning table say it is nearly empty, scan
    every lease of the tenant once per ended row: 1.7 ms for 100 acks among 100 leases, growing with the leases in
    flight) and how many noted in `inflight_ended`, which the topic's next dequeue counts out under its counter's
    lock. An ack never waits for the counter. A lease already past its deadline was freed by a dequeue: it is no
    longer recorded, and counts nothing. On Citus (`citus`) the records are deleted by a join on the whole key:
    Citus refuses a ctid in a modification it plans in steps, as it plans these statements (`+citus`)."""
    freed = freed_leases(rows, group, "$tenant", citus=citus)
    return [
        Fragment("freed", freed),
        Fragment(
            "ended",
            """
    INSERT INTO inflight_ended (tenant_id, topic, group_id, n)
    SELECT $tenant, topic, group_id, count(*) FROM freed GROUP BY topic, group_id""",
        ),
    ]


# --- Ack --------------------------------------------------------------------------------------------------------
# A topic's batch ack: one statement deletes every acknowledged message and returns its id and the receipt of the
# lease that ended (so the entry holding the current receipt gets the credit, not a stale one); the caller probes
# the rest (only when some failed) to tell why. `found` looks each listed id up by the primary key, (tenant, id)
# (LATERAL ... LIMIT 1 keeps every other condition out of the lookup), then checks status and receipt; `gone` takes
# those rows again by key, as they were found (a lease that changed since does not match). Any other plan grows with
# the tenant: with the conditions side by side, stale statistics made the planner read all of a flooding tenant's
# live messages through messages_dequeue_idx and test each against the list, up to 2 s per ack of 1,000 while B's
# p99 waited behind it (`make loadtest-fairness`). Plan, whatever the statistics: Delete <- Nested Loop (CTE Scan,
# Index Scan using messages_pkey), found: Nested Loop (Function Scan on unnest, Index Scan using messages_pkey);
# 6-9 ms for 1,000 among 1,000,000.
_ACK_FOUND = Fragment(
    "found",
    f"""
    SELECT m.id, m.status, m.receipt
    FROM unnest({uuid_list("$ids")}, {uuid_list("$receipts")}) AS w(id, receipt)
    CROSS JOIN LATERAL (SELECT x.id, x.tenant_id, x.status, x.receipt FROM messages AS x
                        WHERE x.tenant_id = $tenant AND x.id = w.id LIMIT 1) AS m
    WHERE m.tenant_id = $tenant AND m.status = 'processing' AND (w.receipt IS NULL OR w.receipt = m.receipt)""",
    materialized=True,
)


def _ack_gone(plan: DeliveryPlan) -> Fragment:
    columns = ", m.key, m.payload, m.metadata, m.priority, m.retry_count, m.created_at" if plan.logged else ""
    columns += ", m.available_at AS deadline" if plan.limited else ""
    return Fragment(
        "gone",
        f"""
    DELETE FROM messages AS m USING found AS f
    WHERE m.tenant_id = $tenant AND m.id = f.id AND m.status = f.status AND m.receipt = f.receipt
    RETURNING m.id, m.topic, m.receipt{columns}""",
    )


# A group's ack (single or batch): `skiplock_group_ack` deletes the named group's processing deliveries whose
# receipt matches, counts their messages down and deletes (and logs) those no group owes any more; a limited
# tenant's call also counts the ended leases out of their groups' counters (its `limited` argument).
def _group_ack_call(limited: bool) -> str:
    ids, receipts = uuid_list("$ids"), uuid_list("$receipts")
    return f"{functions.GROUP_ACK.name}($tenant, $group_name, {ids}, {receipts}, {str(limited).lower()})"


def _citus(name: str, citus: bool) -> str:
    """A statement's name, `+citus` inside its brackets for its Citus form."""
    return name.replace("]", "+citus]") if citus else name


def _ack(plan: DeliveryPlan, citus: bool = False) -> Statement:
    name = _citus(f"ack[{plan.name}]", citus)
    if plan.grouped:
        return compose(name, [], f"SELECT id, receipt, topic FROM {_group_ack_call(plan.limited)}")
    steps = [_ACK_FOUND, _ack_gone(plan)]
    if plan.logged:
        steps.append(Fragment("logged", log_acked("gone", "$tenant")))
    if plan.limited:
        steps += counted_out("gone", "0", citus=citus)
    result = "SELECT * FROM gone" if len(steps) == 2 else "SELECT id, topic, receipt FROM gone"
    return compose(name, steps, result)


# A group's last ack logs in its function: its plans do not vary by `logged`. A topic's limited plan has a Citus
# form (a group's counts out in its function).
_ACKS = {
    (plan, citus): _ack(plan, citus)
    for plan in DeliveryPlan.every(grouped=True, limited=True, logged=True)
    for citus in (False, True)
    if not (plan.grouped and plan.logged) and (not citus or (plan.limited and not plan.grouped))
}


def ack_statement(plan: DeliveryPlan, *, citus: bool = False) -> Statement:
    """The ack of a plan; `citus`: what Citus runs (its Citus form, routed when it inserts: `mq.db.routed`)."""
    plan = plan._replace(logged=plan.logged and not plan.grouped)
    return _CITUS_ACKS[plan] if citus else _ACKS[plan, False]


_CITUS_ACKS = {plan: routed(ack) for (plan, citus), ack in _ACKS.items() if citus or not plan.limited or plan.grouped}

# --- Nack -------------------------------------------------------------------------------------------------------
# A topic's nack: below max_retries -> pending again after a delay; reached -> dead-letter topic (pending,
# retry_count 0, max_retries 0, no TTL), or failed when the DLQ is off or the message is already dead-lettered.
# The topic's config is read here (a subquery per value, one probe of topic_configs_pkey each, only for the arm that
# needs it) rather than looked up first: one round trip. (A join, locked `FOR UPDATE OF m`, made Citus plan the step
# apart from the UPDATE.) Plan: Update <- Nested Loop <- LockRows <- Index Scan using messages_pkey. Merged
# (a nack carrying metadata): $metadata is merged into the message's (saved state on a deferral).
_NACK_ATTEMPT = attempt_ended(
    "CASE WHEN c.outcome = 'dlq' THEN 'dead_lettered' ELSE 'nacked' END", "$error::text", "now()", row="c"
)


def _nack_current(plan: DeliveryPlan) -> Fragment:
    lease = "m.topic AS was, m.receipt, m.available_at AS deadline, " if plan.limited else ""
    return Fragment(
        "cur",
        f"""
    SELECT m.id, {lease}m.topic, m.retry_count + 1 AS tries, m.max_retries, m.original_topic, m.attempts,
           m.leased_at, m.leased_by
    FROM messages AS m
    WHERE m.tenant_id = $tenant AND m.id = $message AND {leased("m.")}
      AND ($receipt::uuid IS NULL OR m.receipt = $receipt) AND m.owed IS NULL
    FOR UPDATE""",
    )


# What becomes of the message (`outcome`), by its topic's config, and what the nack writes that needs the clock or a
# STABLE function (`mq.queue.sql.common`, on Citus): the time, when the message is available again (after its
# backoff, on a retry), and its attempts with this one ended.
_NACK_DECIDED = Fragment(
    "decided",
    f"""
    SELECT c.*, now() AS now,
           now() + CASE WHEN c.outcome = 'retry' THEN make_interval(secs => coalesce(
               $delay, c.backoff[least(c.tries, cardinality(c.backoff))], 0)) ELSE interval '0' END AS available_at,
           {_NACK_ATTEMPT} AS history
    FROM (
        SELECT c.*,
               CASE WHEN c.tries < c.max_retries THEN 'retry'
                    WHEN coalesce(tc.dlq_enabled, $dlq_default) AND c.original_topic IS NULL
                         AND right(c.topic, 4) <> '.dlq' THEN 'dlq'
                    ELSE 'failed' END AS outcome,
               coalesce(tc.retry_backoff_seconds, $backoff_default::int4[]) AS backoff
        FROM cur AS c LEFT JOIN topic_configs AS tc ON tc.tenant_id = $tenant AND tc.topic = c.topic
    ) AS c""",
    materialized=True,  # (inlined into the UPDATE, Citus would plan it apart: a round trip more)
)


def _nacked(plan: DeliveryPlan, merged: bool) -> Fragment:
    metadata = "\n    metadata = coalesce(m.metadata, '{}') || $metadata::jsonb," if merged else ""
    lease = ", cur.was, cur.receipt, cur.deadline" if plan.limited else ""
    return Fragment(
        "nacked",
        f"""
UPDATE messages AS m SET
    status = CASE WHEN cur.outcome = 'failed' THEN 'failed' ELSE 'pending' END,
    retry_count = CASE WHEN cur.outcome = 'dlq' THEN 0 ELSE cur.tries END,
    max_retries = CASE WHEN cur.outcome = 'dlq' THEN 0 ELSE m.max_retries END,
    topic = CASE WHEN cur.outcome = 'dlq' THEN m.topic || '.dlq' ELSE m.topic END,
    original_topic = CASE WHEN cur.outcome = 'dlq' THEN m.topic ELSE m.original_topic END,
    dlq_moved_at = CASE WHEN cur.outcome = 'dlq' THEN cur.now ELSE m.dlq_moved_at END,
    expires_at = CASE WHEN cur.outcome = 'dlq' THEN NULL ELSE m.expires_at END,
    available_at = cur.available_at,{metadata}
    last_error = $error, receipt = NULL, updated_at = cur.now,
    attempts = cur.history
FROM decided AS cur WHERE m.tenant_id = $tenant AND m.id = cur.id
RETURNING cur.outcome, m.topic{lease}""",
    )


# A group's nack (`skiplock_group_nack`): retry, or the group's delivery dead-lettered as a copy ($copy_id), with
# $metadata merged into the group's saved state; a limited tenant's call also counts the nacked delivery's lease out
# of its group's counter (its `limited` argument).
def _group_nack_call(limited: bool) -> str:
    return f"""{functions.GROUP_NACK.name}($tenant, $group_name, $message, $receipt, $error, $delay,
    $backoff_default, $dlq_default, $copy_id, $metadata::jsonb, {str(limited).lower()})"""


def _nack(plan: DeliveryPlan, merged: bool, citus: bool = False) -> Statement:
    name = _citus(f"nack[{plan.name}{'+merged' if merged else ''}]", citus)
    if plan.grouped:
        return compose(name, [], f"SELECT outcome, topic FROM {_group_nack_call(plan.limited)}")
    steps = [_nack_current(plan), _NACK_DECIDED, _nacked(plan, merged)]
    if not plan.limited:
        return compose(name, steps, "SELECT * FROM nacked")
    leases = Fragment("leases", "SELECT was AS topic, receipt, deadline FROM nacked")
    return compose(
        name, [*steps, leases, *counted_out("leases", "0", citus=citus)], "SELECT outcome, topic FROM nacked"
    )


# A group's nack always carries its $metadata argument (NULL: none), so its plans do not vary by `merged`.
_NACKS = {
    (plan, merged, citus): _nack(plan, merged, citus)
    for plan in DeliveryPlan.every(grouped=True, limited=True)
    for merged in (False, True)
    for citus in (False, True)
    if not (plan.grouped and merged) and (not citus or (plan.limited and not plan.grouped))
}


def nack_statement(plan: DeliveryPlan, *, merged: bool, citus: bool = False) -> Statement:
    """The nack of a plan (`logged` does not matter); `merged`: a topic's nack carries metadata to merge; `citus`:
    its Citus form (a limited plan's)."""
    key = DeliveryPlan(grouped=plan.grouped, limited=plan.limited)
    merged = merged and not plan.grouped
    return _CITUS_NACKS[key, merged] if citus else _NACKS[key, merged, False]


_CITUS_NACKS = {
    (plan, merged): routed(nack)
    for (plan, merged, citus), nack in _NACKS.items()
    if citus or not plan.limited or plan.grouped
}


# A group's delivery whose lease lapsed once too often (found by a group's dequeue, `spent`): nacked with the lapse
# as its error, no receipt, never retried. $group is the group's id.
NACK_LAPSED = compose(
    "nack[grouped+lapsed]",
    [],
    f"""SELECT outcome, topic FROM {functions.GROUP_NACK.name}(
    $tenant, (SELECT name FROM consumer_groups WHERE id = $group AND tenant_id = $tenant), $message, NULL,
    '{LEASE_EXPIRED_ERROR}', NULL, $backoff_default, $dlq_default, $copy_id, NULL::jsonb, false)""",
)


# A nacked message whose retry would collide with a newer pending twin of the same key is superseded by the twin:
# the twin carries the key's latest content and will be delivered. A limited tenant's: the lease's slot is freed.
_SUPERSEDED_GONE = Fragment(
    "gone",
    f"""
    DELETE FROM messages
    WHERE tenant_id = $tenant AND id = $message AND {leased()}
      AND ($receipt::uuid IS NULL OR receipt = $receipt)
    RETURNING topic, receipt, available_at AS deadline""",
)
SUPERSEDED = {
    False: compose("superseded[plain]", [_SUPERSEDED_GONE], "SELECT * FROM gone"),
    True: compose("superseded[limited]", [_SUPERSEDED_GONE, *counted_out("gone", "0")], "SELECT topic FROM gone"),
}
SUPERSEDED_CITUS = compose(
    "superseded[limited+citus]", [_SUPERSEDED_GONE, *counted_out("gone", "0", citus=True)], "SELECT topic FROM gone"
)


_CITUS_SUPERSEDED = {False: SUPERSEDED[False], True: routed(SUPERSEDED_CITUS)}


def superseded_statement(plan: DeliveryPlan, *, citus: bool = False) -> Statement:
    return _CITUS_SUPERSEDED[plan.limited] if citus else SUPERSEDED[plan.limited]


# --- Extend -----------------------------------------------------------------------------------------------------
# A lease extended (heartbeat): $seconds from now. A limited tenant's: a limited topic's recorded lease moves with
# it (its row lock orders it with a dequeue freeing it at its deadline); a lease no longer recorded (its slot freed)
# is not extended (lease_lost), or the topic could have more leases in flight than its limit.
_EXTEND_TARGETS = {
    False: f"""
    SELECT id, topic, receipt, available_at, 0 AS group_id FROM messages
    WHERE tenant_id = $tenant AND id = $message AND {leased()}
      AND ($receipt::uuid IS NULL OR receipt = $receipt) AND owed IS NULL
    FOR UPDATE""",
    True: """
    SELECT d.message_id AS id, g.topic, d.receipt, d.available_at, d.group_id
    FROM consumer_groups AS g JOIN deliveries AS d ON d.tenant_id = $tenant AND d.group_id = g.id
    WHERE g.tenant_id = $tenant AND g.name = $group_name AND d.message_id = $message AND d.status = 'processing'
      AND ($receipt::uuid IS NULL OR d.receipt = $receipt)
    FOR UPDATE OF d""",
}
_EXTENDED = {
    False: """
UPDATE messages AS m SET available_at = now() + make_interval(secs => $seconds), updated_at = now()
FROM target AS t
WHERE m.tenant_id = $tenant AND m.id = t.id AND (NOT EXISTS (SELECT FROM slot) OR EXISTS (SELECT FROM lease))
RETURNING m.available_at""",
    True: """
UPDATE deliveries AS d SET available_at = now() + make_interval(secs => $seconds)
FROM target AS t
WHERE d.tenant_id = $tenant AND d.group_id = t.group_id AND d.message_id = t.id
  AND (NOT EXISTS (SELECT FROM slot) OR EXISTS (SELECT FROM lease))
RETURNING d.available_at""",
}
# Without limits: one UPDATE.
_EXTENDED_ALONE = {
    False: f"""
UPDATE messages SET available_at = now() + make_interval(secs => $seconds), updated_at = now()
WHERE tenant_id = $tenant AND id = $message AND {leased()}
  AND ($receipt::uuid IS NULL OR receipt = $receipt) AND owed IS NULL
RETURNING available_at""",
    True: """
UPDATE deliveries AS d SET available_at = now() + make_interval(secs => $seconds)
FROM consumer_groups AS g
WHERE g.tenant_id = $tenant AND g.name = $group_name AND d.tenant_id = $tenant AND d.group_id = g.id
  AND d.message_id = $message
  AND d.status = 'processing' AND ($receipt::uuid IS NULL OR d.receipt = $receipt)
RETURNING d.available_at""",
}
_EXTEND_SLOT = Fragment(
    "slot",
    """
    SELECT 1 FROM inflight_counts AS c JOIN target AS t ON c.topic = t.topic AND c.group_id = t.group_id
    WHERE c.tenant_id = $tenant""",
    materialized=True,
)
_EXTEND_LEASE = Fragment(
    "lease",
    """
    UPDATE inflight_leases AS l SET deadline = now() + make_interval(secs => $seconds)
    FROM target AS t
    WHERE l.tenant_id = $tenant AND l.topic = t.topic AND l.group_id = t.group_id AND l.deadline = t.available_at
      AND l.receipt = t.receipt AND (SELECT count(*) FROM slot) >= 0
    RETURNING 1""",
    materialized=True,
)


def _extend(plan: DeliveryPlan) -> Statement:
    if not plan.limited:
        return compose(f"extend[{plan.name}]", [], _EXTENDED_ALONE[plan.grouped])
    target = Fragment("target", _EXTEND_TARGETS[plan.grouped], materialized=True)
    return compose(f"extend[{plan.name}]", [target, _EXTEND_SLOT, _EXTEND_LEASE], _EXTENDED[plan.grouped])


_EXTENDS = {plan: _extend(plan) for plan in DeliveryPlan.every(grouped=True, limited=True)}


def extend_statement(plan: DeliveryPlan) -> Statement:
    return _EXTENDS[DeliveryPlan(grouped=plan.grouped, limited=plan.limited)]
