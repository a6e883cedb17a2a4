"""The insert: one statement per insert plan, composed from named steps.

Every enqueue (single ones coalesced, batches, schedules' ticks, replays) stores its rows with one statement of
up to `max_batch_size` rows, all or nothing. The steps, each chosen by a field of the `InsertPlan`:
- `dead_twins`, `dead_twin_deliveries` (`keyed`): the pending twins of the rows' keys that are past their TTL are
  expired first, so the upsert does not mistake one for a live twin (`expired_twins`);
- `fast`, `admitted` (`admitted`): a capped tenant's or topic's rows pass its admission gates, in the statement,
  before the first row (`_ADMISSION`);
- `stored`: the insert itself, of rows that each carry their own topic, key, priority, delay, max_retries and TTL
  (`uniform` False, nine arrays), or of keyless rows sharing all of them (`uniform`, three arrays: for 8-row
  statements 13-23% more rows/s); keyed rows upsert into their pending twin (`_KEY_CONFLICT`);
- `topic_groups`, `minted` (`grouped`): the topics' groups, read once; a delivery row per new message and group of
  its topic, and `owed` counts them;
  `to_groups`: rows may each name the one group they are for (a replay's), owed to it alone.
`insert_statement(plan)` answers a plan's statement; the registry (`mq.db.statements.REGISTRY`) lists all fourteen
(`make explain` prints their plans).

Parameters: $tenant; rows: $ids, $topics, $keys, $payloads, $metadata (JSON texts), $priorities, $max_retries,
$delays (seconds), $ttls (seconds, 0: none), $groups (`to_groups`: each row's group, NULL for every group);
uniform: $topic, $priority, $max_retries, $delay, $ttl, $ids, $payloads, $metadata; keyed: $expire_default,
$dlq_default (the deployment's expire_to_dlq and dlq_enabled); admitted: $admit_scopes, $admit_rows, $admit_caps,
$admit_max_topics, $admit_topics (`mq.queue.admission.Caps.arguments`).

Batches of keyless rows with no delay and no TTL go in by binary COPY instead (`MESSAGE_COPY_COLUMNS`), capped
ones behind one call of the gates (`copy_admission`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from itertools import product

from mq.db.routed import routed
from mq.db.statements import Fragment, Statement, compose, statement
from mq.queue.sql import functions
from mq.queue.sql.common import EXPIRE_SET, expires_to_dlq, status_by_key, uuid_list


@dataclass(frozen=True, slots=True)
class InsertPlan:
    """What an insert statement does besides storing its rows (see the module's docstring)."""

    uniform: bool = False
    keyed: bool = False
    grouped: bool = False
    admitted: bool = False
    to_groups: bool = False

    @property
    def name(self) -> str:
        chosen = [f.name for f in fields(self) if getattr(self, f.name)]
        return "+".join(["rows" if not self.uniform else "uniform", *(n for n in chosen if n != "uniform")])

    @classmethod
    def every(cls) -> list[InsertPlan]:
        """Every plan a statement exists for."""
        plans = (cls(*choice) for choice in product((False, True), repeat=len(fields(cls))))
        return [plan for plan in plans if plan.possible]

    @property
    def possible(self) -> bool:
        """Uniform rows have no keys and name no group; rows naming a group are keyed and grouped."""
        if self.uniform and (self.keyed or self.to_groups):
            return False
        return not self.to_groups or (self.keyed and self.grouped)


# --- Expired twins ------------------------------------------------------------------------------------------------
def expired_twins(pairs: str) -> list[Fragment]:
    """`dead_twins`: expire the pending messages past their TTL whose (topic, key) is among `pairs` (a relation
    `k(topic, key)`), so that the statement after them does not mistake one for a live twin; `dead_twin_deliveries`:
    a twin consumer groups owed takes its deliveries with it (one probe per group of its topic, only when a twin
    was due). Each pair is one probe of messages_pending_key_uq (a LATERAL with LIMIT 1, the expiry test outside
    it: a join let the planner scan messages_expiry_idx, every tenant's due messages, for each statement). Plan:
    Nested Loop <- the pairs, Limit <- Index Scan using messages_pending_key_uq; ~1 µs a key when nothing is due."""
    return [
        Fragment(
            "dead_twins",
            f"""
    UPDATE messages AS m SET {EXPIRE_SET}
    FROM (
        SELECT m.id, {expires_to_dlq("$expire_default", "$dlq_default")} AS to_dlq, now() AS now
        FROM {pairs}
        CROSS JOIN LATERAL (
            SELECT x.id, x.topic, x.original_topic, x.expires_at FROM messages AS x
            WHERE x.tenant_id = $tenant AND x.topic = k.topic AND x.key = k.key AND x.key IS NOT NULL
              AND x.status = 'pending' AND x.original_topic IS NULL
            LIMIT 1
        ) AS m
        LEFT JOIN topic_configs AS tc ON tc.tenant_id = $tenant AND tc.topic = m.topic
        WHERE m.expires_at <= now()
    ) AS p
    -- still so once locked
    WHERE m.tenant_id = $tenant AND m.id = p.id AND {status_by_key("pending", "m.")} AND m.original_topic IS NULL
    RETURNING m.id, m.topic""",
        ),
        Fragment(
            "dead_twin_deliveries",
            """
    DELETE FROM deliveries AS d USING dead_twins AS t, consumer_groups AS g
    WHERE g.tenant_id = $tenant AND g.topic = t.topic
      AND d.tenant_id = $tenant AND d.group_id = g.id AND d.message_id = t.id""",
        ),
    ]


# Before a nack's retry or a requeue would collide with a pending twin of the same key: expire that twin if its
# TTL passed (a dead twin supersedes nothing and blocks nothing). $message: the message whose key it is;
# `[dlq]` looks in the original topic of a dead letter's key, `[topic]` at every key a DLQ's requeue ($topic, the
# DLQ) would move back.
_TWIN_KEYS = {
    "message": "(SELECT topic, key FROM messages WHERE tenant_id = $tenant AND id = $message) AS k",
    "dlq": "(SELECT original_topic AS topic, key FROM messages WHERE tenant_id = $tenant AND id = $message) AS k",
    "topic": """(SELECT DISTINCT original_topic AS topic, key FROM messages
     WHERE tenant_id = $tenant AND topic = $topic AND key IS NOT NULL AND original_topic IS NOT NULL
       AND status IN ('pending', 'processing')) AS k""",
}
EXPIRE_TWINS = {
    whose: compose(f"expire_twins[{whose}]", expired_twins(pairs), "SELECT count(*) FROM dead_twins")
    for whose, pairs in _TWIN_KEYS.items()
}

# --- Admission ----------------------------------------------------------------------------------------------------
# Capped tenants and topics (a tenant's max_messages or max_topics, a topic's max_depth) admit their rows through
# their gates (`functions.ADMIT`) in the statement that inserts them, first, as an InitPlan (plan:
# One-Time Filter on the insert's scan). The common case, one gate and no max_topics, is tried right here: one
# update of this connection's stripe (32 stripes, as in `skiplock_admit`). Anything else, or a stripe without
# room, goes to `skiplock_admit`, which takes the gates' row locks and raises SKQ01-03 to refuse, undoing the
# whole statement. The plpgsql call cost 50 µs per statement, the update alone 27 (one connection, 1-row inserts).
# Statements of uncapped ones carry none of this. $admit_scopes: '' = the tenant, then topics sorted; rows and
# caps per scope; max_topics (NULL: none); the statement's topics (checked against max_topics).
_ADMIT_ARGUMENTS = (
    "$admit_scopes::text[], $admit_rows::int8[], $admit_caps::int8[], $admit_max_topics::int4, $admit_topics::text[]"
)
_ADMISSION = [
    Fragment(
        "fast",
        """
    UPDATE admission_gates SET bound = bound + ($admit_rows::int8[])[1]
    WHERE cardinality($admit_scopes::text[]) = 1 AND $admit_max_topics::int4 IS NULL AND tenant_id = $tenant
      AND scope = ($admit_scopes::text[])[1] AND stripe = pg_backend_pid() % 32
      AND bound + ($admit_rows::int8[])[1] <= alloc
    RETURNING 1""",
    ),
    Fragment(
        "admitted",
        f"SELECT CASE WHEN EXISTS (SELECT FROM fast) THEN true ELSE {functions.ADMIT.name}($tenant, {_ADMIT_ARGUMENTS})"
        " END AS ok",
        materialized=True,
    ),
]
#: The gates alone, in their own statement (a replay's rows counted before they are stored).
ADMIT = statement("admit", f"SELECT {functions.ADMIT.name}($tenant, {_ADMIT_ARGUMENTS})")


def copy_admission(tenant_id: int, admit: tuple[list[str], list[int], list[int], int | None, list[str]]) -> str:
    """The WHERE condition of a capped COPY (`functions.ADMIT_COPY`): one call, folded before the
    first row, that passes the gates in the COPY's transaction. COPY takes no parameters, so the arguments are
    literals: integers, and scopes and topics, which are topic names (`TOPIC_RE`: letters, digits, '.', '_', '-')
    or ''; quotes are doubled all the same."""
    scopes, rows, caps, max_topics, topics = admit

    def text(value: str) -> str:
        return "'" + value.replace("'", "''") + "'"

    if len(scopes) == 1 and max_topics is None:
        return f"{functions.ADMIT_COPY.name}({int(tenant_id)}, {text(scopes[0])}, {int(rows[0])}, {int(caps[0])})"

    def texts(values: list[str]) -> str:
        return "ARRAY[" + ", ".join(text(v) for v in values) + "]::text[]"

    def integers(values: list[int]) -> str:
        return "ARRAY[" + ", ".join(str(int(v)) for v in values) + "]::int8[]"

    limit = "NULL" if max_topics is None else str(int(max_topics))
    return (
        f"{functions.ADMIT_COPY_ALL.name}({int(tenant_id)}, {texts(scopes)}, {integers(rows)}, {integers(caps)}, "
        f"{limit}::int4, {texts(topics)})"
    )


# Batches of keyless messages with no delay and no TTL go in by binary COPY (asyncpg's copy_records_to_table):
# no per-row executor, no conflict check, no arrays to encode. 15-30% more rows/s than `insert[rows]`.
MESSAGE_COPY_COLUMNS = ["id", "tenant_id", "topic", "payload", "metadata", "priority", "max_retries"]

# --- The insert ---------------------------------------------------------------------------------------------------
# The arbiter of the key upsert: one pending message per (tenant, topic, key) outside dead-letter topics. The caller
# folds items that share a (topic, key) into one row first (ON CONFLICT cannot touch a row twice in one statement).
# An expired twin's index entry is its own statement's dead version (`dead_twins`), which the conflict check does
# not see: the new content is stored as a new message. `updated_at` is the proposed row's, its default now(): Citus
# takes nothing but IMMUTABLE functions in DO UPDATE SET.
_KEY_CONFLICT = """ON CONFLICT (tenant_id, topic, key) WHERE key IS NOT NULL AND status = 'pending'
    AND original_topic IS NULL
DO UPDATE SET payload = EXCLUDED.payload, metadata = EXCLUDED.metadata, updated_at = EXCLUDED.updated_at"""


# Consumer groups (`mq.queue.sql`, "Consumer groups"): `owed` is the count of the topic's groups, read by the
# statement itself (so a group created a moment ago by another instance counts), NULL when it has none (a stale
# cache then stores a plain message, as it should). A replay to one group owes the message to that group alone, or
# to every group when the row names none. The groups are read once, by the step `topic_groups`, which both the
# count and the deliveries (`minted`) read: Citus runs the steps of a statement it plans in steps one after another,
# each with a snapshot of its own, and a group created or deleted between two reads of `consumer_groups` left a
# message owed by one group more or less than the deliveries minted (owed forever, found racing groups on Citus).
def _topic_groups(plan: InsertPlan) -> Fragment:
    topics = "g.topic = $topic" if plan.uniform else "g.topic = ANY($topics::text[])"
    return Fragment(
        "topic_groups",
        f"SELECT g.id, g.topic, g.name FROM consumer_groups AS g WHERE g.tenant_id = $tenant AND {topics}",
        materialized=True,
    )


_OWED = "nullif((SELECT count(*) FROM topic_groups AS g WHERE g.topic = {topic}), 0)"
_OWED_TO = """nullif((SELECT count(*) FROM topic_groups AS g
        WHERE g.topic = {topic} AND g.name = coalesce({group}, g.name)), 0)"""


def _stored(plan: InsertPlan) -> Fragment:
    """The insert of a plan's rows, `RETURNING` what the answer and `minted` read."""
    columns = "id, tenant_id, topic, key, payload, metadata, priority, max_retries, available_at, expires_at"
    if plan.uniform:
        columns = columns.replace("key, ", "")
        # (a grouped insert takes its ids as one text, see `uuid_list`: its server spends the time it saves on
        # minting deliveries)
        ids = uuid_list("$ids") if plan.grouped else "$ids::uuid[]"
        values = """u.id, $tenant, $topic, u.payload, u.metadata::jsonb, $priority, $max_retries,
       now() + make_interval(secs => $delay), CASE WHEN $ttl > 0 THEN now() + make_interval(secs => $ttl) END"""
        source = f"unnest({ids}, $payloads::bytea[], $metadata::text[]) AS u(id, payload, metadata)"
        owed = _OWED.format(topic="$topic")
    else:
        values = """u.id, $tenant, u.topic, u.key, u.payload, u.metadata::jsonb, u.priority, u.max_retries,
       now() + make_interval(secs => u.delay), CASE WHEN u.ttl > 0 THEN now() + make_interval(secs => u.ttl) END"""
        arrays = """$ids::uuid[], $topics::text[], $keys::text[], $payloads::bytea[], $metadata::text[],
            $priorities::int2[], $max_retries::int4[], $delays::float8[], $ttls::int4[]"""
        aliases = "id, topic, key, payload, metadata, priority, max_retries, delay, ttl"
        if plan.to_groups:
            arrays, aliases = f"{arrays}, $groups::text[]", f"{aliases}, consumer_group"
        source = f"unnest({arrays}) AS u({aliases})"
        owed = _OWED.format(topic="u.topic")
    if plan.to_groups:
        columns, values = f"{columns}, owed, consumer_group", f"{values}, "
        values += _OWED_TO.format(topic="u.topic", group="u.consumer_group") + ", u.consumer_group"
    elif plan.grouped:
        columns, values = f"{columns}, owed", f"{values}, {owed}"
    conditions = []
    if plan.admitted:
        conditions.append("(SELECT ok FROM admitted)")
    if plan.keyed:
        conditions.append("(SELECT count(*) FROM dead_twins) >= 0")  # the twins expire first (an InitPlan)
    where = f"\nWHERE {' AND '.join(conditions)}" if conditions else ""
    conflict = f"\n{_KEY_CONFLICT}" if plan.keyed else ""
    returning = ""
    if plan.grouped:
        # what `minted` reads; a uniform insert's answer is a count (the caller knows the ids it gave)
        returning = "\nRETURNING m.id, m.topic, m.key, true AS inserted" if plan.uniform else ""
    if not plan.uniform:
        returning = "\nRETURNING m.id, m.topic, m.key, (m.xmax = 0) AS inserted"
    if plan.grouped:
        returning += ", m.priority, m.available_at, m.expires_at" + (", m.consumer_group" if plan.to_groups else "")
    return Fragment(
        "stored",
        f"""INSERT INTO messages AS m ({columns})
SELECT {values}
FROM {source}{where}{conflict}{returning}""",
    )


def _minted(plan: InsertPlan) -> Fragment:
    """A delivery row per new message and group of its topic (`to_groups`: of the group the message names, if it
    names one). An upsert into a pending twin mints nothing: its deliveries stand."""
    only = " AND g.name = coalesce(s.consumer_group, g.name)" if plan.to_groups else ""
    return Fragment(
        "minted",
        f"""
    INSERT INTO deliveries (tenant_id, group_id, message_id, priority, available_at, expires_at)
    SELECT $tenant, g.id, s.id, s.priority, s.available_at, s.expires_at
    FROM stored AS s JOIN topic_groups AS g ON g.topic = s.topic{only}
    WHERE s.inserted""",
    )


def _insert(plan: InsertPlan) -> Statement:
    steps: list[Fragment] = []
    if plan.keyed:
        steps += expired_twins("unnest($topics::text[], $keys::text[]) AS k(topic, key)")
    if plan.admitted:
        steps += _ADMISSION
    if plan.grouped or plan.to_groups:
        steps.append(_topic_groups(plan))
    steps.append(_stored(plan))
    result = "SELECT * FROM stored"
    if plan.grouped:
        steps.append(_minted(plan))
        # one row back from a uniform insert, not one per message (a data-modifying CTE runs to the end whether
        # or not the query reads it)
        answer = "count(*) AS stored" if plan.uniform else "id, topic, key, inserted"
        result = f"SELECT {answer} FROM stored"
    return compose(f"insert[{plan.name}]", steps, result)


_INSERTS = {plan: _insert(plan) for plan in InsertPlan.every()}
# On Citus an insert is a function delegated to the tenant's worker, a statement per step (`mq.db.routed.Stepwise`):
# Citus plans an INSERT in a WITH only in steps, and an INSERT ... SELECT from parameters through the coordinator.
# A capped insert passes its gates apart there first (`MessageRepository._admitted_apart`): no admitted plan has one.
_CITUS_INSERTS = {plan: routed(statement) for plan, statement in _INSERTS.items() if not plan.admitted}


def insert_statement(plan: InsertPlan, *, citus: bool = False) -> Statement:
    """The insert of a plan; `citus`: the call of its function there."""
    return _CITUS_INSERTS[plan] if citus else _INSERTS[plan]
