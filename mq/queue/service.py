"""Queue semantics (seed 004 and the contract's data plane) on top of `MessageRepository`.

Validates what the HTTP layer cannot (sizes, reserved topics, text Postgres cannot store), resolves topic
configuration, and maps "no row matched" to the right domain error. Raises only `mq.errors`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

import asyncpg
import msgspec

from mq import errors
from mq.ids import uuid7_batch
from mq.queue.coalescer import Coalescer
from mq.queue.configs import TopicConfigs
from mq.queue.repository import MessageRepository
from mq.queue.types import (
    DLQ_SUFFIX,
    MAX_ERROR_LENGTH,
    MAX_KEY_LENGTH,
    STATUSES,
    TOPIC_RE,
    AckResult,
    BatchAckOutcome,
    EnqueueItem,
    MessageView,
    TopicSummary,
    parse_uuid,
    parse_uuids,
)
from mq.queue.wakeups import WakeupHub
from mq.settings import Settings


class _Insert(NamedTuple):
    """An enqueue request (one message or a batch) waiting to be written with others."""

    tenant_id: int
    items: Sequence[EnqueueItem]
    max_retries: Sequence[int]
    ttls: Sequence[int]


class _Ack(NamedTuple):
    """An ack request (one message or a batch) waiting to be written with others."""

    tenant_id: int
    ids: Sequence[uuid.UUID]
    receipts: Sequence[uuid.UUID | None]


class _Dequeue(NamedTuple):
    """A dequeue waiting to share a statement with others of the same topic."""

    tenant_id: int
    topic: str
    limit: int
    visibility: int


def _in_queue_order(rows: Sequence[Any]) -> list[Any]:
    """UPDATE ... RETURNING gives rows in no particular order: highest priority first, then oldest."""
    return sorted(rows, key=lambda r: (-r["priority"], r["id"]))


_NOT_RUN = RuntimeError("not written")  # placeholder, replaced for every item of a flush
# From this many rows, a batch without keys, delays or TTLs is written by COPY; below, COPY's fixed cost is more
# than what it saves.
_COPY_MIN_ROWS = 16

# A long poll looks again at least this often even without a wake-up, in case a notification was lost while the
# listening connection reconnected.
_LONG_POLL_RECHECK_SECONDS = 5.0
# A message can be available yet not taken: another dequeue holds its row lock until it commits. Sleep at least
# this long then, instead of spinning on it.
_LONG_POLL_MIN_SLEEP_SECONDS = 0.05


def check_text(value: str, field: str) -> None:
    """Postgres text holds neither NUL nor lone surrogates: refuse them as bad input, not a server error."""
    if "\x00" in value:
        raise errors.InvalidRequest(f"{field} must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise errors.InvalidRequest(f"{field} is not valid Unicode") from None


@functools.lru_cache(maxsize=4096)  # a batch names the same topic on every item; invalid names raise, uncached
def check_topic(topic: str, *, for_enqueue: bool) -> None:
    if not TOPIC_RE.match(topic):
        raise errors.InvalidRequest("topic must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
    if for_enqueue and topic.endswith(DLQ_SUFFIX):
        raise errors.ReservedTopic(f"{topic!r} is a dead-letter topic; enqueue into {topic[:-4]!r} instead")


class QueueService:
    def __init__(
        self, repository: MessageRepository, configs: TopicConfigs, wakeups: WakeupHub, settings: Settings
    ) -> None:
        self.repository = repository
        self.configs = configs
        self.wakeups = wakeups
        self.settings = settings
        # Requests that arrive together share statements (see `Coalescer`); a flush holds at most max_batch_size rows.
        in_flight, rows = settings.coalesce_max_in_flight, settings.max_batch_size
        self._inserts = Coalescer(
            self._insert_many, max_batch=rows, max_in_flight=in_flight, weight=lambda i: len(i.items)
        )
        self._acks = Coalescer(self._ack_many, max_batch=rows, max_in_flight=in_flight, weight=lambda a: len(a.ids))
        self._dequeues = Coalescer(
            self._dequeue_many, max_batch=rows, max_in_flight=in_flight, weight=lambda d: d.limit
        )

    # --- enqueue -----------------------------------------------------------------------------------------------

    def build_item(
        self,
        topic: str,
        payload: bytes,
        metadata: dict[str, Any] | None = None,
        key: str | None = None,
        delay_seconds: float = 0,
        priority: int = 0,
    ) -> EnqueueItem:
        """A validated message; raises InvalidRequest, ReservedTopic or PayloadTooLarge."""
        check_topic(topic, for_enqueue=True)
        if len(payload) > self.settings.max_payload_bytes:
            raise errors.PayloadTooLarge(
                f"payload is {len(payload)} bytes; the limit is {self.settings.max_payload_bytes}"
            )
        metadata_json = None
        if metadata is not None:
            try:
                encoded = msgspec.json.encode(metadata)
            except (msgspec.EncodeError, UnicodeEncodeError):
                raise errors.InvalidRequest("metadata is not valid Unicode JSON") from None
            if len(encoded) > self.settings.max_metadata_bytes:
                raise errors.InvalidRequest(
                    f"metadata is {len(encoded)} bytes as JSON; the limit is {self.settings.max_metadata_bytes}"
                )
            metadata_json = encoded.decode()
            check_text(metadata_json, "metadata")
            if "\\u0000" in metadata_json:
                raise errors.InvalidRequest("metadata must not contain NUL characters")
        if key is not None:
            if not key or len(key) > MAX_KEY_LENGTH:
                raise errors.InvalidRequest(f"key must be 1 to {MAX_KEY_LENGTH} characters")
            check_text(key, "key")
        return EnqueueItem(
            topic=topic,
            payload=payload,
            metadata_json=metadata_json,
            key=key,
            delay_seconds=delay_seconds,
            priority=priority,
        )

    async def enqueue(self, tenant_id: int, item: EnqueueItem) -> tuple[uuid.UUID, bool]:
        """Store one message; returns its id and whether it was new (False: a pending twin was updated).
        Concurrent enqueues share one statement (see `Coalescer`); this returns once the row is committed."""
        config = await self.configs.effective(tenant_id, item.topic)
        [(message_id, inserted)] = await self._inserts.submit(
            _Insert(tenant_id, [item], [config.max_retries], [config.message_ttl_seconds])
        )
        if item.delay_seconds <= 0:
            self.wakeups.published(tenant_id, [item.topic])
        return message_id, inserted

    async def enqueue_batch(self, tenant_id: int, items: Sequence[EnqueueItem]) -> list[uuid.UUID]:
        """Store all or none, in one statement; ids in input order. Items sharing a (topic, key) fold into one
        message holding the last one's content, as consecutive single enqueues would."""
        configs = {topic: await self.configs.effective(tenant_id, topic) for topic in {i.topic for i in items}}
        stored = await self._inserts.submit(
            _Insert(
                tenant_id,
                items,
                [configs[i.topic].max_retries for i in items],
                [configs[i.topic].message_ttl_seconds for i in items],
            )
        )
        self.wakeups.published(tenant_id, {i.topic for i in items if i.delay_seconds <= 0})
        return [message_id for message_id, _ in stored]

    async def _insert_many(self, inserts: Sequence[_Insert]) -> list[list[tuple[uuid.UUID, bool]]]:
        """Coalesced enqueue requests: one statement per tenant among them, results split back per request."""
        results: list[list[tuple[uuid.UUID, bool]]] = [[] for _ in inserts]
        by_tenant: dict[int, list[int]] = {}
        for index, insert in enumerate(inserts):
            by_tenant.setdefault(insert.tenant_id, []).append(index)
        for tenant_id, indexes in by_tenant.items():
            chosen = [inserts[i] for i in indexes]
            stored = await self._store(
                tenant_id,
                [item for c in chosen for item in c.items],
                [m for c in chosen for m in c.max_retries],
                [t for c in chosen for t in c.ttls],
            )
            start = 0
            for index, insert in zip(indexes, chosen, strict=True):
                results[index] = stored[start : start + len(insert.items)]
                start += len(insert.items)
        return results

    async def _store(
        self, tenant_id: int, items: Sequence[EnqueueItem], max_retries: Sequence[int], ttls: Sequence[int]
    ) -> list[tuple[uuid.UUID, bool]]:
        """Insert in one statement; per input item, its message id and whether the row is new. Items sharing a
        (topic, key) fold into one row with the last one's content (ON CONFLICT cannot touch a row twice)."""
        if (
            len(items) >= _COPY_MIN_ROWS
            and not any(ttls)
            and all(item.key is None and item.delay_seconds <= 0 for item in items)
        ):
            ids = uuid7_batch(len(items))
            await self.repository.copy_batch(tenant_id, ids, items, max_retries)
            return [(message_id, True) for message_id in ids]
        rows: list[int] = []  # input positions that become rows
        row_of_key: dict[tuple[str, str], int] = {}
        slot: list[int] = []  # input position -> index in rows
        folded = list(items)
        for position, item in enumerate(items):
            if item.key is not None:
                seen = row_of_key.get((item.topic, item.key))
                if seen is not None:
                    first = rows[seen]
                    folded[first] = msgspec.structs.replace(
                        folded[first], payload=item.payload, metadata_json=item.metadata_json
                    )
                    slot.append(seen)
                    continue
                row_of_key[(item.topic, item.key)] = len(rows)
            slot.append(len(rows))
            rows.append(position)
        ids = uuid7_batch(len(rows))
        result = await self.repository.insert_batch(
            tenant_id, ids, [folded[p] for p in rows], [max_retries[p] for p in rows], [ttls[p] for p in rows]
        )
        # A keyed row may have been upserted into an existing message: its id is the stored one.
        by_key = {(r["topic"], r["key"]): (r["id"], r["inserted"]) for r in result if r["key"] is not None}
        per_row = [
            by_key[(items[p].topic, items[p].key)] if items[p].key is not None else (ids[n], True)
            for n, p in enumerate(rows)
        ]
        first_slot: set[int] = set()
        outcomes: list[tuple[uuid.UUID, bool]] = []
        for row in slot:
            message_id, inserted = per_row[row]
            outcomes.append((message_id, inserted and row not in first_slot))
            first_slot.add(row)
        return outcomes

    # --- consume -----------------------------------------------------------------------------------------------

    async def dequeue(
        self, tenant_id: int, topic: str, count: int, visibility_timeout_seconds: int | None, wait_seconds: float
    ) -> list[MessageView]:
        check_topic(topic, for_enqueue=False)
        config = await self.configs.effective(tenant_id, topic)
        visibility = visibility_timeout_seconds or config.visibility_timeout_seconds
        if wait_seconds <= 0:
            return self._views(await self._dequeues.submit(_Dequeue(tenant_id, topic, count, visibility)))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        with self.wakeups.waiter(tenant_id, topic) as woken:
            while True:
                woken.clear()
                rows = await self._dequeues.submit(_Dequeue(tenant_id, topic, count, visibility))
                remaining = deadline - loop.time()
                if rows or remaining <= 0:
                    return self._views(rows)
                until_next = await self.repository.seconds_until_next_available(tenant_id, topic)
                timeout = min(remaining, _LONG_POLL_RECHECK_SECONDS)
                if until_next is not None:
                    timeout = min(timeout, max(until_next, _LONG_POLL_MIN_SLEEP_SECONDS))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), timeout)
                if self.wakeups.closing:
                    return []

    async def _dequeue_many(self, dequeues: Sequence[_Dequeue]) -> list[list[Any]]:
        """The coalesced dequeues: one statement per (tenant, topic, visibility) among them, for the sum of their
        counts; the leased rows are dealt out in priority order, first come first served."""
        groups: dict[tuple[int, str, int], list[int]] = {}
        for index, d in enumerate(dequeues):
            groups.setdefault((d.tenant_id, d.topic, d.visibility), []).append(index)
        results: list[list[Any]] = [[] for _ in dequeues]
        for (tenant_id, topic, visibility), indexes in groups.items():
            wanted = sum(dequeues[i].limit for i in indexes)
            rows = _in_queue_order(await self.repository.dequeue(tenant_id, topic, wanted, visibility))
            start = 0
            for i in indexes:
                results[i] = rows[start : start + dequeues[i].limit]
                start += dequeues[i].limit
        return results

    @staticmethod
    def _views(rows: Sequence[Any]) -> list[MessageView]:
        return MessageView.from_rows(_in_queue_order(rows), with_lease=True)

    async def ack(self, tenant_id: int, message_id: str, receipt: str | None) -> None:
        """Delete a processing message. Concurrent acks share one statement (see `Coalescer`)."""
        mid, rec = _ids(message_id, receipt)
        if mid is not None and (await self._acks.submit(_Ack(tenant_id, [mid], [rec])))[0]:
            return
        await self._raise_lease_error(tenant_id, mid, receipt)

    async def _ack_many(self, acks: Sequence[_Ack]) -> list[list[bool]]:
        """Coalesced ack requests: per requested id, whether it deleted its message. Of two acks of one message,
        only the first succeeds, as if they had run one after the other."""
        deleted: set[uuid.UUID] = set()
        for tenant_id in {a.tenant_id for a in acks}:
            mine = [a for a in acks if a.tenant_id == tenant_id]
            deleted |= await self.repository.ack_batch(
                tenant_id, [m for a in mine for m in a.ids], [r for a in mine for r in a.receipts]
            )
        results = []
        for ack in acks:
            claimed = []
            for mid in ack.ids:
                claimed.append(mid in deleted)
                deleted.discard(mid)
            results.append(claimed)
        return results

    async def ack_batch(self, tenant_id: int, acks: Sequence[tuple[str, str | None]]) -> BatchAckOutcome:
        failed: list[AckResult] = []
        ids: list[uuid.UUID] = []
        receipts: list[uuid.UUID | None] = []
        parsed_ids = parse_uuids([m for m, _ in acks])
        parsed_receipts = parse_uuids([r for _, r in acks if r is not None])
        given = iter(parsed_receipts)
        for (message_id, receipt), mid in zip(acks, parsed_ids, strict=True):
            rec = None if receipt is None else (next(given) or _NO_RECEIPT_MATCHES)
            if mid is None:
                failed.append(AckResult(id=message_id, code="message_not_found"))
            else:
                ids.append(mid)
                receipts.append(rec)
        claimed = await self._acks.submit(_Ack(tenant_id, ids, receipts)) if ids else []
        acked = sum(claimed)
        missed = [(mid, rec) for mid, rec, ok in zip(ids, receipts, claimed, strict=True) if not ok]
        if missed:  # a second round trip only to explain failures
            statuses = await self.repository.statuses(tenant_id, [mid for mid, _ in missed])
            for mid, rec in missed:
                code = _lease_error_code(statuses.get(mid), with_receipt=rec is not None)
                failed.append(AckResult(id=str(mid), code=code))
        return BatchAckOutcome(acked=acked, failed=failed)

    async def nack(
        self, tenant_id: int, message_id: str, receipt: str | None, error: str | None, delay_seconds: float | None
    ) -> str:
        """Returns the outcome: retry, dlq or failed."""
        mid, rec = _ids(message_id, receipt)
        if error is not None:
            error = error[:MAX_ERROR_LENGTH]
            check_text(error, "error")
        if mid is None:
            raise errors.MessageNotFound()
        try:
            row = await self.repository.nack(
                tenant_id,
                mid,
                rec,
                error,
                self.settings.dlq_enabled,
                delay_seconds,
                self.settings.retry_backoff_seconds,
            )
        except asyncpg.UniqueViolationError:
            # A newer pending message with the same key exists: it supersedes this one (see docs/semantics.md).
            if await self.repository.delete_superseded(tenant_id, mid, rec) is None:
                await self._raise_lease_error(tenant_id, mid, receipt)
            return "retry"
        if row is None:
            await self._raise_lease_error(tenant_id, mid, receipt)
            raise AssertionError  # unreachable: the call above always raises
        outcome: str = row["outcome"]
        if outcome != "failed" and (outcome == "dlq" or not delay_seconds):
            self.wakeups.published(tenant_id, [row["topic"]])
        return outcome

    async def extend(self, tenant_id: int, message_id: str, receipt: str | None, seconds: int) -> str:
        mid, rec = _ids(message_id, receipt)
        if mid is not None:
            deadline = await self.repository.extend(tenant_id, mid, rec, seconds)
            if deadline is not None:
                return deadline.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        await self._raise_lease_error(tenant_id, mid, receipt)
        raise AssertionError

    async def _raise_lease_error(self, tenant_id: int, mid: uuid.UUID | None, receipt: str | None) -> None:
        """After an ack, nack or extend matched nothing: 404 if there is no such processing message, 409 if a
        receipt was given and the message is leased to a later dequeue (or was released since)."""
        probe = await self.repository.lease_probe(tenant_id, mid) if mid is not None else None
        status = probe["status"] if probe is not None else None
        if _lease_error_code(status, with_receipt=receipt is not None) == "lease_lost":
            raise errors.LeaseLost()
        if status is None:
            raise errors.MessageNotFound()
        raise errors.MessageNotFound(f"message is {status}, not processing")

    # --- dead letters ------------------------------------------------------------------------------------------

    async def requeue(self, tenant_id: int, message_id: str) -> None:
        mid, _ = _ids(message_id, None)
        if mid is None:
            raise errors.MessageNotFound()
        try:
            topic = await self.repository.requeue(tenant_id, mid, self.settings.max_retries)
        except asyncpg.UniqueViolationError:
            raise errors.KeyConflict("the original topic holds a pending message with the same key") from None
        if topic is not None:
            self.wakeups.published(tenant_id, [topic])
            return
        probe = await self.repository.lease_probe(tenant_id, mid)
        if probe is None:
            raise errors.MessageNotFound()
        row = await self.repository.get(tenant_id, mid)
        if row is not None and row["original_topic"] is None:
            raise errors.InvalidRequest("message is not in a dead-letter topic")
        raise errors.LeaseLost("message is being processed by a consumer; requeue it after it is released")

    async def requeue_topic(self, tenant_id: int, topic: str) -> int:
        """Every pending message of `<topic>.dlq` back to `<topic>`. Either name is accepted."""
        check_topic(topic, for_enqueue=False)
        base = topic[: -len(DLQ_SUFFIX)] if topic.endswith(DLQ_SUFFIX) else topic
        count = await self.repository.requeue_topic(tenant_id, base + DLQ_SUFFIX, self.settings.max_retries)
        if count:
            self.wakeups.published(tenant_id, [base])
        return count

    # --- browse and admin --------------------------------------------------------------------------------------

    async def get(self, tenant_id: int, message_id: str) -> MessageView:
        mid, _ = _ids(message_id, None)
        row = await self.repository.get(tenant_id, mid) if mid is not None else None
        if row is None:
            raise errors.MessageNotFound()
        return MessageView.from_row(row, with_lease=False)

    async def delete(self, tenant_id: int, message_id: str) -> None:
        mid, _ = _ids(message_id, None)
        if mid is None or not await self.repository.delete(tenant_id, mid):
            raise errors.MessageNotFound()

    async def browse(
        self, tenant_id: int, topic: str | None, status: str | None, key: str | None, limit: int, offset: int
    ) -> tuple[list[MessageView], int]:
        if topic is not None:
            check_topic(topic, for_enqueue=False)
        if status is not None and status not in STATUSES:
            raise errors.InvalidRequest(f"status must be one of {', '.join(STATUSES)}")
        if key is not None:
            check_text(key, "key")
        rows, total = await self.repository.browse(tenant_id, topic, status, key, limit, offset)
        return MessageView.from_rows(rows, with_lease=False), total

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

    async def stats(self, tenant_id: int) -> list[dict[str, Any]]:
        return [dict(r) for r in await self.repository.stats(tenant_id)]

    async def topics(self, tenant_id: int) -> list[TopicSummary]:
        rows = await self.repository.topic_summaries(tenant_id)
        result = []
        for row in rows:
            config = await self.configs.get(tenant_id, row["topic"])
            result.append(TopicSummary(config=config, **dict(row)))
        return result


_NO_RECEIPT_MATCHES = uuid.UUID(int=0)  # stands for a receipt that is not a UUID: it matches no lease


def _ids(message_id: str | None, receipt: str | None) -> tuple[uuid.UUID | None, uuid.UUID | None]:
    """Parse ids from the URL or body. An id that is not a UUID matches no message (404), never a 500; a receipt
    that is not one matches no lease (409)."""
    rec = None if receipt is None else (parse_uuid(receipt) or _NO_RECEIPT_MATCHES)
    return parse_uuid(message_id), rec


def _lease_error_code(status: str | None, *, with_receipt: bool) -> str:
    """Why an ack, nack or extend failed: the message is gone or not leased (404), or a receipt was given and the
    message was leased again or released since (409)."""
    if status is not None and with_receipt and status in ("processing", "pending"):
        return "lease_lost"
    return "message_not_found"
