"""The commands on what a topic holds besides its messages: its schedules (periodic messages), its schemas, and its
message log (trims and replays).

Each is readable by whoever may read the topic (a list shows a member only those topics) and written by tenant
admins; every change is audited.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime

import msgspec

from mq import errors
from mq.audit.service import AuditTrail
from mq.commands.audited import record
from mq.commands.messages import MessageCommands
from mq.commands.topics import may_read
from mq.history.service import History
from mq.pages import RowPage
from mq.schedules.repository import Record
from mq.schedules.service import Schedules
from mq.schedules.types import ScheduleSpec
from mq.schemas.formats import SchemaFormat
from mq.schemas.service import Compatibility, TopicSchemas
from mq.tenancy.auth import Principal
from mq.tenancy.authorization import tenant_for


def _readable(principal: Principal) -> Callable[[str], bool]:
    """Whose topics the caller may read: a schedule holds a message (payload, metadata) of its topic."""
    return lambda topic: may_read(principal, topic)


class ScheduleCommands:
    def __init__(self, schedules: Schedules, audit: AuditTrail, messages: MessageCommands) -> None:
        self.schedules = schedules
        self.audit = audit
        self.messages = messages

    async def run_now(self, principal: Principal, name: str) -> uuid.UUID:
        """Enqueue the schedule's message once, now, as its producer would (the topic's schema and max_depth, the
        tenant's quotas and rates: a refusal is the caller's answer, not a tick's `last_error`). Its cron, next and
        last run are unchanged. The message's metadata says so: `skiplock_schedule` and `skiplock_run: "manual"`."""
        schedule = await self.schedules.get(tenant_for(principal, admin_only=True), name)
        metadata = msgspec.json.decode(schedule["metadata"]) if schedule["metadata"] is not None else {}
        metadata.update(skiplock_schedule=name, skiplock_run="manual")
        message_id = await self.messages.enqueue(
            principal,
            schedule["topic"],
            bytes(schedule["payload"]),
            metadata,
            schedule["key"],
            0,
            schedule["priority"],
        )
        await record(self.audit, principal, "schedule.run", name, {"topic": schedule["topic"], "id": str(message_id)})
        return message_id

    async def list(self, principal: Principal) -> list[Record]:
        return await self.schedules.list(tenant_for(principal, action="read"), _readable(principal))

    async def get(self, principal: Principal, name: str) -> Record:
        """404 when its topic is not one the caller may read."""
        return await self.schedules.get(tenant_for(principal, action="read"), name, _readable(principal))

    async def put(self, principal: Principal, name: str, spec: ScheduleSpec) -> Record:
        stored = await self.schedules.put(tenant_for(principal, admin_only=True), name, spec)
        details = {k: stored[k] for k in ("topic", "cron", "timezone", "enabled")}
        await record(self.audit, principal, "schedule.update", name, details)
        return stored

    async def delete(self, principal: Principal, name: str) -> None:
        await self.schedules.delete(tenant_for(principal, admin_only=True), name)
        await record(self.audit, principal, "schedule.delete", name)


class SchemaCommands:
    def __init__(self, schemas: TopicSchemas, audit: AuditTrail) -> None:
        self.schemas = schemas
        self.audit = audit

    async def list(self, principal: Principal) -> list[Record]:
        """Each topic's schema in force; a member sees the topics it may read."""
        listed = await self.schemas.list(tenant_for(principal, action="read"))
        return [s for s in listed if may_read(principal, s["topic"])]

    async def get(self, principal: Principal, topic: str, version: int | None) -> Record:
        return await self.schemas.get(tenant_for(principal, action="read", topic=topic), topic, version)

    async def put(
        self,
        principal: Principal,
        topic: str,
        schema_json: str,
        schema_format: SchemaFormat,
        compatibility: Compatibility,
    ) -> Record:
        tenant = tenant_for(principal, admin_only=True)
        stored = await self.schemas.put(tenant, topic, schema_json, schema_format, compatibility)
        details = {"version": stored["version"], "format": stored["format"], "compatibility": compatibility}
        await record(self.audit, principal, "topic_schema.update", topic, details)
        return stored

    async def delete(self, principal: Principal, topic: str) -> None:
        await self.schemas.delete(tenant_for(principal, admin_only=True), topic)
        await record(self.audit, principal, "topic_schema.delete", topic)


class HistoryCommands:
    def __init__(self, history: History, audit: AuditTrail) -> None:
        self.history = history
        self.audit = audit

    async def page(
        self,
        principal: Principal,
        topic: str,
        since: datetime | None,
        until: datetime | None,
        key: str | None,
        limit: int,
        cursor: str | None,
    ) -> RowPage:
        tenant = tenant_for(principal, action="read", topic=topic)
        return await self.history.page(tenant, topic, since, until, key, limit, cursor)

    async def trim(self, principal: Principal, topic: str, before: datetime) -> int:
        deleted = await self.history.trim(tenant_for(principal, admin_only=True), topic, before)
        await record(self.audit, principal, "topic.log_trim", topic, {"before": before.isoformat(), "deleted": deleted})
        return deleted

    async def replay(
        self,
        principal: Principal,
        topic: str,
        since: datetime | None,
        until: datetime | None,
        key: str | None,
        consumer_group: str | None,
    ) -> int:
        tenant = tenant_for(principal, admin_only=True)
        asked = {
            "from_time": since.isoformat() if since else None,
            "to_time": until.isoformat() if until else None,
            "key": key,
            "consumer_group": consumer_group,
        }
        try:
            replayed = await self.history.replay(tenant, topic, since, until, key, consumer_group)
        except errors.SkiplockError as exc:
            stopped = exc.details if isinstance(exc.details, dict) else {}
            if "resume_from" in stopped:  # refused midway: what went, and where to resume, are in the trail too
                details = {**asked, "replayed": stopped["replayed"], "refused": exc.code}
                await record(
                    self.audit, principal, "topic.replay", topic, {**details, "resume_from": stopped["resume_from"]}
                )
            raise
        await record(self.audit, principal, "topic.replay", topic, {**asked, "replayed": replayed})
        return replayed
