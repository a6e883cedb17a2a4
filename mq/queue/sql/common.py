"""What the queue's statements share: a message's columns as the contract prints them, what a reader sees as its
status, and a delivery's attempts."""

from mq.db.fragments import VIEW_STATUS


def rfc3339(column: str) -> str:
    """A timestamp as the contract prints it, 2026-11-22T04:38:10.123Z (UTC, milliseconds, truncated)."""
    return f"""to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"""


# Columns returned for a message, in `MessageView`'s field order and already in the response's text form: ids and
# timestamps as text cost the driver a tenth of decoding them to UUID and datetime objects (about 1 µs each) and
# then printing those again, and `metadata` is JSON text passed through unparsed. `status` is the one a reader
# sees (`VIEW_STATUS`); a dequeue's fresh leases are `processing` as stored.
def message_columns(
    status: str, m: str = "m", *, updated_at: str | None = None, available_at: str | None = None
) -> str:
    """`m`: the alias of a messages row, or of a statement's step that returned a row's columns as they are;
    `updated_at`, `available_at`: their text from elsewhere (a lease formats its time and deadline once)."""
    updated_at = updated_at or rfc3339(f"{m}.updated_at")
    available_at = available_at or rfc3339(f"{m}.available_at")
    return f"""{m}.id::text AS id, {m}.topic, {m}.key, {m}.payload, {m}.metadata::text AS metadata, {status} AS status,
    {m}.priority, {m}.retry_count, {m}.max_retries, {m}.last_error, {rfc3339(f"{m}.created_at")} AS created_at,
    {updated_at} AS updated_at, {available_at} AS available_at,
    {rfc3339(f"{m}.expires_at")} AS expires_at, {m}.original_topic, {rfc3339(f"{m}.dlq_moved_at")} AS dlq_moved_at,
    {m}.receipt::text AS receipt, {m}.consumer_group"""


# Citus routes a statement that changes a distributed table to its tenant's worker only if the change's SET and
# RETURNING call nothing but IMMUTABLE functions, none of them on a column with a STABLE one, and nothing but IMMUTABLE
# inside a CASE or COALESCE there (docs/scale-out.md). So a statement that changes rows computes what needs the
# clock or a STABLE function (`now()`, a deadline, a time as text, an attempt's JSON) in the step that picks them (a
# SELECT, where anything goes), the change writes and returns those values and plain columns, and the answer formats
# (`message_columns(..., m="l")`, the leased rows' step). On one Postgres this costs nothing: the same expressions,
# evaluated one step earlier.
# Nor does Citus pass on a simple CASE (`CASE x WHEN 'a' THEN ...`) in a change's SET rightly (its worker is
# sent `text = boolean`): a change writes the searched form, `CASE WHEN x = 'a' THEN ...`.
# A message named by its key (tenant, id) and checked for a live status (`processing`: a lease; `pending`): written
# so that the check does not imply messages_dequeue_idx's predicate (`status IN ('pending', 'processing')`; `IS TRUE`
# changes nothing else, the status is never null), which leaves the planner the primary key alone. Otherwise, for a
# tenant the statistics do not know yet (new, or grown since the last ANALYZE: estimated at a handful of rows), it
# read every live message of the tenant through that index to find one (`tests/integration/test_plans.py`).
def status_by_key(status: str, alias: str = "") -> str:
    return f"({alias}status = '{status}') IS TRUE"


def leased(alias: str = "") -> str:
    return status_by_key("processing", alias)


# What a message is for every reader (`mq.db.fragments`, which the gauges share): ALIVE, VIEW_STATUS.

MESSAGE_COLUMNS = message_columns(VIEW_STATUS)
LEASED_COLUMNS = message_columns("m.status")

# A message's attempts (`GET /api/messages/{id}`): `leased_at` and `leased_by` describe the current lease, set by
# the dequeue; a delivery that ends without an ack (nacked, lapsed, dead-lettered) is appended to `attempts` by the
# statement that ends it, and an ack deletes the row. Only those statements pay for it: a delivery that is acked
# writes two more columns in the dequeue's UPDATE and nothing else. The last `ATTEMPTS_KEPT` entries are kept.
ATTEMPTS_KEPT = 20


def attempt_ended(outcome: str, error: str, ended_at: str, row: str = "m") -> str:
    """`attempts` with the current lease appended as ended (SQL expressions for each field; old values of `row`,
    a message or a group's delivery)."""
    entry = f"""jsonb_build_object('attempt', coalesce(({row}.attempts -> -1 ->> 'attempt')::int, 0) + 1,
        'leased_at', {rfc3339(f"{row}.leased_at")}, 'leased_by', {row}.leased_by, 'outcome', {outcome},
        'error', {error}, 'ended_at', {rfc3339(ended_at)})"""
    kept = f"""CASE WHEN jsonb_array_length(coalesce({row}.attempts, '[]')) >= {ATTEMPTS_KEPT} THEN {row}.attempts - 0
        ELSE coalesce({row}.attempts, '[]') END"""
    return f"{kept} || jsonb_build_array({entry})"


LEASE_EXPIRED_ERROR = "lease expired: the visibility timeout passed without an ack or nack"


def uuid_list(parameter: str) -> str:
    """A comma-separated text of uuids as uuid[] (an empty element is NULL): one text parameter encodes far faster
    than an array of UUID objects."""
    return f"string_to_array({parameter}, ',', '')::uuid[]"


# A message past its TTL leaves the live set: marked `expired`, or moved to its topic's DLQ when the topic (or the
# global default) says `expire_to_dlq`. The expiry reaper does this in batches; the statements below do it to the
# expired twins that stand in their way. Rows `p` carry `to_dlq` (see `EXPIRES_TO_DLQ`).
# A dead letter keeps no TTL (a DLQ does not inherit its topic's), and an expiring dead letter keeps its origin.
# `p.now`: the time, from the step that picked the rows (`now()` there: see the note on Citus above).
EXPIRE_SET = """status = CASE WHEN p.to_dlq THEN 'pending' ELSE 'expired' END,
    topic = CASE WHEN p.to_dlq THEN m.topic || '.dlq' ELSE m.topic END,
    original_topic = CASE WHEN p.to_dlq THEN m.topic ELSE m.original_topic END,
    dlq_moved_at = CASE WHEN p.to_dlq THEN p.now ELSE m.dlq_moved_at END,
    expires_at = CASE WHEN p.to_dlq THEN NULL ELSE m.expires_at END,
    retry_count = CASE WHEN p.to_dlq THEN 0 ELSE m.retry_count END,
    max_retries = CASE WHEN p.to_dlq THEN 0 ELSE m.max_retries END,
    available_at = p.now, receipt = NULL, updated_at = p.now, owed = NULL"""


def expires_to_dlq(expire_default: str, dlq_default: str) -> str:
    """Whether an expiring message `m` (joined to its topic's config `tc`) goes to its DLQ; the arguments are
    the parameters holding the global defaults of `expire_to_dlq` and `dlq_enabled`."""
    return (
        f"m.original_topic IS NULL AND coalesce(tc.expire_to_dlq, {expire_default}::bool) "
        f"AND coalesce(tc.dlq_enabled, {dlq_default}::bool)"
    )


# Ended leases of a limited topic (or group) whose records go (`mq.queue.sql.settle.counted_out`, and a group's
# ack and nack): `rows` has `topic`, `deadline` and `receipt` (and `group_id` when `group` reads it), `tenant` is
# the tenant's parameter or variable. One probe of the key per row (a LATERAL ... LIMIT 1), then a delete by the
# ctids found (a join let the planner scan every lease of the tenant per ended row). `citus`: by a join on the whole
# key (Citus refuses a ctid in a change it plans in steps).
def freed_leases(rows: str, group: str, tenant: str, *, citus: bool = False) -> str:
    if citus:
        return f"""
    DELETE FROM inflight_leases AS l USING {rows} AS r
    WHERE l.tenant_id = {tenant} AND l.topic = r.topic AND l.group_id = {group}
      AND l.deadline = r.deadline AND l.receipt = r.receipt::uuid
    RETURNING l.topic, l.group_id"""
    return f"""
    DELETE FROM inflight_leases AS l
    WHERE l.ctid = ANY (ARRAY(
        SELECT x.ctid FROM {rows} AS r CROSS JOIN LATERAL (
            SELECT i.ctid FROM inflight_leases AS i
            WHERE i.tenant_id = {tenant} AND i.topic = r.topic AND i.group_id = {group} AND i.deadline = r.deadline
              AND i.receipt = r.receipt::uuid
            LIMIT 1) AS x))
    RETURNING l.topic, l.group_id"""
