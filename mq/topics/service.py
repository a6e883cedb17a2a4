"""`TopicAdmin`: everything about administering a tenant's topics, in one place: summaries and stats, configs,
pause and resume, browsing (by offset, and the console's keyset pages), purge, delete by key, requeueing a DLQ,
bulk actions and jobs, and the series the charts draw. The data plane (enqueue, dequeue, ack, nack, extend, and
one message by id) is `mq.queue.service.QueueService`.

Raises only `mq.errors`. Who may do what is the API's business (`api.routes.topics`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from mq import errors
from mq.db.engine import DATABASE_ERRORS
from mq.names import DLQ_SUFFIX, check_text
from mq.queue.service import QueueService
from mq.queue.types import MAX_PRIORITY, STATUSES, MessageView, TopicConfig, TopicSummaryView, parse_uuid, rfc3339
from mq.queue.validation import check_topic
from mq.quotas import NO_QUOTAS
from mq.topics import sql
from mq.topics.repository import Record, TopicRepository
from mq.topics.views import (
    SERIES_RANGES,
    BulkAction,
    BulkJobView,
    ConfigValuesView,
    ConsumerGroupStatsView,
    ConsumerGroupsView,
    ConsumerGroupView,
    GroupStart,
    MessageFilter,
    MessagePageView,
    SeriesPointView,
    SeriesRange,
    SeriesView,
    TopicSettingsView,
)

log = logging.getLogger(__name__)


#: Rows a filtered page reads at most (its window): a page costs about the same whatever the topic's size.
PAGE_SCAN = 2000
#: Index windows one page request may read, one after another, to fill itself.
_PAGE_ROUNDS = 4
#: A bulk job's batch: one page of ids, then one action on them.
_JOB_BATCH = 500
#: What ends a bulk job as failed (a refusal, or the database away), rather than the process.
_JOB_FAILURES: tuple[type[Exception], ...] = (errors.SkiplockError, *DATABASE_ERRORS)
#: A running job not heard of for this long died with its instance.
_JOB_IDLE_SECONDS = 60.0
#: Deliveries a deleted group's release deletes per statement.
_RELEASE_BATCH = 5000
#: Seconds a group's deletion releases what it owed in the request; a larger group goes on in the background.
_RELEASE_BUDGET_SECONDS = 2.0
#: The series' step: one sample mark of the gauge job (`mq.db.sql.SAMPLES_RECORD`).
SERIES_STEP_SECONDS = 30
_PHASES = ("live", "done")
_FIRST_LIVE = (10, datetime.min.replace(tzinfo=UTC), uuid.UUID(int=0))  # before any message in queue order
_FIRST_DONE = uuid.UUID(int=(1 << 128) - 1)  # after any id, for newest first
# The same for a list walked from its end (`reverse`)
_LAST_LIVE = (-1, datetime.max.replace(tzinfo=UTC), uuid.UUID(int=(1 << 128) - 1))
_LAST_DONE = uuid.UUID(int=0)


class TopicAdmin:
    def __init__(self, repository: TopicRepository, queue: QueueService) -> None:
        self.repository = repository
        self.queue = queue
        self.messages = queue.repository  # the message table's statements (purge, delete by key, summaries...)
        self._jobs: set[asyncio.Task[None]] = set()

    # --- summaries, stats, configs ------------------------------------------------------------------------------

    async def requeue_topic(self, tenant_id: int, topic: str, groups: frozenset[str] | None = None) -> int:
        """Every pending message of `<topic>.dlq` back to `<topic>`. Either name is accepted. `groups`: the caller
        is pinned to those consumer groups (Forbidden when the DLQ holds dead letters of others)."""
        check_topic(topic, for_enqueue=False)
        base = topic[: -len(DLQ_SUFFIX)] if topic.endswith(DLQ_SUFFIX) else topic
        cap = self.queue.depth_cap_of(tenant_id)
        pinned = sorted(groups) if groups is not None else None
        count = await self.messages.requeue_topic(tenant_id, base + DLQ_SUFFIX, base, cap, pinned)
        if count:
            self.queue.metrics.count(self.queue.metrics.requeued, tenant_id, base, count)
            self.queue.wakeups.published(tenant_id, {base: count})
        return count

    async def browse(
        self,
        tenant_id: int,
        topic: str | None,
        status: str | None,
        key: str | None,
        limit: int,
        offset: int,
        consumer_group: str | None = None,
    ) -> tuple[list[MessageView], int]:
        """`consumer_group` (with a topic): the messages that group still owes, and its dead letters."""
        if consumer_group is not None and topic is None:
            raise errors.InvalidRequest("consumer_group: name the topic too")
        if topic is not None:
            check_topic(topic, for_enqueue=False)
        if status is not None and status not in STATUSES:
            raise errors.InvalidRequest(f"status must be one of {', '.join(STATUSES)}")
        if key is not None:
            check_text(key, "key")
        rows, total = await self.messages.browse(tenant_id, topic, status, key, limit, offset, consumer_group)
        return MessageView.from_rows(rows, with_lease=False), total

    async def purge(self, tenant_id: int, topic: str, statuses: Sequence[str] | None) -> int:
        check_topic(topic, for_enqueue=False)
        for status in statuses or ():
            if status not in STATUSES:
                raise errors.InvalidRequest(f"status must be one of {', '.join(STATUSES)}")
        return await self.messages.purge(tenant_id, topic, statuses)

    async def delete_by_key(self, tenant_id: int, topic: str, key: str) -> int:
        check_topic(topic, for_enqueue=False)
        check_text(key, "key")
        return await self.messages.delete_by_key(tenant_id, topic, key)

    async def stats(self, tenant_id: int) -> list[dict[str, Any]]:
        return [dict(r) for r in await self.messages.stats(tenant_id)]

    async def topic_configs(self, tenant_id: int) -> list[tuple[str, TopicConfig]]:
        """Every topic config of the tenant, by topic name."""
        rows = await self.messages.topic_configs(tenant_id)
        return [(r["topic"], TopicConfig(**{k: v for k, v in dict(r).items() if k != "topic"})) for r in rows]

    async def topic_config(self, tenant_id: int, topic: str) -> TopicConfig:
        check_topic(topic, for_enqueue=False)
        config = await self.queue.configs.get(tenant_id, topic)
        if config is None:
            raise errors.NotFound(f"topic {topic!r} has no config")
        return config

    async def put_topic_config(self, tenant_id: int, topic: str, config: TopicConfig) -> TopicConfig:
        """Create or replace a topic's config; every instance uses it from its next operation on. A topic new to
        the tenant must fit its max_topics quota. Dead-letter topics take their topic's config."""
        check_topic(topic, for_enqueue=True)
        quotas = await self.queue.quotas.of(tenant_id) if self.queue.quotas is not None else NO_QUOTAS
        row = await self.messages.put_topic_config(tenant_id, topic, config, quotas.max_topics)
        if config.max_inflight is None:
            await self.messages.stop_counting(tenant_id, topic)
        await self.queue.configs.changed(tenant_id, topic)
        return TopicConfig(**dict(row))

    async def delete_topic_config(self, tenant_id: int, topic: str) -> None:
        check_topic(topic, for_enqueue=False)
        if not await self.messages.delete_topic_config(tenant_id, topic):
            raise errors.NotFound(f"topic {topic!r} has no config")
        await self.messages.stop_counting(tenant_id, topic)
        await self.queue.configs.changed(tenant_id, topic)

    async def topics(self, tenant_id: int) -> list[TopicSummaryView]:
        """Every topic with messages, a config, a pause or recent activity; one statement whatever their number."""
        fields = TopicConfig.__struct_fields__
        return [
            TopicSummaryView(
                topic=row["topic"],
                pending=row["pending"],
                processing=row["processing"],
                failed=row["failed"],
                expired=row["expired"],
                delayed=row["delayed"],
                oldest_pending_age_seconds=row["oldest_pending_age_seconds"],
                config=TopicConfig(**{f: row[f] for f in fields}) if row["configured"] else None,
                paused=row["paused"],
                enqueue_rate=row["enqueue_rate"],
                ack_rate=row["ack_rate"],
            )
            for row in await self.messages.topic_summaries(tenant_id)
        ]

    # --- pause and resume ---------------------------------------------------------------------------------------

    async def pause(self, tenant_id: int, topic: str, by: str) -> None:
        """Dequeues of the topic answer empty from now on, on every instance; enqueues go on."""
        check_topic(topic, for_enqueue=False)
        await self.repository.pause(tenant_id, topic, by)
        await self.queue.configs.changed(tenant_id, topic)

    async def resume(self, tenant_id: int, topic: str) -> None:
        """Dequeues take messages again; long polls waiting on the topic are woken."""
        check_topic(topic, for_enqueue=False)
        await self.repository.resume(tenant_id, topic)
        await self.queue.configs.changed(tenant_id, topic)
        self.queue.wakeups.published(tenant_id, [topic])

    # --- consumer groups ----------------------------------------------------------------------------------------

    async def create_group(self, tenant_id: int, topic: str, name: str, start: GroupStart) -> ConsumerGroupView:
        """A new consumer group of the topic: it receives every message enqueued from now on, and with `earliest`
        every one already pending or processing. From the first group on, the topic is consumed through groups."""
        _check_group_topic(topic)
        row = await self.repository.create_group(tenant_id, topic, name, start)
        if row is None:
            raise errors.GroupExists(f"topic {topic!r} already has a consumer group {name!r}")
        await self.queue.configs.changed(tenant_id, topic)
        self.queue.wakeups.published(tenant_id, [topic])  # waiting polls look again: earliest may have owed some
        return ConsumerGroupView(
            topic=topic, consumer_group=row["name"], start=row["start"], created_at=rfc3339(row["created_at"]) or ""
        )

    async def groups(self, tenant_id: int, topic: str) -> ConsumerGroupsView:
        check_topic(topic, for_enqueue=False)
        rows = await self.repository.groups(tenant_id, topic)
        stats = [ConsumerGroupStatsView(**dict(r)) for r in rows]  # the statement's columns are the view's fields
        return ConsumerGroupsView(items=[g.consumer_group for g in stats], groups=stats)

    async def delete_group(self, tenant_id: int, topic: str, name: str) -> None:
        """Delete a group: its deliveries go, and the messages no other group owes with them."""
        check_topic(topic, for_enqueue=False)
        group_id = await self.repository.delete_group(tenant_id, topic, name)
        if group_id is None:
            raise errors.NotFound(f"topic {topic!r} has no consumer group {name!r}")
        await self.queue.configs.changed(tenant_id, topic)
        if not await self._release(group_id, _RELEASE_BUDGET_SECONDS):  # a large group: the rest in the background
            task = asyncio.get_running_loop().create_task(self._release_rest(group_id))
            self._jobs.add(task)
            task.add_done_callback(self._jobs.discard)

    async def _release_rest(self, group_id: int) -> None:
        await self._release(group_id, None)

    async def _release(self, group_id: int, budget: float | None) -> bool:
        """Release what a deleted group owed, a batch at a time, within `budget` seconds (None: until done or
        only leased deliveries that stay locked are left: the group settler's next run takes those); whether
        all of it went."""
        loop = asyncio.get_running_loop()
        deadline = None if budget is None else loop.time() + budget
        tries = 0
        try:
            while True:
                if await self.repository.release_group(group_id, _RELEASE_BATCH):
                    if deadline is not None and loop.time() > deadline:
                        return False
                    continue
                if await self.repository.forget_group(group_id):
                    return True
                tries += 1  # only locked deliveries left (a group ack or nack in flight): a moment later
                if tries > 3 or deadline is not None:
                    return False
                await asyncio.sleep(1)
        except DATABASE_ERRORS as exc:
            log.warning("releasing deleted consumer group %s: %s (the group settler goes on)", group_id, exc)
            return False

    async def settings(self, tenant_id: int, topic: str) -> TopicSettingsView:
        """The topic's overrides, the global defaults and the values in force, from the config cache."""
        check_topic(topic, for_enqueue=False)
        configs = self.queue.configs
        overrides = await configs.get(tenant_id, topic)
        effective = await configs.effective(tenant_id, topic)
        return TopicSettingsView(
            topic=topic,
            paused=effective.paused,
            overrides=overrides,
            defaults=ConfigValuesView.of(configs.merge(None)),
            effective=ConfigValuesView.of(effective),
        )

    # --- pages --------------------------------------------------------------------------------------------------

    async def page(
        self,
        tenant_id: int,
        topic: str,
        where: MessageFilter,
        cursor: str | None,
        limit: int,
        *,
        reverse: bool = False,
    ) -> MessagePageView:
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
                next_cursor = _encode_cursor(phase, _position(phase, hits[-1], last=False), reverse)
                break
            if read == window:  # the window was full: more rows in this phase
                position = _position(phase, rows[0], last=True)
                next_cursor = _encode_cursor(phase, position, reverse)
                if scanned >= PAGE_SCAN:
                    break
                continue
            later = phases[phases.index(phase) + 1 :]
            if not later:
                next_cursor = None
                break
            phase, position = later[0], None
            next_cursor = _encode_cursor(phase, None, reverse)
        return MessagePageView(
            items=MessageView.from_rows(items, with_lease=False), next_cursor=next_cursor, scanned=scanned
        )

    # --- series -------------------------------------------------------------------------------------------------

    async def series(
        self, tenant_id: int, topic: str | None, minutes: int = 60, span: SeriesRange | None = None
    ) -> SeriesView:
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
        return SeriesView(topic=topic, step_seconds=step, points=points, range=span or "1h")

    async def _rolled_up(self, tenant_id: int, topic: str | None, span: SeriesRange) -> SeriesView:
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
        return SeriesView(topic=topic, step_seconds=step, points=points, range=span)

    # --- bulk actions -------------------------------------------------------------------------------------------

    async def bulk(
        self, tenant_id: int, topic: str, action: BulkAction, message_ids: Sequence[str]
    ) -> tuple[int, list[tuple[str, errors.SkiplockError]]]:
        """`action` on the chosen messages of `topic`: how many took it, and why each of the others did not (a
        deleted message is simply gone: delete reports no failures)."""
        check_topic(topic, for_enqueue=False)
        return await self._apply(tenant_id, topic, action, message_ids)

    async def _apply(
        self, tenant_id: int, topic: str, action: BulkAction, message_ids: Sequence[str]
    ) -> tuple[int, list[tuple[str, errors.SkiplockError]]]:
        if action == "delete":
            done = await self.queue.delete_many(tenant_id, topic, message_ids)
            return done, []
        one = self.queue.retry if action == "retry" else self.queue.requeue
        belongs = await self.queue.repository.topics(tenant_id, [i for i in map(parse_uuid, message_ids) if i])
        failures: list[tuple[str, errors.SkiplockError]] = []
        done = 0
        for message_id in message_ids:
            mid = parse_uuid(message_id)
            if mid is None or (belongs.get(mid) or ("",))[0] != topic:
                failures.append((message_id, errors.MessageNotFound()))
                continue
            try:
                await one(tenant_id, message_id)
                done += 1
            except errors.SkiplockError as exc:
                failures.append((message_id, exc))
        return done, failures

    async def start_bulk_job(
        self, tenant_id: int, topic: str, action: BulkAction, where: MessageFilter, by: str
    ) -> BulkJobView:
        """`action` on every message of `topic` matching `where`, in batches, in the background of this process."""
        check_topic(topic, for_enqueue=False)
        where.check()
        job_id = uuid.uuid4()
        await self.repository.create_bulk_job(tenant_id, job_id, topic, action, msgspec.json.encode(where).decode(), by)
        task = asyncio.get_running_loop().create_task(self._run_job(tenant_id, job_id, topic, action, where))
        self._jobs.add(task)
        task.add_done_callback(self._jobs.discard)
        return await self.bulk_job(tenant_id, str(job_id))

    async def _run_job(
        self, tenant_id: int, job_id: uuid.UUID, topic: str, action: BulkAction, where: MessageFilter
    ) -> None:
        cursor: str | None = None
        try:
            while True:
                page = await self.page(tenant_id, topic, where, cursor, _JOB_BATCH)
                ids = [m.id for m in page.items]
                done, _ = await self._apply(tenant_id, topic, action, ids) if ids else (0, [])
                state = await self.repository.bulk_progress(tenant_id, job_id, len(ids), done, len(ids) - done)
                if state != "running":
                    return
                if page.next_cursor is None:
                    await self.repository.finish_bulk_job(tenant_id, job_id, "done", None)
                    return
                cursor = page.next_cursor
        except asyncio.CancelledError:
            raise
        except _JOB_FAILURES as exc:
            log.warning("bulk job %s failed: %s", job_id, exc)
            await self.repository.finish_bulk_job(tenant_id, job_id, "failed", str(exc))

    async def bulk_job(self, tenant_id: int, job_id: str) -> BulkJobView:
        mid = parse_uuid(job_id)
        row = await self.repository.bulk_job(tenant_id, mid) if mid is not None else None
        if row is None:
            raise errors.NotFound("no such bulk job")
        return _job_view(row)

    async def bulk_jobs(self, tenant_id: int) -> list[BulkJobView]:
        return [_job_view(r) for r in await self.repository.bulk_jobs(tenant_id)]

    async def cancel_bulk_job(self, tenant_id: int, job_id: str) -> BulkJobView:
        """Ask a running job to stop after its current batch."""
        mid = parse_uuid(job_id)
        if mid is not None:
            await self.repository.cancel_bulk_job(tenant_id, mid)
        return await self.bulk_job(tenant_id, job_id)

    async def close(self) -> None:
        """Stop this process's jobs (they show as interrupted)."""
        for task in list(self._jobs):
            task.cancel()
        if self._jobs:
            await asyncio.gather(*self._jobs, return_exceptions=True)

    # --- tenants' usage -----------------------------------------------------------------------------------------

    async def usage(self) -> dict[str, tuple[int, int]]:
        """Topics and messages per tenant slug, as the gauge job last counted them."""
        return {r["tenant"]: (r["topics"], r["messages"]) for r in await self.repository.usage()}


def _job_view(row: Record) -> BulkJobView:
    state = row["state"]
    if state == "running" and row["idle_seconds"] > _JOB_IDLE_SECONDS:
        state = "interrupted"
    return BulkJobView(
        id=row["id"],
        topic=row["topic"],
        action=row["action"],
        filter=msgspec.json.decode(row["filter"], type=MessageFilter),
        state=state,
        matched=row["matched"],
        done=row["done"],
        skipped=row["skipped"],
        error=row["error"],
        created_by=row["created_by"],
        created_at=_iso(row["created_at"]),
        updated_at=_iso(row["updated_at"]),
    )


def _point(
    mark: int, depth: Record | None, counts: list[int], step: int, oldest: float | None = None
) -> SeriesPointView:
    return SeriesPointView(
        at=_iso(mark),
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


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(epoch * 1000) % 1000:03d}Z"


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


def _encode_cursor(phase: str, position: Position, reverse: bool) -> str:
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


def _check_group_topic(topic: str) -> None:
    """Groups belong to topics that take enqueues: not to a dead-letter topic."""
    check_topic(topic, for_enqueue=True)
