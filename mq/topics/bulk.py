"""Actions on many of a topic's messages: chosen ones (`apply`), every one matching a filter in a background job
(`start_job`, in batches of the browser's pages), purge, delete by key, and a DLQ requeued to its topic. Raises only
`mq.errors`."""

from __future__ import annotations

import asyncio
import collections
import logging
import time
import uuid
from collections.abc import Sequence

import msgspec

from mq import errors
from mq.db.engine import DATABASE_ERRORS
from mq.names import DLQ_SUFFIX, check_text
from mq.queue.service import QueueService
from mq.queue.types import STATUSES, parse_uuid
from mq.queue.validation import check_topic
from mq.topics.browsing import MessageBrowser
from mq.topics.repository import Record, TopicRepository
from mq.topics.types import BulkAction, BulkJob, MessageFilter

log = logging.getLogger(__name__)

#: A bulk job's batch: one page of ids, then one action on them.
_JOB_BATCH = 500
#: What ends a bulk job as failed (a refusal, or the database away), rather than the process.
_JOB_FAILURES: tuple[type[Exception], ...] = (errors.SkiplockError, *DATABASE_ERRORS)
#: A running job not heard of for this long died with its instance.
_JOB_IDLE_SECONDS = 60.0


class BulkActions:
    def __init__(self, repository: TopicRepository, queue: QueueService, browser: MessageBrowser) -> None:
        self.repository = repository
        self.queue = queue
        self.browser = browser
        self._jobs: set[asyncio.Task[None]] = set()

    async def apply(
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

    async def start_job(
        self,
        tenant_id: int,
        topic: str,
        action: BulkAction,
        where: MessageFilter,
        by: str,
        rate_per_second: int | None = None,
    ) -> BulkJob:
        """`action` on every message of `topic` matching `where`, in batches, in the background of this process;
        at most `rate_per_second` messages a second (None: as fast as it goes)."""
        check_topic(topic, for_enqueue=False)
        where.check()
        job_id = uuid.uuid4()
        await self.repository.create_bulk_job(
            tenant_id, job_id, topic, action, msgspec.json.encode(where).decode(), by, rate_per_second
        )
        task = asyncio.get_running_loop().create_task(
            self._run_job(tenant_id, job_id, topic, action, where, rate_per_second)
        )
        self._jobs.add(task)
        task.add_done_callback(self._jobs.discard)
        return await self.job(tenant_id, str(job_id))

    async def _run_job(
        self,
        tenant_id: int,
        job_id: uuid.UUID,
        topic: str,
        action: BulkAction,
        where: MessageFilter,
        rate_per_second: int | None = None,
    ) -> None:
        cursor: str | None = None
        skipped_by: collections.Counter[str] = collections.Counter()
        # paced: batches of at most a second's worth, each started no sooner than the rate allows
        batch = _JOB_BATCH if rate_per_second is None else max(1, min(_JOB_BATCH, rate_per_second))
        started, taken = time.monotonic(), 0
        metrics = self.queue.metrics
        metrics.bulk_jobs_running.inc()
        try:
            while True:
                if rate_per_second is not None and (wait := started + taken / rate_per_second - time.monotonic()) > 0:
                    await asyncio.sleep(wait)
                page = await self.browser.page(tenant_id, topic, where, cursor, batch)
                taken += len(page.rows)
                ids = [m["id"] for m in page.rows]
                done, failures = await self._apply(tenant_id, topic, action, ids) if ids else (0, [])
                skipped_by.update(exc.code for _, exc in failures)
                if gone := len(ids) - done - len(failures):  # a delete's: gone meanwhile (no failure reported)
                    skipped_by[errors.MessageNotFound.code] += gone
                state = await self.repository.bulk_progress(
                    tenant_id, job_id, len(ids), done, len(ids) - done, msgspec.json.encode(skipped_by).decode()
                )
                metrics.count(metrics.bulk_messages, tenant_id, topic, done, action, "done")
                metrics.count(metrics.bulk_messages, tenant_id, topic, len(ids) - done, action, "skipped")
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
        finally:
            metrics.bulk_jobs_running.dec()

    async def job(self, tenant_id: int, job_id: str) -> BulkJob:
        mid = parse_uuid(job_id)
        row = await self.repository.bulk_job(tenant_id, mid) if mid is not None else None
        if row is None:
            raise errors.NotFound("no such bulk job")
        return _job(row)

    async def jobs(self, tenant_id: int) -> list[BulkJob]:
        return [_job(r) for r in await self.repository.bulk_jobs(tenant_id)]

    async def cancel_job(self, tenant_id: int, job_id: str) -> BulkJob:
        """Ask a running job to stop after its current batch."""
        mid = parse_uuid(job_id)
        if mid is not None:
            await self.repository.cancel_bulk_job(tenant_id, mid)
        return await self.job(tenant_id, job_id)

    async def close(self) -> None:
        """Stop this process's jobs (they show as interrupted)."""
        for task in list(self._jobs):
            task.cancel()
        if self._jobs:
            await asyncio.gather(*self._jobs, return_exceptions=True)

    async def purge(self, tenant_id: int, topic: str, statuses: Sequence[str] | None) -> int:
        check_topic(topic, for_enqueue=False)
        for status in statuses or ():
            if status not in STATUSES:
                raise errors.InvalidRequest(f"status must be one of {', '.join(STATUSES)}")
        return await self.repository.purge(tenant_id, topic, statuses)

    async def delete_by_key(self, tenant_id: int, topic: str, key: str) -> int:
        check_topic(topic, for_enqueue=False)
        check_text(key, "key")
        return await self.repository.delete_by_key(tenant_id, topic, key)

    async def requeue_dlq(self, tenant_id: int, topic: str, groups: frozenset[str] | None = None) -> int:
        """Every pending message of `<topic>.dlq` back to `<topic>`. Either name is accepted. `groups`: the caller
        is pinned to those consumer groups (Forbidden when the DLQ holds dead letters of others)."""
        check_topic(topic, for_enqueue=False)
        base = topic[: -len(DLQ_SUFFIX)] if topic.endswith(DLQ_SUFFIX) else topic
        cap = self.queue.depth_cap_of(tenant_id)
        pinned = sorted(groups) if groups is not None else None
        count = await self.queue.repository.requeue_topic(tenant_id, base + DLQ_SUFFIX, base, cap, pinned)
        if count:
            self.queue.metrics.count(self.queue.metrics.requeued, tenant_id, base, count)
            self.queue.wakeups.published(tenant_id, {base: count})
        return count


def _job(row: Record) -> BulkJob:
    state = row["state"]
    if state == "running" and row["idle_seconds"] > _JOB_IDLE_SECONDS:
        state = "interrupted"
    return BulkJob(
        id=row["id"],
        topic=row["topic"],
        action=row["action"],
        filter=msgspec.json.decode(row["filter"], type=MessageFilter),
        state=state,
        matched=row["matched"],
        done=row["done"],
        skipped=row["skipped"],
        skipped_by=msgspec.json.decode(row["skipped_by"]),
        error=row["error"],
        created_by=row["created_by"],
        rate_per_second=row["rate_per_second"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )
