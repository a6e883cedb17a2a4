"""Tenants and users: control-plane rows, read and written with the SQLAlchemy ORM."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, cast

from sqlalchemy import delete, func, insert, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from mq.db.models import AdmissionGate, DeletedTenant, Grant, Session, Tenant, User
from mq.ids import uuid7
from mq.tenancy.grants import Action, GrantTuple, Role, TenantStatus

#: What a change to a user did: "missing" when the tenant has no such user, "last_admin" when refused because it
#: would leave the tenant without a tenant_admin.
UserChange = Literal["done", "missing", "last_admin"]


@dataclass(frozen=True, slots=True)
class UserRecord:
    id: uuid.UUID
    username: str
    password_hash: str
    role: Role
    tenant_id: int | None
    tenant_slug: str | None
    tenant_status: str | None


@dataclass(frozen=True, slots=True)
class TenantRecord:
    id: int
    slug: str
    name: str
    status: TenantStatus
    quotas: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class UserRow:
    """A user as the API shows it: never the password hash."""

    id: uuid.UUID
    username: str
    role: Role
    tenant_slug: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class GrantRecord:
    id: uuid.UUID
    action: Action
    topic_pattern: str
    created_at: datetime
    consumer_group: str | None = None


# Whether a tenant holds any message: one probe per partial index of `messages` (see mq.queue.sql.STATUS_GROUPS).
_GROUPS_TOMBSTONED = text(
    "INSERT INTO deleted_groups (tenant_id, id) SELECT tenant_id, id FROM consumer_groups WHERE tenant_id = :t "
    "ON CONFLICT DO NOTHING"
)
_TENANT_HAS_MESSAGES = text("""
SELECT EXISTS (SELECT FROM messages WHERE tenant_id = :t AND status IN ('pending', 'processing'))
    OR EXISTS (SELECT FROM messages WHERE tenant_id = :t AND status IN ('failed', 'expired'))""")


class TenancyRepository:
    def __init__(self, engine: AsyncEngine) -> None:
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)

    async def user_by_username(self, username: str) -> UserRecord | None:
        return await self._user_where(User.username == username)

    async def user_by_id(self, user_id: uuid.UUID) -> UserRecord | None:
        return await self._user_where(User.id == user_id)

    async def _user_where(self, condition: Any) -> UserRecord | None:
        async with self._sessions() as session:
            row = (
                await session.execute(
                    select(User, Tenant.slug, Tenant.status)
                    .outerjoin(Tenant, Tenant.id == User.tenant_id)
                    .where(condition)
                )
            ).first()
        if row is None:
            return None
        user, slug, status = row
        return UserRecord(
            user.id, user.username, user.password_hash, cast(Role, user.role), user.tenant_id, slug, status
        )

    async def tenant_by_slug(self, slug: str) -> TenantRecord | None:
        async with self._sessions() as session:
            tenant = (await session.execute(select(Tenant).where(Tenant.slug == slug))).scalar_one_or_none()
        return None if tenant is None else _tenant_record(tenant)

    async def create_tenant(self, slug: str, name: str, quotas: dict[str, Any] | None = None) -> TenantRecord | None:
        """The new tenant, or None when the slug is taken."""
        async with self._sessions() as session:
            tenant = Tenant(slug=slug, name=name, quotas=quotas or {})
            session.add(tenant)
            try:
                await session.commit()
            except IntegrityError:
                return None
            await session.refresh(tenant)
        return _tenant_record(tenant)

    async def list_tenants(self, limit: int, offset: int) -> tuple[list[TenantRecord], int]:
        async with self._sessions() as session:
            rows = (await session.execute(select(Tenant).order_by(Tenant.slug).limit(limit).offset(offset))).scalars()
            tenants = [_tenant_record(t) for t in rows]
            total = (await session.execute(select(func.count()).select_from(Tenant))).scalar_one()
        return tenants, total

    async def update_tenant(self, slug: str, changes: dict[str, Any]) -> TenantRecord | None:
        """Apply `changes` (name, status, quotas) in one statement; None when there is no such tenant."""
        async with self._sessions() as session:
            tenant = (
                await session.execute(
                    update(Tenant).where(Tenant.slug == slug).values(**changes, updated_at=func.now()).returning(Tenant)
                )
            ).scalar_one_or_none()
            if tenant is not None and "quotas" in changes:
                # The tenant's gate counted only while max_messages was set: the next capped enqueue recounts.
                await session.execute(
                    delete(AdmissionGate).where(AdmissionGate.tenant_id == tenant.id, AdmissionGate.scope == "")
                )
            await session.commit()
        return None if tenant is None else _tenant_record(tenant)

    async def tenant_has_messages(self, tenant_id: int) -> bool:
        async with self._sessions() as session:
            return bool((await session.execute(_TENANT_HAS_MESSAGES, {"t": tenant_id})).scalar_one())

    async def delete_tenant(self, tenant_id: int) -> None:
        """The tenant and everything it holds, in one transaction (users, grants and configs cascade)."""
        async with self._sessions() as session:
            await session.execute(text("DELETE FROM messages WHERE tenant_id = :t"), {"t": tenant_id})
            # Its consumer groups go with it (a cascade): their tombstones, so that the group settler releases what
            # they owed (a statement of ours, not a trigger: Citus has none on a distributed table).
            await session.execute(_GROUPS_TOMBSTONED, {"t": tenant_id})
            await session.execute(delete(AdmissionGate).where(AdmissionGate.tenant_id == tenant_id))
            await session.execute(delete(Tenant).where(Tenant.id == tenant_id))
            # An enqueue racing this delete may commit rows after our snapshot: the orphan sweeper removes them.
            await session.execute(insert(DeletedTenant).values(tenant_id=tenant_id))
            await session.commit()

    async def list_users(self, tenant_id: int, limit: int, offset: int) -> tuple[list[UserRow], int]:
        async with self._sessions() as session:
            rows = await session.execute(
                _users_with_tenant()
                .where(User.tenant_id == tenant_id)
                .order_by(User.username)
                .limit(limit)
                .offset(offset)
            )
            users = [_user_view(user, slug) for user, slug in rows]
            total = (
                await session.execute(select(func.count()).select_from(User).where(User.tenant_id == tenant_id))
            ).scalar_one()
        return users, total

    async def get_user(self, tenant_id: int, user_id: uuid.UUID) -> UserRow | None:
        async with self._sessions() as session:
            row = (
                await session.execute(_users_with_tenant().where(User.tenant_id == tenant_id, User.id == user_id))
            ).first()
        return None if row is None else _user_view(row[0], row[1])

    async def update_user(self, tenant_id: int, user_id: uuid.UUID, changes: dict[str, Any]) -> UserChange:
        """Apply `changes` (password_hash, role) to a user of the tenant, unless that demotes its last tenant_admin."""
        async with self._sessions() as session:
            if changes.get("role", "tenant_admin") != "tenant_admin" and await _is_last_admin(
                session, tenant_id, user_id
            ):
                return "last_admin"
            result = await session.execute(
                update(User)
                .where(User.tenant_id == tenant_id, User.id == user_id)
                .values(**changes, updated_at=func.now())
                .returning(User.id)
            )
            found = result.first() is not None
            await session.commit()
        return "done" if found else "missing"

    async def platform_admin_hashes(self) -> list[tuple[str, str]]:
        """(username, password hash) of every platform admin."""
        async with self._sessions() as session:
            rows = await session.execute(select(User.username, User.password_hash).where(User.role == "platform_admin"))
            return [(username, password_hash) for username, password_hash in rows]

    async def set_password(self, user_id: uuid.UUID, password_hash: str) -> None:
        async with self._sessions() as session:
            await session.execute(
                update(User).where(User.id == user_id).values(password_hash=password_hash, updated_at=func.now())
            )
            await session.commit()

    async def delete_user(self, tenant_id: int, user_id: uuid.UUID) -> UserChange:
        """Delete a user of the tenant, unless it is the tenant's last tenant_admin."""
        async with self._sessions() as session:
            if await _is_last_admin(session, tenant_id, user_id):
                return "last_admin"
            result = await session.execute(
                delete(User).where(User.tenant_id == tenant_id, User.id == user_id).returning(User.id)
            )
            found = result.first() is not None
            await session.commit()
        return "done" if found else "missing"

    async def create_user(
        self, username: str, password_hash: str, role: str, tenant_id: int | None
    ) -> uuid.UUID | None:
        """The new user's id, or None when the username is taken."""
        async with self._sessions() as session:
            user = User(id=uuid7(), username=username, password_hash=password_hash, role=role, tenant_id=tenant_id)
            session.add(user)
            try:
                await session.commit()
            except IntegrityError:
                return None
        return user.id

    async def create_grant(
        self, tenant_id: int, user_id: uuid.UUID, action: str, topic_pattern: str, consumer_group: str | None
    ) -> GrantRecord | None:
        """The new grant, or None when the user already has it. The caller checked the user is the tenant's."""
        async with self._sessions() as session:
            grant = Grant(
                id=uuid7(),
                tenant_id=tenant_id,
                user_id=user_id,
                action=action,
                topic_pattern=topic_pattern,
                consumer_group=consumer_group,
            )
            session.add(grant)
            try:
                await session.commit()
            except IntegrityError:
                return None
            await session.refresh(grant)
        return _grant_record(grant)

    async def list_grants(self, tenant_id: int, user_id: uuid.UUID) -> list[GrantRecord]:
        async with self._sessions() as session:
            rows = await session.execute(
                select(Grant).where(Grant.tenant_id == tenant_id, Grant.user_id == user_id).order_by(Grant.id)
            )
            return [_grant_record(g) for g in rows.scalars()]

    async def delete_grant(self, tenant_id: int, user_id: uuid.UUID, grant_id: uuid.UUID) -> bool:
        async with self._sessions() as session:
            result = await session.execute(
                delete(Grant)
                .where(Grant.tenant_id == tenant_id, Grant.user_id == user_id, Grant.id == grant_id)
                .returning(Grant.id)
            )
            found = result.first() is not None
            await session.commit()
        return found

    async def grants_of(self, user_id: uuid.UUID) -> tuple[GrantTuple, ...]:
        """(action, topic_pattern, consumer_group) of every grant of a user, for the credential check."""
        async with self._sessions() as session:
            rows = await session.execute(
                select(Grant.action, Grant.topic_pattern, Grant.consumer_group).where(Grant.user_id == user_id)
            )
            return tuple((action, pattern, group) for action, pattern, group in rows)

    # --- sessions ------------------------------------------------------------------------------------------------

    async def create_session(self, token_hash: bytes, user_id: uuid.UUID, csrf_token: str, ttl_seconds: int) -> None:
        async with self._sessions() as session:
            session.add(
                Session(
                    token_hash=token_hash,
                    user_id=user_id,
                    csrf_token=csrf_token,
                    expires_at=datetime.now(UTC) + timedelta(seconds=ttl_seconds),
                )
            )
            await session.commit()

    async def session_user(self, token_hash: bytes) -> tuple[UserRecord, str] | None:
        """The user of a live session and its CSRF token."""
        async with self._sessions() as session:
            row = (
                await session.execute(
                    select(User, Tenant.slug, Tenant.status, Session.csrf_token)
                    .join(Session, Session.user_id == User.id)
                    .outerjoin(Tenant, Tenant.id == User.tenant_id)
                    .where(Session.token_hash == token_hash, Session.expires_at > func.now())
                )
            ).first()
        if row is None:
            return None
        user, slug, status, csrf = row
        return UserRecord(
            user.id, user.username, user.password_hash, cast(Role, user.role), user.tenant_id, slug, status
        ), csrf

    async def delete_session(self, token_hash: bytes) -> bool:
        """Whether a session had that token."""
        async with self._sessions() as session:
            result = await session.execute(delete(Session).where(Session.token_hash == token_hash))
            await session.commit()
            return bool(getattr(result, "rowcount", 0))

    async def delete_user_sessions(self, user_id: uuid.UUID) -> None:
        async with self._sessions() as session:
            await session.execute(delete(Session).where(Session.user_id == user_id))
            await session.commit()


# The columns below hold only the values their CHECK constraints allow (`mq.db.models`): the records say which.


async def _is_last_admin(session: AsyncSession, tenant_id: int, user_id: uuid.UUID) -> bool:
    """Whether the user is its tenant's only tenant_admin. Locks the tenant's row first, so that two admins demoting
    or deleting each other at once are serialized: the second sees the first's change and is refused (under READ
    COMMITTED each would otherwise still count the other and both would go)."""
    await session.execute(select(Tenant.id).where(Tenant.id == tenant_id).with_for_update())
    admins = (
        await session.execute(select(User.id).where(User.tenant_id == tenant_id, User.role == "tenant_admin"))
    ).scalars()
    return list(admins) == [user_id]


def _tenant_record(tenant: Tenant) -> TenantRecord:
    status = cast(TenantStatus, tenant.status)
    return TenantRecord(tenant.id, tenant.slug, tenant.name, status, dict(tenant.quotas), tenant.created_at)


def _grant_record(grant: Grant) -> GrantRecord:
    return GrantRecord(
        grant.id, cast(Action, grant.action), grant.topic_pattern, grant.created_at, grant.consumer_group
    )


def _users_with_tenant() -> Any:
    return select(User, Tenant.slug).outerjoin(Tenant, Tenant.id == User.tenant_id)


def _user_view(user: User, tenant_slug: str | None) -> UserRow:
    return UserRow(user.id, user.username, cast(Role, user.role), tenant_slug, user.created_at, user.updated_at)
