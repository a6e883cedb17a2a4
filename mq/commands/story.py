"""A message's story: from one id, everything stored about it on one time line (`GET /api/messages/{id}/story`).

It joins what the data plane keeps anyway and writes nothing (docs/semantics.md, "A message's story"):
- the message's row, live or dead-lettered: its enqueue, its attempts and how each ended, its dead-lettering;
- each consumer group of its topic: the group's delivery and that delivery's attempts, or, with no delivery any
  more, what finished it: the group's dead letter (a copy whose last attempt names the message, `copy_of`) or its
  ack (the count-down kept no time of it: such an ack is known, not timed);
- its entry in the message log (its ack, on a replayable topic) and the messages that replayed it (their metadata
  `skiplock_replay_of`), live or logged;
- the audit trail's entries about it (requeue, retry, delete), the requeues of its DLQ that took it back, and the
  replays of its topic that enqueued it again.
Searches are bounded (`mq.queue.sql.STORY_SCAN`, `mq.history.sql.STORY_SCAN` rows from the message's creation on);
a story is read by an operator, never by the data plane.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Literal

import msgspec

from mq import errors
from mq.audit.service import AuditTrail
from mq.history.service import REPLAY_OF, History
from mq.names import DLQ_SUFFIX
from mq.queue.service import QueueService
from mq.queue.types import AttemptOutcome, MessageRow
from mq.tenancy.auth import Principal
from mq.tenancy.authorization import require_grant, tenant_for

StoryKind = Literal[
    "enqueued", "attempt", "dead_lettered", "requeued", "retried", "acked", "expired", "replayed", "deleted"
]
GroupState = Literal["pending", "processing", "acked", "dead_lettered", "not_owed", "expired"]
StoryState = Literal["stored", "acked", "deleted", "gone"]

#: Audit actions that take a DLQ's messages back as a whole (the one named requeue is `message.requeue`)
_DLQ_REQUEUES = ("topic.requeue", "messages.bulk_requeue", "bulk_job.start")
#: How long after a replayed message was made the replay's audit entry (written when it ended) may come.
_REPLAY_AUDIT_SECONDS = 120


class StoryEventView(msgspec.Struct, omit_defaults=False):
    """One thing that happened to the message. `at` is null for what is known but was not timed (a consumer
    group's ack of a message other groups still owed). `message_id`: the other message it concerns (a group's dead
    letter, a replay, the message a replay or a dead letter was made from)."""

    at: str | None
    kind: StoryKind
    consumer_group: str | None = None
    topic: str | None = None
    attempt: int | None = None
    outcome: AttemptOutcome | None = None
    ended_at: str | None = None
    #: who: the consumer that leased it (an attempt), the user behind an audited action
    by: str | None = None
    error: str | None = None
    message_id: str | None = None
    note: str | None = None


class StoryGroupView(msgspec.Struct, omit_defaults=False):
    """What one consumer group of the topic did with the message: still owes it (`pending`, `processing`), finished
    it (`acked`, `dead_lettered` with its dead letter's id), or never owed it (`not_owed`: created `latest` after
    the message)."""

    consumer_group: str
    state: GroupState
    retry_count: int | None = None
    dead_letter_id: str | None = None


class _Attempt(msgspec.Struct):
    attempt: int
    leased_at: str | None = None
    leased_by: str | None = None
    outcome: AttemptOutcome = "processing"
    error: str | None = None
    ended_at: str | None = None
    copy_of: str | None = None


_attempts = msgspec.json.Decoder(list[_Attempt])


class Story(msgspec.Struct):
    id: str
    topic: str
    state: StoryState
    #: the stored row (`mq.queue.sql.MESSAGE_GET_DETAIL`), None when the message is not stored any more
    row: MessageRow | None
    acked_at: str | None
    events: list[StoryEventView]
    consumer_groups: list[StoryGroupView] | None
    #: the message this one replays (`metadata.skiplock_replay_of`), or copies as a group's dead letter
    replay_of: str | None
    dead_letter_of: str | None


class StoryCommands:
    def __init__(self, queue: QueueService, history: History, audit: AuditTrail) -> None:
        self.queue = queue
        self.history = history
        self.audit = audit

    async def story(self, principal: Principal, message_id: str, topic: str | None) -> Story:
        """Readers of the message's topic. `topic`: where to look for a message that is not stored any more (its
        log entry); without it, the audit trail's entries about the message tell."""
        tenant = tenant_for(principal, action="read")
        try:
            mid = uuid.UUID(message_id)
        except ValueError:
            raise errors.MessageNotFound() from None
        since = _id_floor(mid)
        row = await self.queue.find(tenant, mid)
        audited = await self.audit.about(tenant, since, [str(mid)])
        if row is not None:
            topic = row["topic"]
        elif topic is None:
            topic = next((_details(e).get("topic") for e in audited if _details(e).get("topic")), None)
            if topic is None:
                raise errors.MessageNotFound()
        assert topic is not None
        base = row["original_topic"] if row is not None and row["original_topic"] else topic.removesuffix(DLQ_SUFFIX)
        for readable in sorted({topic, base}):  # a dead letter's story tells of its topic too
            require_grant(principal, "read", readable)
        story = await _Reader(self, tenant, mid, since, topic, base, row, audited).read()
        if row is None and story.acked_at is None and not audited:
            raise errors.MessageNotFound()  # not stored, not logged, never audited: nothing is known of it
        return story


class _Reader:
    """One story's reads and the time line made of them."""

    def __init__(
        self,
        commands: StoryCommands,
        tenant: int,
        mid: uuid.UUID,
        since: uuid.UUID,
        topic: str,
        base: str,
        row: MessageRow | None,
        audited: list[Any],
    ) -> None:
        self.c, self.tenant, self.mid, self.since = commands, tenant, mid, since
        self.topic, self.base, self.row, self.audited = topic, base, row, audited
        self.events: list[tuple[str, int, StoryEventView]] = []  # (sort time, order of making, event)
        self._made = 0

    def add(self, event: StoryEventView, sort_at: str | None = None) -> None:
        self._made += 1
        self.events.append((sort_at or event.at or "", self._made, event))

    async def read(self) -> Story:
        row, mid = self.row, self.mid
        created = _id_time(mid)
        entry, logged_replays = await self.c.history.story(self.tenant, self.base, mid, created)
        attempts = _attempts.decode(row["attempts"]) if row is not None else []
        # a group's dead letter names the message it copies; its story starts at that message's enqueue
        copy_of = next((a.copy_of for a in attempts if a.copy_of), None)
        replay_of = _metadata(row).get(REPLAY_OF) if row is not None else None
        if copy_of is not None:
            enqueued = _iso(_id_time(uuid.UUID(copy_of)))
        else:
            enqueued = row["created_at"] if row is not None else _iso(created)
        self.add(StoryEventView(enqueued, "enqueued", topic=self.base, message_id=copy_of or replay_of))
        self.plain_attempts(attempts, row)
        groups = await self.groups(row, entry)
        if self.audit_entries(attempts):
            await self.dlq_requeue(attempts)
        await self.replays(logged_replays)
        acked_at: str | None = None
        if entry is not None:
            acked_at = entry["acked_at"]
            retries = entry["retry_count"]
            tries = "1 retry" if retries == 1 else f"{retries} retries"
            note = f"the message log's entry (after {tries}; the attempts went with the row)"
            logged = StoryEventView(entry["acked_at"][:23] + "Z", "acked", topic=self.base, note=note)
            self.add(logged, acked_at)
        if row is not None and row["status"] == "expired":
            self.add(StoryEventView(row["expires_at"], "expired", topic=row["topic"]))
        deleted = any(e["action"] == "message.delete" for e in self.audited)
        state: StoryState = "stored" if row is not None else "acked" if entry else "deleted" if deleted else "gone"
        self.events.sort(key=lambda e: (e[0], e[1]))
        return Story(
            str(mid),
            self.topic,
            state,
            row,
            acked_at,
            [e for _, _, e in self.events],
            groups,
            replay_of,
            copy_of,
        )

    def plain_attempts(self, attempts: list[_Attempt], row: MessageRow | None) -> None:
        """The row's own attempts (a group's dead letter carries its group's, `consumer_group` on it)."""
        group = row["consumer_group"] if row is not None else None
        dead = False
        for a in attempts:
            self.attempt(a, group)
            dead = dead or a.outcome == "dead_lettered"
        if row is not None and row["dlq_moved_at"] and not dead:  # an expiry moved it (`expire_to_dlq`)
            self.add(StoryEventView(row["dlq_moved_at"], "dead_lettered", group, row["topic"], error=row["last_error"]))

    def attempt(self, a: _Attempt, group: str | None, dead_letter: str | None = None) -> None:
        self.add(
            StoryEventView(a.leased_at, "attempt", group, None, a.attempt, a.outcome, a.ended_at, a.leased_by, a.error)
        )
        if a.outcome == "dead_lettered":
            self.add(
                StoryEventView(
                    a.ended_at, "dead_lettered", group, self.base + DLQ_SUFFIX, error=a.error, message_id=dead_letter
                ),
                a.ended_at,
            )

    async def groups(self, row: MessageRow | None, entry: Any) -> list[StoryGroupView] | None:
        """Each group of the topic: its delivery's attempts, its dead letter, or its ack."""
        if row is not None and (row["original_topic"] or row["consumer_group"]) and row["topic"] != self.base:
            return None  # a dead letter: its own attempts tell (a group's copy carries the group's)
        if row is None and entry is None:
            return None  # not stored, not logged: nothing tells what the groups did
        grouped = await self.c.queue.story_groups(self.tenant, self.mid, self.base)
        if not grouped or (row is not None and row["deliveries"] is None and row["topic"] == self.base):
            return None  # no groups, or a message no group ever owed
        copies = await self.c.queue.story_made_from(
            self.tenant, self.mid, [self.base, self.base + DLQ_SUFFIX], replays=False
        )
        by_group = {c["consumer_group"]: c for c in copies}
        created = row["created_at"] if row is not None else _iso(_id_time(self.mid))
        out = []
        for g in grouped:
            name = g["name"]
            copy = by_group.get(name)
            if g["delivery_status"] is not None:
                for a in _attempts.decode(g["attempts"]):
                    self.attempt(a, name)
                out.append(StoryGroupView(name, g["status"], g["retry_count"]))
            elif copy is not None:
                for a in _attempts.decode(copy["attempts"]):
                    self.attempt(a, name, copy["id"] if a.outcome == "dead_lettered" else None)
                out.append(StoryGroupView(name, "dead_lettered", dead_letter_id=copy["id"]))
            elif g["start"] == "latest" and g["created_at"] > created:
                out.append(StoryGroupView(name, "not_owed"))
            elif row is not None and row["status"] == "expired":
                out.append(StoryGroupView(name, "expired"))
            else:
                acked_at = entry["acked_at"] if entry is not None else None
                note = "when is not recorded while other groups still owe the message"
                self.add(StoryEventView(None, "acked", name, self.base, note=note), acked_at or "~")
                out.append(StoryGroupView(name, "acked"))
        return out

    def audit_entries(self, attempts: list[_Attempt]) -> bool:
        """Requeues, retries and deletions of the message; whether it is back from its DLQ by a requeue that did
        not name it."""
        kinds: dict[str, StoryKind] = {
            "message.requeue": "requeued",
            "message.retry": "retried",
            "message.delete": "deleted",
        }
        named = False
        for e in self.audited:
            kind = kinds.get(e["action"])
            if kind is not None:
                named = named or kind == "requeued"
                self.add(StoryEventView(e["at"], kind, topic=_details(e).get("topic"), by=e["actor"]))
        back = (
            self.row is not None
            and self.row["topic"] == self.base
            and any(a.outcome == "dead_lettered" for a in attempts)
        )
        return back and not named

    async def dlq_requeue(self, attempts: list[_Attempt]) -> None:
        """A message back from its DLQ that no requeue of its own names: the first requeue of the whole DLQ after
        its dead-lettering (the audit trail's) took it, or one no longer audited."""
        dead_at = max((a.ended_at or "" for a in attempts if a.outcome == "dead_lettered"), default="")
        dlq = self.base + DLQ_SUFFIX
        entries = await self.c.audit.about(self.tenant, self.since, [dlq, self.base], list(_DLQ_REQUEUES))
        entry = next(
            (e for e in entries if e["at"] >= dead_at and _details(e).get("action", "requeue") == "requeue"), None
        )
        if entry is None:
            self.add(StoryEventView(None, "requeued", topic=self.base, note="by a requeue of its DLQ"), dead_at + "~")
        else:
            note = f"by a requeue of {dlq} ({entry['action']})"
            self.add(StoryEventView(entry["at"], "requeued", topic=self.base, by=entry["actor"], note=note))

    async def replays(self, logged: list[Any]) -> None:
        """The messages made again from this one by replays of its topic, live and logged."""
        live = await self.c.queue.story_made_from(
            self.tenant, self.mid, [self.base, self.base + DLQ_SUFFIX], replays=True
        )
        made = [(r["id"], r["created_at"], r["consumer_group"]) for r in live]
        made += [(r["id"], r["created_at"], None) for r in logged if r["id"] not in {m[0] for m in made}]
        if not made:
            return
        replays = await self.c.audit.about(self.tenant, self.since, [self.base], ["topic.replay"])
        for new_id, at, group in sorted(made, key=lambda m: m[1]):
            by = next((e["actor"] for e in replays if at <= e["at"] <= _later(at, _REPLAY_AUDIT_SECONDS)), None)
            self.add(StoryEventView(at, "replayed", group, self.base, by=by, message_id=new_id))


def _id_floor(mid: uuid.UUID) -> uuid.UUID:
    """The smallest UUIDv7 of the millisecond `mid` was made in (the nil UUID when it is no UUIDv7)."""
    return uuid.UUID(int=(mid.int >> 80) << 80) if mid.version == 7 else uuid.UUID(int=0)


def _id_time(mid: uuid.UUID) -> datetime:
    """When a UUIDv7 was made (the epoch for any other id)."""
    ms = mid.int >> 80 if mid.version == 7 else 0
    return datetime.fromtimestamp(ms / 1000, UTC)


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def _later(at: str, seconds: int) -> str:
    moment = datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() + seconds
    return _iso(datetime.fromtimestamp(moment, UTC))


def _details(entry: Any) -> dict[str, Any]:
    text = entry["details"]
    found: dict[str, Any] = msgspec.json.decode(text) if text else {}
    return found


def _metadata(row: MessageRow) -> dict[str, Any]:
    text = row["metadata"]
    found = msgspec.json.decode(text) if text else {}
    return found if isinstance(found, dict) else {}
