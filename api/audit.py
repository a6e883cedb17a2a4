"""Recording what a route did in the audit trail (`mq.audit`): one call after the action succeeded.

Routes of the control plane and administrative actions call `audit`; data-plane routes (enqueue, dequeue, ack, nack,
extend) never do, so the trail costs the data plane nothing.
"""

from __future__ import annotations

from typing import Any

from litestar import Request

from mq.audit.service import AuditTrail
from mq.tenancy.auth import Principal

AnyRequest = Request[Principal, Any, Any]


async def audit(
    request: AnyRequest,
    action: str,
    target: str,
    details: dict[str, Any] | None = None,
    *,
    tenant: tuple[int | None, str | None] | None = None,
) -> None:
    """Record that the caller did `action` to `target`. The entry belongs to the tenant the request addressed,
    or to `tenant` (id, slug) when the route names another (a platform admin's tenant routes), (None, None) for
    a platform-wide action."""
    trail: AuditTrail = request.app.state.runtime.audit
    principal = request.user
    tenant_id, slug = tenant if tenant is not None else (principal.tenant_id, principal.tenant_slug)
    await trail.record(principal.username, action, target, tenant_id=tenant_id, tenant=slug, details=details)
