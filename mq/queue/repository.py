"""The only code that runs hot-path SQL: a thin, typed layer over the asyncpg pool and `mq.queue.sql`."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, TypeVar

import asyncpg

from mq import errors
from mq.db.engine import DATABASE_ERRORS
from mq.db.statements import Statement
from mq.ids import uuid7
from mq.queue import sql
from mq.queue.admission import RETRY_AFTER_SECONDS, AdmitArguments
from mq.queue.sql import dequeue as dequeue_sql
from mq.queue.sql import insert as insert_sql
from mq.queue.sql import settle
from mq.queue.sql.dequeue import dequeue_statement
from mq.queue.sql.insert import EXPIRE_TWINS, InsertPlan, insert_statement
from mq.queue.types import DeadLettered, DeliveryPlan, Lease, NackOutcome, NewRow, QueueDefaults

Record = asyncpg.Record
_T = TypeVar("_T")


# The insert of each plan, by what the rows ask (looked up per statement: a plan's hash costs more than a tuple's)
#: The inserts by what their rows need: the statements (False) and their functions on Citus (True, none admitted:
#: see `_admitted_apart`). Citus delegates a function's call to the tenant's worker only outside a transaction
#: block: inside one (a capped insert after its gates, the schedules firer's) the statement itself runs.
_INSERT_ROWS = {
    citus: {
        (plan.keyed, plan.grouped, plan.admitted, plan.to_groups): insert_statement(plan, citus=citus)
        for plan in InsertPlan.every()
        if not plan.uniform and not (citus and plan.admitted)
    }
    for citus in (False, True)
}
_INSERT_UNIFORM = {
    citus: {
        (p.grouped, p.admitted): insert_statement(p, citus=citus)
        for p in InsertPlan.every()
        if p.uniform and not (citus and p.admitted)
    }
    for citus in (False, True)
}


class MessageRepository:
    """Message rows of one database. Every method takes the tenant id first and scopes its statement by it."""

    def __init__(self, pool: asyncpg.Pool[Any], defaults: QueueDefaults | None = None, *, citus: bool = False) -> None:
        self.pool = pool
        self.defaults = defaults or QueueDefaults()
        #: The database is a Citus coordinator: the statements that differ there take their Citus form.
        self.citus = citus

    async def insert_batch(
        self,
        tenant_id: int,
        ids: Sequence[uuid.UUID],
        rows: Sequence[NewRow],
        admit: AdmitArguments | None = None,
        conn: asyncpg.Connection[Record] | None = None,
    ) -> list[Record]:
        """`admit`: the caps the rows must pass (see `mq.queue.admission`); a refusal raises its domain error.
        Keyed rows first expire twins past their TTL (`mq.queue.sql.insert`). `conn`: in that connection's
        transaction (the schedules' firer), instead of a connection of the pool."""
        if admit is not None and conn is None:
            return await _deadlocks_retried(lambda: self._insert_batch(tenant_id, ids, rows, admit, None))
        return await self._insert_batch(tenant_id, ids, rows, admit, conn)

    async def _insert_batch(
        self,
        tenant_id: int,
        ids: Sequence[uuid.UUID],
        rows: Sequence[NewRow],
        admit: AdmitArguments | None,
        conn: asyncpg.Connection[Record] | None,
    ) -> list[Record]:
        grouped = any(r.grouped for r in rows)
        to_groups = grouped and any(r.consumer_group is not None for r in rows)
        keyed = to_groups or any(r.key is not None for r in rows)
        if admit is not None and self.citus:  # the gates in a statement of their own (see `_admitted_apart`)
            async with self._admitted_apart(tenant_id, admit, conn) as c:
                return await self._insert_batch(tenant_id, ids, rows, None, c)
        # (in a transaction, `conn`'s, Citus runs a function call on the coordinator, not on the worker: the
        # statement itself there, as one Postgres)
        statement = _INSERT_ROWS[self.citus and conn is None][keyed, grouped, admit is not None, to_groups]
        values = self._admit_values(admit) if admit is not None else {}
        values.update(
            tenant=tenant_id,
            ids=ids,
            topics=[r.topic for r in rows],
            keys=[r.key for r in rows],
            payloads=[r.payload for r in rows],
            metadata=[r.metadata_json for r in rows],
            priorities=[r.priority for r in rows],
            max_retries=[r.max_retries for r in rows],
            delays=[float(r.delay_seconds) for r in rows],
            ttls=[r.ttl_seconds for r in rows],
            groups=[r.consumer_group for r in rows] if to_groups else None,
            expire_default=self.defaults.expire_to_dlq,
            dlq_default=self.defaults.dlq_enabled,
        )
        arguments = statement.bind(values)
        try:
            return await (conn or self.pool).fetch(statement.text, *arguments)
        except asyncpg.PostgresError as exc:
            _raise_refusal(exc)
            raise

    async def insert_uniform(
        self,
        tenant_id: int,
        ids: Sequence[uuid.UUID],
        rows: Sequence[NewRow],
        admit: AdmitArguments | None = None,
    ) -> None:
        """Insert keyless messages that share topic, priority, delay, max_retries and TTL (rows[0] gives them)."""
        if admit is None:
            await self._insert_uniform(self.pool, tenant_id, ids, rows, None)
            return

        async def admitted() -> None:
            if self.citus:
                async with self._admitted_apart(tenant_id, admit) as c:
                    await self._insert_uniform(c, tenant_id, ids, rows, None)
            else:
                await self._insert_uniform(self.pool, tenant_id, ids, rows, admit)

        await _deadlocks_retried(admitted)

    async def _insert_uniform(
        self,
        on: asyncpg.Pool[Any] | asyncpg.Connection[Record],
        tenant_id: int,
        ids: Sequence[uuid.UUID],
        rows: Sequence[NewRow],
        admit: AdmitArguments | None,
    ) -> None:
        first = rows[0]
        statement = _INSERT_UNIFORM[self.citus and on is self.pool][first.grouped, admit is not None]
        values = self._admit_values(admit) if admit is not None else {}
        values.update(
            tenant=tenant_id,
            topic=first.topic,
            priority=first.priority,
            max_retries=first.max_retries,
            delay=float(first.delay_seconds),
            ttl=first.ttl_seconds,
            ids=_id_list(ids) if first.grouped else ids,
            payloads=[r.payload for r in rows],
            metadata=[r.metadata_json for r in rows],
        )
        arguments = statement.bind(values)
        try:
            await on.execute(statement.text, *arguments)
        except asyncpg.PostgresError as exc:
            _raise_refusal(exc)
            raise

    @asynccontextmanager
    async def _admitted_apart(
        self, tenant_id: int, admit: AdmitArguments, conn: asyncpg.Connection[Record] | None = None
    ) -> AsyncIterator[asyncpg.Connection[Record]]:
        """On Citus, a capped insert passes its gates in a statement of its own (`sql.ADMIT`), then inserts, in one
        transaction (`conn`'s, or one of the pool): a function that reads distributed tables cannot run inside a
        statement routed to a worker (a nested distributed query). A refusal raises its domain error."""
        async with contextlib.AsyncExitStack() as stack:
            on: asyncpg.Connection[Record]
            if conn is None:
                on = await stack.enter_async_context(self.pool.acquire())  # type: ignore[arg-type]
                await stack.enter_async_context(on.transaction())
            else:
                on = conn
            values = {"tenant": tenant_id, **self._admit_values(admit)}
            try:
                await on.execute(insert_sql.ADMIT.text, *insert_sql.ADMIT.bind(values))
            except asyncpg.PostgresError as exc:
                _raise_refusal(exc)
                raise
            yield on

    @staticmethod
    def _admit_values(admit: AdmitArguments) -> dict[str, Any]:
        scopes, rows, caps, max_topics, topics = admit
        return {
            "admit_scopes": scopes,
            "admit_rows": rows,
            "admit_caps": caps,
            "admit_max_topics": max_topics,
            "admit_topics": topics,
        }

    async def copy_batch(
        self,
        tenant_id: int,
        ids: Sequence[uuid.UUID],
        rows: Sequence[NewRow],
        admit: AdmitArguments | None = None,
    ) -> None:
        """Insert keyless, undelayed messages without TTL by binary COPY: the fastest way into the table.
        `available_at`, `created_at` and `updated_at` take their defaults, now() on the database's clock. With
        `admit`, the COPY passes the gates first, in its own statement (see `sql.copy_admission`)."""
        if admit is not None and self.citus:  # by INSERT, after the gates (a COPY there waited on locks for seconds)
            await self.insert_batch(tenant_id, ids, rows, admit)
            return
        records = [
            (message_id, tenant_id, row.topic, row.payload, row.metadata_json, row.priority, row.max_retries)
            for message_id, row in zip(ids, rows, strict=True)
        ]
        where = None if admit is None else insert_sql.copy_admission(tenant_id, admit)

        async def copy() -> None:
            try:
                await self.pool.copy_records_to_table(
                    "messages", records=records, columns=insert_sql.MESSAGE_COPY_COLUMNS, where=where
                )
            except asyncpg.PostgresError as exc:
                _raise_refusal(exc)
                raise

        await (copy() if admit is None else _deadlocks_retried(copy))

    async def dequeue(self, lease: Lease) -> tuple[list[Record], list[DeadLettered]]:
        """Lease up to `lease.limit` messages (a group's deliveries of them, under a grouped plan): the delivered
        rows, and those taken only to be dead-lettered because their lease lapsed once too often. A topic's own
        do not use up the count: the statement runs again for what they took, while it keeps finding such
        messages; a group's do (the contract lets a dequeue answer fewer), and are dead-lettered as a nack would."""
        values = {
            "tenant": lease.tenant_id,
            "topic": lease.topic,
            "group": lease.group_id or 0,
            "group_name": lease.group_name,
            "visibility": float(lease.visibility),
            "dlq_default": self.defaults.dlq_enabled,
            "consumer": lease.consumer,
        }
        delivered: list[Record] = []
        dead: list[DeadLettered] = []
        wanted = lease.limit
        while wanted > 0:
            # the receipts of this delivery derive from the secret (`mq.queue.sql.dequeue`)
            values.update(count=wanted, secret=secrets.token_hex(16))
            statement = dequeue_statement(lease.plan, citus=self.citus, count=wanted)
            if lease.plan.limited:
                rows = await self._reserved(statement, values)
            else:
                rows = await self.pool.fetch(statement.text, *statement.args(**values))
            taken = [r for r in rows if r["fate"] is not None]
            if not taken:
                delivered.extend(rows)
                break
            delivered.extend(r for r in rows if r["fate"] is None)
            if lease.plan.grouped:
                dead.extend(await self._spent(lease, [uuid.UUID(r["id"]) for r in taken]))
                break
            dead.extend(DeadLettered(lease.topic, r["fate"]) for r in taken)
            wanted = len(taken) if len(rows) == wanted else 0
        return delivered, dead

    async def _spent(self, lease: Lease, ids: list[uuid.UUID]) -> list[DeadLettered]:
        """A group's deliveries whose lease lapsed once too often, dead-lettered as a nack would."""
        dead = []
        for message_id in ids:
            arguments = settle.NACK_LAPSED.args(
                tenant=lease.tenant_id,
                group=lease.group_id,
                message=message_id,
                backoff_default=[],  # (a spent delivery is never retried: no backoff needed)
                dlq_default=self.defaults.dlq_enabled,
                copy_id=uuid7(),
            )
            done = await self.pool.fetchrow(settle.NACK_LAPSED.text, *arguments)
            if done is not None and done["outcome"] is not None:
                dead.append(DeadLettered(lease.topic, done["outcome"]))
        return dead

    async def _reserved(self, statement: Statement, values: dict[str, Any]) -> list[Record]:
        """A limited dequeue: up to `values["count"]` slots reserved in a short transaction of their own (the
        topic's or the group's counter made first if it does not exist), then `statement` leases what they allow,
        claiming the reservation (see `mq.queue.sql.dequeue`). A lease statement that fails gives its reservation
        back."""
        reserve = dequeue_sql.reserve_statement(citus=self.citus)
        values = {**values, "reservation": secrets.randbits(63)}  # the reservation's id, never one in use
        reserved = await self.pool.fetchrow(reserve.text, *reserve.args(**values))
        if reserved is None:  # the counter did not exist yet: made now (or by a racing dequeue)
            await self.start_counting(values["tenant"], values["topic"], values["group"])
            reserved = await self.pool.fetchrow(reserve.text, *reserve.args(**values))
        if reserved is None or reserved["reservation"] is None:
            return []
        # the statement's count becomes what was reserved, at most what was asked
        claimed = {**values, "count": reserved["n"], "reservation": reserved["reservation"]}
        try:
            return await self.pool.fetch(statement.text, *statement.args(**claimed))
        except BaseException:
            release = dequeue_sql.release_statement(citus=self.citus)
            with contextlib.suppress(*DATABASE_ERRORS, asyncio.CancelledError):
                await self.pool.execute(release.text, *release.args(**claimed))
            raise

    async def start_counting(self, tenant_id: int, topic: str, group_id: int) -> bool:
        """Make a limited topic's counter (`group_id` 0), or one of its consumer groups', with the leases in flight
        now recorded; False when it existed."""
        async with self.pool.acquire() as conn, conn.transaction():
            if await conn.fetchval(sql.INFLIGHT_START, tenant_id, topic, group_id) is None:
                return False
            if group_id:
                await conn.execute(sql.GROUP_INFLIGHT_START_LEASES, tenant_id, topic, group_id)
            else:
                await conn.execute(sql.INFLIGHT_START_LEASES, tenant_id, topic)
            return True

    async def stop_counting(self, tenant_id: int, topic: str) -> None:
        await self.pool.execute(sql.INFLIGHT_DROP, tenant_id, topic)

    async def group_statuses(self, tenant_id: int, group: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, str]:
        """The status of each listed message's delivery to the group (absent: the group does not owe it)."""
        rows = await self.pool.fetch(sql.GROUP_LEASE_PROBE_MANY, tenant_id, group, _id_list(ids))
        return {r["id"]: r["status"] for r in rows}

    async def group_exists(self, tenant_id: int, group: str) -> bool:
        """Whether any topic of the tenant has a consumer group of that name."""
        found: bool = await self.pool.fetchval(sql.GROUP_EXISTS, tenant_id, group)
        return found

    async def seconds_until_next_available(self, tenant_id: int, topic: str) -> float | None:
        value: float | None = await self.pool.fetchval(sql.MESSAGE_NEXT_AVAILABLE, tenant_id, topic)
        return value

    async def ack(
        self,
        plan: DeliveryPlan,
        tenant_id: int,
        ids: Sequence[uuid.UUID],
        receipts: Sequence[uuid.UUID | None],
        group: str | None = None,
    ) -> dict[uuid.UUID, tuple[str, uuid.UUID | None]]:
        """The messages acknowledged (a grouped plan: the deliveries of the consumer group named `group`): id ->
        (topic, the receipt of the lease that ended). The plan's steps keep the acked messages of replayable topics
        in the log and count out the leases of limited topics, in the same statement."""
        statement = settle.ack_statement(plan, citus=self.citus)
        values = {"tenant": tenant_id, "ids": _id_list(ids), "receipts": _id_list(receipts), "group_name": group}
        rows = await self.pool.fetch(statement.text, *statement.args(**values))
        return {r["id"]: (r["topic"], r["receipt"]) for r in rows}

    async def statuses(self, tenant_id: int, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, str]:
        rows = await self.pool.fetch(sql.MESSAGE_LEASE_PROBE_MANY, tenant_id, _id_list(ids))
        return {r["id"]: r["status"] for r in rows}

    async def topics(self, tenant_id: int, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, tuple[str, str | None]]:
        """Each existing message's topic and (a dead letter's) consumer group."""
        rows = await self.pool.fetch(sql.MESSAGE_TOPICS, tenant_id, _id_list(ids))
        return {r["id"]: (r["topic"], r["consumer_group"]) for r in rows}

    async def lease_probe(self, tenant_id: int, message_id: uuid.UUID) -> Record | None:
        return await self.pool.fetchrow(sql.MESSAGE_LEASE_PROBE, tenant_id, message_id)

    async def nack(
        self,
        plan: DeliveryPlan,
        tenant_id: int,
        message_id: uuid.UUID,
        receipt: uuid.UUID | None,
        error: str | None,
        delay_seconds: float | None,
        backoff: Sequence[int],
        metadata_json: str | None = None,
        group: str | None = None,
    ) -> tuple[NackOutcome, str] | None:
        """(outcome, the message's topic afterwards; a group's: the group's topic); None when no processing message
        (no delivery of the group named `group`, under a grouped plan) matched. `metadata_json`: an object merged
        into the message's metadata (a group's: into its saved state, its delivery's). A topic's retry that would
        collide with a pending twin of the same key expires that twin if its TTL passed and retries; a live twin
        supersedes the message, which is deleted (outcome `retry`: the key's latest content will be delivered)."""
        statement = settle.nack_statement(plan, merged=metadata_json is not None, citus=self.citus)
        arguments = statement.args(
            tenant=tenant_id,
            group_name=group,
            message=message_id,
            receipt=receipt,
            error=error,
            delay=delay_seconds,
            backoff_default=list(backoff),
            dlq_default=self.defaults.dlq_enabled,
            copy_id=uuid7() if plan.grouped else None,
            metadata=metadata_json,
        )
        for _ in range(3):  # a dead twin expired: try again (a new one past its TTL at once is near impossible)
            try:
                row = await self.pool.fetchrow(statement.text, *arguments)
            except asyncpg.UniqueViolationError:
                async with self.pool.acquire() as conn, conn.transaction():
                    if await self._expire_twins(conn, "message", tenant_id, message=message_id):
                        continue
                    superseded = settle.superseded_statement(plan, citus=self.citus)
                    values = superseded.args(tenant=tenant_id, message=message_id, receipt=receipt)
                    topic = await conn.fetchval(superseded.text, *values)
                    return None if topic is None else ("retry", topic)
            return None if row is None or row["outcome"] is None else (row["outcome"], row["topic"])
        raise errors.Unavailable("the message's key kept changing; retry the nack")

    async def _expire_twins(self, conn: Any, whose: str, tenant_id: int, **values: Any) -> int:
        """Expire the pending twins past their TTL of a message's key (`whose` 'message'), of a dead letter's key
        in its original topic ('dlq') or of every key a DLQ's requeue moves back ('topic'); how many expired."""
        statement = EXPIRE_TWINS[whose]
        arguments = statement.args(
            tenant=tenant_id,
            expire_default=self.defaults.expire_to_dlq,
            dlq_default=self.defaults.dlq_enabled,
            **values,
        )
        return int(await conn.fetchval(statement.text, *arguments))

    async def extend(
        self,
        plan: DeliveryPlan,
        tenant_id: int,
        message_id: uuid.UUID,
        receipt: uuid.UUID | None,
        seconds: float,
        group: str | None = None,
    ) -> datetime | None:
        """The new deadline of the lease (a group's, under a grouped plan); None when none matched (or, under a
        limited plan, its lease on a limited topic is no longer in flight)."""
        statement = settle.extend_statement(plan)
        arguments = statement.args(
            tenant=tenant_id, group_name=group, message=message_id, receipt=receipt, seconds=float(seconds)
        )
        value: datetime | None = await self.pool.fetchval(statement.text, *arguments)
        return value

    async def requeue(self, tenant_id: int, message_id: uuid.UUID, depth_cap: DepthCap) -> str | None:
        """The original topic the message went back to, or None when it is not a requeueable DLQ message. A
        capped original topic must have room (QueueFull otherwise, and nothing moves).

        Raises KeyConflict when the original topic holds a pending twin of the same key.
        """
        try:
            return await self._requeue(tenant_id, message_id, depth_cap)
        except asyncpg.UniqueViolationError:
            raise errors.KeyConflict("the original topic holds a pending message with the same key") from None

    async def _requeue(self, tenant_id: int, message_id: uuid.UUID, depth_cap: DepthCap) -> str | None:
        async with self.pool.acquire() as conn, conn.transaction():
            # The gate first, as an enqueue takes it: after the row it would wait in a cycle with an enqueue
            # that holds the gate and upserts the same key.
            original = await conn.fetchval(sql.MESSAGE_ORIGINAL_TOPIC, tenant_id, message_id)
            if original is not None:
                await _admit_moved(conn, tenant_id, original, 1, depth_cap)
                await self._expire_twins(conn, "dlq", tenant_id, message=message_id)
            requeue = sql.REQUEUE_FORMS[self.citus]
            values = {"tenant": tenant_id, "message": message_id, **self._restore}
            topic: str | None = await conn.fetchval(requeue.text, *requeue.bind(values))
            return topic

    @property
    def _restore(self) -> dict[str, int]:
        """What a dead letter back in its topic takes when the topic has no config: max_retries and TTL."""
        return {"default_max_retries": self.defaults.max_retries, "default_ttl": self.defaults.message_ttl_seconds}

    async def requeue_topic(
        self, tenant_id: int, dlq_topic: str, topic: str, depth_cap: DepthCap, groups: Sequence[str] | None = None
    ) -> int:
        """Every pending message of `dlq_topic` back to `topic`, all or none when `topic` is capped. `groups`: only
        those consumer groups' dead letters, and Forbidden when the DLQ holds others'."""
        async with self.pool.acquire() as conn, conn.transaction():
            if groups is not None and await conn.fetchval(sql.MESSAGE_DLQ_OTHERS, tenant_id, dlq_topic, list(groups)):
                names = ", ".join(sorted(groups))
                raise errors.Forbidden(
                    f"{dlq_topic!r} holds dead letters of consumer groups other than {names}: your consume grant is "
                    f"for {names} only (requeue yours one by one, or by a bulk job filtered by your group)"
                )
            if await depth_cap(topic) is not None:
                waiting = await conn.fetchval(sql.MESSAGE_DLQ_PENDING, tenant_id, dlq_topic)
                if waiting:
                    await _admit_moved(conn, tenant_id, topic, waiting, depth_cap)
            await self._expire_twins(conn, "topic", tenant_id, topic=dlq_topic)
            requeue = sql.REQUEUE_TOPIC_FORMS[self.citus]
            values = {"tenant": tenant_id, "topic": dlq_topic, "groups": groups, **self._restore}
            requeued = await conn.fetch(requeue.text, *requeue.bind(values))
            return len(requeued)

    async def retry(self, tenant_id: int, message_id: uuid.UUID, depth_cap: DepthCap) -> str | None:
        """The topic of a failed, expired or delayed message made pending and available now, or None when the
        message is not one of those. A capped topic must have room (QueueFull otherwise, and nothing changes).

        Raises KeyConflict when the topic holds a pending twin of the same key.
        """
        try:
            async with self.pool.acquire() as conn, conn.transaction():
                topic = await conn.fetchval(sql.MESSAGE_TOPIC, tenant_id, message_id)
                if topic is None:
                    return None
                await _admit_moved(conn, tenant_id, topic, 1, depth_cap)
                await self._expire_twins(conn, "message", tenant_id, message=message_id)
                retried: str | None = await conn.fetchval(sql.MESSAGE_RETRY, tenant_id, message_id)
                return retried
        except asyncpg.UniqueViolationError:
            raise errors.KeyConflict("the topic holds a pending message with the same key") from None

    async def delete_many(self, tenant_id: int, topic: str, ids: Sequence[uuid.UUID]) -> int:
        return len(await self.pool.fetch(sql.MESSAGE_DELETE_MANY, tenant_id, topic, ids))

    async def get(self, tenant_id: int, message_id: uuid.UUID) -> Record | None:
        return await self.pool.fetchrow(sql.MESSAGE_GET, tenant_id, message_id)

    async def get_detail(self, tenant_id: int, message_id: uuid.UUID) -> Record | None:
        """The message with its attempts (JSON text, the last column)."""
        return await self.pool.fetchrow(sql.MESSAGE_GET_DETAIL, tenant_id, message_id)

    async def story_groups(self, tenant_id: int, message_id: uuid.UUID, topic: str) -> list[Record]:
        """Each consumer group of `topic`, with its delivery of the message (`sql.STORY_GROUPS`)."""
        return await self.pool.fetch(sql.STORY_GROUPS, tenant_id, message_id, topic)

    async def story_made_from(
        self, tenant_id: int, message_id: uuid.UUID, topics: list[str], *, replays: bool
    ) -> list[Record]:
        """The consumer groups' dead letters of a message (`replays`: its replays) in `topics`."""
        statement = sql.STORY_REPLAYS if replays else sql.STORY_DEAD_LETTERS
        return await self.pool.fetch(statement, tenant_id, topics, str(message_id), message_id)

    async def leased_metadata(self, tenant_id: int, message_id: uuid.UUID, consumer_group: str | None) -> str | None:
        """The metadata (JSON text) a processing message's (or a group's delivery's) consumer sees; None when it is
        not processing."""
        if consumer_group is None:
            found: str | None = await self.pool.fetchval(sql.MESSAGE_LEASED_METADATA, tenant_id, message_id)
        else:
            found = await self.pool.fetchval(sql.GROUP_LEASED_METADATA, tenant_id, message_id, consumer_group)
        return found

    async def lease_holder(self, tenant_id: int, message_id: uuid.UUID, consumer_group: str | None) -> Record | None:
        """The current lease of a processing message (or of a group's delivery of it): receipt, leased_by, live."""
        if consumer_group is None:
            return await self.pool.fetchrow(sql.MESSAGE_LEASE_HOLDER, tenant_id, message_id)
        return await self.pool.fetchrow(sql.GROUP_LEASE_HOLDER, tenant_id, message_id, consumer_group)

    async def delete(self, tenant_id: int, message_id: uuid.UUID) -> str | None:
        """The deleted message's topic; None when there was none."""
        topic: str | None = await self.pool.fetchval(sql.MESSAGE_DELETE, tenant_id, message_id)
        return topic

    async def tenant_plan(self, tenant_id: int) -> DeliveryPlan:
        row = await self.pool.fetchrow(sql.TENANT_PLAN, tenant_id)
        assert row is not None  # an aggregate answers one row
        return DeliveryPlan(limited=row["limited"], logged=row["logged"])

    async def topic_config(self, tenant_id: int, topic: str) -> Record:
        """The topic's config columns with `configured` (false: it has none, the columns are null) and `paused`."""
        row: Record | None = await self.pool.fetchrow(sql.TOPIC_CONFIG_GET, tenant_id, topic)
        assert row is not None  # the statement always answers one row
        return row

    async def add_activity(
        self,
        tenant_ids: Sequence[int],
        topics: Sequence[str],
        enqueued: Sequence[int],
        acked: Sequence[int],
        dead_lettered: Sequence[int],
    ) -> None:
        """Add counts to each topic's current 10-second bucket of `topic_activity` (every tenant at once: the
        flush of one process's counters, `mq.queue.activity`)."""
        await self.pool.execute(sql.ACTIVITY_ADD, tenant_ids, topics, enqueued, acked, dead_lettered)


#: A topic's max_depth, or None when it has none (the topic configs' cache answers it).
DepthCap = Callable[[str], Awaitable[int | None]]


async def _admit_moved(
    conn: asyncpg.pool.PoolConnectionProxy[Any], tenant_id: int, topic: str, rows: int, depth_cap: DepthCap
) -> None:
    """Pass rows about to move into `topic` (a DLQ requeue) through its max_depth gate, in the moving
    transaction. Counting rows that then do not move only makes the gate's bound overestimate."""
    cap = await depth_cap(topic)
    if cap is None:
        return
    try:
        admit = insert_sql.ADMIT
        values = {"admit_scopes": [topic], "admit_rows": [rows], "admit_caps": [cap], "admit_max_topics": None}
        await conn.execute(admit.text, *admit.args(tenant=tenant_id, admit_topics=[], **values))
    except asyncpg.PostgresError as exc:
        _raise_refusal(exc)
        raise


#: Times a capped insert that lost a deadlock is tried again (then the deadlock answers 503, `Retry-After`).
DEADLOCK_RETRIES = 3


async def _deadlocks_retried(attempt: Callable[[], Awaitable[_T]]) -> _T:
    """Run a capped insert, again if Postgres chose it as a deadlock's victim (undone whole, so safe to repeat).
    Admission gates can deadlock near a cap: an insert whose stripe had no room keeps the row lock it took on
    rechecking that stripe after a concurrent redistribution, then locks every stripe in order, while another
    insert holding the lower stripes waits for that one (`mq.queue.sql.functions`, `skiplock_admit`)."""
    for retry in range(DEADLOCK_RETRIES + 1):
        try:
            return await attempt()
        except asyncpg.DeadlockDetectedError:
            if retry == DEADLOCK_RETRIES:
                raise
            await asyncio.sleep(0.01 * (retry + 1) * (1 + secrets.randbelow(10)))
    raise AssertionError("unreachable")


def _raise_refusal(exc: asyncpg.PostgresError) -> None:
    """Raise the domain error of a refusal by `skiplock_admit`; return for any other database error."""
    error = refusal(exc)
    if error is not None:
        raise error from None


def refusal(exc: asyncpg.PostgresError) -> errors.SkiplockError | None:
    """The domain error for a refusal raised by `skiplock_admit`, or None for any other database error."""
    code = getattr(exc, "sqlstate", None)
    if code not in ("SKQ01", "SKQ02", "SKQ03"):
        return None
    scope = getattr(exc, "detail", None) or ""
    used_text, _, cap_text = (getattr(exc, "hint", None) or "0/0").partition("/")
    used, cap = int(used_text), int(cap_text)
    if code == "SKQ01":
        return errors.QueueFull(
            f"topic {scope!r} holds {used} messages and its max_depth is {cap}; retry when consumers made room",
            details={"topic": scope, "max_depth": cap, "depth": used},
            retry_after=RETRY_AFTER_SECONDS,
        )
    if code == "SKQ02":
        return errors.QuotaExceeded(
            f"the tenant holds {used} pending and processing messages and its max_messages quota is {cap}",
            details={"quota": "max_messages", "limit": cap, "used": used},
            retry_after=RETRY_AFTER_SECONDS,
        )
    return errors.QuotaExceeded(
        f"the tenant has {used} topics, its max_topics quota; this would create another",
        details={"quota": "max_topics", "limit": cap, "used": used},
    )


def _id_list(ids: Sequence[uuid.UUID | None]) -> str:
    """UUIDs as one comma-separated text, None as an empty entry (see `sql._uuid_list`)."""
    return ",".join("" if i is None else str(i) for i in ids)
