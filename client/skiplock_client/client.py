"""`AsyncClient`: the producer, the data plane a consumer uses, and thin admin methods, over one pooled connection
set. Everything else in this package is built on it (the sync `Client`, the consumer runtime)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, Generic, Literal, TypedDict, TypeVar, Unpack
from urllib.parse import quote

import aiohttp
import msgspec

from skiplock_client import errors
from skiplock_client._http import Transport, tls_context
from skiplock_client._version import __version__
from skiplock_client.consumer import BatchConsumerOptions, Consumer, ConsumerOptions
from skiplock_client.errors import QueueFull, QuotaExceeded, RateLimited
from skiplock_client.models import (
    AckItem,
    AuditPage,
    BatchAck,
    BatchAckBody,
    BatchBody,
    BulkJob,
    ConsumerGroup,
    ConsumerGroups,
    ConsumerGroupStats,
    Consumers,
    CountView,
    DequeueView,
    EnqueueBody,
    ErrorClasses,
    ExtendView,
    Grant,
    IdsView,
    IdView,
    Item,
    ItemsView,
    LeaseHolder,
    LogEntry,
    LogPage,
    Me,
    Message,
    MessageStatus,
    MessageStory,
    NackOutcome,
    NackView,
    Page,
    PeriodicSchedule,
    Quotas,
    ReplayedView,
    Role,
    SchemaFormat,
    StatRow,
    StatsView,
    Tenant,
    TenantStatus,
    Topic,
    TopicConfig,
    TopicConfigView,
    TopicSchema,
    TopicSchemaSummary,
    User,
    VersionView,
    json_schema_of,
    to_bytes,
)
from skiplock_client.retry import NO_RETRY, RetryPolicy

T = TypeVar("T")
M = TypeVar("M")
#: The server's largest batch (SKIPLOCK_MAX_BATCH_SIZE's default); `send_batch` splits into chunks of this size.
DEFAULT_BATCH_SIZE = 1000
USER_AGENT = f"skiplock-client/{__version__} (python; aiohttp/{aiohttp.__version__})"

MessageRef = Message | str  # a message, or its id (acks and nacks then carry no receipt)


def _ref(message: MessageRef, receipt: str | None) -> tuple[str, str | None]:
    if isinstance(message, Message):
        return message.id, receipt or message.receipt
    return message, receipt


def _enqueue_body(item: Item | Any, topic: str | None) -> EnqueueBody:
    if not isinstance(item, Item):
        return EnqueueBody(payload=to_bytes(item), topic=topic)
    return EnqueueBody(
        payload=to_bytes(item.payload),
        topic=item.topic or topic,
        metadata=item.metadata,
        key=item.key,
        delay_seconds=item.delay,
        priority=item.priority,
    )


class ClientOptions(TypedDict, total=False):
    """`AsyncClient`'s keyword parameters (their defaults and documentation are there): the blocking `Client` takes
    them as `**options`, typed by this (PEP 692)."""

    auth: tuple[str, str] | None
    tenant: str | None
    timeout: float
    verify: bool | str
    client_cert: str | tuple[str, str] | None
    max_connections: int
    retry: RetryPolicy | None
    batch_size: int
    headers: dict[str, str] | None
    session: aiohttp.ClientSession | None


class AsyncClient:
    """Skiplock's REST API. Use as `async with AsyncClient(...) as client:` (or call `aclose`).

    `auth`: (username, password) for HTTP Basic; `login()` trades it for a session cookie. `tenant`: the tenant a
    platform admin addresses (`X-Tenant`); other users belong to theirs. `verify`/`client_cert`: TLS (a CA bundle
    path, or False to skip verification; a client certificate). `retry`: how the producer retries 429s, 503s and
    requests that got no answer; the consumer runtime uses it for its own calls. `batch_size`: the server's largest
    batch. `headers`: sent with every request. `session`: an `aiohttp.ClientSession` of your own, left open by
    `aclose`: its connector, TLS, timeouts and cookie jar are then yours (`verify`, `client_cert`, `timeout` and
    `max_connections` do not apply), while `base_url`, `auth`, `tenant` and `headers` still do; `login()` to a
    server addressed by IP needs its jar to be `aiohttp.CookieJar(unsafe=True)`.
    """

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8080",
        *,
        auth: tuple[str, str] | None = None,
        tenant: str | None = None,
        timeout: float = 30.0,
        verify: bool | str = True,
        client_cert: str | tuple[str, str] | None = None,
        max_connections: int = 100,
        retry: RetryPolicy | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        headers: dict[str, str] | None = None,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self.base_url = base_url
        self.tenant = tenant
        self.batch_size = batch_size
        common = {"User-Agent": USER_AGENT, **({"X-Tenant": tenant} if tenant else {}), **(headers or {})}
        self._transport = Transport(
            base_url,
            common,
            auth,
            timeout,
            tls_context(verify, client_cert),
            max_connections,
            retry or RetryPolicy(),
            session,
        )
        self.retry = self._transport.retry
        self._call = self._transport.call

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    @property
    def retries(self) -> int:
        """How many requests this client has tried again so far (429s, 503s, lost answers)."""
        return self._transport.retries

    async def aclose(self) -> None:
        await self._transport.close()

    # --- session --------------------------------------------------------------------------------------------------

    async def login(self) -> None:
        """Trade the Basic credentials for a session: later requests carry the cookie (and the CSRF token)."""
        await self._call("POST", "/api/auth/session")
        self._transport.use_session_cookie(True)

    async def logout(self) -> None:
        await self._call("DELETE", "/api/auth/session")
        self._transport.use_session_cookie(False)

    async def me(self) -> Me:
        return await self._get("/api/auth/me", Me)

    async def version(self) -> str:
        return (await self._get("/api/version", VersionView)).version

    # --- producer -------------------------------------------------------------------------------------------------

    async def send(
        self,
        topic: str,
        payload: Any,
        *,
        key: str | None = None,
        metadata: dict[str, Any] | None = None,
        delay: float = 0,
        priority: int = 0,
    ) -> str:
        """Enqueue one message; its id. `payload`: bytes, str (UTF-8) or a JSON-serialisable value.

        Refusals for now (429 `queue_full`, `rate_limited`), 503s and requests without an answer are retried by
        `retry`. A keyed message upserts, so its retry is harmless; a keyless one whose first try was stored but
        whose answer was lost is stored twice (delivery is at least once)."""
        body = EnqueueBody(
            payload=to_bytes(payload), topic=topic, metadata=metadata, key=key, delay_seconds=delay, priority=priority
        )
        return (await self._post("/api/messages", body, IdView, self.retry)).id

    async def send_batch(self, topic: str | None, items: Iterable[Item | Any]) -> list[str]:
        """Enqueue many: `items` are payloads or `Item`s (with key, metadata, delay, priority, their own topic).
        Sent in chunks of `batch_size` (each all or nothing), retried as `send`; the ids in input order. When a
        chunk fails for good, the error carries `sent_ids`: the ids of the chunks stored before it."""
        ids: list[str] = []
        chunk: list[EnqueueBody] = []
        for item in items:
            chunk.append(_enqueue_body(item, None))
            if len(chunk) == self.batch_size:
                await self._send_chunk(topic, chunk, ids)
                chunk = []
        if chunk:
            await self._send_chunk(topic, chunk, ids)
        return ids

    async def send_prepared(
        self, topic: str | None, bodies: list[EnqueueBody], retry: RetryPolicy | None = None
    ) -> list[str]:
        """One batch request of prepared bodies (at most `batch_size`, not split), for bulk loaders that build
        them column by column; retried by `retry` (default: the client's policy). The ids in order."""
        return (await self._post("/api/messages/batch", BatchBody(bodies, topic), IdsView, retry or self.retry)).ids

    async def _send_chunk(self, topic: str | None, chunk: list[EnqueueBody], ids: list[str]) -> None:
        try:
            ids.extend((await self._post("/api/messages/batch", BatchBody(chunk, topic), IdsView, self.retry)).ids)
        except errors.SkiplockError as exc:
            exc.sent_ids = ids  # type: ignore[attr-defined]
            raise

    # --- consuming ------------------------------------------------------------------------------------------------

    async def receive(
        self,
        topic: str,
        count: int = 1,
        *,
        visibility_timeout: int | None = None,
        wait_seconds: float = 0,
        retry: RetryPolicy = NO_RETRY,
        consumer_group: str | None = None,
    ) -> list[Message]:
        """Lease up to `count` messages (waiting up to `wait_seconds` for the first); each carries its receipt. A
        topic with consumer groups is consumed as one of them (`consumer_group`): ack, nack and extend then name
        the same group."""
        body: dict[str, Any] = {"topic": topic, "count": count, "wait_seconds": wait_seconds}
        if visibility_timeout is not None:
            body["visibility_timeout_seconds"] = visibility_timeout
        if consumer_group is not None:
            body["consumer_group"] = consumer_group
        return (await self._post("/api/messages/dequeue", body, DequeueView, retry)).messages

    async def ack(self, message: MessageRef, receipt: str | None = None, *, consumer_group: str | None = None) -> None:
        """Done: the message is deleted (a consumer group's delivery of it, with `consumer_group`; the message goes
        once no group owes it). LeaseLost if another dequeue took it since this receipt was issued."""
        message_id, receipt = _ref(message, receipt)
        body: dict[str, Any] = {"receipt": receipt} if receipt else {}
        if consumer_group is not None:
            body["consumer_group"] = consumer_group
        await self._call("POST", f"/api/messages/{message_id}/ack", body=body)

    async def ack_batch(
        self, messages: Iterable[MessageRef | tuple[str, str | None]], *, consumer_group: str | None = None
    ) -> BatchAck:
        """Acknowledge many in one request (at most `batch_size`), as `consumer_group` when given; the answer lists
        those that failed, by code."""
        acks = [
            AckItem(*(m if isinstance(m, tuple) else _ref(m, None)), consumer_group=consumer_group) for m in messages
        ]
        return await self._post("/api/messages/ack", BatchAckBody(acks), BatchAck, NO_RETRY)

    async def nack(
        self,
        message: MessageRef,
        error: str | None = None,
        *,
        receipt: str | None = None,
        delay: float | None = None,
        consumer_group: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> NackOutcome:
        """Failed: retried after `delay` (or the topic's backoff), or moved to the DLQ once retries are used up
        (with `consumer_group`: that group's delivery only). `metadata` is saved state, merged into the message's
        metadata (a group's: into its own) before the retry."""
        message_id, receipt = _ref(message, receipt)
        body: dict[str, Any] = {} if consumer_group is None else {"consumer_group": consumer_group}
        if metadata is not None:
            body["metadata"] = metadata
        if error is not None:
            body["error"] = error[:4000]
        if receipt:
            body["receipt"] = receipt
        if delay is not None:
            body["delay_seconds"] = delay
        return (await self._post(f"/api/messages/{message_id}/nack", body, NackView, NO_RETRY)).outcome

    async def extend(
        self,
        message: MessageRef,
        visibility_timeout: int,
        *,
        receipt: str | None = None,
        consumer_group: str | None = None,
    ) -> str:
        """Extend the lease to `visibility_timeout` seconds from now (a heartbeat); the new deadline."""
        message_id, receipt = _ref(message, receipt)
        body: dict[str, Any] = {"visibility_timeout_seconds": visibility_timeout}
        if consumer_group is not None:
            body["consumer_group"] = consumer_group
        if receipt:
            body["receipt"] = receipt
        view = await self._post(f"/api/messages/{message_id}/visibility", body, ExtendView, NO_RETRY)
        return view.visibility_deadline

    # The consumer runtime's options are `Consumer`'s keyword parameters, typed once (`ConsumerOptions`): editors and
    # type checkers show each by name and type (PEP 692); tests/client/test_consumer_signatures.py checks they match.
    def consumer(
        self, topic: str, handler: Callable[[Message], Awaitable[Any] | Any], **options: Unpack[ConsumerOptions]
    ) -> Consumer:
        """A consumer runtime for `topic` calling `handler(message)`; start it with `await consumer.run()`. The
        options (concurrency, prefetch, visibility timeout, long poll, batch, model, middleware, metrics, grace
        period, ack batching, signals, consumer group) are `Consumer`'s, documented there."""
        return Consumer(self, topic, handler, **options)

    def batch_consumer(
        self,
        topic: str,
        handler: Callable[[list[Message]], Awaitable[Any] | Any],
        **options: Unpack[BatchConsumerOptions],
    ) -> Consumer:
        """A consumer runtime calling `handler(messages)` with up to `batch_size` messages at a time; the other
        options are `consumer`'s."""
        return Consumer(self, topic, handler, batch=True, **options)

    # --- messages and topics --------------------------------------------------------------------------------------

    async def message(self, message_id: str) -> Message:
        return await self._get(f"/api/messages/{message_id}", Message)

    async def story(self, message_id: str, *, topic: str | None = None) -> MessageStory:
        """A message's whole story: enqueue, every attempt (each consumer group's too), dead-lettering, requeues,
        replays and acks. `topic`: where to look for a message that is not stored any more."""
        return await self._get(f"/api/messages/{message_id}/story", MessageStory, {"topic": topic} if topic else None)

    async def consumers(self, topic: str) -> list[LeaseHolder]:
        """Who holds the topic's messages now, by consumer and consumer group, most first."""
        return list((await self._get(f"/api/topics/{quote(topic, safe='')}/consumers", Consumers)).items)

    async def error_classes(self, topic: str) -> ErrorClasses:
        """The topic's failed messages (a DLQ's dead letters too) grouped by the class of their last error."""
        return await self._get(f"/api/topics/{quote(topic, safe='')}/error-classes", ErrorClasses)

    async def messages(
        self,
        topic: str | None = None,
        *,
        status: MessageStatus | None = None,
        key: str | None = None,
        consumer_group: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Page[Message]:
        """Browse, newest first. `consumer_group` (with a topic): what that group still owes, and its dead letters."""
        params = {
            "topic": topic,
            "status": status,
            "key": key,
            "consumer_group": consumer_group,
            "limit": limit,
            "offset": offset,
        }
        return await self._get("/api/messages", Page[Message], {k: v for k, v in params.items() if v is not None})

    async def audit(
        self,
        *,
        limit: int = 50,
        cursor: str | None = None,
        action: str | None = None,
        actor: str | None = None,
        topic: str | None = None,
        from_time: str | None = None,
        to_time: str | None = None,
    ) -> AuditPage:
        """The audit trail, newest first (tenant admins: their tenant's; platform admins: every tenant's, or the
        one they address). `action`: exact (`topic.purge`) or a prefix ending in `.` (`topic.`); times RFC 3339."""
        params = {
            "limit": limit,
            "cursor": cursor,
            "action": action,
            "actor": actor,
            "topic": topic,
            "from_time": from_time,
            "to_time": to_time,
        }
        return await self._get("/api/audit", AuditPage, {k: v for k, v in params.items() if v is not None})

    async def delete_message(self, message_id: str) -> None:
        await self._call("DELETE", f"/api/messages/{message_id}")

    async def delete_by_key(self, topic: str, key: str) -> int:
        return (await self._count("DELETE", f"/api/topics/{topic}/messages/by-key/{quote(key, safe='')}")).deleted

    async def requeue(self, message_id: str) -> None:
        """A dead letter back to its original topic."""
        await self._call("POST", f"/api/messages/{message_id}/requeue")

    async def requeue_all(self, topic: str) -> int:
        """Every pending message of `<topic>.dlq` back to `topic`; how many."""
        return (await self._count("POST", f"/api/topics/{topic}/requeue")).requeued

    async def start_bulk_job(
        self,
        topic: str,
        action: Literal["delete", "retry", "requeue"],
        *,
        status: MessageStatus | None = None,
        key: str | None = None,
        consumer_group: str | None = None,
        rate_per_second: int | None = None,
    ) -> BulkJob:
        """`action` on every message of `topic` the filter matches, run by the server in batches (follow it with
        `bulk_job`); `rate_per_second` paces it (None: as fast as it goes). Not retried: a second call starts a
        second job."""
        where = {k: v for k, v in {"status": status, "key": key, "consumer_group": consumer_group}.items() if v}
        body = {"action": action, "filter": where, "rate_per_second": rate_per_second}
        return await self._post(f"/api/topics/{quote(topic, safe='')}/bulk-jobs", body, BulkJob, NO_RETRY)

    async def redrive(
        self, topic: str, *, rate_per_second: int | None = None, consumer_group: str | None = None
    ) -> BulkJob:
        """Requeue `<topic>.dlq`'s dead letters (one consumer group's only, with `consumer_group`) at a pace, as
        the SQS console's redrive: a bulk job on the DLQ."""
        dlq = topic if topic.endswith(".dlq") else f"{topic}.dlq"
        return await self.start_bulk_job(dlq, "requeue", consumer_group=consumer_group, rate_per_second=rate_per_second)

    async def bulk_job(self, job_id: str) -> BulkJob:
        return await self._get(f"/api/bulk-jobs/{quote(job_id, safe='')}", BulkJob)

    async def create_consumer_group(self, topic: str, name: str, *, start: str = "latest") -> ConsumerGroup:
        """A consumer group of the topic (tenant admins): it receives the messages enqueued from now on
        (`start="earliest"`: also those already there). From its first group on, the topic is consumed through
        groups only."""
        body = {"consumer_group": name, "start": start}
        return await self._post(f"/api/topics/{quote(topic, safe='')}/consumer-groups", body, ConsumerGroup, NO_RETRY)

    async def consumer_groups(self, topic: str) -> list[ConsumerGroupStats]:
        """The topic's groups in creation order, with what each still owes, its dead letters and its lag."""
        return (await self._get(f"/api/topics/{quote(topic, safe='')}/consumer-groups", ConsumerGroups)).groups

    async def delete_consumer_group(self, topic: str, name: str) -> None:
        """Delete a group: what it owed is released (messages no other group owes go)."""
        await self._call("DELETE", f"/api/topics/{quote(topic, safe='')}/consumer-groups/{quote(name, safe='')}")

    async def message_log(
        self,
        topic: str,
        *,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        key: str | None = None,
        page_size: int = 500,
    ) -> AsyncIterator[LogEntry]:
        """A replayable topic's message log, oldest first by `acked_at`, page after page (keyset: acks arriving
        meanwhile never shift it); entries acked in [since, until), with `key` when given."""
        params: dict[str, str | int] = {"limit": page_size}
        for name, value in (("from_time", since), ("to_time", until)):
            if value is not None:
                params[name] = value.isoformat() if isinstance(value, datetime) else value
        if key is not None:
            params["key"] = key
        path = f"/api/topics/{quote(topic, safe='')}/message-log"
        while True:
            page = await self._get(path, LogPage, params)
            for entry in page.items:
                yield entry
            if page.next_cursor is None:
                return
            params["cursor"] = page.next_cursor

    async def trim_message_log(self, topic: str, before: datetime | str) -> int:
        """Hide (and in time drop) the log's entries acked before `before` (tenant admins); how many."""
        at = before.isoformat() if isinstance(before, datetime) else before
        path = f"/api/topics/{quote(topic, safe='')}/message-log"
        answer = await self._call("DELETE", path, params={"before": at}, decode=CountView)
        assert answer is not None
        return answer.deleted

    async def replay(
        self,
        topic: str,
        *,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        key: str | None = None,
        consumer_group: str | None = None,
        resume: bool = True,
        pause_seconds: float = 1.0,
    ) -> int:
        """Enqueue the logged messages acked in [since, until) again, in `acked_at` order (tenant admins); how many.
        With `consumer_group`, they are delivered to that group only (the others already handled them). Refused
        midway (`max_depth`, a quota, a rate limit), it waits `pause_seconds` (or the answer's Retry-After)
        and goes on from the server's `resume_from` while `resume`; otherwise the refusal is raised, its
        `details` saying how many were replayed and where to resume."""
        body: dict[str, str] = {}
        for name, value in (("from_time", since), ("to_time", until)):
            if value is not None:
                body[name] = value.isoformat() if isinstance(value, datetime) else value
        if key is not None:
            body["key"] = key
        if consumer_group is not None:
            body["consumer_group"] = consumer_group
        path = f"/api/topics/{quote(topic, safe='')}/replay"
        replayed = 0
        while True:
            try:
                return replayed + (await self._post(path, body, ReplayedView, NO_RETRY)).replayed
            except (QueueFull, RateLimited, QuotaExceeded) as exc:
                details = exc.details if isinstance(exc.details, dict) else {}
                if not resume or "resume_from" not in details:
                    raise
                replayed += int(details.get("replayed", 0))
                body["from_time"] = details["resume_from"]
                await asyncio.sleep(max(pause_seconds, float(exc.retry_after or 0)))

    async def purge(self, topic: str, statuses: Sequence[MessageStatus] | None = None) -> int:
        body = {"statuses": list(statuses)} if statuses is not None else {}
        return (await self._count("POST", f"/api/topics/{topic}/purge", body)).deleted

    async def topics(self) -> list[Topic]:
        return (await self._get("/api/topics", ItemsView[Topic])).items

    async def stats(self) -> list[StatRow]:
        return (await self._get("/api/stats", StatsView)).topics

    # --- topic configs --------------------------------------------------------------------------------------------

    async def topic_configs(self) -> list[TopicConfigView]:
        return (await self._get("/api/topic-configs", ItemsView[TopicConfigView])).items

    async def topic_config(self, topic: str) -> TopicConfig:
        return await self._get(f"/api/topic-configs/{topic}", TopicConfig)

    async def set_topic_config(self, topic: str, config: TopicConfig | None = None, **fields: Any) -> TopicConfig:
        """Replace the topic's overrides (`config`, or its fields as keywords); omitted ones use the defaults."""
        body = config if config is not None else TopicConfig(**fields)
        answer = await self._call("PUT", f"/api/topic-configs/{topic}", body=body, decode=TopicConfig)
        assert answer is not None
        return answer

    async def delete_topic_config(self, topic: str) -> None:
        await self._call("DELETE", f"/api/topic-configs/{topic}")

    # --- topic schemas --------------------------------------------------------------------------------------------

    async def topic_schemas(self) -> list[TopicSchemaSummary]:
        """Each topic's schema in force (format and version)."""
        return (await self._get("/api/topic-schemas", ItemsView[TopicSchemaSummary])).items

    async def topic_schema(self, topic: str, version: int | None = None) -> TopicSchema:
        """The topic's schema in force, or one of its earlier versions."""
        params = None if version is None else {"version": version}
        return await self._get(f"/api/topic-schemas/{quote(topic, safe='')}", TopicSchema, params)

    async def set_topic_schema(
        self,
        topic: str,
        schema: str | dict[str, Any],
        *,
        format: SchemaFormat = "avro",
        compatibility: Literal["none", "backward"] = "none",
    ) -> TopicSchema:
        """Add the topic's next schema version (tenant admins): `schema` as JSON text or a parsed value; `avro`
        (queue-ti's default) or `json_schema` (draft 2020-12). With `compatibility="backward"`, refused
        (`IncompatibleSchema`) when it would refuse messages the version in force accepts."""
        text = schema if isinstance(schema, str) else msgspec.json.encode(schema).decode()
        body = {"schema_json": text, "format": format, "compatibility": compatibility}
        answer = await self._call("PUT", f"/api/topic-schemas/{quote(topic, safe='')}", body=body, decode=TopicSchema)
        assert answer is not None
        return answer

    async def delete_topic_schema(self, topic: str) -> None:
        """Every version goes; enqueues into the topic are no longer checked."""
        await self._call("DELETE", f"/api/topic-schemas/{quote(topic, safe='')}")

    # --- periodic messages ----------------------------------------------------------------------------------------

    async def schedules(self) -> list[PeriodicSchedule]:
        return (await self._get("/api/schedules", ItemsView[PeriodicSchedule])).items

    async def schedule(self, name: str) -> PeriodicSchedule:
        return await self._get(f"/api/schedules/{quote(name, safe='')}", PeriodicSchedule)

    async def set_schedule(
        self,
        name: str,
        topic: str,
        cron: str,
        payload: Any,
        *,
        timezone: str = "UTC",
        key: str | None = None,
        metadata: dict[str, Any] | None = None,
        priority: int = 0,
        enabled: bool = True,
    ) -> PeriodicSchedule:
        """Create or replace a schedule (tenant admins): at each tick of `cron` (5 fields, or 6 with seconds
        first) in `timezone` (IANA), the workers enqueue `payload` (as `send` encodes it) into `topic`, once."""
        body = {
            "topic": topic,
            "cron": cron,
            "payload": to_bytes(payload),
            "timezone": timezone,
            "key": key,
            "metadata": metadata,
            "priority": priority,
            "enabled": enabled,
        }
        path = f"/api/schedules/{quote(name, safe='')}"
        answer = await self._call("PUT", path, body=body, decode=PeriodicSchedule)
        assert answer is not None
        return answer

    async def delete_schedule(self, name: str) -> None:
        await self._call("DELETE", f"/api/schedules/{quote(name, safe='')}")

    async def run_schedule(self, name: str) -> str:
        """Enqueue the schedule's message once, now, as a producer's enqueue (tenant admins); the new message's id.
        The schedule's cron and next run are unchanged; a refusal (`queue_full`...) raises. Not retried: each call
        enqueues one more message."""
        answer = await self._call("POST", f"/api/schedules/{quote(name, safe='')}/run", decode=IdView)
        assert answer is not None
        return answer.id

    def producer(self, topic: str, model: type[M]) -> TypedProducer[M]:
        """A producer of `model` instances (a msgspec Struct, a dataclass, a TypedDict, a pydantic model) into
        `topic`; `await producer.register()` makes the model's JSON Schema the topic's schema."""
        return TypedProducer(self, topic, model)

    # --- tenants, users, grants -----------------------------------------------------------------------------------

    async def tenants(self, *, limit: int = 50, offset: int = 0) -> Page[Tenant]:
        return await self._get("/api/tenants", Page[Tenant], {"limit": limit, "offset": offset})

    async def tenant_info(self, slug: str) -> Tenant:
        return await self._get(f"/api/tenants/{slug}", Tenant)

    async def create_tenant(self, slug: str, name: str, quotas: Quotas | None = None) -> Tenant:
        body: dict[str, Any] = {"slug": slug, "name": name}
        if quotas is not None:
            body["quotas"] = quotas
        return await self._post("/api/tenants", body, Tenant, NO_RETRY)

    async def update_tenant(
        self, slug: str, *, name: str | None = None, status: TenantStatus | None = None, quotas: Quotas | None = None
    ) -> Tenant:
        body = {k: v for k, v in {"name": name, "status": status, "quotas": quotas}.items() if v is not None}
        answer = await self._call("PATCH", f"/api/tenants/{slug}", body=body, decode=Tenant)
        assert answer is not None
        return answer

    async def delete_tenant(self, slug: str, *, force: bool = False) -> None:
        await self._call("DELETE", f"/api/tenants/{slug}", params={"force": "true"} if force else None)

    async def users(self, *, limit: int = 50, offset: int = 0) -> Page[User]:
        return await self._get("/api/users", Page[User], {"limit": limit, "offset": offset})

    async def user(self, user_id: str) -> User:
        return await self._get(f"/api/users/{user_id}", User)

    async def create_user(self, username: str, password: str, role: Role = "member") -> User:
        body = {"username": username, "password": password, "role": role}
        return await self._post("/api/users", body, User, NO_RETRY)

    async def update_user(self, user_id: str, *, password: str | None = None, role: Role | None = None) -> User:
        body = {k: v for k, v in {"password": password, "role": role}.items() if v is not None}
        answer = await self._call("PATCH", f"/api/users/{user_id}", body=body, decode=User)
        assert answer is not None
        return answer

    async def delete_user(self, user_id: str) -> None:
        await self._call("DELETE", f"/api/users/{user_id}")

    async def grants(self, user_id: str) -> list[Grant]:
        return (await self._get(f"/api/users/{user_id}/grants", ItemsView[Grant])).items

    async def grant(
        self,
        user_id: str,
        action: Literal["produce", "consume", "read"],
        topic_pattern: str,
        *,
        consumer_group: str | None = None,
    ) -> Grant:
        """`consumer_group` (consume only): the member consumes the matching topics only as that group."""
        body = {"action": action, "topic_pattern": topic_pattern}
        if consumer_group is not None:
            body["consumer_group"] = consumer_group
        return await self._post(f"/api/users/{user_id}/grants", body, Grant, NO_RETRY)

    async def revoke(self, user_id: str, grant_id: str) -> None:
        await self._call("DELETE", f"/api/users/{user_id}/grants/{grant_id}")

    # --- plumbing -------------------------------------------------------------------------------------------------

    async def _get(self, path: str, decode: type[T], params: dict[str, Any] | None = None) -> T:
        answer = await self._call("GET", path, params=params, decode=decode, retry=self.retry)
        assert answer is not None
        return answer

    async def _post(self, path: str, body: Any, decode: type[T], retry: RetryPolicy) -> T:
        answer = await self._call("POST", path, body=body, decode=decode, retry=retry)
        assert answer is not None
        return answer

    async def _count(self, method: str, path: str, body: Any = None) -> CountView:
        answer = await self._call(method, path, body=body, decode=CountView)
        assert answer is not None
        return answer


class TypedProducer(Generic[M]):
    """Publishes instances of one model to one topic, JSON-encoded (pydantic models by their own encoder). The
    topic's schema can be the model's JSON Schema (`register`), so what another producer sends is held to the same
    shape, and consumers decode with `model=` on the consumer runtime."""

    def __init__(self, client: AsyncClient, topic: str, model: type[M]) -> None:
        self.client = client
        self.topic = topic
        self.model = model

    def json_schema(self) -> dict[str, Any]:
        return json_schema_of(self.model)

    async def register(self, *, compatibility: Literal["none", "backward"] = "backward") -> TopicSchema:
        """Make the model's JSON Schema the topic's schema: a new version when it differs from the one in force
        (by default only if every message the current version accepts still fits), the version in force when it
        is the same."""
        schema = self.json_schema()
        try:
            current = await self.client.topic_schema(self.topic)
        except errors.NotFound:
            current = None
        if current is not None and current.format == "json_schema" and current.schema() == schema:
            return current
        first = current is None
        return await self.client.set_topic_schema(
            self.topic, schema, format="json_schema", compatibility="none" if first else compatibility
        )

    async def send(self, value: M, **options: Any) -> str:
        """One message (`key`, `metadata`, `delay`, `priority` as `AsyncClient.send`); its id."""
        return await self.client.send(self.topic, to_bytes(value), **options)

    async def send_batch(self, values: Iterable[M]) -> list[str]:
        return await self.client.send_batch(self.topic, (to_bytes(v) for v in values))
