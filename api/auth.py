"""HTTP Basic authentication for `/api/**`, and the tenant a request addresses."""

from __future__ import annotations

import binascii
from base64 import b64decode
from typing import Any

from litestar.connection import ASGIConnection
from litestar.middleware import AbstractAuthenticationMiddleware, AuthenticationResult

from mq import errors
from mq.runtime import Runtime
from mq.tenancy.auth import Principal

#: Routes that answer without credentials (besides everything outside /api).
PUBLIC_PATHS = ["^/api/version$", "^/api/auth/status$", "^/healthz$", "^/readyz$", "^/metrics$", "^/schema"]


class BasicAuthMiddleware(AbstractAuthenticationMiddleware):
    async def authenticate_request(self, connection: ASGIConnection[Any, Any, Any, Any]) -> AuthenticationResult:
        runtime: Runtime = connection.app.state.runtime
        username, password = _basic_credentials(connection.headers.get("authorization"))
        principal = await runtime.auth.authenticate(username, password)
        slug = connection.headers.get("x-tenant")
        if slug:
            principal = await runtime.auth.address_tenant(principal, slug)
        return AuthenticationResult(user=principal, auth=None)


def _basic_credentials(header: str | None) -> tuple[str, str]:
    if not header:
        raise errors.Unauthorized("credentials required (HTTP Basic)")
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic" or not encoded:
        raise errors.Unauthorized("use HTTP Basic authentication")
    try:
        decoded = b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise errors.Unauthorized("malformed Basic credentials") from None
    username, sep, password = decoded.partition(":")
    if not sep:
        raise errors.Unauthorized("malformed Basic credentials")
    return username, password


def tenant_for(principal: Principal, *, admin_only: bool = False) -> int:
    """The tenant id a data route works on, after the role check. Members need grants (not yet: 403)."""
    if principal.tenant_id is None:
        raise errors.InvalidRequest("a platform admin must name a tenant with the X-Tenant header")
    if principal.role == "member":
        raise errors.Forbidden("your role has no grant for this")
    if admin_only and principal.role not in ("tenant_admin", "platform_admin"):
        raise errors.Forbidden("tenant admins only")
    return principal.tenant_id


def require_platform_admin(principal: Principal) -> None:
    if not principal.is_platform_admin:
        raise errors.Forbidden("platform admins only")
