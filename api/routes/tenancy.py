"""Control plane: tenants (platform admins) and the users of a tenant (its tenant admins, or platform admins
addressing it with X-Tenant)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, delete, get, patch
from litestar.params import Parameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_204_NO_CONTENT

from api.audit import audit
from api.body import json_post, strict_body
from api.schemas import (
    MAX_OFFSET,
    MAX_PAGE_LIMIT,
    GrantBody,
    GrantListView,
    GrantView,
    Page,
    Quotas,
    TenantCreateBody,
    TenantPage,
    TenantUpdateBody,
    TenantUsageView,
    TenantView,
    UserCreateBody,
    UserPage,
    UserUpdateBody,
    UserView,
)
from mq.queue.types import rfc3339
from mq.tenancy.auth import Principal
from mq.tenancy.authorization import require_platform_admin, tenant_for
from mq.tenancy.repository import GrantRecord, TenantRecord, UserRow
from mq.tenancy.service import TenancyService
from mq.topics.service import TopicAdmin

AnyRequest = Request[Principal, Any, Any]
Limit = Annotated[int, Parameter(ge=1, le=MAX_PAGE_LIMIT)]
Offset = Annotated[int, Parameter(ge=0, le=MAX_OFFSET)]


def _tenancy(request: AnyRequest) -> TenancyService:
    service: TenancyService = request.app.state.runtime.tenants
    return service


def _tenant_view(tenant: TenantRecord, usage: dict[str, tuple[int, int]] | None = None) -> TenantView:
    topics, messages = (usage or {}).get(tenant.slug, (0, 0))
    return TenantView(
        slug=tenant.slug,
        name=tenant.name,
        status=tenant.status,
        quotas=msgspec.convert(tenant.quotas, Quotas),
        created_at=rfc3339(tenant.created_at) or "",
        usage=TenantUsageView(topics=topics, messages=messages),
    )


async def _usage(request: AnyRequest) -> dict[str, tuple[int, int]]:
    """Every tenant's topics and messages as the gauge job last counted them (one read of a small table)."""
    topics: TopicAdmin = request.app.state.runtime.topics
    return await topics.config.usage()


def _user_view(user: UserRow) -> UserView:
    return UserView(
        id=str(user.id),
        username=user.username,
        role=user.role,
        tenant=user.tenant_slug,
        created_at=rfc3339(user.created_at) or "",
        updated_at=rfc3339(user.updated_at) or "",
    )


def _grant_view(grant: GrantRecord) -> GrantView:
    return GrantView(
        id=str(grant.id),
        action=grant.action,
        topic_pattern=grant.topic_pattern,
        created_at=rfc3339(grant.created_at) or "",
        consumer_group=grant.consumer_group,
    )


def _quotas(quotas: Quotas | None) -> dict[str, Any]:
    return msgspec.to_builtins(quotas) if quotas is not None else {}


#: A tenant's status change has an action of its own, so that suspensions can be found by name.
_TENANT_ACTION = {"suspended": "tenant.suspend", "active": "tenant.resume"}


class TenantController(Controller):
    path = "/api/tenants"
    tags = ["tenants"]

    @json_post(
        "/",
        TenantCreateBody,
        status_code=HTTP_201_CREATED,
        summary="Create a tenant (platform admins)",
        operation_id="createTenant",
    )
    async def create_tenant(self, request: AnyRequest, data: TenantCreateBody) -> TenantView:
        require_platform_admin(request.user)
        tenant = await _tenancy(request).create_tenant(data.slug, data.name, _quotas(data.quotas))
        await audit(
            request,
            "tenant.create",
            tenant.slug,
            {"name": tenant.name, "quotas": tenant.quotas},
            tenant=(tenant.id, tenant.slug),
        )
        return _tenant_view(tenant)

    @get("/", summary="List tenants (platform admins)", operation_id="listTenants")
    async def list_tenants(self, request: AnyRequest, limit: Limit = 50, offset: Offset = 0) -> TenantPage:
        require_platform_admin(request.user)
        tenants, total = await _tenancy(request).list_tenants(limit, offset)
        usage = await _usage(request)
        return Page(items=[_tenant_view(t, usage) for t in tenants], total=total, limit=limit, offset=offset)

    @get("/{slug:str}", summary="Get a tenant (platform admins)", operation_id="getTenant")
    async def get_tenant(self, request: AnyRequest, slug: str) -> TenantView:
        require_platform_admin(request.user)
        return _tenant_view(await _tenancy(request).get_tenant(slug), await _usage(request))

    @patch(
        "/{slug:str}",
        status_code=HTTP_200_OK,
        summary="Rename, suspend or resume a tenant, or set its quotas",
        operation_id="updateTenant",
        **strict_body(TenantUpdateBody),
    )
    async def update_tenant(self, request: AnyRequest, slug: str, data: TenantUpdateBody) -> TenantView:
        require_platform_admin(request.user)
        changes: dict[str, Any] = {}
        if data.name is not None:
            changes["name"] = data.name
        if data.status is not None:
            changes["status"] = data.status
        if data.quotas is not None:
            changes["quotas"] = _quotas(data.quotas)
        tenant = await _tenancy(request).update_tenant(slug, changes)
        await audit(
            request, _TENANT_ACTION.get(data.status or "", "tenant.update"), slug, changes, tenant=(tenant.id, slug)
        )
        return _tenant_view(tenant)

    @delete(
        "/{slug:str}",
        status_code=HTTP_204_NO_CONTENT,
        summary="Delete a tenant; refused while it holds messages unless force=true",
        operation_id="deleteTenant",
    )
    async def delete_tenant(self, request: AnyRequest, slug: str, force: bool = False) -> None:
        require_platform_admin(request.user)
        tenancy = _tenancy(request)
        tenant = await tenancy.get_tenant(slug)
        await tenancy.delete_tenant(slug, force=force)
        await audit(request, "tenant.delete", slug, {"force": force}, tenant=(tenant.id, slug))


class UserController(Controller):
    path = "/api/users"
    tags = ["users"]

    @json_post(
        "/",
        UserCreateBody,
        status_code=HTTP_201_CREATED,
        summary="Create a user of the tenant",
        operation_id="createUser",
    )
    async def create_user(self, request: AnyRequest, data: UserCreateBody) -> UserView:
        tenant = tenant_for(request.user, admin_only=True)
        slug = request.user.tenant_slug or ""
        user = await _tenancy(request).create_user(tenant, slug, data.username, data.password, data.role)
        await audit(request, "user.create", user.username, {"user_id": str(user.id), "role": user.role})
        return _user_view(user)

    @get("/", summary="List the tenant's users", operation_id="listUsers")
    async def list_users(self, request: AnyRequest, limit: Limit = 50, offset: Offset = 0) -> UserPage:
        tenant = tenant_for(request.user, admin_only=True)
        users, total = await _tenancy(request).list_users(tenant, limit, offset)
        return Page(items=[_user_view(u) for u in users], total=total, limit=limit, offset=offset)

    @get("/{user_id:str}", summary="Get a user of the tenant", operation_id="getUser")
    async def get_user(self, request: AnyRequest, user_id: str) -> UserView:
        tenant = tenant_for(request.user, admin_only=True)
        return _user_view(await _tenancy(request).get_user(tenant, user_id))

    @patch(
        "/{user_id:str}",
        status_code=HTTP_200_OK,
        summary="Change a user's password or role",
        operation_id="updateUser",
        **strict_body(UserUpdateBody),
    )
    async def update_user(self, request: AnyRequest, user_id: str, data: UserUpdateBody) -> UserView:
        tenant = tenant_for(request.user, admin_only=True)
        tenancy = _tenancy(request)
        before = await tenancy.get_user(tenant, user_id)
        user = await tenancy.update_user(tenant, user_id, data.password, data.role)
        if data.role is not None and data.role != before.role:
            await audit(
                request, "user.role_change", user.username, {"user_id": user_id, "from": before.role, "to": user.role}
            )
        if data.password is not None:
            await audit(request, "user.password_change", user.username, {"user_id": user_id})
        return _user_view(user)

    @delete(
        "/{user_id:str}",
        status_code=HTTP_204_NO_CONTENT,
        summary="Delete a user of the tenant",
        operation_id="deleteUser",
    )
    async def delete_user(self, request: AnyRequest, user_id: str) -> None:
        tenant = tenant_for(request.user, admin_only=True)
        tenancy = _tenancy(request)
        user = await tenancy.get_user(tenant, user_id)
        await tenancy.delete_user(tenant, user_id)
        await audit(request, "user.delete", user.username, {"user_id": user_id, "role": user.role})

    @json_post(
        "/{user_id:str}/grants",
        GrantBody,
        status_code=HTTP_201_CREATED,
        summary="Let a member act on topics",
        operation_id="createGrant",
        tags=["grants"],
    )
    async def create_grant(self, request: AnyRequest, user_id: str, data: GrantBody) -> GrantView:
        tenant = tenant_for(request.user, admin_only=True)
        tenancy = _tenancy(request)
        grant = await tenancy.create_grant(tenant, user_id, data.action, data.topic_pattern, data.consumer_group)
        user = await tenancy.get_user(tenant, user_id)
        await audit(
            request,
            "grant.create",
            user.username,
            {
                "user_id": user_id,
                "grant_id": str(grant.id),
                "action": grant.action,
                "topic_pattern": grant.topic_pattern,
                **({"consumer_group": grant.consumer_group} if grant.consumer_group else {}),
            },
        )
        return _grant_view(grant)

    @get("/{user_id:str}/grants", summary="A user's grants", operation_id="listGrants", tags=["grants"])
    async def list_grants(self, request: AnyRequest, user_id: str) -> GrantListView:
        tenant = tenant_for(request.user, admin_only=True)
        return GrantListView(items=[_grant_view(g) for g in await _tenancy(request).list_grants(tenant, user_id)])

    @delete(
        "/{user_id:str}/grants/{grant_id:str}",
        status_code=HTTP_204_NO_CONTENT,
        summary="Revoke a grant",
        operation_id="deleteGrant",
        tags=["grants"],
    )
    async def delete_grant(self, request: AnyRequest, user_id: str, grant_id: str) -> None:
        tenant = tenant_for(request.user, admin_only=True)
        tenancy = _tenancy(request)
        user = await tenancy.get_user(tenant, user_id)
        await tenancy.delete_grant(tenant, user_id, grant_id)
        await audit(request, "grant.delete", user.username, {"user_id": user_id, "grant_id": grant_id})
