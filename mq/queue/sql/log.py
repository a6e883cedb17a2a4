"""The message log, written in one place: what an ack keeps of a replayable topic's messages.

Both acks that end a message write it with `log_acked`: a topic's own ack (the `logged` step of its statement)
and the last consumer group's ack (`skiplock_group_done`, whose source `mq.queue.sql.functions` builds from the
same text).
A count-down by a nack (a dead letter) or by a deleted group is no ack and keeps nothing.
"""


def log_acked(rows: str, tenant: str) -> str:
    """The INSERT keeping the acked messages `rows` (a relation with topic, id, key, payload, metadata, priority,
    retry_count and created_at) of the tenant's replayable topics in the message log: a narrow row (no lease
    columns) into the current `acked_at` partition, in the ack's own statement."""
    return f"""INSERT INTO message_log (tenant_id, topic, acked_at, id, key, payload, metadata, priority, retry_count,
                         created_at)
SELECT {tenant}, r.topic, now(), r.id, r.key, r.payload, r.metadata, r.priority, r.retry_count, r.created_at
FROM {rows} AS r JOIN topic_configs AS tc ON tc.tenant_id = {tenant} AND tc.topic = r.topic
WHERE tc.replayable"""
