"""The client against a real server: the suite's session server, a fresh tenant per test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from skiplock_client import AsyncClient

from tests.support.servers import ADMIN, Server
from tests.support.tenants import Tenant


@pytest.fixture
async def sk(server: Server, tenant: Tenant) -> AsyncIterator[AsyncClient]:
    """The platform admin addressing this test's tenant, through the client."""
    async with AsyncClient(server.base_url, auth=ADMIN, tenant=tenant.slug) as client:
        yield client
