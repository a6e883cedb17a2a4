"""The API with the authentication check replaced by a fixed caller, for `make bench`'s auth workloads only.

Every `/api` request is served as a tenant admin of the benchmark's tenant, whatever its Authorization header
says: the same requests as the real server's, minus the credential check. Never run this anywhere else.
"""

from __future__ import annotations

import uuid

import uvloop
from litestar.types import ASGIApp, Receive, Scope, Send

from api.app import create_app
from api.server import serve
from mq.settings import get_settings
from mq.tenancy.auth import Principal

TENANT = "bench"


class FixedPrincipal:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.principal: Principal | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path", "").startswith("/api/"):
            if self.principal is None:
                runtime = scope["app"].state.runtime
                tenant = await runtime.tenancy.tenant_by_slug(TENANT)
                self.principal = Principal(str(uuid.uuid4()), "bench", "tenant_admin", tenant.id, tenant.slug)
            scope["user"] = self.principal
        await self.app(scope, receive, send)


def main() -> None:
    settings = get_settings()
    uvloop.run(serve(settings, create_app(settings, auth_middleware=FixedPrincipal)))


if __name__ == "__main__":
    main()
