"""Statements shared by requests that arrive together: enqueues, acks, and dequeues of one topic.

`SharedStatements` puts each kind of write behind a `Coalescer`: what arrives while a statement is running goes
into the next one, and each request gets back exactly its own part. Semantics are those of running the requests
one after the other, in arrival order.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any, NamedTuple, TypeVar, cast

import msgspec

from mq.faults import is_dependency_fault
from mq.ids import uuid7_batch
from mq.queue.admission import NO_CAPS, Caps
from mq.queue.coalescer import Coalescer
from mq.queue.fairness import TenantGate
from mq.queue.repository import MessageRepository
from mq.queue.types import PLAIN, DeadLettered, DeliveryPlan, Lease, NewRow
from mq.settings import Settings

Request = TypeVar("Request")
Outcome = TypeVar("Outcome")
Flush = TypeVar("Flush", bound=Callable[..., Awaitable[Any]])


def _timed(statement: str) -> Callable[[Flush], Flush]:
    """A flush method that tells its `SharedStatements`' `timed` how long it took (the statement's time, as a
    metric: `skiplock_db_statement_duration_seconds`). Two clock reads per flush, not per request."""

    def wrap(flush: Flush) -> Flush:
        async def timed(self: SharedStatements, batch: Sequence[Any]) -> Any:
            started = time.perf_counter()
            try:
                return await flush(self, batch)
            finally:
                self.timed(statement, time.perf_counter() - started)

        return cast(Flush, timed)

    return wrap


class _Insert(NamedTuple):
    """An enqueue request (one message or a batch) waiting to be written with others."""

    tenant_id: int
    rows: Sequence[NewRow]
    caps: Caps


class _Ack(NamedTuple):
    """An ack request (one message or a batch) waiting to be written with others."""

    tenant_id: int
    ids: Sequence[uuid.UUID]
    receipts: Sequence[uuid.UUID | None]
    #: the consumer group whose deliveries are acknowledged (a grouped plan); None: the messages themselves
    group: str | None = None
    #: the ack's statement (`mq.queue.sql.settle`): the tenant's replayable and limited topics, a group's
    plan: DeliveryPlan = PLAIN


def split(results: Sequence[Outcome], sizes: Sequence[int]) -> list[list[Outcome]]:
    """A shared statement's results dealt back to its requests, in order: the first `sizes[0]` to the first, and so
    on (a dequeue's part may come up short when fewer rows were found)."""
    parts, start = [], 0
    for size in sizes:
        parts.append(list(results[start : start + size]))
        start += size
    return parts


def in_queue_order(rows: Sequence[Any]) -> list[Any]:
    """UPDATE ... RETURNING gives rows in no particular order: highest priority first, then oldest."""
    return sorted(rows, key=lambda r: (-r["priority"], r["id"]))


# From this many rows, a batch without keys, delays or TTLs is written by COPY; below, COPY's fixed cost is more
# than what it saves.
_COPY_MIN_ROWS = 16
# A request of at least this many rows is a batch already: it runs its own statement at once, beside the others,
# rather than queueing behind the one coalesced statement in flight. Concurrent batches then overlap their
# commits, as separate clients would; funnelled through one statement at a time they waited for each other's
# WAL flush and left both cores half idle.
_ALONE_MIN_ROWS = 32
# While other tenants are active, a dequeue answers at most this many messages: leasing 1,000 rows holds a core for
# tens of milliseconds, and encoding them holds the event loop, while another tenant's requests wait (on 2 cores, the
# quiet tenant's p99 in `make loadtest-fairness` went from 3.0x to 2.2x of alone with dequeues of 100).
_SHARED_MAX_ROWS = 100


class StaleReceipt:
    """An ack's outcome when the message was acknowledged in the same statement by the holder of its current
    lease, and this ack's receipt was an older one: `lease_lost`, as for a single ack with a stale receipt."""


STALE_RECEIPT = StaleReceipt()

#: Per acknowledged id: the topic of the message this ack deleted, `STALE_RECEIPT`, or None (not acknowledged).
AckOutcome = str | StaleReceipt | None


class SharedStatements:
    def __init__(
        self,
        repository: MessageRepository,
        settings: Settings,
        dead_lettered: Callable[[int, list[DeadLettered]], None] = lambda _tenant, _dead: None,
        timed: Callable[[str, float], None] = lambda _statement, _seconds: None,
    ) -> None:
        """`dead_lettered` hears of messages a dequeue took only to dead-letter them (lapsed too often); `timed` of
        each flush's kind (enqueue, dequeue, ack) and how long it took."""
        self.repository = repository
        self._dead_lettered = dead_lettered
        self.timed = timed
        # A flush holds at most max_batch_size rows; coalesce_max_in_flight flushes of a kind run at once.
        in_flight, rows = settings.coalesce_max_in_flight, settings.max_batch_size
        self._inserts = Coalescer(
            self._insert_many, max_batch=rows, max_in_flight=in_flight, weight=lambda i: len(i.rows)
        )
        self._acks = Coalescer(self._ack_many, max_batch=rows, max_in_flight=in_flight, weight=lambda a: len(a.ids))
        self._dequeues = Coalescer(
            self._dequeue_many, max_batch=rows, max_in_flight=in_flight, weight=lambda d: d.limit
        )
        # Requests that run alone (batches) take one of their tenant's slots: see mq/queue/fairness.py.
        self._gate = TenantGate(settings.tenant_max_statements, enqueue_rate=settings.tenant_enqueue_rate)

    async def insert(
        self, tenant_id: int, rows: Sequence[NewRow], caps: Caps = NO_CAPS
    ) -> list[tuple[uuid.UUID, bool]]:
        """Store messages, all or none; per item its id and whether its row is new (False: a pending twin with
        the same key was updated). Returns once the rows are committed. `caps` the rows must pass (a refusal
        raises QueueFull or QuotaExceeded and stores nothing of this request)."""
        request = _Insert(tenant_id, rows, caps)
        if len(rows) < _ALONE_MIN_ROWS:
            self._gate.seen(tenant_id)
            return await self._inserts.submit(request)
        async with self._gate.slot(tenant_id):
            return await _alone(self._insert_many, request)

    def seen(self, tenant_id: int) -> None:
        """The tenant is active (a statement of its that does not go through these: a schedule's ticks)."""
        self._gate.seen(tenant_id)

    def enqueue_wait(self, tenant_id: int, rows: int) -> float:
        """Seconds before the tenant may enqueue `rows` more while other tenants are active (mq/queue/fairness.py);
        0: go ahead."""
        return self._gate.enqueue_wait(tenant_id, rows)

    async def ack(
        self,
        tenant_id: int,
        ids: Sequence[uuid.UUID],
        receipts: Sequence[uuid.UUID | None],
        group: str | None = None,
        plan: DeliveryPlan = PLAIN,
    ) -> list[AckOutcome]:
        """Delete processing messages, or a consumer group's deliveries of them (`group`, its name); per id, the
        topic of the message this request acknowledged, `STALE_RECEIPT`, or None. `plan`: the ack's statement
        (keep the acked messages of replayable topics in their log, count out the leases of limited topics)."""
        request = _Ack(tenant_id, ids, receipts, group, plan)
        if len(ids) < _ALONE_MIN_ROWS:
            self._gate.seen(tenant_id)
            return await self._acks.submit(request)
        async with self._gate.slot(tenant_id):
            return await _alone(self._ack_many, request)

    async def dequeue(self, lease: Lease, orphaned: Callable[[list[Any]], None] | None = None) -> list[Any]:
        """Lease up to `lease.limit` messages of a topic (a consumer group's deliveries of them, under a grouped
        plan). `orphaned` is handed the rows leased for a caller cancelled while its statement ran (to give them
        back: nobody will see them)."""
        request, tenant_id = lease, lease.tenant_id
        if lease.limit < _ALONE_MIN_ROWS:
            self._gate.seen(tenant_id)
            return await self._dequeues.submit(request, orphaned)
        if lease.limit > _SHARED_MAX_ROWS and self._gate.contended(tenant_id):
            # The contract lets a dequeue answer fewer than asked; the consumer asks again for the rest.
            request = lease._replace(limit=_SHARED_MAX_ROWS)
        async with self._gate.slot(tenant_id):
            if orphaned is None:
                return await _alone(self._dequeue_many, request)
            leasing = asyncio.ensure_future(_alone(self._dequeue_many, request))
            try:
                return await asyncio.shield(leasing)
            except asyncio.CancelledError:
                leasing.add_done_callback(lambda done: _hand_over(done, orphaned))
                raise

    @_timed("enqueue")
    async def _insert_many(self, inserts: Sequence[_Insert]) -> list[list[tuple[uuid.UUID, bool]] | BaseException]:
        """Coalesced enqueue requests: one statement per tenant among them, results split back per request."""

        async def write(tenant_id: int, chosen: list[_Insert]) -> list[list[tuple[uuid.UUID, bool]]]:
            caps = chosen[0].caps
            for other in chosen[1:]:
                if other.caps:
                    caps = caps.merge(other.caps)
            stored = await self._store(tenant_id, [row for c in chosen for row in c.rows], caps)
            return split(stored, [len(insert.rows) for insert in chosen])

        return await _per_group(inserts, lambda i: i.tenant_id, write)

    async def _store(self, tenant_id: int, rows: Sequence[NewRow], caps: Caps) -> list[tuple[uuid.UUID, bool]]:
        """Insert in one statement; per input row, its message id and whether it is new. Rows sharing a
        (topic, key) fold into one with the last one's content (ON CONFLICT cannot touch a row twice)."""
        if len(rows) >= _COPY_MIN_ROWS and all(
            row.key is None and row.delay_seconds <= 0 and not row.ttl_seconds and not row.grouped for row in rows
        ):
            ids = uuid7_batch(len(rows))
            admit = caps.arguments(Counter(row.topic for row in rows)) if caps else None
            await self.repository.copy_batch(tenant_id, ids, rows, admit)
            return [(message_id, True) for message_id in ids]
        if _uniform(rows):
            ids = uuid7_batch(len(rows))
            admit = caps.arguments(Counter({rows[0].topic: len(rows)})) if caps else None
            await self.repository.insert_uniform(tenant_id, ids, rows, admit)
            return [(message_id, True) for message_id in ids]
        kept: list[NewRow] = []  # the rows written: one per (topic, key), holding the last content given for it
        row_of_key: dict[tuple[str, str], int] = {}
        slot: list[int] = []  # input position -> index in kept
        for row in rows:
            if row.key is not None:
                seen = row_of_key.get((row.topic, row.key))
                if seen is not None:
                    kept[seen] = msgspec.structs.replace(
                        kept[seen], payload=row.payload, metadata_json=row.metadata_json
                    )
                    slot.append(seen)
                    continue
                row_of_key[(row.topic, row.key)] = len(kept)
            slot.append(len(kept))
            kept.append(row)
        ids = uuid7_batch(len(kept))
        # Statements upsert keys in one global order, (topic, key), so that two of them racing over the same keys
        # wait for each other instead of deadlocking.
        order = sorted(range(len(kept)), key=lambda n: (kept[n].topic, kept[n].key or ""))
        # Every row counts against the caps, even one that will update a pending twin: which rows are new is known
        # only once they are written, after the gates.
        admit = caps.arguments(Counter(row.topic for row in kept)) if caps else None
        result = await self.repository.insert_batch(tenant_id, [ids[n] for n in order], [kept[n] for n in order], admit)
        # A keyed row may have been upserted into an existing message: its id is the stored one.
        by_key = {(r["topic"], r["key"]): (r["id"], r["inserted"]) for r in result if r["key"] is not None}
        per_row = [
            by_key[(row.topic, row.key)] if row.key is not None else (ids[n], True) for n, row in enumerate(kept)
        ]
        first_slot: set[int] = set()
        outcomes: list[tuple[uuid.UUID, bool]] = []
        for n in slot:
            message_id, inserted = per_row[n]
            outcomes.append((message_id, inserted and n not in first_slot))
            first_slot.add(n)
        return outcomes

    @_timed("dequeue")
    async def _dequeue_many(self, dequeues: Sequence[Lease]) -> list[list[Any] | BaseException]:
        """Coalesced dequeues: one statement per (tenant, topic, visibility, consumer, group, plan) among them, for
        the sum of their counts; the leased rows are dealt out in queue order, first come first served. (A topic's
        consumers are usually one service's user: keying by it costs no sharing, and each lease names its holder.)"""

        async def lease(_key: Hashable, chosen: list[Lease]) -> list[list[Any]]:
            first = chosen[0]
            delivered, dead = await self.repository.dequeue(first._replace(limit=sum(d.limit for d in chosen)))
            if dead:
                self._dead_lettered(first.tenant_id, dead)
            rows = in_queue_order(delivered)
            return split(rows, [d.limit for d in chosen])

        return await _per_group(dequeues, lambda d: d._replace(limit=0), lease)

    @_timed("ack")
    async def _ack_many(self, acks: Sequence[_Ack]) -> list[list[AckOutcome] | BaseException]:
        """Coalesced ack requests: one statement per tenant; per requested id, the topic of the message it
        deleted, `STALE_RECEIPT` or None (see `credit`)."""

        async def delete(key: tuple[int, str | None, DeliveryPlan], chosen: list[_Ack]) -> list[list[AckOutcome]]:
            tenant_id, group, plan = key
            ids = [m for a in chosen for m in a.ids]
            receipts = [r for a in chosen for r in a.receipts]
            deleted = await self.repository.ack(plan, tenant_id, ids, receipts, group)
            outcomes = credit(ids, receipts, deleted)
            return split(outcomes, [len(ack.ids) for ack in chosen])

        return await _per_group(acks, lambda a: (a.tenant_id, a.group, a.plan), delete)


async def _per_group(
    requests: Sequence[Request],
    key: Callable[[Request], Hashable],
    run: Callable[[Any, list[Request]], Awaitable[list[Outcome]]],
) -> list[Outcome | BaseException]:
    """Run one statement per group of requests (`run` returns one outcome per request of its group).

    A statement is atomic: when one fails it changed nothing, so its requests are run again one by one, and each
    caller gets its own result or error; unless the database itself failed (down, too slow): then every request
    of the group gets that error at once. Groups that succeeded before are never run again.
    """
    groups: dict[Hashable, list[int]] = {}
    for index, request in enumerate(requests):
        groups.setdefault(key(request), []).append(index)
    outcomes: list[Outcome | BaseException] = [_UNSET] * len(requests)
    for group_key, indexes in groups.items():
        chosen = [requests[i] for i in indexes]
        try:
            results: list[Outcome | BaseException] = list(await run(group_key, chosen))
        except Exception as exc:
            if len(chosen) == 1 or is_dependency_fault(exc):  # one by one would only fail again, slower
                results = [exc] * len(chosen)
            else:
                results = []
                for request in chosen:
                    try:
                        results.extend(await run(group_key, [request]))
                    except Exception as alone:
                        results.append(alone)
        for index, outcome in zip(indexes, results, strict=True):
            outcomes[index] = outcome
    return outcomes


def _hand_over(leasing: asyncio.Future[list[Any]], orphaned: Callable[[list[Any]], None]) -> None:
    """A dequeue run alone finished after its caller was cancelled: what it leased goes to `orphaned`."""
    if not leasing.cancelled() and leasing.exception() is None:
        orphaned(leasing.result())


async def _alone(
    flush: Callable[[Sequence[Request]], Awaitable[Sequence[Outcome | BaseException]]], request: Request
) -> Outcome:
    """Run one request through its kind's flush without coalescing it."""
    [outcome] = await flush([request])
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def credit(
    ids: Sequence[uuid.UUID],
    receipts: Sequence[uuid.UUID | None],
    deleted: dict[uuid.UUID, tuple[str, uuid.UUID | None]],
) -> list[AckOutcome]:
    """Which entry of an ack list acknowledged each deleted message: the first whose receipt is the ended lease's,
    else the first without a receipt (it acts for any holder). Other entries naming a receipt are stale
    (`STALE_RECEIPT`); the rest acknowledged nothing (an id listed twice succeeds once)."""
    outcomes: list[AckOutcome] = [None] * len(ids)
    credited: set[uuid.UUID] = set()
    for exact in (True, False):
        for n, (mid, receipt) in enumerate(zip(ids, receipts, strict=True)):
            hit = deleted.get(mid)
            if hit is None or mid in credited or (receipt != hit[1] if exact else receipt is not None):
                continue
            outcomes[n] = hit[0]
            credited.add(mid)
    for n, (mid, receipt) in enumerate(zip(ids, receipts, strict=True)):
        hit = deleted.get(mid)
        if outcomes[n] is None and hit is not None and receipt is not None and receipt != hit[1]:
            outcomes[n] = STALE_RECEIPT
    return outcomes


_UNSET = RuntimeError("no outcome")  # replaced for every request before _per_group returns


def _uniform(rows: Sequence[NewRow]) -> bool:
    """Whether the rows are keyless and share topic, priority, delay, max_retries and TTL."""
    first = rows[0]
    return all(
        r.key is None
        and r.topic == first.topic
        and r.priority == first.priority
        and r.delay_seconds == first.delay_seconds
        and r.max_retries == first.max_retries
        and r.ttl_seconds == first.ttl_seconds
        and r.grouped == first.grouped
        and (not r.grouped or r.consumer_group is None)
        for r in rows
    )
