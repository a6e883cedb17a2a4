"""Control plane: tenants (platform admins) and the users of a tenant (its tenant admins, or platform admins
addressing it with X-Tenant). The routes decode, call a command (`mq.commands.tenancy`) and render."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, delete, get, patch
from litestar.params import Parameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_204_NO_CONTENT

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
from mq.commands.tenancy import TenantCommands, Usage, UserCommands
from mq.queue.types import rfc3339
from mq.tenancy.auth import Principal
from mq.tenancy.repository import GrantRecord, TenantRecord, UserRow

AnyRequest = Request[Principal, Any, Any]
Limit = Annotated[int, Parameter(ge=1, le=MAX_PAGE_LIMIT)]
Offset = Annotated[int, Parameter(ge=0, le=MAX_OFFSET)]


def _tenants(request: AnyRequest) -> TenantCommands:
    commands: TenantCommands = request.app.state.runtime.commands.tenants
    return commands


def _users(request: AnyRequest) -> UserCommands:
    commands: UserCommands = request.app.state.runtime.commands.users
    return commands


def _tenant_view(tenant: TenantRecord, usage: Usage | None = None) -> TenantView:
    topics, messages = (usage or {}).get(tenant.slug, (0, 0))
    return TenantView(
        slug=tenant.slug,
        name=tenant.name,
        status=tenant.status,
        quotas=msgspec.convert(tenant.quotas, Quotas),
        created_at=rfc3339(tenant.created_at) or "",
        usage=TenantUsageView(topics=topics, messages=messages),
    )


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
        return _tenant_view(await _tenants(request).create(request.user, data.slug, data.name, _quotas(data.quotas)))

    @get("/", summary="List tenants (platform admins)", operation_id="listTenants")
    async def list_tenants(self, request: AnyRequest, limit: Limit = 50, offset: Offset = 0) -> TenantPage:
        tenants, total, usage = await _tenants(request).page(request.user, limit, offset)
        return Page(items=[_tenant_view(t, usage) for t in tenants], total=total, limit=limit, offset=offset)

    @get("/{slug:str}", summary="Get a tenant (platform admins)", operation_id="getTenant")
    async def get_tenant(self, request: AnyRequest, slug: str) -> TenantView:
        return _tenant_view(*await _tenants(request).get(request.user, slug))

    @patch(
        "/{slug:str}",
        status_code=HTTP_200_OK,
        summary="Rename, suspend or resume a tenant, or set its quotas",
        operation_id="updateTenant",
        **strict_body(TenantUpdateBody),
    )
    async def update_tenant(self, request: AnyRequest, slug: str, data: TenantUpdateBody) -> TenantView:
        quotas = _quotas(data.quotas) if data.quotas is not None else None
        tenant = await _tenants(request).update(request.user, slug, name=data.name, status=data.status, quotas=quotas)
        return _tenant_view(tenant)

    @delete(
        "/{slug:str}",
        status_code=HTTP_204_NO_CONTENT,
        summary="Delete a tenant; refused while it holds messages unless force=true",
        operation_id="deleteTenant",
    )
    async def delete_tenant(self, request: AnyRequest, slug: str, force: bool = False) -> None:
        await _tenants(request).delete(request.user, slug, force=force)


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
        return _user_view(await _users(request).create(request.user, data.username, data.password, data.role))

    @get("/", summary="List the tenant's users", operation_id="listUsers")
    async def list_users(self, request: AnyRequest, limit: Limit = 50, offset: Offset = 0) -> UserPage:
        users, total = await _users(request).page(request.user, limit, offset)
        return Page(items=[_user_view(u) for u in users], total=total, limit=limit, offset=offset)

    @get("/{user_id:str}", summary="Get a user of the tenant", operation_id="getUser")
    async def get_user(self, request: AnyRequest, user_id: str) -> UserView:
        return _user_view(await _users(request).get(request.user, user_id))

    @patch(
        "/{user_id:str}",
        status_code=HTTP_200_OK,
        summary="Change a user's password or role",
        operation_id="updateUser",
        **strict_body(UserUpdateBody),
    )
    async def update_user(self, request: AnyRequest, user_id: str, data: UserUpdateBody) -> UserView:
        return _user_view(await _users(request).update(request.user, user_id, data.password, data.role))

    @delete(
        "/{user_id:str}",
        status_code=HTTP_204_NO_CONTENT,
        summary="Delete a user of the tenant",
        operation_id="deleteUser",
    )
    async def delete_user(self, request: AnyRequest, user_id: str) -> None:
        await _users(request).delete(request.user, user_id)

    @json_post(
        "/{user_id:str}/grants",
        GrantBody,
        status_code=HTTP_201_CREATED,
        summary="Let a member act on topics",
        operation_id="createGrant",
        tags=["grants"],
    )
    async def create_grant(self, request: AnyRequest, user_id: str, data: GrantBody) -> GrantView:
        users = _users(request)
        grant = await users.grant(request.user, user_id, data.action, data.topic_pattern, data.consumer_group)
        return _grant_view(grant)

    @get("/{user_id:str}/grants", summary="A user's grants", operation_id="listGrants", tags=["grants"])
    async def list_grants(self, request: AnyRequest, user_id: str) -> GrantListView:
        return GrantListView(items=[_grant_view(g) for g in await _users(request).grants(request.user, user_id)])

    @delete(
        "/{user_id:str}/grants/{grant_id:str}",
        status_code=HTTP_204_NO_CONTENT,
        summary="Revoke a grant",
        operation_id="deleteGrant",
        tags=["grants"],
    )
    async def delete_grant(self, request: AnyRequest, user_id: str, grant_id: str) -> None:
        await _users(request).revoke(request.user, user_id, grant_id)
