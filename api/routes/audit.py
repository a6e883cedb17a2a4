"""The audit trail: `GET /api/audit`, newest first by keyset. Tenant admins read their tenant's entries, platform
admins every tenant's (with X-Tenant, one tenant's); members none."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from litestar import Controller, Request, get
from litestar.params import Parameter

from api.views.audit import AuditPageView
from mq.audit.types import MAX_AUDIT_PAGE, AuditFilter
from mq.commands.tenancy import AccountCommands
from mq.tenancy.auth import Principal

AnyRequest = Request[Principal, Any, Any]


class AuditController(Controller):
    path = "/api/audit"
    tags = ["audit"]

    @get("/", summary="The audit trail, newest first", operation_id="listAudit")
    async def list_entries(
        self,
        request: AnyRequest,
        limit: Annotated[int, Parameter(ge=1, le=MAX_AUDIT_PAGE)] = 50,
        cursor: Annotated[str | None, Parameter(description="`next_cursor` of the previous page")] = None,
        action: Annotated[
            str | None, Parameter(description="An action (`topic.purge`) or a prefix ending in `.` (`topic.`)")
        ] = None,
        actor: Annotated[str | None, Parameter(description="The username that acted")] = None,
        topic: Annotated[str | None, Parameter(description="Entries about this topic")] = None,
        from_time: Annotated[datetime | None, Parameter(description="Entries at or after (RFC 3339)")] = None,
        to_time: Annotated[datetime | None, Parameter(description="Entries before (RFC 3339)")] = None,
    ) -> AuditPageView:
        """Control-plane changes and administrative actions, with who, when, on what and the request id.
        Data-plane calls (enqueue, dequeue, ack, nack, extend) are not recorded."""
        account: AccountCommands = request.app.state.runtime.commands.account
        where = AuditFilter(action=action, actor=actor, topic=topic, from_time=from_time, to_time=to_time)
        return AuditPageView.of(await account.audit_page(request.user, cursor, limit, where))
