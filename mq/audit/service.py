"""`AuditTrail`: records administrative actions and reads them back, newest first, by keyset.

Append-only: nothing here updates or deletes an entry; the retention job (`mq.jobs.AuditTrimmer`) drops old ones.
Raises only `mq.errors`. Who may read which tenant's entries is the API's business (`api.routes.audit`).
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

import msgspec

from mq import errors
from mq.audit.repository import AuditRepository
from mq.ids import uuid7
from mq.logs import REQUEST_ID

log = logging.getLogger(__name__)

#: Largest page of entries.
MAX_AUDIT_PAGE = 200


class AuditEntryView(msgspec.Struct, omit_defaults=False):
    """One entry: `actor` did `action` (a stable dotted name, e.g. `topic.purge`) to `target` in `tenant` (None:
    platform-wide, e.g. a reaper run), while serving the request `request_id`."""

    id: str
    at: str
    actor: str
    tenant: str | None
    action: str
    target: str
    details: msgspec.Raw | None
    request_id: str | None


class AuditPageView(msgspec.Struct, omit_defaults=False):
    """Newest first; `next_cursor` fetches the older entries (None: there are none)."""

    items: list[AuditEntryView]
    next_cursor: str | None


class AuditFilter(msgspec.Struct, omit_defaults=True):
    """`action`: exact (`topic.purge`) or a prefix ending in `.` (`topic.`); `topic`: entries about that topic."""

    action: str | None = None
    actor: str | None = None
    topic: str | None = None
    from_time: datetime | None = None
    to_time: datetime | None = None


class AuditTrail:
    def __init__(self, repository: AuditRepository) -> None:
        self.repository = repository

    async def record(
        self,
        actor: str,
        action: str,
        target: str,
        *,
        tenant_id: int | None,
        tenant: str | None,
        details: dict[str, Any] | None = None,
    ) -> None:
        """Append an entry for an action that succeeded, with the request id of the request being served."""
        await self.repository.insert(
            uuid7(),
            tenant_id,
            tenant,
            actor,
            action,
            target,
            None if details is None else msgspec.json.encode(details).decode(),
            REQUEST_ID.get() or None,
        )

    async def page(self, tenant_id: int | None, cursor: str | None, limit: int, where: AuditFilter) -> AuditPageView:
        if not 1 <= limit <= MAX_AUDIT_PAGE:
            raise errors.InvalidRequest(f"limit must be 1..{MAX_AUDIT_PAGE}")
        before = None
        if cursor:
            try:
                before = uuid.UUID(cursor)
            except ValueError:
                raise errors.InvalidRequest("cursor: give the next_cursor of the previous page") from None
        filters: dict[str, Any] = {}
        if where.action:
            if where.action.endswith("."):
                filters["starts_with(action, {})"] = where.action
            else:
                filters["action = {}"] = where.action
        if where.actor:
            filters["actor = {}"] = where.actor
        if where.topic:
            filters["(target = {0} OR details ->> 'topic' = {0})"] = where.topic
        if where.from_time:
            filters["at >= {}"] = where.from_time
        if where.to_time:
            filters["at < {}"] = where.to_time
        rows = await self.repository.page(tenant_id, before, limit + 1, filters)
        items = [
            AuditEntryView(
                r["id"],
                r["at"],
                r["actor"],
                r["tenant"],
                r["action"],
                r["target"],
                None if r["details"] is None else msgspec.Raw(r["details"].encode()),
                r["request_id"],
            )
            for r in rows[:limit]
        ]
        return AuditPageView(items=items, next_cursor=items[-1].id if len(rows) > limit else None)
