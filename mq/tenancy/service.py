"""Tenants and users: the control plane's rules on top of `TenancyRepository`.

Validates what the HTTP layer cannot (password strength, Unicode Postgres cannot store), hashes passwords off
the event loop, and drops cached credentials whenever a change could alter who may do what. Raises only
`mq.errors`.
"""

from __future__ import annotations

import uuid
from typing import Any, get_args

from mq import errors
from mq.names import SLUG_PATTERN, check_text, is_slug
from mq.tenancy.grants import ACTIONS, AssignableRole, valid_pattern
from mq.tenancy.invalidation import AuthInvalidation
from mq.tenancy.passwords import MIN_PASSWORD_LENGTH, PasswordChecks
from mq.tenancy.repository import GrantRecord, TenancyRepository, TenantRecord, UserChange, UserRow

ASSIGNABLE_ROLES: tuple[AssignableRole, ...] = get_args(AssignableRole)
MAX_PASSWORD_LENGTH = 1024
MAX_USERNAME_LENGTH = 100
MAX_TENANT_NAME_LENGTH = 200


class TenancyService:
    def __init__(
        self, repository: TenancyRepository, invalidation: AuthInvalidation, passwords: PasswordChecks | None = None
    ) -> None:
        self.repository = repository
        self.invalidation = invalidation
        self.passwords = passwords or PasswordChecks()

    # --- tenants -------------------------------------------------------------------------------------------------

    async def create_tenant(self, slug: str, name: str, quotas: dict[str, Any]) -> TenantRecord:
        _check_slug(slug)
        check_text(name, "name")
        tenant = await self.repository.create_tenant(slug, name, quotas)
        if tenant is None:
            raise errors.AlreadyExists(f"tenant {slug!r} exists")
        return tenant

    async def list_tenants(self, limit: int, offset: int) -> tuple[list[TenantRecord], int]:
        return await self.repository.list_tenants(limit, offset)

    async def get_tenant(self, slug: str) -> TenantRecord:
        tenant = await self.repository.tenant_by_slug(slug) if is_slug(slug) else None
        if tenant is None:
            raise errors.NotFound(f"no tenant {slug!r}")
        return tenant

    async def update_tenant(self, slug: str, changes: dict[str, Any]) -> TenantRecord:
        """`changes` holds any of name, status (active|suspended), quotas; a suspended tenant's users get 403 on
        their next request, its messages stay."""
        if "name" in changes:
            check_text(changes["name"], "name")
        if not is_slug(slug):
            raise errors.NotFound(f"no tenant {slug!r}")
        tenant = await self.repository.update_tenant(slug, changes) if changes else await self.get_tenant(slug)
        if tenant is None:
            raise errors.NotFound(f"no tenant {slug!r}")
        if "status" in changes or "quotas" in changes:
            await self.invalidation.changed()
        return tenant

    async def delete_tenant(self, slug: str, *, force: bool) -> None:
        tenant = await self.get_tenant(slug)
        if not force and await self.repository.tenant_has_messages(tenant.id):
            raise errors.TenantNotEmpty()
        await self.repository.delete_tenant(tenant.id)
        await self.invalidation.changed()

    # --- users ---------------------------------------------------------------------------------------------------

    async def create_user(self, tenant_id: int, tenant_slug: str, username: str, password: str, role: str) -> UserRow:
        """A user of the tenant, named `<name>@<tenant-slug>` (`qualified_username`)."""
        username = qualified_username(username, tenant_slug)
        _check_role(role)
        password_hash = await self._hash(password)
        user_id = await self.repository.create_user(username, password_hash, role, tenant_id)
        if user_id is None:
            raise errors.AlreadyExists(f"username {username!r} is taken")
        return await self.get_user(tenant_id, str(user_id))

    async def list_users(self, tenant_id: int, limit: int, offset: int) -> tuple[list[UserRow], int]:
        return await self.repository.list_users(tenant_id, limit, offset)

    async def get_user(self, tenant_id: int, user_id: str) -> UserRow:
        uid = _user_id(user_id)
        user = await self.repository.get_user(tenant_id, uid) if uid is not None else None
        if user is None:
            raise errors.NotFound("no such user")
        return user

    async def update_user(self, tenant_id: int, user_id: str, password: str | None, role: str | None) -> UserRow:
        changes: dict[str, Any] = {}
        if role is not None:
            _check_role(role)
            changes["role"] = role
        if password is not None:
            changes["password_hash"] = await self._hash(password)
        uid = _user_id(user_id)
        if uid is None:
            raise errors.NotFound("no such user")
        if changes:
            _check_change(await self.repository.update_user(tenant_id, uid, changes))
        if password is not None:
            await self.repository.delete_user_sessions(uid)  # a new password logs the user out everywhere
        if changes:
            await self.invalidation.changed()  # the old password or role must stop working now
        return await self.get_user(tenant_id, user_id)

    async def delete_user(self, tenant_id: int, user_id: str) -> None:
        uid = _user_id(user_id)
        if uid is None:
            raise errors.NotFound("no such user")
        _check_change(await self.repository.delete_user(tenant_id, uid))
        await self.invalidation.changed()

    async def change_own_password(self, user_id: str, current: str, new: str) -> None:
        """Any user, its own password: the current one is asked again (a stolen session cannot lock its owner
        out). Ends the user's sessions and cached credentials on every instance."""
        user = await self.repository.user_by_id(uuid.UUID(user_id))
        if user is None or not await self.passwords.verify(user.password_hash, current):
            raise errors.Forbidden("the current password is not right")
        await self._set_password(user.id, new)

    async def set_platform_admin_password(self, username: str, new: str) -> None:
        """A platform admin sets another's (or its own) password."""
        user = await self.repository.user_by_username(username)
        if user is None or user.role != "platform_admin":
            raise errors.NotFound(f"no platform admin {username!r}")
        await self._set_password(user.id, new)

    async def _set_password(self, user_id: uuid.UUID, new: str) -> None:
        await self.repository.set_password(user_id, await self._hash(new))
        await self.repository.delete_user_sessions(user_id)
        await self.invalidation.changed()  # the old password must stop working everywhere, now

    async def _hash(self, password: str) -> str:
        if not MIN_PASSWORD_LENGTH <= len(password) <= MAX_PASSWORD_LENGTH:
            raise errors.InvalidRequest(f"password must be {MIN_PASSWORD_LENGTH} to {MAX_PASSWORD_LENGTH} characters")
        check_text(password, "password")
        return await self.passwords.hash(password)

    # --- grants --------------------------------------------------------------------------------------------------

    async def create_grant(
        self, tenant_id: int, user_id: str, action: str, topic_pattern: str, consumer_group: str | None = None
    ) -> GrantRecord:
        if action not in ACTIONS:
            raise errors.InvalidRequest(f"action must be one of {', '.join(ACTIONS)}")
        if not valid_pattern(topic_pattern):
            raise errors.InvalidRequest("topic_pattern must be '*', a topic name, or a topic name followed by '.*'")
        if consumer_group is not None and action != "consume":
            raise errors.InvalidRequest("only a consume grant names a consumer_group")
        user = await self.get_user(tenant_id, user_id)
        grant = await self.repository.create_grant(tenant_id, user.id, action, topic_pattern, consumer_group)
        if grant is None:
            raise errors.AlreadyExists("the user has this grant already")
        await self.invalidation.changed()
        return grant

    async def list_grants(self, tenant_id: int, user_id: str) -> list[GrantRecord]:
        user = await self.get_user(tenant_id, user_id)
        return await self.repository.list_grants(tenant_id, user.id)

    async def delete_grant(self, tenant_id: int, user_id: str, grant_id: str) -> None:
        user = await self.get_user(tenant_id, user_id)
        gid = _user_id(grant_id)
        if gid is None or not await self.repository.delete_grant(tenant_id, user.id, gid):
            raise errors.NotFound("no such grant")
        await self.invalidation.changed()


def _check_slug(slug: str) -> None:
    if not is_slug(slug):
        raise errors.InvalidRequest(f"slug must match {SLUG_PATTERN}")


def qualified_username(username: str, tenant_slug: str) -> str:
    """A tenant's usernames end in `@<tenant-slug>`: `alice` becomes `alice@acme`, and a name already ending so
    stays. Usernames are unique platform-wide and slugs hold no '@', so a tenant's names live in a namespace of its
    own: its admins can only collide with their own tenant's users, and a 409 tells them nothing of any other."""
    suffix = f"@{tenant_slug}"
    name = username if username.endswith(suffix) else f"{username}{suffix}"
    if name == suffix:
        raise errors.InvalidRequest("username must not be empty")
    _check_username(name)
    return name


def _check_username(username: str) -> None:
    if not 1 <= len(username) <= MAX_USERNAME_LENGTH or ":" in username or not username.isprintable():
        raise errors.InvalidRequest(
            f"username must be 1 to {MAX_USERNAME_LENGTH} printable characters without ':' (HTTP Basic splits there)"
        )
    check_text(username, "username")


def _check_change(outcome: UserChange) -> None:
    if outcome == "missing":
        raise errors.NotFound("no such user")
    if outcome == "last_admin":
        raise errors.LastAdmin()


def _check_role(role: str) -> None:
    if role not in ASSIGNABLE_ROLES:
        raise errors.InvalidRequest(f"role must be one of {', '.join(ASSIGNABLE_ROLES)}")


def _user_id(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None
