"""The API with the authentication check replaced by a fixed caller, for `make bench`'s auth workloads only.

Every `/api` request is served as a tenant admin of the benchmark's tenant, whatever its Authorization header
says: the same requests as the real server's, minus the credential check. Never run this anywhere else.
"""

from __future__ import annotations

import base64
import uuid

import uvloop
from litestar.types import ASGIApp, Receive, Scope, Send

from api.app import create_app
from api.hot_routes import HotRoutes
from api.server import serve
from mq.settings import get_settings
from mq.tenancy.auth import Principal

TENANT = "bench"


_principals: dict[bytes, Principal] = {}


async def fixed_principal(scope: Scope, headers: dict[bytes, bytes] | None = None, unsafe: bool = False) -> None:
    """What the real server's authentication does for a valid caller, minus the check: a tenant admin `Principal`
    named as the Basic credentials say (unverified), so that requests carry the same consumer names as the real
    server's (a dequeue's lease names its consumer, and only one consumer's dequeues share a statement)."""
    if headers is None:
        headers = {name: value for name, value in scope["headers"] if name == b"authorization"}
    authorization = headers.get(b"authorization") or b""
    principal = _principals.get(authorization)
    if principal is None:
        runtime = scope["app"].state.runtime
        tenant = await runtime.tenancy.tenant_by_slug(TENANT)
        encoded = authorization.partition(b" ")[2]
        username = base64.b64decode(encoded).decode().partition(":")[0] if encoded else "bench"
        principal = _principals[authorization] = Principal(
            str(uuid.uuid4()), username, "tenant_admin", tenant.id, tenant.slug
        )
    scope["user"] = principal


class FixedPrincipal:
    #: the hot path's check (`api.hot_routes.HotRoutes`)
    authenticate = staticmethod(fixed_principal)

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if str(scope["type"]) == "http" and scope.get("path", "").startswith("/api/"):
            await fixed_principal(scope)
        await self.app(scope, receive, send)


def main() -> None:
    """The server as `skiplock serve` runs it (its hot routes included), with `fixed_principal` for the check."""
    settings = get_settings()
    app = create_app(settings, auth_middleware=FixedPrincipal)
    uvloop.run(serve(settings, HotRoutes(app, settings, auth=FixedPrincipal)))


if __name__ == "__main__":
    main()
