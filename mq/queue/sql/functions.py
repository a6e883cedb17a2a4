"""The database's functions: the source of every version, by versioned name, in one place.

A function is never changed in place: a change is a new version (`skiplock_group_ack_v2` after `_v1`), created by
a migration from the source here (`CREATE FUNCTION`), while the old version stays until the migration after
(a rolling upgrade's old instances still call it), which drops it. `CURRENT` are the versions the code calls; a
function a migration created stays in `RELEASED` forever (a migration creates what it created on the day it was
written, from here). `tests/integration/test_functions.py` checks that a migrated database holds `CURRENT` (and
`SUPERSEDED`) and nothing else.

Statements call a function by its `name` (`GROUP_ACK.name`), so a new version is one edit here and one migration.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from mq.queue.sql.common import freed_leases
from mq.queue.sql.log import log_acked, log_acked_of


@dataclass(frozen=True, slots=True)
class Function:
    """One version of a database function."""

    name: str
    #: the argument list as declared (names and types)
    arguments: str
    returns: str
    language: str
    body: str
    #: VOLATILE, STABLE or IMMUTABLE (what the planner may assume: an IMMUTABLE call on literals is made once,
    #: while planning)
    volatility: str = "VOLATILE"

    def create(self) -> str:
        head = f"CREATE FUNCTION {self.name}({self.arguments}) RETURNS {self.returns}"
        return f"{head} LANGUAGE {self.language} {self.volatility} AS $$\n{self.body.strip()}\n$$"

    def drop(self) -> str:
        return f"DROP FUNCTION {self.name}({self.arguments})"


def _indent(text: str, spaces: int) -> str:
    return textwrap.indent(text, " " * spaces)


# --- Admission (capped tenants and topics; `mq.queue.sql`, "Capped tenants and topics") ---------------------------
# Whether a tenant's topic exists (a config, live messages, or finished ones) and how many topics it has: the
# max_topics check, under the tenant's '#topics' gate lock.
_TOPIC_EXISTS_QUERY = """
SELECT EXISTS (SELECT FROM topic_configs WHERE tenant_id = p_tenant AND topic = p_topic)
    OR EXISTS (SELECT FROM messages WHERE tenant_id = p_tenant AND status IN ('pending', 'processing')
               AND topic IN (p_topic, p_topic || '.dlq'))
    OR EXISTS (SELECT FROM messages WHERE tenant_id = p_tenant AND status IN ('failed', 'expired')
               AND topic IN (p_topic, p_topic || '.dlq'))
"""
_TOPIC_COUNT_QUERY = r"""
WITH RECURSIVE live(topic) AS (
    (SELECT topic FROM messages WHERE tenant_id = p_tenant AND status IN ('pending', 'processing')
     ORDER BY topic LIMIT 1)
    UNION ALL
    SELECT (SELECT m.topic FROM messages AS m
            WHERE m.tenant_id = p_tenant AND m.status IN ('pending', 'processing') AND m.topic > live.topic
            ORDER BY m.topic LIMIT 1)
    FROM live WHERE live.topic IS NOT NULL
), done(topic) AS (
    (SELECT topic FROM messages WHERE tenant_id = p_tenant AND status IN ('failed', 'expired')
     ORDER BY topic LIMIT 1)
    UNION ALL
    SELECT (SELECT m.topic FROM messages AS m
            WHERE m.tenant_id = p_tenant AND m.status IN ('failed', 'expired') AND m.topic > done.topic
            ORDER BY m.topic LIMIT 1)
    FROM done WHERE done.topic IS NOT NULL
)
SELECT count(DISTINCT regexp_replace(t.topic, '\.dlq$', ''))
FROM (SELECT topic FROM live UNION ALL SELECT topic FROM done
      UNION ALL SELECT topic FROM topic_configs WHERE tenant_id = p_tenant) AS t
WHERE t.topic IS NOT NULL
"""


def _topic_check(name: str, arguments: str, returns: str, query: str, version: int) -> Function:
    """Version 1 is SQL; version 2 the same query in plpgsql, which Citus plans (it takes no parameter of an SQL
    function in a query of a distributed table)."""
    if version == 1:
        return Function(f"{name}_v1", arguments, returns, "sql", query, volatility="STABLE")
    return Function(
        f"{name}_v{version}", arguments, returns, "plpgsql", f"BEGIN\nRETURN ({query.strip()});\nEND\n", "STABLE"
    )


def _topic_exists(version: int) -> Function:
    return _topic_check(
        "skiplock_topic_exists", "p_tenant bigint, p_topic text", "boolean", _TOPIC_EXISTS_QUERY, version
    )


def _topic_count(version: int) -> Function:
    return _topic_check("skiplock_topic_count", "p_tenant bigint", "bigint", _TOPIC_COUNT_QUERY, version)


# The gates of a statement's scopes ('' the tenant, then topics): a stripe of this connection with room is taken
# at once; else the scope's stripes are locked, its live messages counted, and the room dealt out again across the
# stripes; SKQ01 (topic), SKQ02 (tenant), SKQ03 (max_topics) refuse, undoing the statement.
def _admit(version: int) -> Function:
    exists, count = _topic_exists(version), _topic_count(version)
    return Function(
        f"skiplock_admit_v{version}",
        "p_tenant bigint, p_scopes text[], p_counts bigint[], p_caps bigint[], p_max_topics integer, p_topics text[]",
        "boolean",
        "plpgsql",
        f"""
DECLARE
    stripes constant integer := 32;
    mine constant integer := pg_backend_pid() % stripes;
    i integer;
    n bigint;
    live bigint;
    room bigint;
    fresh integer;
    existing bigint;
BEGIN
    IF p_max_topics IS NOT NULL
       AND EXISTS (SELECT FROM unnest(p_topics) AS t(topic) WHERE NOT {exists.name}(p_tenant, t.topic)) THEN
        INSERT INTO admission_gates (tenant_id, scope, stripe, bound, alloc) VALUES (p_tenant, '#topics', 0, 0, 0)
        ON CONFLICT DO NOTHING;
        PERFORM FROM admission_gates WHERE tenant_id = p_tenant AND scope = '#topics' FOR UPDATE;
        SELECT count(*) INTO fresh FROM unnest(p_topics) AS t(topic)
        WHERE NOT {exists.name}(p_tenant, t.topic);
        IF fresh > 0 THEN
            existing := {count.name}(p_tenant);
            IF existing + fresh > p_max_topics THEN
                RAISE EXCEPTION USING ERRCODE = 'SKQ03', MESSAGE = 'max_topics reached', DETAIL = '',
                    HINT = existing || '/' || p_max_topics;
            END IF;
        END IF;
    END IF;

    FOR i IN 1 .. coalesce(array_length(p_scopes, 1), 0) LOOP
        n := p_counts[i];
        UPDATE admission_gates SET bound = bound + n
        WHERE tenant_id = p_tenant AND scope = p_scopes[i] AND stripe = mine AND bound + n <= alloc;
        CONTINUE WHEN FOUND;
        INSERT INTO admission_gates (tenant_id, scope, stripe, bound, alloc)
        SELECT p_tenant, p_scopes[i], s, 0, 0 FROM generate_series(0, stripes - 1) AS s
        ON CONFLICT DO NOTHING;
        PERFORM FROM admission_gates WHERE tenant_id = p_tenant AND scope = p_scopes[i] ORDER BY stripe FOR UPDATE;

        IF p_scopes[i] = '' THEN
            SELECT count(*) INTO live FROM messages
            WHERE tenant_id = p_tenant AND status IN ('pending', 'processing');
        ELSE
            SELECT count(*) INTO live FROM messages
            WHERE tenant_id = p_tenant AND topic = p_scopes[i] AND status IN ('pending', 'processing');
        END IF;
        IF live + n > p_caps[i] THEN  -- about to refuse: count only what has not expired
            IF p_scopes[i] = '' THEN
                SELECT count(*) INTO live FROM messages
                WHERE tenant_id = p_tenant AND status IN ('pending', 'processing')
                  AND (expires_at IS NULL OR expires_at > now());
            ELSE
                SELECT count(*) INTO live FROM messages
                WHERE tenant_id = p_tenant AND topic = p_scopes[i] AND status IN ('pending', 'processing')
                  AND (expires_at IS NULL OR expires_at > now());
            END IF;
        END IF;
        IF live + n > p_caps[i] THEN
            RAISE EXCEPTION USING ERRCODE = CASE WHEN p_scopes[i] = '' THEN 'SKQ02' ELSE 'SKQ01' END,
                MESSAGE = 'cap reached', DETAIL = p_scopes[i], HINT = live || '/' || p_caps[i];
        END IF;
        room := p_caps[i] - live - n;
        UPDATE admission_gates AS g
        SET bound = CASE WHEN g.stripe = mine THEN live + n ELSE 0 END,
            alloc = CASE WHEN g.stripe = mine THEN live + n ELSE 0 END + room / stripes
                    + CASE WHEN g.stripe < room % stripes THEN 1 ELSE 0 END
        WHERE g.tenant_id = p_tenant AND g.scope = p_scopes[i];
    END LOOP;
    RETURN true;
END
""",
    )


# One scope's gate (a COPY into one capped topic or tenant).
def _admit_one(version: int) -> Function:
    return Function(
        f"skiplock_admit_one_v{version}",
        "p_tenant bigint, p_scope text, p_rows bigint, p_cap bigint",
        "boolean",
        "plpgsql",
        f"""
BEGIN
    UPDATE admission_gates SET bound = bound + p_rows
    WHERE tenant_id = p_tenant AND scope = p_scope AND stripe = pg_backend_pid() % 32 AND bound + p_rows <= alloc;
    IF NOT FOUND THEN
        PERFORM {_admit(version).name}(p_tenant, ARRAY[p_scope], ARRAY[p_rows], ARRAY[p_cap], NULL, '{{}}');
    END IF;
    RETURN true;
END
""",
    )


# A COPY's admission (`mq.queue.sql.copy_admission`): its WHERE calls one of these before the first row. Not
# immutable at all: declared so only to be called at simplification time, once per COPY (Postgres simplifies a
# COPY's WHERE, calling every IMMUTABLE function whose arguments are literals). Use them nowhere else.
def _admit_copy(version: int) -> Function:
    return Function(
        f"skiplock_admit_copy_v{version}",
        "p_tenant bigint, p_scope text, p_rows bigint, p_cap bigint",
        "boolean",
        "plpgsql",
        f"""
BEGIN
    RETURN {_admit_one(version).name}(p_tenant, p_scope, p_rows, p_cap);
END
""",
        volatility="IMMUTABLE",
    )


def _admit_copy_all(version: int) -> Function:
    return Function(
        f"skiplock_admit_copy_all_v{version}",
        "p_tenant bigint, p_scopes text[], p_counts bigint[], p_caps bigint[], p_max_topics integer, p_topics text[]",
        "boolean",
        "plpgsql",
        f"""
BEGIN
    RETURN {_admit(version).name}(p_tenant, p_scopes, p_counts, p_caps, p_max_topics, p_topics);
END
""",
        volatility="IMMUTABLE",
    )


# Version 2 of the admission's functions: the topic checks in plpgsql (Citus), and the functions that call them.
TOPIC_EXISTS, TOPIC_COUNT, ADMIT = _topic_exists(2), _topic_count(2), _admit(2)
ADMIT_ONE, ADMIT_COPY, ADMIT_COPY_ALL = _admit_one(2), _admit_copy(2), _admit_copy_all(2)


# --- Consumer groups (`mq.queue.sql`, "Consumer groups") ------------------------------------------------------------
# Version 1 looked deliveries up by (group, message) and messages by id; version 2 names the tenant first in each
# (`deliveries.tenant_id`, migration 2026_11_28_deliveries_tenant): every row a function reads or writes is found
# through its tenant, as a statement's are. Each function below is built for a version (`_Scope`); what version 1
# was is pinned by its digest (`tests/integration/test_functions.py`), so a change meant for version 2 cannot alter
# what the migration that created version 1 creates.


@dataclass(frozen=True, slots=True)
class _Scope:
    """What a version names first in each lookup: nothing (version 1), or the tenant (`tenant`, version 2 on); and
    how a nack asks which outcome it had (`outcome_is`)."""

    version: int
    #: the version of `skiplock_group_done` it calls (None: its own, at most 2)
    calls_done: int | None = None

    @property
    def tenant_first(self) -> bool:
        return self.version >= 2

    def of(self, alias: str) -> str:
        """`<alias>.tenant_id = tenant AND ` (alias '' for an unqualified column), or nothing."""
        column = f"{alias}.tenant_id" if alias else "tenant_id"
        return f"{column} = tenant AND " if self.tenant_first else ""

    def tenant_arg(self) -> str:
        """The tenant as a call's first argument, or nothing."""
        return "tenant, " if self.tenant_first else ""

    def tenant_param(self) -> str:
        """The tenant as a declaration's first parameter, or nothing."""
        return "tenant bigint, " if self.tenant_first else ""

    def name(self, base: str) -> str:
        return f"{base}_v{self.version}"

    def done(self) -> _Scope:
        """The version of `skiplock_group_done` this version calls."""
        return _Scope(self.calls_done or min(self.version, 2))

    def outcome_is(self, value: str) -> str:
        """`CASE <outc is value> THEN`: version 3 on asks `CASE WHEN outc = value` (a simple `CASE outc WHEN`, in the
        dead letter's INSERT ... SELECT, was sent to a Citus worker as `text = boolean` and refused)."""
        return f"CASE WHEN outc = '{value}' THEN" if self.version >= 3 else f"CASE outc WHEN '{value}' THEN"


# A group's deliveries finished (`owed_by`: their messages): count the messages down, and delete those no group owes
# any more, keeping them in the log of a replayable topic when the finish was an ack (`acked`). Each statement of a
# function sees what committed before it started: two groups acking a message's last deliveries at once serialize
# on the message's row in the count-down (the second one counts from the first one's result), and the delete that
# follows sees 0. One statement could not do this: under READ COMMITTED each of two racing statements still sees
# the other's delivery row, and neither would delete the message.
# Version 3 keeps the log in statements of their own: the deleted messages' columns as arrays, the replayable
# topics among theirs (one probe of topic_configs_pkey per topic), then the log's INSERT from the arrays, only
# when some topic is replayable. Before, one INSERT fed by the DELETE and joined to the topics' configs: on Citus
# it was repartitioned over every shard of topic_configs (120 ms for a group's ack of one message).
def _count_down(v: _Scope) -> str:
    """The messages counted down, and those no group owes any more deleted when the finish was no ack: the count-
    down of every version (an ack's delete and log follow it)."""
    lock = "-- in id order, so that two count-downs over the same messages wait for each other instead of deadlocking"
    return f"""    {lock}
    PERFORM 1 FROM messages WHERE {v.of("")}id = ANY(owed_by) ORDER BY id FOR UPDATE;
    WITH counted AS (
        UPDATE messages AS m SET owed = m.owed - n.k
        FROM (SELECT id, count(*)::int2 AS k FROM unnest(owed_by) AS x(id) GROUP BY id) AS n
        WHERE {v.of("m")}m.id = n.id AND m.owed IS NOT NULL
        RETURNING m.id, m.owed
    )
    SELECT array_agg(id) INTO gone FROM counted WHERE owed <= 0;
    IF gone IS NULL THEN
        RETURN;
    END IF;
    IF NOT acked THEN
        DELETE FROM messages WHERE {v.of("")}id = ANY(gone) AND owed <= 0;
        RETURN;
    END IF;
"""


def _group_done(v: _Scope) -> Function:
    if v.version >= 3:
        return _group_done_logged_apart(v)
    return Function(
        v.name("skiplock_group_done"),
        f"{v.tenant_param()}owed_by uuid[], acked boolean",
        "void",
        "plpgsql",
        f"""
DECLARE gone uuid[];
BEGIN
{_count_down(v)}    WITH done AS (
        DELETE FROM messages WHERE {v.of("")}id = ANY(gone) AND owed <= 0
        RETURNING tenant_id, topic, id, key, payload, metadata, priority, retry_count, created_at
    )
{_indent(log_acked("done", "r.tenant_id"), 4)};
END
""",
    )


def _group_done_logged_apart(v: _Scope) -> Function:
    return Function(
        v.name("skiplock_group_done"),
        "tenant bigint, owed_by uuid[], acked boolean",
        "void",
        "plpgsql",
        f"""
DECLARE
    gone uuid[]; d_topics text[]; d_ids uuid[]; d_keys text[]; d_payloads bytea[]; d_metadata jsonb[];
    d_priorities int2[]; d_retries int4[]; d_created timestamptz[]; logged_topics text[];
BEGIN
{_count_down(v)}    WITH done AS (
        DELETE FROM messages AS m WHERE m.tenant_id = tenant AND m.id = ANY(gone) AND m.owed <= 0
        RETURNING m.topic, m.id, m.key, m.payload, m.metadata, m.priority, m.retry_count, m.created_at
    )
    SELECT array_agg(d.topic), array_agg(d.id), array_agg(d.key), array_agg(d.payload), array_agg(d.metadata),
           array_agg(d.priority), array_agg(d.retry_count), array_agg(d.created_at)
    INTO d_topics, d_ids, d_keys, d_payloads, d_metadata, d_priorities, d_retries, d_created
    FROM done AS d;
    SELECT array_agg(tc.topic) INTO logged_topics
    FROM topic_configs AS tc WHERE tc.tenant_id = tenant AND tc.topic = ANY(d_topics) AND tc.replayable;
    IF logged_topics IS NOT NULL THEN
{_indent(log_acked_of(_DONE_ROWS, "tenant", "logged_topics"), 8)};
    END IF;
END
""",
    )


#: The deleted messages' columns, as the relation `r` (version 3's log).
_DONE_ROWS = """unnest(d_topics, d_ids, d_keys, d_payloads, d_metadata, d_priorities, d_retries, d_created)
    AS r(topic, id, key, payload, metadata, priority, retry_count, created_at)"""


# A group's ack: the named group's processing deliveries whose receipt matches (none given: any holder) deleted, their
# messages counted down; answers each deleted delivery's message id, the receipt of the lease that ended, and its
# topic. An ack names the group, not its topic: the tenant's groups of that name (one per topic that has one) are
# looked up here, and each listed message's delivery by its key (tenant, group, message).
def _group_ack(v: _Scope) -> Function:
    if v.version >= 3:
        return _group_ack_counting(v)
    return Function(
        v.name("skiplock_group_ack"),
        "tenant bigint, group_name text, ids uuid[], receipts uuid[]",
        "TABLE(id uuid, receipt uuid, topic text)",
        "plpgsql",
        f"""
DECLARE acked uuid[]; ended uuid[]; topics text[];
BEGIN
    WITH gone AS (
        DELETE FROM deliveries AS d
        USING unnest(ids, receipts) AS w(id, receipt), consumer_groups AS g
        WHERE g.tenant_id = tenant AND g.name = group_name AND {v.of("d")}d.group_id = g.id AND d.message_id = w.id
          AND d.status = 'processing' AND (w.receipt IS NULL OR w.receipt = d.receipt)
        RETURNING d.message_id, d.receipt, g.topic
    )
    SELECT array_agg(gone.message_id), array_agg(gone.receipt), array_agg(gone.topic)
    INTO acked, ended, topics FROM gone;
    IF acked IS NULL THEN
        RETURN;
    END IF;
    PERFORM {_group_done(v).name}({v.tenant_arg()}acked, true);
    RETURN QUERY SELECT * FROM unnest(acked, ended, topics);
END
""",
    )


# Version 3 counts out the ended leases of a limited topic's group itself (`limited`): the records of the leases it
# ended go (`common.freed_leases`), and how many ended is noted for the group's next dequeue. Before, the statement
# that called it did, in steps around the call (which Citus cannot run in a statement routed to a worker).
def _group_ack_counting(v: _Scope) -> Function:
    return Function(
        v.name("skiplock_group_ack"),
        "tenant bigint, group_name text, ids uuid[], receipts uuid[], limited boolean",
        "TABLE(id uuid, receipt uuid, topic text)",
        "plpgsql",
        f"""
DECLARE acked uuid[]; ended uuid[]; topics text[]; groups int8[]; deadlines timestamptz[];
BEGIN
    WITH gone AS (
        DELETE FROM deliveries AS d
        USING unnest(ids, receipts) AS w(id, receipt), consumer_groups AS g
        WHERE g.tenant_id = tenant AND g.name = group_name AND d.tenant_id = tenant AND d.group_id = g.id
          AND d.message_id = w.id AND d.status = 'processing' AND (w.receipt IS NULL OR w.receipt = d.receipt)
        RETURNING d.message_id, d.receipt, g.topic, d.group_id, d.available_at
    )
    SELECT array_agg(gone.message_id), array_agg(gone.receipt), array_agg(gone.topic), array_agg(gone.group_id),
           array_agg(gone.available_at)
    INTO acked, ended, topics, groups, deadlines FROM gone;
    IF acked IS NULL THEN
        RETURN;
    END IF;
    IF limited THEN
        PERFORM {_COUNT_OUT.name}(tenant, topics, groups, deadlines, ended);
    END IF;
    PERFORM {_group_done(v.done()).name}(tenant, acked, true);
    RETURN QUERY SELECT * FROM unnest(acked, ended, topics);
END
""",
    )


# Ended leases of limited groups counted out (a group's ack and nack, version 3 and 4 on): their records go, and
# how many ended per (topic, group) is noted for the group's next dequeue, in statements of their own (an INSERT
# fed by the DELETE of its statement is planned in steps on Citus). The records are deleted by a join on their key
# (Citus plans a delete by ctids found in a subquery in steps, and refuses it).
def _count_out(version: int) -> Function:
    rows = "(SELECT * FROM unnest(topics, groups, deadlines, receipts) AS x(topic, group_id, deadline, receipt))"
    return Function(
        f"skiplock_count_out_v{version}",
        "tenant bigint, topics text[], groups bigint[], deadlines timestamp with time zone[], receipts uuid[]",
        "void",
        "plpgsql",
        f"""
DECLARE freed_topics text[]; freed_groups int8[];
BEGIN
    WITH freed AS ({_indent(freed_leases(rows, "r.group_id", "tenant", citus=True), 4).strip()}
    )
    SELECT array_agg(f.topic), array_agg(f.group_id) INTO freed_topics, freed_groups FROM freed AS f;
    IF freed_topics IS NOT NULL THEN
        INSERT INTO inflight_ended (tenant_id, topic, group_id, n)
        SELECT tenant, x.topic, x.group_id, count(*) FROM unnest(freed_topics, freed_groups) AS x(topic, group_id)
        GROUP BY x.topic, x.group_id;
    END IF;
END
""",
    )


_COUNT_OUT = _count_out(1)


# A group's nack: below max_retries its delivery is pending again after the delay (or the topic's backoff), with
# `meta` merged into the group's saved state; reached, the group's delivery is dead-lettered: a copy of the message
# goes to `<topic>.dlq` (pending, retry_count 0, max_retries 0, `original_topic` and `consumer_group` set), or stays
# in the topic as `failed` for that group when the DLQ is off; the delivery goes and the message is counted down.
# `copy_id` is the copy's id (a UUIDv7 from the caller). Answers the outcome and the group's topic; no row: nothing
# matched.
def _group_nack(v: _Scope) -> Function:
    counting = v.version >= 4  # (version 4 counts out a limited group's lease itself, as the ack's version 3)
    # version 5 names the message a dead letter copies in its last attempt (`copy_of`): a message's story finds
    # each group's dead letter by it (`mq.queue.story`)
    copy_of = ", 'copy_of', mid" if v.version >= 5 else ""
    limited = ", limited boolean" if counting else ""
    lease = "; lease_receipt uuid; lease_deadline timestamptz" if counting else ""
    read_lease = ", d.receipt, d.available_at" if counting else ""
    into_lease = ", lease_receipt, lease_deadline" if counting else ""
    count_out = (
        f"""
    IF limited THEN
        PERFORM {_COUNT_OUT.name}(tenant, ARRAY[gtopic], ARRAY[gid], ARRAY[lease_deadline], ARRAY[lease_receipt]);
    END IF;"""
        if counting
        else ""
    )
    return Function(
        v.name("skiplock_group_nack"),
        "tenant bigint, group_name text, mid uuid, rcpt uuid, err text, delay double precision, "
        f"backoff_default integer[], dlq_default boolean, copy_id uuid, meta jsonb{limited}",
        "TABLE(outcome text, topic text)",
        "plpgsql",
        f"""
DECLARE
    gid bigint; gtopic text; tries int; maxr int; dlq_on bool; backoff int4[]; outc text; ended jsonb;
    saved jsonb{lease};
BEGIN
    SELECT d.group_id, g.topic, d.retry_count + 1{read_lease}, jsonb_build_object(
               'attempt', coalesce((d.attempts -> -1 ->> 'attempt')::int, 0) + 1,
               'leased_at', to_char(d.leased_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
               'leased_by', d.leased_by, 'error', err,
               'ended_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
           CASE WHEN meta IS NULL THEN d.metadata ELSE coalesce(d.metadata, '{{}}') || meta END
    INTO gid, gtopic, tries{into_lease}, ended, saved
    FROM consumer_groups AS g JOIN deliveries AS d ON {v.of("d")}d.group_id = g.id
    WHERE g.tenant_id = tenant AND g.name = group_name AND d.message_id = mid AND d.status = 'processing'
      AND (rcpt IS NULL OR d.receipt = rcpt)
    FOR UPDATE OF d;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT m.max_retries, coalesce(tc.dlq_enabled, dlq_default), coalesce(tc.retry_backoff_seconds, backoff_default)
    INTO maxr, dlq_on, backoff
    FROM messages AS m LEFT JOIN topic_configs AS tc ON tc.tenant_id = tenant AND tc.topic = m.topic
    WHERE {v.of("m")}m.id = mid;
    outc := CASE WHEN tries < maxr THEN 'retry' WHEN dlq_on THEN 'dlq' ELSE 'failed' END;
    IF outc = 'retry' THEN
        UPDATE deliveries AS d SET
            status = 'pending', retry_count = tries, receipt = NULL, last_error = err, metadata = saved,
            available_at = now() + make_interval(secs => coalesce(
                delay, backoff[least(tries, cardinality(backoff))], 0)),
            attempts = (CASE WHEN jsonb_array_length(coalesce(d.attempts, '[]')) >= 20 THEN d.attempts - 0
                        ELSE coalesce(d.attempts, '[]') END)
                       || jsonb_build_array(ended || jsonb_build_object('outcome', 'nacked'))
        WHERE {v.of("d")}d.group_id = gid AND d.message_id = mid;
    ELSE
        INSERT INTO messages (id, tenant_id, topic, key, payload, metadata, priority, max_retries, status,
                              retry_count, last_error, original_topic, dlq_moved_at, consumer_group, attempts)
        SELECT copy_id, m.tenant_id, {v.outcome_is("dlq")} m.topic || '.dlq' ELSE m.topic END, m.key,
               m.payload, CASE WHEN saved IS NULL THEN m.metadata ELSE coalesce(m.metadata, '{{}}') || saved END,
               m.priority, {v.outcome_is("dlq")} 0 ELSE m.max_retries END,
               {v.outcome_is("dlq")} 'pending' ELSE 'failed' END, {v.outcome_is("dlq")} 0 ELSE tries END,
               err, {v.outcome_is("dlq")} m.topic END, {v.outcome_is("dlq")} now() END, group_name,
               coalesce(d.attempts, '[]')
                   || jsonb_build_array(ended || jsonb_build_object('outcome', 'dead_lettered'{copy_of}))
        FROM messages AS m JOIN deliveries AS d ON {v.of("d")}d.group_id = gid AND d.message_id = m.id
        WHERE {v.of("m")}m.id = mid;
        DELETE FROM deliveries WHERE {v.of("")}group_id = gid AND message_id = mid;
        PERFORM {_group_done(v.done()).name}({v.tenant_arg()}ARRAY[mid], false);
    END IF;{count_out}
    RETURN QUERY SELECT outc, gtopic;
END
""",
    )


# What a deleted group owed, released a batch at a time: its deliveries go, and the messages no other group owes
# with them; leased deliveries locked at that moment are skipped, for a later batch.
def _group_release(v: _Scope) -> Function:
    return Function(
        v.name("skiplock_group_release"),
        f"{v.tenant_param()}g bigint, batch integer",
        "integer",
        "plpgsql",
        f"""
DECLARE released uuid[];
BEGIN
    WITH picked AS (
        SELECT message_id FROM deliveries WHERE {v.of("")}group_id = g LIMIT batch FOR UPDATE SKIP LOCKED
    ), gone AS (
        DELETE FROM deliveries AS d USING picked AS p WHERE {v.of("d")}d.group_id = g AND d.message_id = p.message_id
        RETURNING d.message_id
    )
    SELECT array_agg(message_id) INTO released FROM gone;
    IF released IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM {_group_done(v).name}({v.tenant_arg()}released, false);
    RETURN cardinality(released);
END
""",
    )


# A deleted group's tombstone (trigger `consumer_groups_tombstone`), until its deliveries are released: written by the
# statements that delete groups since, the trigger and its function dropped by migration
# `2026_11_30_tenant_keys_contract`.
def _group_tombstone(v: _Scope) -> Function:
    columns, values = ("tenant_id, id", "OLD.tenant_id, OLD.id") if v.tenant_first else ("id", "OLD.id")
    return Function(
        v.name("skiplock_group_tombstone"),
        "",
        "trigger",
        "plpgsql",
        f"""
BEGIN
    INSERT INTO deleted_groups ({columns}) VALUES ({values}) ON CONFLICT DO NOTHING;
    RETURN NULL;
END
""",
    )


_V1, _V2, _V3 = _Scope(1), _Scope(2), _Scope(3)
#: Version 3 of the count-down (the log apart) is called by the ack's and the release's version 3 and by the
#: nack's version 4 (its version 3 had changed a CASE only).
_CALLS_DONE_V3 = _Scope(3, calls_done=3)
GROUP_DONE = _group_done(_V3)
GROUP_ACK = _group_ack(_CALLS_DONE_V3)
GROUP_NACK = _group_nack(_Scope(5, calls_done=3))
GROUP_RELEASE = _group_release(_CALLS_DONE_V3)
#: The release before the one before minted deliveries without a tenant (`deliveries.tenant_id` came after it):
#: a trigger (`deliveries_tenant`) gave its rows their group's tenant, from migration `2026_11_28_deliveries_tenant`
#: until `2026_11_28_tenant_keys`.
DELIVERIES_TENANT = Function(
    "skiplock_deliveries_tenant_v1",
    "",
    "trigger",
    "plpgsql",
    """
BEGIN
    NEW.tenant_id := (SELECT g.tenant_id FROM consumer_groups AS g WHERE g.id = NEW.group_id);
    RETURN NEW;
END
""",
)

#: The versions the code calls, in the order a migration creates them (each after those it calls).
CURRENT = (
    _COUNT_OUT,
    TOPIC_EXISTS,
    TOPIC_COUNT,
    ADMIT,
    ADMIT_ONE,
    ADMIT_COPY,
    ADMIT_COPY_ALL,
    GROUP_DONE,
    GROUP_ACK,
    GROUP_NACK,
    GROUP_RELEASE,
)
#: The versions the release before called: created by the migration that introduced them, kept by the one that
#: replaced them (its old instances still call them during a rolling upgrade), dropped by the migration after.
SUPERSEDED: tuple[Function, ...] = (
    *(build(1) for build in (_topic_exists, _topic_count, _admit, _admit_one, _admit_copy, _admit_copy_all)),
    _group_done(_V2),
    _group_ack(_V2),
    _group_nack(_V2),
    _group_release(_V2),
    _group_nack(_Scope(4, calls_done=3)),
)
#: Versions no release calls any more, dropped by migration `2026_11_28_tenant_keys` (the tombstone's version 2 by
#: `2026_11_30_tenant_keys_contract`); their source stays: the migrations that created them create them from here.
DROPPED = (
    _group_done(_V1),
    _group_ack(_V1),
    _group_nack(_V1),
    _group_release(_V1),
    _group_tombstone(_V1),
    DELIVERIES_TENANT,
    _group_tombstone(_V2),
    _group_nack(_V3),
)
#: Every version a migration created, by name (a migration looks its functions up here).
RELEASED = {function.name: function for function in (*DROPPED, *SUPERSEDED, *CURRENT)}
