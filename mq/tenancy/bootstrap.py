"""First start: the platform admin from settings and the first tenant."""

from __future__ import annotations

import logging

from mq.settings import Settings
from mq.tenancy.passwords import hash_password_async
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
