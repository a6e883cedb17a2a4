"""The commands of the control plane: tenants (platform admins), a tenant's users and their grants (its tenant
admins, or platform admins addressing it), a caller's own session and password, and the audit trail's pages.

Each takes the caller's `Principal`, checks its role, acts, and writes the change's audit entry; the routes render
the records they answer with.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mq import errors
from mq.audit.service import AuditTrail
from mq.audit.types import AuditFilter
from mq.commands.audited import record
from mq.pages import RowPage
from mq.tenancy.auth import Principal
from mq.tenancy.authorization import require_platform_admin, tenant_for
from mq.tenancy.grants import covers, valid_pattern
from mq.tenancy.repository import GrantRecord, TenantRecord, UserRow
from mq.tenancy.service import TenancyService

#: Topics and messages per tenant slug, as the gauge job last counted them.
Usage = dict[str, tuple[int, int]]

#: A tenant's status change has an action of its own, so that suspensions can be found by name.
_TENANT_ACTION = {"suspended": "tenant.suspend", "active": "tenant.resume"}


class TenantCommands:
    """Tenants, for platform admins."""

    def __init__(self, tenancy: TenancyService, usage: Callable[[], Awaitable[Usage]], audit: AuditTrail) -> None:
        self.tenancy = tenancy
        self.usage = usage
        self.audit = audit

    async def create(self, principal: Principal, slug: str, name: str, quotas: dict[str, Any]) -> TenantRecord:
        require_platform_admin(principal)
        tenant = await self.tenancy.create_tenant(slug, name, quotas)
        details = {"name": tenant.name, "quotas": tenant.quotas}
        await record(self.audit, principal, "tenant.create", tenant.slug, details, tenant=(tenant.id, tenant.slug))
        return tenant

    async def page(self, principal: Principal, limit: int, offset: int) -> tuple[list[TenantRecord], int, Usage]:
        require_platform_admin(principal)
        tenants, total = await self.tenancy.list_tenants(limit, offset)
        return tenants, total, await self.usage()

    async def get(self, principal: Principal, slug: str) -> tuple[TenantRecord, Usage]:
        require_platform_admin(principal)
        return await self.tenancy.get_tenant(slug), await self.usage()

    async def update(
        self,
        principal: Principal,
        slug: str,
        *,
        name: str | None,
        status: str | None,
        quotas: dict[str, Any] | None,
    ) -> TenantRecord:
        """Renames, suspends or resumes the tenant, or sets its quotas (None: unchanged)."""
        require_platform_admin(principal)
        changes: dict[str, Any] = {}
        if name is not None:
            changes["name"] = name
        if status is not None:
            changes["status"] = status
        if quotas is not None:
            changes["quotas"] = quotas
        tenant = await self.tenancy.update_tenant(slug, changes)
        action = _TENANT_ACTION.get(status or "", "tenant.update")
        await record(self.audit, principal, action, slug, changes, tenant=(tenant.id, slug))
        return tenant

    async def delete(self, principal: Principal, slug: str, *, force: bool) -> None:
        """Refused while the tenant holds messages, unless `force`."""
        require_platform_admin(principal)
        tenant = await self.tenancy.get_tenant(slug)
        await self.tenancy.delete_tenant(slug, force=force)
        await record(self.audit, principal, "tenant.delete", slug, {"force": force}, tenant=(tenant.id, slug))


class UserCommands:
    """A tenant's users and their grants, for its tenant admins (and platform admins naming it)."""

    def __init__(
        self,
        tenancy: TenancyService,
        audit: AuditTrail,
        group_topics: Callable[[int, str], Awaitable[list[str]]],
    ) -> None:
        """`group_topics`: the tenant's topics with a consumer group of that name."""
        self.tenancy = tenancy
        self.audit = audit
        self._group_topics = group_topics

    async def create(self, principal: Principal, username: str, password: str, role: str) -> UserRow:
        tenant = tenant_for(principal, admin_only=True)
        user = await self.tenancy.create_user(tenant, principal.tenant_slug or "", username, password, role)
        await record(self.audit, principal, "user.create", user.username, {"user_id": str(user.id), "role": user.role})
        return user

    async def page(self, principal: Principal, limit: int, offset: int) -> tuple[list[UserRow], int]:
        return await self.tenancy.list_users(tenant_for(principal, admin_only=True), limit, offset)

    async def get(self, principal: Principal, user_id: str) -> UserRow:
        return await self.tenancy.get_user(tenant_for(principal, admin_only=True), user_id)

    async def update(self, principal: Principal, user_id: str, password: str | None, role: str | None) -> UserRow:
        """Changes a user's password or role (None: unchanged); each change has its own audit entry."""
        tenant = tenant_for(principal, admin_only=True)
        before = await self.tenancy.get_user(tenant, user_id)
        user = await self.tenancy.update_user(tenant, user_id, password, role)
        if role is not None and role != before.role:
            details = {"user_id": user_id, "from": before.role, "to": user.role}
            await record(self.audit, principal, "user.role_change", user.username, details)
        if password is not None:
            await record(self.audit, principal, "user.password_change", user.username, {"user_id": user_id})
        return user

    async def delete(self, principal: Principal, user_id: str) -> None:
        tenant = tenant_for(principal, admin_only=True)
        user = await self.tenancy.get_user(tenant, user_id)
        await self.tenancy.delete_user(tenant, user_id)
        await record(self.audit, principal, "user.delete", user.username, {"user_id": user_id, "role": user.role})

    async def grant(
        self, principal: Principal, user_id: str, action: str, topic_pattern: str, consumer_group: str | None
    ) -> GrantRecord:
        tenant = tenant_for(principal, admin_only=True)
        if action == "consume" and consumer_group is not None and valid_pattern(topic_pattern):
            topics = await self._group_topics(tenant, consumer_group)
            if not any(covers(topic_pattern, topic) for topic in topics):
                raise errors.NotFound(
                    f"no topic matching {topic_pattern!r} has a consumer group {consumer_group!r}: create the group"
                    " first (a grant pinned to a group that does not exist would let its holder consume nothing)",
                    details={"topic_pattern": topic_pattern, "consumer_group": consumer_group},
                )
        grant = await self.tenancy.create_grant(tenant, user_id, action, topic_pattern, consumer_group)
        user = await self.tenancy.get_user(tenant, user_id)
        details = {
            "user_id": user_id,
            "grant_id": str(grant.id),
            "action": grant.action,
            "topic_pattern": grant.topic_pattern,
            **({"consumer_group": grant.consumer_group} if grant.consumer_group else {}),
        }
        await record(self.audit, principal, "grant.create", user.username, details)
        return grant

    async def grants(self, principal: Principal, user_id: str) -> list[GrantRecord]:
        return await self.tenancy.list_grants(tenant_for(principal, admin_only=True), user_id)

    async def revoke(self, principal: Principal, user_id: str, grant_id: str) -> None:
        tenant = tenant_for(principal, admin_only=True)
        user = await self.tenancy.get_user(tenant, user_id)
        await self.tenancy.delete_grant(tenant, user_id, grant_id)
        await record(self.audit, principal, "grant.delete", user.username, {"user_id": user_id, "grant_id": grant_id})


class AccountCommands:
    """What a caller does to its own account: a console session begun, its password changed; and the audit
    trail's pages (tenant admins their tenant's, platform admins every tenant's or the one they name)."""

    def __init__(self, tenancy: TenancyService, audit: AuditTrail) -> None:
        self.tenancy = tenancy
        self.audit = audit

    async def logged_in(self, principal: Principal) -> None:
        """A console session began (the session itself is the authenticator's)."""
        await record(self.audit, principal, "auth.login", principal.username)

    async def change_password(self, principal: Principal, current: str, new: str) -> None:
        await self.tenancy.change_own_password(principal.user_id, current, new)
        await record(self.audit, principal, "user.password_change", principal.username, {"own": True})

    async def audit_page(self, principal: Principal, cursor: str | None, limit: int, where: AuditFilter) -> RowPage:
        if principal.is_member:
            raise errors.Forbidden("tenant admins only")
        return await self.audit.page(principal.tenant_id, cursor, limit, where)
