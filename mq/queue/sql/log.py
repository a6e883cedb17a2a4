"""The message log, written in one place: what an ack keeps of a replayable topic's messages.

Both acks that end a message write it here: a topic's own ack with `log_acked` (the `logged` step of its
statement) and the last consumer group's ack with `log_acked_of` (`skiplock_group_done`, whose source
`mq.queue.sql.functions` builds from this text; before version 3 it used `log_acked` too).
A count-down by a nack (a dead letter) or by a deleted group is no ack and keeps nothing.
"""

_COLUMNS = """INSERT INTO message_log (tenant_id, topic, acked_at, id, key, payload, metadata, priority, retry_count,
                         created_at)
SELECT {tenant}, r.topic, now(), r.id, r.key, r.payload, r.metadata, r.priority, r.retry_count, r.created_at"""


def log_acked(rows: str, tenant: str) -> str:
    """The INSERT keeping the acked messages `rows` (a relation with topic, id, key, payload, metadata, priority,
    retry_count and created_at) of the tenant's replayable topics in the message log: a narrow row (no lease
    columns) into the current `acked_at` partition, in the ack's own statement."""
    return f"""{_COLUMNS.format(tenant=tenant)}
FROM {rows} AS r JOIN topic_configs AS tc ON tc.tenant_id = {tenant} AND tc.topic = r.topic
WHERE tc.replayable"""


def log_acked_of(rows: str, tenant: str, topics: str) -> str:
    """The INSERT keeping the acked messages `rows` (a relation named `r`, with the columns `log_acked` reads) of
    the topics `topics` (an array: the replayable ones among theirs, looked up before) in the message log. A
    statement of its own, fed by no other: on Citus an INSERT fed by the DELETE of the same statement, joined to
    the topics' configs, was repartitioned over every shard (120 ms for one group's ack), where this one goes to
    the tenant's shard."""
    return f"""{_COLUMNS.format(tenant=tenant)}
FROM {rows}
WHERE r.topic = ANY({topics})"""
