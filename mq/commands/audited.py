"""The audit trail's entry of a command a caller made (the data plane's own commands never write one)."""

from __future__ import annotations

from typing import Any

from mq.audit.service import AuditTrail
from mq.tenancy.auth import Principal


async def record(
    trail: AuditTrail, principal: Principal, action: str, target: str, details: dict[str, Any] | None = None
) -> None:
    """That the caller did `action` to `target`, in the trail of the tenant it addressed."""
    await trail.record(
        principal.username, action, target, tenant_id=principal.tenant_id, tenant=principal.tenant_slug, details=details
    )
