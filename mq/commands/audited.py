"""The audit trail's entry of a command a caller made (the data plane's own commands never write one)."""

from __future__ import annotations

from typing import Any

from mq.audit.service import AuditTrail
from mq.tenancy.auth import Principal

#: A platform-wide action's trail: no tenant's.
PLATFORM: tuple[int | None, str | None] = (None, None)


async def record(
    trail: AuditTrail,
    principal: Principal,
    action: str,
    target: str,
    details: dict[str, Any] | None = None,
    *,
    tenant: tuple[int | None, str | None] | None = None,
) -> None:
    """That the caller did `action` to `target`, in the trail of the tenant it addressed, or of `tenant` (id, slug)
    when the command names another (a platform admin's tenant commands), `PLATFORM` for a platform-wide action."""
    tenant_id, slug = tenant if tenant is not None else (principal.tenant_id, principal.tenant_slug)
    await trail.record(principal.username, action, target, tenant_id=tenant_id, tenant=slug, details=details)
