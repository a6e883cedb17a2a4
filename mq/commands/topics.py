"""Topic administration's commands: summaries and stats, configs, pause and resume, the console's pages and series,
purge, delete by key, a DLQ's requeue, bulk actions and jobs, and consumer groups.

Lists show a member only the topics it may read; what changes a topic is for tenant admins, but for a consumer's
bulk actions (retry and requeue need `consume`, and a member whose consume grants pin consumer groups acts only on
its groups' dead letters). Every change is audited.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from mq import errors
from mq.audit.service import AuditTrail
from mq.commands.audited import record
from mq.queue.service import QueueService
from mq.queue.types import TopicConfig
from mq.tenancy import grants
from mq.tenancy.auth import Principal
from mq.tenancy.authorization import pinned_groups, require_consumer_group, require_grant, tenant_for
from mq.topics.repository import Record
from mq.topics.service import TopicAdmin
from mq.topics.types import (
    BulkAction,
    BulkJob,
    ConsumerGroup,
    GroupStart,
    MessageFilter,
    MessagePage,
    Series,
    SeriesRange,
    TopicSettings,
)

#: What each bulk action needs: deleting is for tenant admins, as a single delete is; retry and requeue are a
#: consumer's (the contract's requeue needs `consume`).
_BULK_GRANT: dict[str, str | None] = {"delete": None, "retry": "consume", "requeue": "consume"}


def may_read(principal: Principal, topic: str) -> bool:
    """Lists show a member only the topics it may read."""
    return not principal.is_member or grants.allowed(principal.grants, "read", topic)


class TopicCommands:
    def __init__(self, topics: TopicAdmin, queue: QueueService, audit: AuditTrail) -> None:
        self.topics = topics
        self.queue = queue
        self.audit = audit

    # --- reading ----------------------------------------------------------------------------------------------

    async def summaries(self, principal: Principal) -> list[Record]:
        items = await self.topics.config.summaries(tenant_for(principal, action="read"))
        return [t for t in items if may_read(principal, t["topic"])]

    async def stats(self, principal: Principal) -> list[dict[str, Any]]:
        rows = await self.topics.config.stats(tenant_for(principal, action="read"))
        return [r for r in rows if may_read(principal, r["topic"])]

    async def configs(self, principal: Principal) -> list[tuple[str, TopicConfig]]:
        configs = await self.topics.config.configs(tenant_for(principal, action="read"))
        return [(topic, c) for topic, c in configs if may_read(principal, topic)]

    async def config(self, principal: Principal, topic: str) -> TopicConfig:
        return await self.topics.config.get(tenant_for(principal, action="read", topic=topic), topic)

    async def settings(self, principal: Principal, topic: str) -> TopicSettings:
        return await self.topics.config.settings(tenant_for(principal, action="read", topic=topic), topic)

    async def page(
        self, principal: Principal, topic: str, where: MessageFilter, cursor: str | None, limit: int, reverse: bool
    ) -> MessagePage:
        tenant = tenant_for(principal, action="read", topic=topic)
        return await self.topics.browser.page(tenant, topic, where, cursor, limit, reverse=reverse)

    async def series(
        self, principal: Principal, topic: str | None, minutes: int = 60, span: SeriesRange | None = None
    ) -> Series:
        """A topic's series, or (`topic` None) the tenant's: a member needs a read grant on every topic (`*`)."""
        tenant = tenant_for(principal, action="read", topic=topic or "*")
        return await self.topics.browser.series(tenant, topic, minutes, span)

    async def consumers(self, principal: Principal, topic: str) -> list[Record]:
        return await self.topics.browser.consumers(tenant_for(principal, action="read", topic=topic), topic)

    async def error_classes(self, principal: Principal, topic: str) -> list[Record]:
        return await self.topics.browser.error_classes(tenant_for(principal, action="read", topic=topic), topic)

    async def groups(self, principal: Principal, topic: str) -> list[Record]:
        return await self.topics.groups.list(tenant_for(principal, action="read", topic=topic), topic)

    # --- changing a topic (tenant admins) ---------------------------------------------------------------------

    async def put_config(self, principal: Principal, topic: str, config: TopicConfig) -> TopicConfig:
        stored = await self.topics.config.put(tenant_for(principal, admin_only=True), topic, config)
        await record(self.audit, principal, "topic_config.update", topic, msgspec.to_builtins(stored))
        return stored

    async def delete_config(self, principal: Principal, topic: str) -> None:
        await self.topics.config.delete(tenant_for(principal, admin_only=True), topic)
        await record(self.audit, principal, "topic_config.delete", topic)

    async def pause(self, principal: Principal, topic: str) -> None:
        await self.topics.config.pause(tenant_for(principal, admin_only=True), topic, principal.username)
        await record(self.audit, principal, "topic.pause", topic)

    async def resume(self, principal: Principal, topic: str) -> None:
        await self.topics.config.resume(tenant_for(principal, admin_only=True), topic)
        await record(self.audit, principal, "topic.resume", topic)

    async def purge(self, principal: Principal, topic: str, statuses: Sequence[str] | None) -> int:
        deleted = await self.topics.bulk.purge(tenant_for(principal, admin_only=True), topic, statuses)
        await record(self.audit, principal, "topic.purge", topic, {"statuses": statuses, "deleted": deleted})
        return deleted

    async def delete_by_key(self, principal: Principal, topic: str, key: str) -> int:
        deleted = await self.topics.bulk.delete_by_key(tenant_for(principal, admin_only=True), topic, key)
        await record(self.audit, principal, "topic.delete_by_key", topic, {"key": key, "deleted": deleted})
        return deleted

    async def create_group(self, principal: Principal, topic: str, name: str, start: GroupStart) -> ConsumerGroup:
        group = await self.topics.groups.create(tenant_for(principal, admin_only=True), topic, name, start)
        await record(self.audit, principal, "topic.group_create", topic, {"consumer_group": name, "start": start})
        return group

    async def delete_group(self, principal: Principal, topic: str, name: str) -> None:
        await self.topics.groups.delete(tenant_for(principal, admin_only=True), topic, name)
        await record(self.audit, principal, "topic.group_delete", topic, {"consumer_group": name})

    # --- a consumer's actions on many messages ----------------------------------------------------------------

    async def requeue_dlq(self, principal: Principal, topic: str) -> int:
        """Every pending dead letter of `topic` back in its topic (a member consuming as some groups: theirs)."""
        tenant = tenant_for(principal, action="consume", topic=topic)
        requeued = await self.topics.bulk.requeue_dlq(tenant, topic, pinned_groups(principal, topic))
        await record(self.audit, principal, "topic.requeue", topic, {"requeued": requeued})
        return requeued

    async def bulk(
        self, principal: Principal, topic: str, action: BulkAction, ids: Sequence[str]
    ) -> tuple[int, list[tuple[str, errors.SkiplockError]]]:
        """`action` on the chosen messages: how many took it, and why each of the others did not."""
        tenant = await self._tenant_for_bulk(principal, action, topic, ids=ids)
        done, failures = await self.topics.bulk.apply(tenant, topic, action, ids)
        details = {"topic": topic, "ids": len(ids), "done": done}
        await record(self.audit, principal, f"messages.bulk_{action}", topic, details)
        return done, failures

    async def start_bulk_job(
        self,
        principal: Principal,
        topic: str,
        action: BulkAction,
        where: MessageFilter,
        rate_per_second: int | None = None,
    ) -> BulkJob:
        tenant = await self._tenant_for_bulk(principal, action, topic, group=where.consumer_group)
        job = await self.topics.bulk.start_job(tenant, topic, action, where, principal.username, rate_per_second)
        details = {"topic": topic, "job": job.id, "action": action, "filter": msgspec.to_builtins(where)}
        if rate_per_second is not None:
            details["rate_per_second"] = rate_per_second
        await record(self.audit, principal, "bulk_job.start", topic, details)
        return job

    async def bulk_jobs(self, principal: Principal) -> list[BulkJob]:
        jobs = await self.topics.bulk.jobs(tenant_for(principal, action="read"))
        return [j for j in jobs if may_read(principal, j.topic)]

    async def bulk_job(self, principal: Principal, job_id: str) -> BulkJob:
        job = await self.topics.bulk.job(tenant_for(principal, action="read"), job_id)
        require_grant(principal, "read", job.topic)
        return job

    async def cancel_bulk_job(self, principal: Principal, job_id: str) -> BulkJob:
        job = await self.topics.bulk.job(tenant_for(principal, action="read"), job_id)
        tenant = await self._tenant_for_bulk(principal, job.action, job.topic, group=job.filter.consumer_group)
        cancelled = await self.topics.bulk.cancel_job(tenant, job_id)
        await record(self.audit, principal, "bulk_job.cancel", job.topic, {"topic": job.topic, "job": job_id})
        return cancelled

    async def _tenant_for_bulk(
        self,
        principal: Principal,
        action: BulkAction,
        topic: str,
        *,
        ids: Sequence[str] | None = None,
        group: str | None = None,
    ) -> int:
        """The role or grant a bulk action needs. A member whose consume grants pin consumer groups acts only on
        its groups' dead letters: each of the chosen `ids`, or a job filtered by one of them (`group`)."""
        grant = _BULK_GRANT[action]
        if grant is None:
            return tenant_for(principal, admin_only=True)
        tenant = tenant_for(principal, action=grant, topic=topic)
        if principal.is_member and grants.consumer_groups(principal.grants, topic) is not None:
            if ids is None:
                require_consumer_group(principal, topic, group)
            else:
                for found in await self.queue.topics_of(tenant, ids):
                    require_consumer_group(principal, topic, found[1] if found else None)
        return tenant
