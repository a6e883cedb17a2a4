"""Authentication for `/api/**` (HTTP Basic, bearer tokens, the console's session), and the tenant a request
addresses."""

from __future__ import annotations

import binascii
import hmac
from base64 import b64decode
from collections.abc import Sequence

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

from mq import errors
from mq.queue.service import QueueService
from mq.runtime import Runtime
from mq.tenancy import grants
from mq.tenancy.auth import Principal

#: Paths under /api that answer without credentials; everything outside /api does too.
PUBLIC_API_PATHS = frozenset({"/api/version", "/api/auth/status", "/api/auth/login"})
#: The admin UI's session cookie (HttpOnly) and the CSRF cookie its pages read and echo in `CSRF_HEADER`.
SESSION_COOKIE = "skiplock_session"
CSRF_COOKIE = "skiplock_csrf"
CSRF_HEADER = b"x-csrf-token"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: The request headers this middleware reads, picked from the raw list in one pass.
READ_HEADERS = frozenset(
    {
        b"authorization",
        b"x-tenant",
        b"cookie",
        CSRF_HEADER,
        b"content-type",
        b"content-length",
        b"transfer-encoding",
        b"origin",
        b"sec-fetch-site",
        b"host",
    }
)


class AuthMiddleware:
    """Puts the caller's `Principal` in `scope["user"]` (read as `request.user`) for every `/api` request.

    HTTP Basic credentials or a bearer token (`Authorization: Bearer`, from `POST /api/auth/login`) first; without
    them, the admin UI's session cookie, whose unsafe requests must carry
    the session's CSRF token in `X-CSRF-Token` (a cross-site form cannot read it). A plain ASGI middleware rather
    than Litestar's authentication base class, which builds a connection object and parses every header on each
    request: here the headers needed are picked from the raw list, and a credential seen before costs one HMAC and
    a dict lookup (see `Authenticator`).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == ScopeType.HTTP and path.startswith("/api/"):
            headers = {name: value for name, value in scope["headers"] if name in READ_HEADERS}  # one pass
            unsafe = scope["method"] not in _SAFE_METHODS
            if unsafe:
                refuse_cross_site(headers)
            if path not in PUBLIC_API_PATHS:
                try:
                    await self.authenticate(scope, headers, unsafe)
                except errors.Unauthorized:
                    if path == _LOGIN_PATH and unsafe:
                        await _audit_refused_login(scope, headers)
                    raise
        await self.app(scope, receive, send)

    @staticmethod
    async def authenticate(scope: Scope, headers: dict[bytes, bytes], unsafe: bool) -> None:
        authorization, tenant = headers.get(b"authorization"), headers.get(b"x-tenant")
        cookie, csrf = headers.get(b"cookie"), headers.get(CSRF_HEADER)
        runtime: Runtime = scope["app"].state.runtime
        session = _cookie(cookie, SESSION_COOKIE) if authorization is None and cookie else None
        if session is not None:
            principal, expected = await runtime.auth.authenticate_session(session)
            if unsafe and not (csrf and hmac.compare_digest(csrf, expected.encode())):
                raise errors.Forbidden("missing or wrong X-CSRF-Token for a session request")
        elif authorization is not None and authorization[:7].lower() == b"bearer ":
            principal = await runtime.auth.authenticate_bearer(authorization[7:].strip().decode("latin-1"))
        else:
            client = scope.get("client")
            address = client[0] if client else None
            principal = await runtime.auth.authenticate_header(authorization, _basic_credentials, address)
        if tenant:
            principal = await runtime.auth.address_tenant(principal, tenant.decode("latin-1"))
        if principal.tenant_id is not None:  # metrics label tenants by slug
            runtime.metrics.tenant_names[principal.tenant_id] = principal.tenant_slug or ""
        scope["user"] = principal


#: The console's login: a refusal there is recorded in the audit trail (other requests' refusals are not: a client
#: with a wrong password would write an entry per request).
_LOGIN_PATH = "/api/auth/session"


async def _audit_refused_login(scope: Scope, headers: dict[bytes, bytes]) -> None:
    """A platform-wide entry with the username tried (never the password) and the address it came from."""
    try:
        username, _ = _basic_credentials(headers.get(b"authorization"))
    except errors.Unauthorized:
        username = ""
    client = scope.get("client")
    runtime: Runtime = scope["app"].state.runtime
    await runtime.audit.login_refused(username, "session", client[0] if client else None)


def refuse_cross_site(headers: dict[bytes, bytes]) -> None:
    """Checks on every state-changing /api request, before credentials are looked at (docs/security.md, "CSRF").

    A browser that remembers Basic credentials (or holds a session cookie) sends them with a cross-site request
    too, and a cross-site `fetch` or form may send a body without a CORS preflight only as `text/plain`, a form
    encoding or multipart. So a body must be `application/json` (415 otherwise), which a cross-site page cannot
    send without a preflight this server never grants; and a request a browser marks as coming from another site
    (`Sec-Fetch-Site: cross-site` or `same-site`, or an `Origin` that is not this host) is refused outright (403).
    Clients that are not browsers send neither header and are not affected. `headers`: the request's, by name
    (`READ_HEADERS`)."""
    content_type, origin, fetch_site, host = (
        headers.get(b"content-type"),
        headers.get(b"origin"),
        headers.get(b"sec-fetch-site"),
        headers.get(b"host"),
    )
    length = headers.get(b"content-length")
    has_body = b"transfer-encoding" in headers or (length is not None and length.strip() not in (b"", b"0"))
    if fetch_site in (b"cross-site", b"same-site"):
        raise errors.Forbidden("cross-site requests may not change anything")
    if origin is not None and (host is None or origin.partition(b"://")[2] != host):
        raise errors.Forbidden("cross-origin requests may not change anything")
    if has_body and (content_type is None or content_type.partition(b";")[0].strip().lower() != b"application/json"):
        raise errors.UnsupportedMediaType("a request body must be JSON (Content-Type: application/json)")


def _cookie(header: bytes, name: str) -> str | None:
    """One cookie's value from a Cookie header."""
    for part in header.decode("latin-1").split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key == name and value:
            return value
    return None


def _basic_credentials(header: bytes | None) -> tuple[str, str]:

    if not header:
        raise errors.Unauthorized("credentials required (HTTP Basic)")
    scheme, _, encoded = header.partition(b" ")
    if scheme.lower() != b"basic" or not encoded:
        raise errors.Unauthorized("use HTTP Basic authentication")
    try:
        decoded = b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise errors.Unauthorized("malformed Basic credentials") from None
    username, sep, password = decoded.partition(":")
    if not sep or "\x00" in decoded:  # no user has a NUL in its name or password: Postgres text cannot hold one
        raise errors.Unauthorized("malformed Basic credentials")
    return username, password


def tenant_for(
    principal: Principal, *, admin_only: bool = False, action: str | None = None, topic: str | None = None
) -> int:
    """The tenant id a route works on, after the role check. Admin routes refuse members; a member needs a grant
    for `action` (on `topic` when the route names one; routes that find the topic later call `require_grant`)."""
    if principal.tenant_id is None:
        raise errors.InvalidRequest("a platform admin must name a tenant with the X-Tenant header")
    if principal.is_member:
        if admin_only or action is None:
            raise errors.Forbidden("tenant admins only")
        if topic is not None:
            require_grant(principal, action, topic)
    elif admin_only and principal.role not in ("tenant_admin", "platform_admin"):
        raise errors.Forbidden("tenant admins only")
    return principal.tenant_id


def require_grant(principal: Principal, action: str, topic: str) -> None:
    """Members only do what their grants allow; the admin roles need none."""
    if principal.is_member and not grants.allowed(principal.grants, action, topic):
        raise errors.Forbidden(f"no {action} grant for topic {topic!r}")


def require_consumer_group(principal: Principal, topic: str, consumer_group: str | None) -> None:
    """A member whose consume grants on `topic` all pin consumer groups consumes it only as one of them."""
    if not principal.is_member:
        return
    pinned = grants.consumer_groups(principal.grants, topic)
    if pinned is not None and consumer_group not in pinned:
        names = ", ".join(sorted(pinned))
        raise errors.Forbidden(f"your consume grant on topic {topic!r} is for consumer group {names} only")


async def tenant_for_messages(
    principal: Principal,
    queue: QueueService,
    action: str,
    message_ids: Sequence[str],
    groups: Sequence[str | None] | None = None,
) -> int:
    """`tenant_for` for a request that names messages by id (REST and gRPC alike): a member needs `action` on each
    message's topic and, to consume, a grant for the consumer group it names (`groups`, one per message: ack,
    nack, visibility) or, naming none (requeue, retry), for the message's own (a dead letter's). Messages not
    found are left to the caller (which answers not found)."""
    tenant = tenant_for(principal, action=action)
    if principal.is_member:
        for i, found in enumerate(await queue.topics_of(tenant, message_ids)):
            if found is None:
                continue
            topic, own_group = found
            require_grant(principal, action, topic)
            if action == "consume":
                require_consumer_group(principal, topic, groups[i] if groups is not None else own_group)
    return tenant


def pinned_groups(principal: Principal, topic: str) -> frozenset[str] | None:
    """The consumer groups a member consumes `topic` as, when its consume grants pin them; None: any."""
    if not principal.is_member:
        return None
    return grants.consumer_groups(principal.grants, topic)


def require_platform_admin(principal: Principal) -> None:
    if not principal.is_platform_admin:
        raise errors.Forbidden("platform admins only")
