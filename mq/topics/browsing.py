"""A topic's messages as an administrator reads them: by offset (`browse`), in keyset pages in queue order with
filters (`page`, the console's list; `mq.topics.sql` says how a page costs the same on any topic's size), and the
series its charts draw. Raises only `mq.errors`."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import UTC, datetime
from typing import Any

from mq import errors
from mq.names import DLQ_SUFFIX, check_text
from mq.queue.types import MAX_PRIORITY, STATUSES, MessageRow
from mq.queue.validation import check_topic
from mq.topics import sql
from mq.topics.repository import Record, TopicRepository
from mq.topics.types import SERIES_RANGES, MessageFilter, MessagePage, Series, SeriesPoint, SeriesRange

#: Rows a filtered page reads at most (its window): a page costs about the same whatever the topic's size.
PAGE_SCAN = 2000
#: Index windows one page request may read, one after another, to fill itself.
_PAGE_ROUNDS = 4
#: The series' step: one sample mark of the gauge job (`mq.db.sql.SAMPLES_RECORD`).
SERIES_STEP_SECONDS = 30
_PHASES = ("live", "done")
_FIRST_LIVE = (10, datetime.min.replace(tzinfo=UTC), uuid.UUID(int=0))  # before any message in queue order
_FIRST_DONE = uuid.UUID(int=(1 << 128) - 1)  # after any id, for newest first
# The same for a list walked from its end (`reverse`)
_LAST_LIVE = (-1, datetime.max.replace(tzinfo=UTC), uuid.UUID(int=(1 << 128) - 1))
_LAST_DONE = uuid.UUID(int=0)


class MessageBrowser:
    def __init__(self, repository: TopicRepository) -> None:
        self.repository = repository

    async def consumers(self, tenant_id: int, topic: str) -> list[Record]:
        """Who holds the topic's messages now, by consumer and consumer group (`sql.TOPIC_CONSUMERS`)."""
        check_topic(topic, for_enqueue=False)
        return await self.repository.consumers(tenant_id, topic)

    async def error_classes(self, tenant_id: int, topic: str) -> list[Record]:
        """The topic's failed messages (a DLQ's dead letters too) by the class of their last error
        (`sql.TOPIC_ERROR_CLASSES`)."""
        check_topic(topic, for_enqueue=False)
        return await self.repository.error_classes(tenant_id, topic, topic.endswith(DLQ_SUFFIX))

    async def browse(
        self,
        tenant_id: int,
        topic: str | None,
        status: str | None,
        key: str | None,
        limit: int,
        offset: int,
        consumer_group: str | None = None,
    ) -> tuple[list[MessageRow], int]:
        """`consumer_group` (with a topic): the messages that group still owes, and its dead letters."""
        if consumer_group is not None and topic is None:
            raise errors.InvalidRequest("consumer_group: name the topic too")
        if topic is not None:
            check_topic(topic, for_enqueue=False)
        if status is not None and status not in STATUSES:
            raise errors.InvalidRequest(f"status must be one of {', '.join(STATUSES)}")
        if key is not None:
            check_text(key, "key")
        rows, total = await self.repository.browse(tenant_id, topic, status, key, limit, offset, consumer_group)
        return rows, total

    async def page(
        self,
        tenant_id: int,
        topic: str,
        where: MessageFilter,
        cursor: str | None,
        limit: int,
        *,
        reverse: bool = False,
    ) -> MessagePage:
        """Up to `limit` messages matching `where`: live ones in queue order, then finished ones newest first; or,
        `reverse`, the same list from its end: finished ones oldest first, then live ones from the last to be
        delivered (an operator's "jump to newest" on a backlog, "oldest" on dead letters)."""
        check_topic(topic, for_enqueue=False)
        where.check()
        phases = [p for p in _PHASES if where.status is None or sql.STATUS_FILTERS[where.status][p] is not None]
        if where.status == "expired":  # marked ones first: the live index holds few unmarked ones, far down
            phases.reverse()
        if reverse:
            phases.reverse()
        phase, position = _decode_cursor(cursor, reverse) if cursor else (phases[0], None)
        if phase not in phases:
            raise errors.InvalidRequest("cursor: not one of this filter's")
        filtered = any(v is not None for v in (where.status, where.key, where.metadata, where.consumer_group))
        metadata = json.dumps(where.metadata) if where.metadata is not None else None
        items: list[Record] = []
        scanned = 0
        next_cursor: str | None = None
        for _ in range(_PAGE_ROUNDS):
            wanted = limit - len(items)
            window = PAGE_SCAN if filtered else wanted
            conditions = [c for c in [sql.STATUS_FILTERS[where.status][phase]] if c] if where.status else []
            if phase == "live":
                start_live = _LAST_LIVE if reverse else _FIRST_LIVE
                after_live = position if isinstance(position, tuple) else start_live
                rows = await self.repository.live_page(
                    tenant_id,
                    topic,
                    after_live,
                    window,
                    wanted,
                    conditions,
                    where.key,
                    metadata,
                    where.consumer_group,
                    reverse,
                )
            else:
                start_done = _LAST_DONE if reverse else _FIRST_DONE
                after_done = position if isinstance(position, uuid.UUID) else start_done
                rows = await self.repository.done_page(
                    tenant_id,
                    topic,
                    after_done,
                    window,
                    wanted,
                    conditions,
                    where.key,
                    metadata,
                    where.consumer_group,
                    reverse,
                )
            hits = [r for r in rows if r["hit"] is not None]
            items += hits
            read = rows[0]["scanned"] if rows else 0
            scanned += read
            if len(items) >= limit:  # go on after the last one shown
                next_cursor = encode_cursor(phase, _position(phase, hits[-1], last=False), reverse)
                break
            if read == window:  # the window was full: more rows in this phase
                position = _position(phase, rows[0], last=True)
                next_cursor = encode_cursor(phase, position, reverse)
                if scanned >= PAGE_SCAN:
                    break
                continue
            later = phases[phases.index(phase) + 1 :]
            if not later:
                next_cursor = None
                break
            phase, position = later[0], None
            next_cursor = encode_cursor(phase, None, reverse)
        return MessagePage(items, next_cursor, scanned)

    async def series(
        self, tenant_id: int, topic: str | None, minutes: int = 60, span: SeriesRange | None = None
    ) -> Series:
        """The topic's (None: the tenant's) depth and rates. Over the last `minutes` (at most an hour) every
        `SERIES_STEP_SECONDS`, from the gauge job's samples and the API's activity counts; or over `span`, a day in
        5-minute steps or a week in hours, from the workers' rollups. Never a scan of the messages."""
        if topic is not None:
            check_topic(topic, for_enqueue=False)
        if span is not None and span != "1h":
            return await self._rolled_up(tenant_id, topic, span)
        if span == "1h":
            minutes = 60
        step = SERIES_STEP_SECONDS
        now, samples, activity = await self.repository.series(tenant_id, topic, minutes * 60 + step)
        last_mark = int(now // step) * step
        marks = range(last_mark - minutes * 60 + step, last_mark + 1, step)
        depth = {int(r["at"]) // step * step: r for r in samples}
        counts: dict[int, list[int]] = {}
        for r in activity:
            bucket = counts.setdefault(int(r["at"]) // step * step, [0, 0, 0])
            bucket[0] += r["enqueued"]
            bucket[1] += r["acked"]
            bucket[2] += r["dead_lettered"]
        points = [_point(mark, depth.get(mark), counts.get(mark, [0, 0, 0]), step) for mark in marks]
        return Series(topic, step, points, span or "1h")

    async def _rolled_up(self, tenant_id: int, topic: str | None, span: SeriesRange) -> Series:
        seconds, step = SERIES_RANGES[span]
        now, rows = await self.repository.rollups(tenant_id, topic, seconds + step)
        last_mark = int(now // step) * step
        marks = range(last_mark - seconds + step, last_mark + 1, step)
        depth: dict[int, Record] = {}
        oldest: dict[int, float] = {}
        counts: dict[int, list[int]] = {}
        for r in rows:  # in bucket order: the last rollup of a step holds its depth at the step's end
            mark = int(r["at"]) // step * step
            depth[mark] = r
            if r["oldest_pending_age_seconds"] is not None:
                oldest[mark] = max(oldest.get(mark, 0.0), r["oldest_pending_age_seconds"])
            bucket = counts.setdefault(mark, [0, 0, 0])
            bucket[0] += r["enqueued"]
            bucket[1] += r["acked"]
            bucket[2] += r["dead_lettered"]
        points = [_point(mark, depth.get(mark), counts.get(mark, [0, 0, 0]), step, oldest.get(mark)) for mark in marks]
        return Series(topic, step, points, span)


def _point(mark: int, depth: Record | None, counts: list[int], step: int, oldest: float | None = None) -> SeriesPoint:
    return SeriesPoint(
        at=mark,
        pending=depth["pending"] if depth else None,
        processing=depth["processing"] if depth else None,
        failed=depth["failed"] if depth else None,
        expired=depth["expired"] if depth else None,
        oldest_pending_age_seconds=oldest
        if oldest is not None
        else (depth["oldest_pending_age_seconds"] if depth else None),
        enqueue_rate=counts[0] / step,
        ack_rate=counts[1] / step,
        dead_letter_rate=counts[2] / step,
    )


# --- cursors --------------------------------------------------------------------------------------------------------
# Opaque to clients: base64url of JSON. Live: ["live", priority, available_at (ISO, microseconds), id]; finished:
# ["done", id]; a phase's start: [phase]. A reversed walk's phases are "-live" and "-done".

Position = tuple[int, datetime, uuid.UUID] | uuid.UUID | None


def _position(phase: str, row: Record, *, last: bool) -> Position:
    """Where a page stops: after a shown row (`last` false) or after the last row its window read."""
    if phase == "live":
        if last:
            return (row["last_priority"], row["last_available_at"], row["last_id"])
        return (row["priority"], row["hit_at"], row["hit"])
    mid: uuid.UUID = row["last_id"] if last else row["hit"]
    return mid


def encode_cursor(phase: str, position: Position, reverse: bool) -> str:
    if reverse:
        phase = "-" + phase
    if position is None:
        parts: list[Any] = [phase]
    elif isinstance(position, tuple):
        priority, at, mid = position
        parts = [phase, priority, at.isoformat(), str(mid)]
    else:
        parts = [phase, str(position)]
    return base64.urlsafe_b64encode(json.dumps(parts, separators=(",", ":")).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, reverse: bool) -> tuple[str, Position]:
    """The phase and position of a cursor given for a walk in this direction."""
    try:
        parts = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        phase = parts[0]
        if phase.startswith("-") != reverse:
            raise errors.InvalidRequest("cursor: not one of this direction's (reverse)")
        phase = phase.removeprefix("-")
        if phase == "live" and len(parts) == 4:
            priority, at = int(parts[1]), _aware(datetime.fromisoformat(parts[2]))
            if 0 <= priority <= MAX_PRIORITY:
                return phase, (priority, at, uuid.UUID(parts[3]))
        if phase == "done" and len(parts) == 2:
            return phase, uuid.UUID(parts[1])
        if phase in _PHASES and len(parts) == 1:
            return phase, None
    except (ValueError, TypeError, IndexError, KeyError, AttributeError, OverflowError, RecursionError):
        pass  # (binascii.Error and UnicodeDecodeError are ValueErrors)
    raise errors.InvalidRequest("cursor: not one this server gave")


def _aware(at: datetime) -> datetime:
    """A cursor's time, if it has a UTC equivalent (ValueError or OverflowError otherwise)."""
    at.astimezone(UTC)  # (year 1 or 9999 with an offset has none)
    if at.tzinfo is None:
        raise ValueError(at)
    return at
