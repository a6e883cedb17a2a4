"""The message log (contract, "Message history and replay"): pages oldest first, trims, and replays into the topic.

The ack statements keep the log (see `mq.history.sql`); this reads it. A page is keyset-paged on (acked_at, id), so
acks arriving meanwhile never shift it. A replay walks the same order and enqueues each page through the topic's
own batch enqueue (max_depth, quotas and rate limits apply as to any producer). Entries sharing an `acked_at` (one
batch ack) are replayed together or not at all, so that `resume_from`, an `acked_at`, resumes exactly: refused
midway, the replay finds by halving how much of the refused batch still fits, and stops before the first entry
that did not.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from mq import errors
from mq.history.repository import HistoryRepository, Record
from mq.pages import RowPage
from mq.queue.service import QueueService
from mq.queue.types import NewRow, rfc3339_precise
from mq.queue.validation import check_topic

EARLIEST = datetime(1, 1, 1, tzinfo=UTC)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
LATEST = datetime(9999, 12, 31, tzinfo=UTC)
_NO_ID = uuid.UUID(int=0)
#: Entries a replay reads per page, and enqueues per statement at most (whole batches of one ack kept together).
REPLAY_PAGE = 1000
REPLAY_CHUNK = 1000
#: What stops a replay where it got to: the limits producers meet, and an entry its topic's schema now refuses.
_REFUSALS = (errors.QueueFull, errors.RateLimited, errors.QuotaExceeded, errors.SchemaViolation)


class History:
    def __init__(self, repository: HistoryRepository, queue: QueueService) -> None:
        self.repository = repository
        self.queue = queue

    async def _window(self, tenant_id: int, topic: str) -> tuple[bool, int | None]:
        check_topic(topic, for_enqueue=False)
        config = await self.queue.configs.effective(tenant_id, topic)
        return config.replayable, config.replay_window_seconds

    async def page(
        self,
        tenant_id: int,
        topic: str,
        since: datetime | None,
        until: datetime | None,
        key: str | None,
        limit: int,
        cursor: str | None,
    ) -> RowPage:
        """Entries oldest first (`sql.PAGE`'s rows; `acked_at` as stored, to the microsecond)."""
        _, window = await self._window(tenant_id, topic)
        after = _decode_cursor(cursor) if cursor else (EARLIEST, _NO_ID)
        rows = await self.repository.page(
            tenant_id, topic, window, after, since or EARLIEST, until or LATEST, key, limit + 1
        )
        more = len(rows) > limit
        rows = rows[:limit]
        next_cursor = _encode_cursor(rows[-1]["acked_at"], rows[-1]["id"]) if more else None
        return RowPage(rows, next_cursor)

    async def story(
        self, tenant_id: int, topic: str, message_id: uuid.UUID, since: datetime
    ) -> tuple[Record | None, list[Record]]:
        """A message's visible log entry (None: not logged, or hidden) and those of the messages that replayed it
        (`REPLAY_OF`), searched from `since` (its creation) on (a topic no longer replayable keeps what it logged)."""
        _, window = await self._window(tenant_id, topic)
        entry = await self.repository.story_entry(tenant_id, topic, window, since, message_id)
        return entry, await self.repository.story_replayed(tenant_id, topic, window, since, message_id)

    async def trim(self, tenant_id: int, topic: str, before: datetime) -> int:
        _, window = await self._window(tenant_id, topic)
        return await self.repository.trim(tenant_id, topic, window, before)

    async def replay(
        self,
        tenant_id: int,
        topic: str,
        since: datetime | None,
        until: datetime | None,
        key: str | None,
        consumer_group: str | None = None,
    ) -> int:
        """Enqueue again every visible entry acked in [since, until) (and with `key`), in `acked_at` order, to
        every consumer group of the topic or to `consumer_group` alone; how many. Refused midway: the refusal, its
        details saying how many were replayed and where to resume."""
        replayable, window = await self._window(tenant_id, topic)
        if not replayable:
            raise errors.NotReplayable(f"topic {topic!r} is not replayable")
        config = await self.queue.configs.effective(tenant_id, topic)
        if consumer_group is not None and config.group_id(consumer_group) is None:
            raise errors.NotFound(f"topic {topic!r} has no consumer group {consumer_group!r}")
        limits = _Limits(topic, config.max_retries, config.message_ttl_seconds, config.grouped, consumer_group)

        def read(after: tuple[datetime, uuid.UUID]) -> asyncio.Future[list[Record]]:
            page = self.repository.page(
                tenant_id, topic, window, after, since or EARLIEST, until or LATEST, key, REPLAY_PAGE, for_replay=True
            )
            return asyncio.ensure_future(page)

        replayed = 0
        reading = read((EARLIEST, _NO_ID))
        metrics = self.queue.metrics
        metrics.replays_running.inc()
        outcome = "failed"
        try:
            while rows := await reading:
                batches = _by_ack(rows)
                if len(rows) == REPLAY_PAGE and len(batches) > 1:
                    batches.pop()  # it may go on in the next page: read it whole then
                last = batches[-1][-1]
                reading = read((last["acked_at"], last["id"]))  # while this page is stored
                for chunk in _chunks(batches, REPLAY_CHUNK):
                    done, refused = await self._enqueue_prefix(tenant_id, chunk, limits)
                    replayed += done
                    metrics.count(metrics.replayed, tenant_id, topic, done)
                    if refused is not None:
                        outcome = "refused"
                        exc, at = refused
                        raise _stopped(exc, replayed, at)
            outcome = "done"
            return replayed
        finally:
            reading.cancel()
            metrics.replays_running.dec()
            metrics.count(metrics.replays, tenant_id, topic, 1, outcome)

    async def _enqueue_prefix(
        self, tenant_id: int, batches: list[list[Record]], limits: _Limits
    ) -> tuple[int, tuple[errors.SkiplockError, datetime] | None]:
        """Enqueue as many whole batches from the start as are admitted: how many entries, and (the refusal, the
        `acked_at` of the first batch refused) when not all were."""
        rows = [r for batch in batches for r in batch]
        try:
            await self.queue.enqueue_batch(tenant_id, [_row(r, limits) for r in rows])
            return len(rows), None
        except _REFUSALS as exc:
            if len(batches) == 1:
                return 0, (exc, batches[0][0]["acked_at"])
        half = len(batches) // 2
        done, refused = await self._enqueue_prefix(tenant_id, batches[:half], limits)
        if refused is not None:
            return done, refused
        more, refused = await self._enqueue_prefix(tenant_id, batches[half:], limits)
        return done + more, refused


def _stopped(exc: errors.SkiplockError, replayed: int, at: datetime) -> errors.SkiplockError:
    """The refusal that stopped a replay, saying how many were replayed and where to resume (`from_time`)."""
    details: dict[str, Any] = {"replayed": replayed, "resume_from": rfc3339_precise(at)}
    if isinstance(exc, errors.SchemaViolation):  # the entries at resume_from do not fit the schema in force
        details["errors"] = exc.details
        return errors.SchemaViolation(f"{exc.message}; the replay stopped before them", details=details)
    retry_after = getattr(exc, "retry_after", None)
    return type(exc)(exc.message, details=details, retry_after=retry_after)  # type: ignore[call-arg]


class _Limits(NamedTuple):
    """What a replay's rows take from their topic, and the one group they are for (None: every group)."""

    topic: str
    max_retries: int
    ttl_seconds: int
    grouped: bool
    consumer_group: str | None


#: The metadata key a replayed message carries: the id of the acked message it replays (its story's link back).
REPLAY_OF = "skiplock_replay_of"


def _replay_metadata(metadata: str | None, message_id: uuid.UUID) -> str:
    """The logged metadata (JSON text, as Postgres writes a jsonb) with `REPLAY_OF` set to the entry's id; added
    last, so a replay of a replay names the message it replays, not the first one."""
    marker = f'"{REPLAY_OF}": "{message_id}"'
    if metadata is None or metadata.strip() == "{}":
        return "{" + marker + "}"
    return metadata.rstrip()[:-1] + ", " + marker + "}"


def _row(r: Record, limits: _Limits) -> NewRow:
    return NewRow(
        limits.topic,
        r["payload"],
        _replay_metadata(r["metadata"], r["id"]),
        r["key"],
        0.0,
        r["priority"],
        limits.max_retries,
        limits.ttl_seconds,
        limits.grouped,
        limits.consumer_group,
    )


def _by_ack(rows: Sequence[Record]) -> list[list[Record]]:
    """Consecutive entries of one `acked_at` (one ack statement) together."""
    batches: list[list[Record]] = []
    for r in rows:
        if batches and batches[-1][0]["acked_at"] == r["acked_at"]:
            batches[-1].append(r)
        else:
            batches.append([r])
    return batches


def _chunks(batches: list[list[Record]], size: int) -> list[list[list[Record]]]:
    chunks: list[list[list[Record]]] = [[]]
    count = 0
    for batch in batches:
        if chunks[-1] and count + len(batch) > size:
            chunks.append([])
            count = 0
        chunks[-1].append(batch)
        count += len(batch)
    return chunks


def _encode_cursor(at: datetime, entry_id: str) -> str:
    micros = (at - _EPOCH) // _MICROSECOND  # exact: a float would be off by one now and then
    return base64.urlsafe_b64encode(f"{micros}.{entry_id}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        micros, entry_id = raw.split(".", 1)
        at = _EPOCH + int(micros) * _MICROSECOND
        return at, uuid.UUID(entry_id)
    except (binascii.Error, UnicodeDecodeError, ValueError, OverflowError):  # overflow: a time outside years 1 to 9999
        raise errors.InvalidRequest("cursor: not one this log gave") from None
