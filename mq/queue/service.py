"""Queue semantics (seed 004 and the contract's data plane) on top of `MessageRepository`.

Validates what the HTTP layer cannot (sizes, reserved topics, text Postgres cannot store), resolves topic
configuration, and maps "no row matched" to the right domain error. Raises only `mq.errors`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import msgspec

from mq import errors, redis_keys
from mq.buckets import TokenBuckets
from mq.ids import uuid7_batch
from mq.metrics import Metrics
from mq.names import DLQ_SUFFIX, check_text
from mq.queue.activity import Activity
from mq.queue.admission import NO_CAPS, Caps
from mq.queue.configs import TopicConfigs
from mq.queue.repository import MessageRepository
from mq.queue.shared import STALE_RECEIPT, SharedStatements, in_queue_order
from mq.queue.types import (
    MAX_ERROR_LENGTH,
    PLAIN,
    AckFailure,
    AckFailureCode,
    AckResults,
    AdmittedTicks,
    DeadLettered,
    DeliveryPlan,
    EffectiveConfig,
    EnqueueItem,
    Lease,
    MessageRow,
    NackOutcome,
    NewRow,
    SchemaRef,
    parse_uuid,
    parse_uuids,
)
from mq.queue.validation import check_group, check_lease, check_topic, encode_metadata
from mq.queue.wakeups import Look, WakeupHub
from mq.quotas import NO_QUOTAS, QuotaCache, Quotas
from mq.schemas.checks import CHECK_TOO_COSTLY, SchemaChecks
from mq.schemas.formats import Violation
from mq.settings import Settings

log = logging.getLogger(__name__)

# A long poll looks again at least this often even without a wake-up, in case a notification was lost while the
# listening connection reconnected.
_LONG_POLL_RECHECK_SECONDS = 5.0
# A message can be available yet not taken: another dequeue holds its row lock until it commits. Sleep at least
# this long then, instead of spinning on it.
_LONG_POLL_MIN_SLEEP_SECONDS = 0.05


class QueueService:
    def __init__(
        self,
        repository: MessageRepository,
        configs: TopicConfigs,
        wakeups: WakeupHub,
        settings: Settings,
        quotas: QuotaCache | None = None,
        buckets: TokenBuckets | None = None,
        metrics: Metrics | None = None,
        activity: Activity | None = None,
    ) -> None:
        self.repository = repository
        self.configs = configs
        self.wakeups = wakeups
        self.settings = settings
        self.shared = SharedStatements(repository, settings, self._dead_lettered, self._timed)
        self.quotas = quotas
        self.buckets = buckets or TokenBuckets(None, settings.api_instances)
        self.metrics = metrics or Metrics()
        self.activity = activity or Activity(repository)
        self.schemas = SchemaChecks(settings.schema_check_processes, settings.schema_check_budget_ms / 1000)
        self._giving_back: set[asyncio.Task[None]] = set()  # see _give_back

    async def enqueue(self, tenant_id: int, item: EnqueueItem) -> tuple[uuid.UUID, bool]:
        """Store one message; returns its id and whether it was new (False: a pending twin was updated).
        Concurrent enqueues share one statement (see `Coalescer`); this returns once the row is committed."""
        config = await self.configs.effective(tenant_id, item.topic)
        if config.schema is not None:
            await self._check_schema(tenant_id, config.schema, item.payload)
        row = item.resolved(config.max_retries, config.message_ttl_seconds, config.grouped)
        [(message_id, inserted)] = await self._store(tenant_id, [row], {item.topic: config})
        metrics = self.metrics
        metrics.count(metrics.enqueued if inserted else metrics.upserted, tenant_id, item.topic)
        self.activity.enqueued(tenant_id, item.topic)
        if item.delay_seconds <= 0:
            # each group of the topic has its own waiting polls: wake one per group
            self.wakeups.published(tenant_id, {item.topic: max(1, len(config.groups))})
        return message_id, inserted

    async def admit_ticks(self, tenant_id: int, items: Sequence[EnqueueItem]) -> AdmittedTicks:
        """Schedules' messages into one topic (`mq.schedules.firer`), checked as any producer's are before their
        statement, by the same admission (`_admission`) after the topic's schema; refusals raise their errors.
        The caps the statement itself checks (the tenant's max_messages and max_topics, the topic's max_depth)
        come back as `admit`. No two of the items share a key."""
        topic = items[0].topic
        config = await self.configs.effective(tenant_id, topic)
        if config.schema is not None:
            for item in items:
                await self._check_schema(tenant_id, config.schema, item.payload)
        rows = [item.resolved(config.max_retries, config.message_ttl_seconds, config.grouped) for item in items]
        self.shared.seen(tenant_id)  # ticks count toward fairness as enqueues do
        depths = ((topic, config.max_depth),) if config.max_depth is not None else ()
        _, caps = await self._admission(tenant_id, rows, depths)
        admit = caps.arguments(Counter({topic: len(rows)})) if caps else None
        return AdmittedTicks(tenant_id, rows, admit, max(1, len(config.groups)))

    async def store_ticks(self, conn: Any, ticks: AdmittedTicks) -> list[tuple[uuid.UUID, bool]]:
        """Store admitted ticks in the caller's transaction (`conn`), all or none: the caps in `admit` may refuse
        them (raising their errors). Returns each message's id and whether it is new (False: a keyed tick updated
        its pending twin)."""
        ids = uuid7_batch(len(ticks.rows))
        stored = await self.repository.insert_batch(ticks.tenant_id, ids, ticks.rows, ticks.admit, conn=conn)
        by_key = {r["key"]: (r["id"], r["inserted"]) for r in stored if r["key"] is not None}
        return [by_key[row.key] if row.key is not None else (ids[n], True) for n, row in enumerate(ticks.rows)]

    async def store_plain_ticks(self, conn: Any, batches: Sequence[AdmittedTicks]) -> None:
        """Store ticks that nothing can refuse (`AdmittedTicks.plain`) of many tenants and topics, one statement per
        tenant (every statement names one tenant), in the caller's transaction."""
        by_tenant: dict[int, list[NewRow]] = {}
        for batch in batches:
            by_tenant.setdefault(batch.tenant_id, []).extend(batch.rows)
        for tenant_id, rows in by_tenant.items():
            await self.repository.insert_batch(tenant_id, uuid7_batch(len(rows)), rows, conn=conn)

    def wake_ticks(self, tenant_id: int, topic: str, inserted: int, upserted: int, polls: int) -> None:
        """After a schedule's transaction committed: its messages counted and the topic's waiting polls woken."""
        if inserted:
            self.metrics.count(self.metrics.enqueued, tenant_id, topic, inserted)
        if upserted:
            self.metrics.count(self.metrics.upserted, tenant_id, topic, upserted)
        self.activity.enqueued(tenant_id, topic, inserted + upserted)
        self.wakeups.published(tenant_id, {topic: polls * (inserted + upserted)})

    async def _check_schema(self, tenant_id: int, schema: SchemaRef, payload: bytes) -> None:
        [violation] = await self.schemas.check(tenant_id, schema.format, schema.schema_json, [payload])
        if violation is not None:
            raise errors.SchemaViolation(_violated(schema, violation), details=_violation_details(schema, violation))

    async def _check_schemas(self, tenant_id: int, rows: Sequence[NewRow], configs: dict[str, EffectiveConfig]) -> None:
        """Every row against its topic's schema, each schema's rows in one call; all that do not fit are named,
        and nothing is stored."""
        by_schema: dict[SchemaRef, list[int]] = {}
        for index, row in enumerate(rows):
            schema = configs[row.topic].schema
            if schema is not None:
                by_schema.setdefault(schema, []).append(index)
        checks = [
            self.schemas.check(tenant_id, schema.format, schema.schema_json, [rows[i].payload for i in indexes])
            for schema, indexes in by_schema.items()
        ]
        # (one schema, the usual batch: awaited in this task; several: side by side)
        verdicts = [await checks[0]] if len(checks) == 1 else await asyncio.gather(*checks)
        problems = []
        for (schema, indexes), answers in zip(by_schema.items(), verdicts, strict=True):
            for index, violation in zip(indexes, answers, strict=True):
                if violation is not None:
                    error = (
                        _violated(schema, violation)
                        if violation.reason == CHECK_TOO_COSTLY
                        else f"{violation.pointer or '(root)'}: {violation.reason}"
                    )
                    problem: dict[str, Any] = {"index": index, "code": "schema_violation", "error": error}
                    problems.append(problem | _violation_details(schema, violation))
        if problems:
            problems.sort(key=lambda p: int(p["index"]))
            raise errors.SchemaViolation(
                f"{len(problems)} of {len(rows)} messages do not fit their topic's schema", details=problems
            )

    async def limits(self, tenant_id: int, topic: str) -> tuple[int, int, bool]:
        """The topic's max_retries and message TTL in force, and whether it has consumer groups: what each of its
        rows carries (see `build_rows`)."""
        config = await self.configs.effective(tenant_id, topic)
        return config.max_retries, config.message_ttl_seconds, config.grouped

    async def enqueue_batch(self, tenant_id: int, rows: Sequence[NewRow]) -> list[uuid.UUID]:
        """Store all or none, in one statement; ids in input order. Rows sharing a (topic, key) fold into one
        message holding the last one's content, as consecutive single enqueues would. The rows come from
        `mq.queue.validation.build_rows`, resolved against their topics' settings."""
        topics = {r.topic for r in rows}
        configs = {topic: await self.configs.effective(tenant_id, topic) for topic in topics}
        if any(c.schema is not None for c in configs.values()):
            await self._check_schemas(tenant_id, rows, configs)
        stored = await self._store(tenant_id, rows, configs)
        ready = Counter(r.topic for r in rows if r.delay_seconds <= 0)
        self.wakeups.published(tenant_id, {t: n * max(1, len(configs[t].groups)) for t, n in ready.items()})
        metrics = self.metrics
        if len(configs) == 1:
            self.activity.enqueued(tenant_id, rows[0].topic, len(rows))
        else:
            for topic, n in Counter(r.topic for r in rows).items():
                self.activity.enqueued(tenant_id, topic, n)
        if len(configs) == 1 and all(inserted for _, inserted in stored):
            metrics.count(metrics.enqueued, tenant_id, rows[0].topic, len(rows))
        else:
            outcomes = Counter((r.topic, new) for r, (_, new) in zip(rows, stored, strict=True))
            for (topic, inserted), n in outcomes.items():
                metrics.count(metrics.enqueued if inserted else metrics.upserted, tenant_id, topic, n)
        return [message_id for message_id, _ in stored]

    async def _store(
        self, tenant_id: int, rows: Sequence[NewRow], configs: dict[str, EffectiveConfig]
    ) -> list[tuple[uuid.UUID, bool]]:
        """Store; a refusal (cap, rate, quota, size) is counted in `skiplock_enqueue_rejected_total`."""
        try:
            return await self._admitted_store(tenant_id, rows, configs)
        except errors.SkiplockError as refused:
            reason = _REJECTIONS.get(type(refused))
            if reason is not None:
                for topic, n in Counter(r.topic for r in rows).items():
                    self.metrics.count(self.metrics.rejected, tenant_id, topic, n, reason)
            raise

    async def _admitted_store(
        self, tenant_id: int, rows: Sequence[NewRow], configs: dict[str, EffectiveConfig]
    ) -> list[tuple[uuid.UUID, bool]]:
        """Store after the admission every enqueue passes (`_admission`); a tenant without quotas writing to
        uncapped topics goes straight to the shared statement."""
        depths = tuple(sorted((t, c.max_depth) for t, c in configs.items() if c.max_depth is not None))
        quotas, caps = await self._admission(tenant_id, rows, depths)
        if caps is NO_CAPS or not caps:
            return await self.shared.insert(tenant_id, rows)
        try:
            return await self.shared.insert(tenant_id, rows, caps)
        except (errors.QueueFull, errors.QuotaExceeded):
            if quotas.enqueue_rate is not None:
                await self.buckets.give_back(redis_keys.enqueue_bucket(tenant_id), quotas.enqueue_rate, len(rows))
            raise

    async def _admission(
        self, tenant_id: int, rows: Sequence[NewRow], depths: tuple[tuple[str, int], ...]
    ) -> tuple[Quotas, Caps]:
        """What every enqueue passes before its statement, whichever way it came (a request, a batch, a schedule's
        ticks; docs/semantics.md, "Quotas and max_depth"): the tenant's fair share of the enqueue rate, then, for a
        tenant with quotas or a capped topic, its payload size and enqueue_rate quotas. Returns the tenant's quotas
        and the caps the statement itself must pass (`depths`: the capped topics written; empty caps: none)."""
        quotas = NO_QUOTAS
        if self.quotas is not None:
            quotas = self.quotas.cached(tenant_id) or await self.quotas.of(tenant_id)
        self._fair_share(tenant_id, quotas, len(rows))
        if quotas is NO_QUOTAS and not depths:
            return quotas, NO_CAPS
        if quotas.max_payload_bytes is not None:
            _check_payloads(rows, quotas.max_payload_bytes)
        await self._quota_rate(tenant_id, quotas, len(rows))
        return quotas, Caps(quotas.max_messages, quotas.max_topics, depths)

    def _fair_share(self, tenant_id: int, quotas: Quotas, rows: int) -> None:
        """A tenant without an enqueue_rate quota enqueues at most the default fair rate while others are active
        (mq/queue/fairness.py); RateLimited past it."""
        if quotas.enqueue_rate is None and (wait := self.shared.enqueue_wait(tenant_id, rows)):
            fair = self.settings.tenant_enqueue_rate
            raise errors.RateLimited(
                f"while other tenants are active, a tenant without an enqueue_rate quota may enqueue {fair} "
                "messages per second on each server process",
                details={"quota": "tenant_enqueue_rate", "limit": fair},
                retry_after=max(1, math.ceil(wait)),
            )

    async def _quota_rate(self, tenant_id: int, quotas: Quotas, rows: int) -> None:
        """The tenant's enqueue_rate quota, a bucket every instance shares; RateLimited past it."""
        rate = quotas.enqueue_rate
        if rate is None:
            return
        granted, wait = await self.buckets.take(redis_keys.enqueue_bucket(tenant_id), rate, rows, whole=True)
        if not granted:
            raise errors.RateLimited(
                f"the tenant's enqueue_rate quota is {rate} messages per second",
                details={"quota": "enqueue_rate", "limit": rate},
                retry_after=max(1, math.ceil(wait)),
            )

    # --- consume -----------------------------------------------------------------------------------------------

    async def dequeue(
        self,
        tenant_id: int,
        topic: str,
        count: int,
        visibility_timeout_seconds: int | None,
        wait_seconds: float,
        caller_gone: Callable[[], Awaitable[None]] | None = None,
        consumer: str | None = None,
        consumer_group: str | None = None,
        before_lease: Callable[[], Awaitable[None]] | None = None,
    ) -> list[MessageRow]:
        """Lease up to `count` messages; with `wait_seconds`, wait for the first (a long poll). `caller_gone`:
        returns when the caller went away; a wait watches it (only a poll that has to wait pays for the watch), and
        it ends the wait at once without leasing more: a message leased for a closed connection would be lost to
        everyone until its lease lapsed. A topic with consumer groups is consumed as one of them
        (`consumer_group`), and each group leases its own deliveries. `before_lease` runs before each attempt to
        lease (a long-lived caller's credentials and grants checked again: it raises to refuse). The rows come
        highest priority first, then oldest."""
        check_topic(topic, for_enqueue=False)
        check_lease(count, visibility_timeout_seconds, self.settings.max_batch_size)
        check_group(consumer_group)
        config = await self.configs.effective(tenant_id, topic)
        group_id = _group_of(config, topic, consumer_group)
        visibility = visibility_timeout_seconds or config.visibility_timeout_seconds
        plan = DeliveryPlan(grouped=group_id is not None, limited=config.max_inflight is not None)
        request = Lease(tenant_id, topic, count, visibility, consumer, group_id, plan, consumer_group)
        rate = config.throughput_limit
        orphaned = functools.partial(self._give_back, tenant_id, consumer_group)

        async def lease() -> tuple[list[Any], float]:
            if before_lease is not None:
                await before_lease()
            return await self._lease(request, rate, orphaned)

        if wait_seconds <= 0:
            return [] if config.paused else in_queue_order((await lease())[0])
        # An empty look stands for this instance's next polls (`mq.queue.wakeups`) where every change that makes
        # a message available wakes the topic's waiters or is due at a time asked: not under a group (its own
        # deliveries), a max_inflight (an ack frees room) or a throughput limit (tokens come back).
        shared_looks = group_id is None and not plan.limited and rate is None
        return await self._long_poll(tenant_id, topic, lease, wait_seconds, caller_gone, group_id, shared_looks)

    async def _long_poll(
        self,
        tenant_id: int,
        topic: str,
        lease: Callable[[], Awaitable[tuple[list[Any], float]]],
        wait_seconds: float,
        caller_gone: Callable[[], Awaitable[None]] | None,
        group_id: int | None,
        shared_looks: bool,
    ) -> list[MessageRow]:
        """`dequeue`'s wait: look, and when nothing came, wait for a wake-up, a due time or the deadline."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        gone: asyncio.Future[None] | None = None
        recheck_at: float | None = None  # on the loop's clock
        with self.wakeups.waiter(tenant_id, topic) as woken:
            try:
                while True:
                    woken.clear()
                    if gone is not None and gone.done():
                        return []
                    # A paused topic answers empty; its resume wakes the waiting polls (`Console.resume`).
                    paused = (await self.configs.effective(tenant_id, topic)).paused
                    rows, throttled_for, recheck_at, look = await self._look(
                        tenant_id, topic, lease, shared_looks and not paused, paused, recheck_at, deadline
                    )
                    remaining = deadline - loop.time()
                    if rows or remaining <= 0:
                        return in_queue_order(rows)
                    if throttled_for > 0:  # the topic's throughput limit: wait for tokens, not for messages
                        await asyncio.sleep(min(remaining, throttled_for))
                        if self.wakeups.closing:
                            return []
                        continue
                    # When a delayed message or a lapsing lease makes one available, asked only on the first empty
                    # look and when that time comes: a wake-up that found nothing (another poll took the message)
                    # cannot have moved it later, since anything new wakes the waiters.
                    now = loop.time()
                    if recheck_at is None or now >= recheck_at:
                        # (a group's next lapsing lease or delay is not asked for: it looks again after the recheck)
                        recheck_at = now + await self._until_recheck(tenant_id, topic, paused or group_id is not None)
                        if look is not None:
                            self.wakeups.found_empty(look, recheck_at)
                    timeout = min(remaining, max(recheck_at - now, _LONG_POLL_MIN_SLEEP_SECONDS))
                    if gone is None and caller_gone is not None:
                        gone = asyncio.ensure_future(caller_gone())
                        gone.add_done_callback(lambda _: woken.set())
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(woken.wait(), timeout)
                    if self.wakeups.closing:
                        return []
            finally:
                if gone is not None:
                    gone.cancel()

    async def _look(
        self,
        tenant_id: int,
        topic: str,
        lease: Callable[[], Awaitable[tuple[list[Any], float]]],
        shared: bool,
        paused: bool,
        recheck_at: float | None,
        deadline: float,
    ) -> tuple[list[Any], float, float | None, Look | None]:
        """A long poll's look: the rows leased and the throttle's seconds, when it next asks for the due time, and
        the `Look` to report an empty answer with (`shared`: empty looks stand for this instance's next polls).
        A new poll for which another's empty look stands waits without looking, until that stops standing."""
        now = asyncio.get_running_loop().time()
        standing = self.wakeups.empty_until(tenant_id, topic, now) if shared and recheck_at is None else None
        if standing is not None and standing < deadline:  # (it still looks once before its deadline)
            return [], 0.0, standing, None
        # a look that will ask for the next due time if it comes back empty (a woken poll's look is not one)
        look = self.wakeups.looking(tenant_id, topic) if shared and (recheck_at is None or now >= recheck_at) else None
        rows, throttled_for = ([], 0.0) if paused else await lease()
        return rows, throttled_for, recheck_at, look

    async def _until_recheck(self, tenant_id: int, topic: str, unasked: bool) -> float:
        """Seconds a waiting poll sleeps before it looks again unwoken: until a delayed message or a lapsing lease
        makes one available, at most `_LONG_POLL_RECHECK_SECONDS` (that, when `unasked`)."""
        until_next = None if unasked else await self.repository.seconds_until_next_available(tenant_id, topic)
        return min(_LONG_POLL_RECHECK_SECONDS if until_next is None else until_next, _LONG_POLL_RECHECK_SECONDS)

    async def _lease(
        self, lease: Lease, rate: int | None, orphaned: Callable[[list[Any]], None] | None = None
    ) -> tuple[list[Any], float]:
        """Lease up to `lease.limit` messages, as many as the topic's throughput limit allows now (a Redis token
        bucket shared by every instance; tokens not used are given back). Returns the rows and, when the limit
        allowed none, the seconds until it will. `orphaned`: see `SharedStatements.dequeue`."""
        if rate is None:
            rows = await self.shared.dequeue(lease, orphaned)
            return self._delivered(lease.tenant_id, lease.topic, rows), 0.0
        bucket = redis_keys.dequeue_bucket(lease.tenant_id, lease.topic, lease.group_id)
        granted, wait = await self.buckets.take(bucket, rate, lease.limit, whole=False)
        if granted < lease.limit:
            self.metrics.count(self.metrics.throttled, lease.tenant_id, lease.topic)
        if not granted:
            return [], wait
        rows = await self.shared.dequeue(lease._replace(limit=granted), orphaned)
        if len(rows) < granted:
            await self.buckets.give_back(bucket, rate, granted - len(rows))
        return self._delivered(lease.tenant_id, lease.topic, rows), 0.0

    def _give_back(self, tenant_id: int, consumer_group: str | None, rows: list[Any]) -> None:
        """Leases taken for a caller that went away while its dequeue ran (a cancelled stream or request): their
        lease lapses now instead of at its visibility timeout, counted as an attempt as a lapsed lease is (the
        contract's at-least-once: the attempt may have been seen). In a task of its own: the caller is gone."""
        if rows:
            task = asyncio.get_running_loop().create_task(self._lapse_now(tenant_id, consumer_group, rows))
            self._giving_back.add(task)
            task.add_done_callback(self._giving_back.discard)

    async def _lapse_now(self, tenant_id: int, consumer_group: str | None, rows: list[Any]) -> None:
        for row in rows:
            try:
                await self.extend(tenant_id, row["id"], row["receipt"], 0, consumer_group)
            except errors.SkiplockError:
                pass  # settled or lapsed meanwhile: its receipt no longer matches
            except Exception:  # a dependency's fault: the lease lapses at its visibility timeout instead
                log.warning("could not give back a lease taken for a caller gone", exc_info=True)

    def _timed(self, statement: str, seconds: float) -> None:
        self.metrics.statements.observe((statement,), (seconds,))

    def _dead_lettered(self, tenant_id: int, dead: list[DeadLettered]) -> None:
        """Messages a dequeue dead-lettered instead of delivering (their lease lapsed once too often)."""
        metrics = self.metrics
        for (topic, fate), n in Counter((d.topic, d.fate) for d in dead).items():
            metrics.count(metrics.lease_expired, tenant_id, topic, n, fate)
            if fate == "dlq":
                self.activity.dead_lettered(tenant_id, topic, n)
                self.wakeups.published(tenant_id, {topic + DLQ_SUFFIX: n})

    def _delivered(self, tenant_id: int, topic: str, rows: list[Any]) -> list[Any]:
        if rows:
            metrics = self.metrics
            metrics.count(metrics.dequeued, tenant_id, topic, len(rows))
            lapsed = sum(1 for r in rows if r["lapsed"])
            if lapsed:
                metrics.count(metrics.lease_expired, tenant_id, topic, lapsed, "redelivered")
            metrics.waited(tenant_id, topic, [w for w in (r["waited"] for r in rows) if w is not None])
        return rows

    async def ack(
        self, tenant_id: int, message_id: str, receipt: str | None, consumer_group: str | None = None
    ) -> None:
        """Delete a processing message, or end a consumer group's delivery of it (the message goes once no group
        owes it). Concurrent acks share one statement (see `Coalescer`)."""
        mid, rec = _ids(message_id, receipt)
        if mid is not None:
            plan = await self._plan(tenant_id, consumer_group)
            [topic] = await self.shared.ack(tenant_id, [mid], [rec], consumer_group, plan)
            if topic is STALE_RECEIPT:
                raise errors.LeaseLost()
            if isinstance(topic, str):
                await self._counted(tenant_id, topic, 1, plan)
                return
        await self._raise_lease_error(tenant_id, mid, receipt, consumer_group)

    async def ack_batch(self, tenant_id: int, acks: Sequence[tuple[str, str | None, str | None]]) -> AckResults:
        """Acknowledge many (id, receipt, consumer group) in one statement per group named (None: the messages
        themselves); failures say why, per id."""
        by_group: dict[str | None, list[tuple[str, str | None]]] = {}
        for message_id, receipt, group in acks:
            by_group.setdefault(group, []).append((message_id, receipt))
        if len(by_group) == 1:
            [(group, listed)] = by_group.items()
            return await self._ack_batch(tenant_id, listed, group)
        acked, failed = 0, []
        for group, listed in by_group.items():
            part = await self._ack_batch(tenant_id, listed, group)
            acked += part.acked
            failed += part.failed
        return AckResults(acked, failed)

    async def _plan(self, tenant_id: int, consumer_group: str | None) -> DeliveryPlan:
        """The plan of a request that names a message by id (ack, nack, extend): the tenant's (its limited and
        replayable topics), and a group's when it names one."""
        return (await self.configs.tenant_plan(tenant_id))._replace(grouped=consumer_group is not None)

    async def _counted(self, tenant_id: int, topic: str, n: int, plan: DeliveryPlan) -> None:
        """`n` acks of a topic in the metrics and the activity; in the log's metric too where the ack kept them
        (a group's ack keeps the message when it is the last group's); a limited topic's waiting polls woken (its
        acks made room)."""
        self.metrics.count(self.metrics.acked, tenant_id, topic, n)
        self.activity.acked(tenant_id, topic, n)
        logged = plan.logged and not plan.grouped
        if logged or plan.limited:
            config = await self.configs.effective(tenant_id, topic)
            if logged and config.replayable:
                self.metrics.count(self.metrics.logged, tenant_id, topic, n)
            if plan.limited and config.max_inflight is not None:
                self.wakeups.published(tenant_id, {topic: n})

    async def _ack_batch(
        self, tenant_id: int, acks: Sequence[tuple[str, str | None]], consumer_group: str | None
    ) -> AckResults:
        failed: list[AckFailure] = []
        ids: list[uuid.UUID] = []
        receipts: list[uuid.UUID | None] = []
        parsed_ids = parse_uuids([m for m, _ in acks])
        parsed_receipts = parse_uuids([r for _, r in acks if r is not None])
        given = iter(parsed_receipts)
        for (message_id, receipt), mid in zip(acks, parsed_ids, strict=True):
            rec = None if receipt is None else (next(given) or _NO_RECEIPT_MATCHES)
            if mid is None:
                failed.append(AckFailure(id=message_id, code="message_not_found"))
            else:
                ids.append(mid)
                receipts.append(rec)
        plan = await self._plan(tenant_id, consumer_group) if ids else PLAIN
        claimed = await self.shared.ack(tenant_id, ids, receipts, consumer_group, plan) if ids else []
        acked = 0
        for topic, n in Counter(t for t in claimed if isinstance(t, str)).items():
            await self._counted(tenant_id, topic, n, plan)
            acked += n
        missed: list[tuple[uuid.UUID, uuid.UUID | None]] = []
        for mid, rec, outcome in zip(ids, receipts, claimed, strict=True):
            if outcome is STALE_RECEIPT:
                failed.append(AckFailure(id=str(mid), code="lease_lost"))
            elif outcome is None:
                missed.append((mid, rec))
        if missed:  # a second round trip only to explain failures
            missed_ids = [mid for mid, _ in missed]
            if consumer_group is not None:
                if not await self.repository.group_exists(tenant_id, consumer_group):
                    raise errors.NotFound(f"no topic has a consumer group {consumer_group!r}")
                statuses = await self.repository.group_statuses(tenant_id, consumer_group, missed_ids)
            else:
                statuses = await self.repository.statuses(tenant_id, missed_ids)
            for mid, rec in missed:
                code = _lease_error_code(statuses.get(mid), with_receipt=rec is not None)
                failed.append(AckFailure(id=str(mid), code=code))
        return AckResults(acked, failed)

    async def nack(
        self,
        tenant_id: int,
        message_id: str,
        receipt: str | None,
        error: str | None,
        delay_seconds: float | None,
        consumer_group: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> NackOutcome:
        """Returns the outcome: retry, dlq or failed. With `consumer_group`, of that group's delivery (dlq: a copy
        for the group goes to the DLQ; the other groups are not affected). `metadata` is
        merged into the message's metadata (a group's: into its own saved state, which its deliveries carry)."""
        mid, rec = _ids(message_id, receipt)
        if error is not None:
            error = error[:MAX_ERROR_LENGTH]
            check_text(error, "error")
        metadata_json = None if metadata is None else encode_metadata(self.settings, metadata)
        if mid is None:
            raise errors.MessageNotFound()
        if metadata:
            await self._check_merged_metadata(tenant_id, mid, consumer_group, metadata)
        backoff = self.settings.retry_backoff_seconds
        plan = await self._plan(tenant_id, consumer_group)
        done = await self.repository.nack(
            plan, tenant_id, mid, rec, error, delay_seconds, backoff, metadata_json, consumer_group
        )
        if done is None:
            await self._raise_lease_error(tenant_id, mid, receipt, consumer_group)
            raise AssertionError  # unreachable: the call above always raises
        outcome, now_in = done
        if consumer_group is None:
            topic = now_in[: -len(DLQ_SUFFIX)] if outcome == "dlq" else now_in
        else:  # a group's nack answers the group's topic; its dead letter is a copy in the DLQ
            topic, now_in = now_in, now_in + DLQ_SUFFIX if outcome == "dlq" else now_in
        self.metrics.count(self.metrics.nacked, tenant_id, topic, 1, outcome)
        if outcome == "dlq":
            self.activity.dead_lettered(tenant_id, topic)
        if outcome != "failed" and (outcome == "dlq" or not delay_seconds):
            self.wakeups.published(tenant_id, {now_in: 1})
        if plan.limited and (now_in != topic or delay_seconds or outcome == "failed"):
            config = await self.configs.effective(tenant_id, topic)
            if config.max_inflight is not None:  # its slot is free: a waiting poll may take another message
                self.wakeups.published(tenant_id, {topic: 1})
        return outcome

    async def _check_merged_metadata(
        self, tenant_id: int, mid: uuid.UUID, consumer_group: str | None, metadata: dict[str, Any]
    ) -> None:
        """A nack's metadata is merged only if the merged object stays within `max_metadata_bytes` serialized, as
        an enqueue's must: InvalidRequest otherwise, before anything changes (the message keeps its lease and its
        metadata). Only the lease's holder can change a processing message's metadata (by this nack, which ends
        the lease), so what is read here is what the nack merges into."""
        current = await self.repository.leased_metadata(tenant_id, mid, consumer_group)
        if current is None:
            return  # nothing leased: the nack answers its lease error
        size = len(msgspec.json.encode(msgspec.json.decode(current) | metadata))
        limit = self.settings.max_metadata_bytes
        if size > limit:
            raise errors.InvalidRequest(
                f"the message's metadata merged with the nack's would be {size} bytes serialized, over {limit}: "
                "nothing was changed (the message keeps its lease and its metadata)",
                details={"merged_bytes": size, "limit": limit},
            )

    async def extend(
        self, tenant_id: int, message_id: str, receipt: str | None, seconds: int, consumer_group: str | None = None
    ) -> str:
        mid, rec = _ids(message_id, receipt)
        if mid is not None:
            plan = await self._plan(tenant_id, consumer_group)
            deadline = await self.repository.extend(plan, tenant_id, mid, rec, seconds, consumer_group)
            if deadline is None and plan.limited and await self._lease_still_held(tenant_id, mid, consumer_group):
                raise errors.LeaseLost(
                    "the lease passed its deadline and its slot of the topic's max_inflight was freed"
                )
            if deadline is not None:
                return deadline.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        await self._raise_lease_error(tenant_id, mid, receipt, consumer_group)
        raise AssertionError

    async def _lease_still_held(self, tenant_id: int, mid: uuid.UUID, consumer_group: str | None) -> bool:
        """After a limited extend matched nothing: whether the message (the group's delivery) is still processing,
        its lease past the deadline that freed its slot."""
        if consumer_group is None:
            probe = await self.repository.lease_probe(tenant_id, mid)
            return probe is not None and probe["status"] == "processing" and probe["owed"] is None
        statuses = await self.repository.group_statuses(tenant_id, consumer_group, [mid])
        return statuses.get(mid) == "processing"

    async def _raise_lease_error(
        self, tenant_id: int, mid: uuid.UUID | None, receipt: str | None, consumer_group: str | None = None
    ) -> None:
        """After an ack, nack or extend matched nothing: 404 if there is no such processing message (or delivery
        to the group; `not_found` when the tenant has no such group), 409 if a receipt was given and the message
        is leased to a later dequeue (or was released since)."""
        if consumer_group is not None:
            if not await self.repository.group_exists(tenant_id, consumer_group):
                raise errors.NotFound(f"no topic has a consumer group {consumer_group!r}")
            statuses = await self.repository.group_statuses(tenant_id, consumer_group, [mid] if mid else [])
            status = statuses.get(mid) if mid is not None else None
        else:
            probe = await self.repository.lease_probe(tenant_id, mid) if mid is not None else None
            if probe is not None and probe["owed"] is not None:
                raise errors.ConsumerGroupRequired(
                    "this message's topic has consumer groups: ack, nack or extend it as one of them (consumer_group)"
                )
            status = probe["status"] if probe is not None else None
        if _lease_error_code(status, with_receipt=receipt is not None) == "lease_lost":
            raise errors.LeaseLost()
        if status is None:
            raise errors.MessageNotFound()
        raise errors.MessageNotFound(f"message is {status}, not processing")

    async def own_receipt(
        self, tenant_id: int, message_id: str, consumer: str, consumer_group: str | None = None
    ) -> str:
        """The receipt of the lease `consumer` holds now on the message (or on the group's delivery of it), for a
        caller that acks or nacks by id alone (queue-ti's clients): MessageNotFound when nothing of it is leased,
        LeaseLost when another consumer holds it or the lease lapsed."""
        mid, _ = _ids(message_id, None)
        lease = await self.repository.lease_holder(tenant_id, mid, consumer_group) if mid is not None else None
        if lease is None:
            raise errors.MessageNotFound(f"no processing message {message_id}")
        if lease["leased_by"] != consumer or not lease["live"] or lease["receipt"] is None:
            raise errors.LeaseLost("the message's lease is not the caller's: it lapsed, or another consumer holds it")
        receipt: str = lease["receipt"]
        return receipt

    async def topics_of(self, tenant_id: int, message_ids: Sequence[str]) -> list[tuple[str, str | None] | None]:
        """For each of `message_ids`, its message's topic and (a dead letter's) consumer group; None where no such
        message is (for checking grants)."""
        parsed = parse_uuids(list(message_ids))
        ids = [mid for mid in parsed if mid is not None]
        found = await self.repository.topics(tenant_id, ids) if ids else {}
        return [found.get(mid) if mid is not None else None for mid in parsed]

    # --- dead letters ------------------------------------------------------------------------------------------

    def depth_cap_of(self, tenant_id: int) -> Callable[[str], Awaitable[int | None]]:
        async def depth_cap(topic: str) -> int | None:
            return (await self.configs.effective(tenant_id, topic)).max_depth

        return depth_cap

    async def requeue(self, tenant_id: int, message_id: str) -> str:
        """A dead letter back to its original topic; returns that topic."""
        mid, _ = _ids(message_id, None)
        if mid is None:
            raise errors.MessageNotFound()
        topic = await self.repository.requeue(tenant_id, mid, self.depth_cap_of(tenant_id))
        if topic is not None:
            self.metrics.count(self.metrics.requeued, tenant_id, topic)
            self.wakeups.published(tenant_id, {topic: 1})
            return topic
        probe = await self.repository.lease_probe(tenant_id, mid)
        if probe is None:
            raise errors.MessageNotFound()
        row = await self.repository.get(tenant_id, mid)
        if row is not None and row["original_topic"] is None:
            raise errors.InvalidRequest("message is not in a dead-letter topic")
        raise errors.LeaseLost("message is being processed by a consumer; requeue it after it is released")

    async def retry(self, tenant_id: int, message_id: str) -> str:
        """A failed or expired message back to pending, or a delayed one available now (see `sql.MESSAGE_RETRY`);
        returns its topic."""
        mid, _ = _ids(message_id, None)
        if mid is None:
            raise errors.MessageNotFound()
        topic = await self.repository.retry(tenant_id, mid, self.depth_cap_of(tenant_id))
        if topic is not None:
            self.wakeups.published(tenant_id, {topic: 1})
            return topic
        row = await self.repository.get(tenant_id, mid)
        if row is None:
            raise errors.MessageNotFound()
        raise errors.InvalidRequest(f"message is {row['status']}: only failed, expired or delayed ones are retried")

    async def delete_many(self, tenant_id: int, topic: str, message_ids: Sequence[str]) -> int:
        """Delete the messages of `topic` among `message_ids` (any status); returns how many there were."""
        ids = [mid for mid in parse_uuids(list(message_ids)) if mid is not None]
        return await self.repository.delete_many(tenant_id, topic, ids) if ids else 0

    # --- browse and admin --------------------------------------------------------------------------------------

    async def get(self, tenant_id: int, message_id: str) -> MessageRow:
        """The message's row with its attempts and its groups' deliveries (`sql.MESSAGE_GET_DETAIL`)."""
        mid, _ = _ids(message_id, None)
        row = await self.repository.get_detail(tenant_id, mid) if mid is not None else None
        if row is None:
            raise errors.MessageNotFound()
        return row

    async def find(self, tenant_id: int, message_id: uuid.UUID) -> MessageRow | None:
        """The message's detail row (as `get`), None when it is not stored."""
        return await self.repository.get_detail(tenant_id, message_id)

    async def story_groups(self, tenant_id: int, message_id: uuid.UUID, topic: str) -> list[Any]:
        return await self.repository.story_groups(tenant_id, message_id, topic)

    async def story_made_from(
        self, tenant_id: int, message_id: uuid.UUID, topics: list[str], *, replays: bool
    ) -> list[Any]:
        return await self.repository.story_made_from(tenant_id, message_id, topics, replays=replays)

    async def delete(self, tenant_id: int, message_id: str) -> str:
        """Delete a message whatever its status; returns its topic."""
        mid, _ = _ids(message_id, None)
        topic = await self.repository.delete(tenant_id, mid) if mid is not None else None
        if topic is None:
            raise errors.MessageNotFound()
        return topic


def _group_of(config: EffectiveConfig, topic: str, consumer_group: str | None) -> int | None:
    """The id of the consumer group a dequeue or ack names; None for a topic consumed without groups."""
    if consumer_group is None:
        if config.grouped:
            raise errors.ConsumerGroupRequired(
                f"topic {topic!r} has consumer groups: consume it as one of them (consumer_group)",
                details={"consumer_groups": [name for name, _ in config.groups]},
            )
        return None
    group_id = config.group_id(consumer_group)
    if group_id is None:
        raise errors.NotFound(f"topic {topic!r} has no consumer group {consumer_group!r}")
    return group_id


def _check_payloads(rows: Sequence[NewRow], limit: int) -> None:
    """The tenant's max_payload_bytes quota (the global maximum was checked with the request)."""
    too_large = [(n, len(row.payload)) for n, row in enumerate(rows) if len(row.payload) > limit]
    if not too_large:
        return
    if len(rows) == 1:
        raise errors.PayloadTooLarge(
            f"payload is {too_large[0][1]} bytes; this tenant's max_payload_bytes quota is {limit}",
            details={"quota": "max_payload_bytes", "limit": limit},
        )
    raise errors.PayloadTooLarge(
        f"{len(too_large)} payloads exceed this tenant's max_payload_bytes quota of {limit}",
        details=[
            {"index": n, "code": "payload_too_large", "error": f"payload is {size} bytes; the quota is {limit}"}
            for n, size in too_large
        ],
    )


# Refused enqueues by error, as `skiplock_enqueue_rejected_total`'s reason label.
_REJECTIONS: dict[type[errors.SkiplockError], str] = {
    errors.QueueFull: "queue_full",
    errors.RateLimited: "rate_limited",
    errors.QuotaExceeded: "quota",
    errors.PayloadTooLarge: "payload_too_large",
}

_NO_RECEIPT_MATCHES = uuid.UUID(int=0)  # stands for a receipt that is not a UUID: it matches no lease


def _ids(message_id: str | None, receipt: str | None) -> tuple[uuid.UUID | None, uuid.UUID | None]:
    """Parse ids from the URL or body. An id that is not a UUID matches no message (404), never a 500; a receipt
    that is not one matches no lease (409)."""
    rec = None if receipt is None else (parse_uuid(receipt) or _NO_RECEIPT_MATCHES)
    return parse_uuid(message_id), rec


def _lease_error_code(status: str | None, *, with_receipt: bool) -> AckFailureCode:
    """Why an ack, nack or extend failed: the message is gone or not leased (404), or a receipt was given and the
    message was leased again or released since (409)."""
    if status is not None and with_receipt and status in ("processing", "pending"):
        return "lease_lost"
    return "message_not_found"


def _violated(schema: SchemaRef, violation: Violation) -> str:
    """The human sentence for a payload the schema refuses."""
    if violation.reason == CHECK_TOO_COSTLY:
        return (
            f"checking the payload against the topic's schema (version {schema.version}) took longer than its "
            "budget: the schema or the payload makes the check too costly"
        )
    return (
        f"the payload does not fit the topic's schema (version {schema.version}) at "
        f"{violation.pointer or 'its root'}: {violation.reason}"
    )


def _violation_details(schema: SchemaRef, violation: Violation) -> dict[str, Any]:
    return {"pointer": violation.pointer, "reason": violation.reason, "version": schema.version}
