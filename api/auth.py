"""Authentication for `/api/**` (HTTP Basic, bearer tokens, the console's session), and the tenant a request
addresses."""

from __future__ import annotations

import binascii
import hmac
from base64 import b64decode

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

from mq import errors
from mq.runtime import Runtime

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
