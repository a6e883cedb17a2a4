"""First start: the platform admin from settings and the first tenant."""

from __future__ import annotations

import logging

from mq.settings import DEFAULT_ADMIN_PASSWORD, Settings
from mq.tenancy.passwords import hash_password_async, verify_password_async
from mq.tenancy.repository import TenancyRepository

log = logging.getLogger(__name__)


async def bootstrap(repository: TenancyRepository, settings: Settings) -> None:
    """Create what is missing; never change an existing user's password (settings only seed the first one)."""
    if await repository.user_by_username(settings.admin_username) is None:
        password_hash = await hash_password_async(settings.admin_password.get_secret_value())
        if await repository.create_user(settings.admin_username, password_hash, "platform_admin", None):
            log.info("created platform admin %r", settings.admin_username)
    if (
        settings.default_tenant
        and await repository.tenant_by_slug(settings.default_tenant) is None
        and await repository.create_tenant(settings.default_tenant, settings.default_tenant.title())
    ):
        log.info("created tenant %r", settings.default_tenant)


async def refuse_default_admin_password(repository: TenancyRepository, settings: Settings) -> None:
    """Refuse to serve beyond loopback while a platform admin still has the default password (docs/security.md):
    anyone who reaches the port could administer every tenant. `allow_default_admin_password` lifts it."""
    if settings.on_loopback or settings.allow_default_admin_password:
        return
    stuck = [
        username
        for username, password_hash in await repository.platform_admin_hashes()
        if await verify_password_async(password_hash, DEFAULT_ADMIN_PASSWORD)
    ]
    if stuck:
        raise RuntimeError(
            f"refusing to serve on {settings.host}: platform admin(s) {', '.join(stuck)} still have the default "
            "password. Set SKIPLOCK_ADMIN_PASSWORD before the first start, or change it with "
            "PUT /api/auth/password from a loopback-bound server; SKIPLOCK_ALLOW_DEFAULT_ADMIN_PASSWORD=true "
            "serves anyway (throwaway local setups only)."
        )
