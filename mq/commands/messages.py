"""The data plane's commands: enqueue, dequeue, ack, nack, extend, requeue, retry, read and delete messages."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from mq import errors
from mq.audit.service import AuditTrail
from mq.commands.audited import record
from mq.queue.service import QueueService
from mq.queue.types import AckResults, MessageRow, NackOutcome
from mq.queue.validation import BatchEntry, build_item, build_rows
from mq.tenancy import grants
from mq.tenancy.auth import Principal
from mq.tenancy.authorization import require_consumer_group, require_grant, tenant_for
from mq.topics.browsing import MessageBrowser

#: A batch's item as the edge decoded it: the entry, or why it is not one (its decoder's message)
BatchItem = BatchEntry | str


class MessageCommands:
    """Every message operation a caller can make, each checked for the caller (`Principal`) before it runs."""

    def __init__(self, queue: QueueService, browser: MessageBrowser, audit: AuditTrail) -> None:
        self.queue = queue
        self.browser = browser
        self.audit = audit
        self._max_batch = queue.settings.max_batch_size

    # --- producing ----------------------------------------------------------------------------------------------

    async def enqueue(
        self,
        principal: Principal,
        topic: str,
        payload: bytes,
        metadata: dict[str, Any] | None = None,
        key: str | None = None,
        delay_seconds: float = 0,
        priority: int = 0,
    ) -> uuid.UUID:
        """One message; its id (a keyed message replacing a pending one of its key: that message's)."""
        tenant = tenant_for(principal, action="produce", topic=topic)
        item = build_item(self.queue.settings, topic, payload, metadata, key, delay_seconds, priority)
        message_id, _ = await self.queue.enqueue(tenant, item)
        return message_id

    async def enqueue_batch(
        self, principal: Principal, topic: str | None, items: Sequence[BatchItem]
    ) -> list[uuid.UUID]:
        """All of `items` or none (their topic, or each item's own); every bad item is reported at once
        (`details`: index, code and error), a produce grant checked per topic."""
        tenant = tenant_for(principal, action="produce")
        self._batch_limit(len(items), "messages")
        undecoded = [(i, item) for i, item in enumerate(items) if isinstance(item, str)]
        entries = [e for e in items if not isinstance(e, str)] if undecoded else cast(Sequence[BatchEntry], items)
        limits = functools.partial(self.queue.limits, tenant)
        rows, bad = await build_rows(self.queue.settings, topic, entries, limits)
        problems: list[dict[str, Any]] = [
            {"index": index, "code": "invalid_request", "error": error} for index, error in undecoded
        ]
        if bad:
            positions = [i for i, e in enumerate(items) if not isinstance(e, str)]
            for index, exc in bad:
                problems.append({"index": positions[index], "code": _item_code(exc), "error": exc.message})
            problems.sort(key=lambda p: p["index"])
        if problems:
            if all(p["code"] == "payload_too_large" for p in problems):
                raise errors.PayloadTooLarge("a payload in the batch is too large", details=problems)
            raise errors.InvalidRequest(f"{len(problems)} of {len(items)} messages are not valid", details=problems)
        if principal.is_member:  # admins need no grant: skip the per-item pass
            for row_topic in {row.topic for row in rows}:
                require_grant(principal, "produce", row_topic)
        return await self.queue.enqueue_batch(tenant, rows)

    # --- consuming ----------------------------------------------------------------------------------------------

    async def dequeue(
        self,
        principal: Principal,
        topic: str,
        count: int,
        visibility_timeout_seconds: int | None,
        wait_seconds: float,
        caller_gone: Callable[[], Awaitable[Any]] | None = None,
        consumer_group: str | None = None,
        before_lease: Callable[[], Awaitable[None]] | None = None,
    ) -> list[MessageRow]:
        """Lease up to `count` messages of `topic` (as `consumer_group`), waiting up to `wait_seconds` for the
        first; the lease names the caller as its consumer. The count, the visibility and the group's name are
        checked by the queue's dequeue."""
        tenant = self.check_consumer(principal, topic, consumer_group)
        return await self.queue.dequeue(
            tenant,
            topic,
            count,
            visibility_timeout_seconds,
            wait_seconds,
            caller_gone,
            consumer=principal.username,
            consumer_group=consumer_group,
            before_lease=before_lease,
        )

    @staticmethod
    def check_consumer(principal: Principal, topic: str, consumer_group: str | None) -> int:
        """The tenant a consumer of `topic` (as `consumer_group`) addresses, if its role and grants allow it (a
        long-lived stream checks again before each lease)."""
        tenant = tenant_for(principal, action="consume", topic=topic)
        require_consumer_group(principal, topic, consumer_group)
        return tenant

    async def ack(self, principal: Principal, message_id: str, receipt: str | None, consumer_group: str | None) -> None:
        tenant = await self.tenant_for_messages(principal, "consume", [message_id], [consumer_group])
        await self.queue.ack(tenant, message_id, receipt, consumer_group)

    async def ack_batch(self, principal: Principal, acks: Sequence[tuple[str, str | None, str | None]]) -> AckResults:
        """`acks`: (message id, receipt, consumer group) each; per ack, done or why not."""
        self._batch_limit(len(acks), "acks")
        tenant = await self.tenant_for_messages(principal, "consume", [a[0] for a in acks], [a[2] for a in acks])
        return await self.queue.ack_batch(tenant, acks)

    async def nack(
        self,
        principal: Principal,
        message_id: str,
        receipt: str | None,
        error: str | None,
        delay_seconds: float | None,
        consumer_group: str | None,
        metadata: dict[str, Any] | None = None,
    ) -> NackOutcome:
        tenant = await self.tenant_for_messages(principal, "consume", [message_id], [consumer_group])
        return await self.queue.nack(tenant, message_id, receipt, error, delay_seconds, consumer_group, metadata)

    async def extend(
        self, principal: Principal, message_id: str, receipt: str | None, seconds: int, consumer_group: str | None
    ) -> str:
        """The lease's new deadline (RFC 3339)."""
        tenant = await self.tenant_for_messages(principal, "consume", [message_id], [consumer_group])
        return await self.queue.extend(tenant, message_id, receipt, seconds, consumer_group)

    async def own_receipt(self, principal: Principal, message_id: str, consumer_group: str | None) -> tuple[int, str]:
        """The tenant, and the receipt of the lease the caller holds now on the message (queue-ti's ack and nack by
        id end only the caller's own lease)."""
        tenant = await self.tenant_for_messages(principal, "consume", [message_id], [consumer_group])
        return tenant, await self.queue.own_receipt(tenant, message_id, principal.username, consumer_group)

    # --- dead letters and finished messages ---------------------------------------------------------------------

    async def requeue(self, principal: Principal, message_id: str) -> None:
        """A dead letter back in its original topic (audited)."""
        tenant = await self.tenant_for_messages(principal, "consume", [message_id])
        topic = await self.queue.requeue(tenant, message_id)
        await self._audited(principal, "message.requeue", message_id, topic)

    async def retry(self, principal: Principal, message_id: str) -> None:
        """A failed, expired or delayed message pending and available now (audited)."""
        tenant = await self.tenant_for_messages(principal, "consume", [message_id])
        topic = await self.queue.retry(tenant, message_id)
        await self._audited(principal, "message.retry", message_id, topic)

    async def browse(
        self,
        principal: Principal,
        topic: str | None,
        status: str | None,
        key: str | None,
        limit: int,
        offset: int,
        consumer_group: str | None,
    ) -> tuple[list[MessageRow], int]:
        """A page of messages, newest first, and the total: of one topic (a read grant on it), or of every topic (a
        member needs a read grant on '*')."""
        tenant = tenant_for(principal, action="read", topic=topic)
        if topic is None and principal.is_member and not grants.allows_every_topic(principal.grants, "read"):
            raise errors.Forbidden("name a topic you may read (a read grant on '*' lists every topic)")
        return await self.browser.browse(tenant, topic, status, key, limit, offset, consumer_group)

    async def get(self, principal: Principal, message_id: str) -> MessageRow:
        return await self.queue.get(await self.tenant_for_messages(principal, "read", [message_id]), message_id)

    async def delete(self, principal: Principal, message_id: str) -> None:
        """Tenant admins only (audited)."""
        topic = await self.queue.delete(tenant_for(principal, admin_only=True), message_id)
        await self._audited(principal, "message.delete", message_id, topic)

    # --- checks -------------------------------------------------------------------------------------------------

    async def tenant_for_messages(
        self,
        principal: Principal,
        action: str,
        message_ids: Sequence[str],
        groups: Sequence[str | None] | None = None,
    ) -> int:
        """`tenant_for` for a request that names messages by id: a member needs `action` on each message's topic
        and, to consume, a grant for the consumer group it names (`groups`, one per message: ack, nack, visibility)
        or, naming none (requeue, retry), for the message's own (a dead letter's). Messages not found are left to
        the command (which answers not found)."""
        tenant = tenant_for(principal, action=action)
        if principal.is_member:
            for i, found in enumerate(await self.queue.topics_of(tenant, message_ids)):
                if found is None:
                    continue
                topic, own_group = found
                require_grant(principal, action, topic)
                if action == "consume":
                    require_consumer_group(principal, topic, groups[i] if groups is not None else own_group)
        return tenant

    async def _audited(self, principal: Principal, action: str, message_id: str, topic: str) -> None:
        await record(self.audit, principal, action, message_id, {"topic": topic})

    def _batch_limit(self, n: int, what: str) -> None:
        if n > self._max_batch:
            raise errors.InvalidRequest(f"at most {self._max_batch} {what} per request; got {n}")


def _item_code(exc: errors.SkiplockError) -> str:
    """The contract's code for a bad item of a batch."""
    if isinstance(exc, errors.PayloadTooLarge):
        return "payload_too_large"
    return "reserved_topic" if isinstance(exc, errors.ReservedTopic) else "invalid_request"
