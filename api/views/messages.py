"""Messages as the data plane and the message pages answer with them, and a batch of acks' results."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from mq.commands.story import Story, StoryEventView, StoryGroupView, StoryState
from mq.queue.types import AckFailureCode, AckResults, AttemptOutcome, MessageStatus


class MessageView(msgspec.Struct, omit_defaults=False, gc=False):
    """A message as the API returns it; `receipt` and `visibility_deadline` are set on processing messages."""

    id: str
    topic: str
    key: str | None
    payload: bytes
    metadata: msgspec.Raw | None
    status: MessageStatus
    priority: int
    retry_count: int
    max_retries: int
    last_error: str | None
    created_at: str | None
    updated_at: str | None
    available_at: str | None
    expires_at: str | None
    original_topic: str | None
    dlq_moved_at: str | None
    receipt: str | None = None
    visibility_deadline: str | None = None
    #: The consumer group whose delivery was dead-lettered: set on that group's copy in the DLQ.
    consumer_group: str | None = None

    @classmethod
    def from_row(cls, row: Any, *, with_lease: bool) -> MessageView:
        return cls.from_rows([row], with_lease=with_lease)[0]

    @classmethod
    def from_rows(cls, rows: Sequence[Any], *, with_lease: bool) -> list[MessageView]:
        """Build from rows of the queue's message columns (`mq.queue.sql.common.message_columns`: ids and
        timestamps come as text already); the lease is shown only to the consumer that holds it. Runs for every
        message a dequeue returns, so it stays lean: records unpack in column order, which is this struct's field
        order."""
        raw = msgspec.Raw
        views = []
        for (
            message_id,
            topic,
            key,
            payload,
            metadata,
            status,
            priority,
            retry_count,
            max_retries,
            last_error,
            created_at,
            updated_at,
            available_at,
            expires_at,
            original_topic,
            dlq_moved_at,
            receipt,
            consumer_group,
            *_,  # a dequeue's `waited`
        ) in rows:
            processing = status == "processing"
            views.append(
                cls(
                    message_id,
                    topic,
                    key,
                    payload,
                    None if metadata is None else raw(metadata.encode()),
                    status,
                    priority,
                    retry_count,
                    max_retries,
                    last_error,
                    created_at,
                    updated_at,
                    available_at,
                    expires_at,
                    original_topic,
                    dlq_moved_at,
                    receipt if with_lease and processing else None,
                    available_at if processing else None,
                    consumer_group,
                )
            )
        return views


class AttemptView(msgspec.Struct, omit_defaults=False):
    """One delivery of a message: when and by whom it was leased, and how it ended (still `processing`, or
    `nacked` with its error, `lapsed` when the lease ran out, `dead_lettered` when that moved it to its DLQ)."""

    attempt: int
    leased_at: str | None
    leased_by: str | None
    outcome: AttemptOutcome
    error: str | None
    ended_at: str | None


_attempts_decoder = msgspec.json.Decoder(list[AttemptView])


class DeliveryView(msgspec.Struct, omit_defaults=False):
    """A consumer group's delivery of a message it still owes: `pending` (a lapsed lease included) or
    `processing`, and its own retry count."""

    consumer_group: str
    status: Literal["pending", "processing"]
    retry_count: int


_deliveries_decoder = msgspec.json.Decoder(list[DeliveryView])


class MessageDetailView(MessageView, omit_defaults=False):
    """One message as `GET /api/messages/{id}` returns it: with its most recent attempts, oldest first."""

    attempts: list[AttemptView] = msgspec.field(default_factory=list)
    #: Each consumer group's delivery, for a message that groups still owe; null otherwise.
    deliveries: list[DeliveryView] | None = None

    @classmethod
    def from_detail_row(cls, row: Any) -> MessageDetailView:
        """From a row of the message's detail (`mq.queue.sql.MESSAGE_GET_DETAIL`: the message's columns, then its
        attempts and its groups' deliveries as JSON text)."""
        view = MessageView.from_row(row, with_lease=False)
        fields = {f: getattr(view, f) for f in MessageView.__struct_fields__}
        groups = row["deliveries"]
        return cls(
            **fields,
            attempts=_attempts_decoder.decode(row["attempts"]),
            deliveries=None if groups is None else _deliveries_decoder.decode(groups),
        )


class MessageStoryView(msgspec.Struct, omit_defaults=False):
    """A message's whole story (`GET /api/messages/{id}/story`): its enqueue, every attempt (each consumer group's
    too) with its error, dead-lettering, requeues, retries, replays and acks, oldest first; what each group did
    with it; the row as stored now (null when it is not stored any more: `state` says why)."""

    id: str
    topic: str
    #: `stored` (the row below), `acked` (in the message log), `deleted` (audited), `gone` (known only from the
    #: audit trail)
    state: StoryState
    message: MessageDetailView | None
    #: its ack in the message log (replayable topics), to the microsecond
    acked_at: str | None
    events: list[StoryEventView]
    #: each consumer group of the topic and what it did with the message; null for a topic without groups
    consumer_groups: list[StoryGroupView] | None
    #: the message this one replays (its metadata `skiplock_replay_of`)
    replay_of: str | None
    #: the message this consumer group's dead letter copies
    dead_letter_of: str | None

    @classmethod
    def of(cls, story: Story) -> MessageStoryView:
        return cls(
            id=story.id,
            topic=story.topic,
            state=story.state,
            message=None if story.row is None else MessageDetailView.from_detail_row(story.row),
            acked_at=story.acked_at,
            events=story.events,
            consumer_groups=story.consumer_groups,
            replay_of=story.replay_of,
            dead_letter_of=story.dead_letter_of,
        )


class AckFailureView(msgspec.Struct):
    id: str
    code: AckFailureCode


class BatchAckView(msgspec.Struct):
    acked: int
    failed: list[AckFailureView]

    @classmethod
    def of(cls, results: AckResults) -> BatchAckView:
        return cls(acked=results.acked, failed=[AckFailureView(f.id, f.code) for f in results.failed])
