"""`AuditTrail`: records administrative actions and reads them back, newest first, by keyset.

Append-only: nothing here updates or deletes an entry; the retention job (`mq.jobs.AuditTrimmer`) drops old ones.
Raises only `mq.errors`. Who may read which tenant's entries is its command's business (`mq.commands.tenancy`).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import msgspec

from mq import errors
from mq.audit.repository import AuditRepository
from mq.audit.types import MAX_AUDIT_PAGE, PLATFORM_TENANT_ID, AuditFilter
from mq.ids import uuid7
from mq.logs import CLIENT_REQUEST_ID, REQUEST_ID
from mq.pages import RowPage

log = logging.getLogger(__name__)

#: Characters of a refused login's tried name kept in its entry.
MAX_TRIED_NAME = 256


class AuditTrail:
    def __init__(self, repository: AuditRepository) -> None:
        self.repository = repository

    async def record(
        self,
        actor: str | None,
        action: str,
        target: str,
        *,
        tenant_id: int | None,
        tenant: str | None,
        details: dict[str, Any] | None = None,
    ) -> None:
        """Append an entry for an action that succeeded, with the server's id of the request being served (and the
        caller's own in the details, when it sent another). `tenant_id` None: a platform-wide entry."""
        request_id = REQUEST_ID.get() or None
        client_id = CLIENT_REQUEST_ID.get()
        if client_id is not None and client_id != request_id:
            details = {**(details or {}), "client_request_id": client_id}
        await self.repository.insert(
            uuid7(),
            PLATFORM_TENANT_ID if tenant_id is None else tenant_id,
            tenant,
            actor,
            action,
            target,
            None if details is None else msgspec.json.encode(details).decode(),
            request_id,
        )

    async def login_refused(self, username: str, target: str, address: str | None) -> None:
        """A refused login (`target`: `session` for the console's, `token` for a bearer token's): anyone may try any
        name, so the name tried is only a detail, never the entry's actor or target (which it could then forge)."""
        # (as text jsonb can hold: no NUL, no lone surrogate)
        tried = username[:MAX_TRIED_NAME].replace("\x00", "\ufffd").encode("utf-8", "replace").decode()
        details = {"username": tried, "address": address}
        await self.record(None, "auth.login_refused", target, tenant_id=None, tenant=None, details=details)

    async def about(
        self, tenant_id: int, since: uuid.UUID, targets: list[str], actions: list[str] | None = None, limit: int = 200
    ) -> list[Any]:
        """The tenant's entries about `targets` (by `actions`, None: any) from the entry id `since` on, oldest
        first: a message's story (`mq.commands.story`)."""
        return await self.repository.about(tenant_id, since, targets, actions, limit)

    async def page(self, tenant_id: int | None, cursor: str | None, limit: int, where: AuditFilter) -> RowPage:
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
            if where.action.endswith("."):  # a family: `topic.` is also `topic_config.*` and `topic_schema.*`
                filters["(starts_with(action, {0}) OR (starts_with(action, rtrim({0}, '.') || '_')))"] = where.action
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
        return RowPage(rows[:limit], rows[limit - 1]["id"] if len(rows) > limit else None)
