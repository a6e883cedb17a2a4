"""Tenants and users: control-plane rows, read and written with the SQLAlchemy ORM."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from mq.db.models import Tenant, User
from mq.ids import uuid7


@dataclass(frozen=True, slots=True)
class UserRecord:
    id: uuid.UUID
    username: str
    password_hash: str
    role: str
    tenant_id: int | None
    tenant_slug: str | None
    tenant_status: str | None


@dataclass(frozen=True, slots=True)
class TenantRecord:
    id: int
    slug: str
    name: str
    status: str


class TenancyRepository:
    def __init__(self, engine: AsyncEngine) -> None:
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)

    async def user_by_username(self, username: str) -> UserRecord | None:
        async with self._sessions() as session:
            row = (
                await session.execute(
                    select(User, Tenant.slug, Tenant.status)
                    .outerjoin(Tenant, Tenant.id == User.tenant_id)
                    .where(User.username == username)
                )
            ).first()
        if row is None:
            return None
        user, slug, status = row
        return UserRecord(user.id, user.username, user.password_hash, user.role, user.tenant_id, slug, status)

    async def tenant_by_slug(self, slug: str) -> TenantRecord | None:
        async with self._sessions() as session:
            tenant = (await session.execute(select(Tenant).where(Tenant.slug == slug))).scalar_one_or_none()
        return None if tenant is None else TenantRecord(tenant.id, tenant.slug, tenant.name, tenant.status)

    async def create_tenant(self, slug: str, name: str) -> TenantRecord | None:
        """The new tenant, or None when the slug is taken."""
        async with self._sessions() as session:
            tenant = Tenant(slug=slug, name=name)
            session.add(tenant)
            try:
                await session.commit()
            except IntegrityError:
                return None
        return TenantRecord(tenant.id, tenant.slug, tenant.name, "active")

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
