"""The admin UI's login: a server-side session behind an HttpOnly cookie, and who the caller is."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, delete, get, post, put
from litestar.datastructures import Cookie
from litestar.status_codes import HTTP_204_NO_CONTENT

from api.auth import CSRF_COOKIE, SESSION_COOKIE
from api.body import strict_body
from api.schemas import MeView, MyGrantView, PasswordChangeBody, TokenLoginBody, TokenView
from mq import errors
from mq.runtime import Runtime
from mq.tenancy.auth import Principal

AnyRequest = Request[Principal, Any, Any]


def _cookies(request: AnyRequest, session: str, csrf: str, max_age: int) -> list[Cookie]:
    """The session cookie (HttpOnly) and the CSRF cookie the UI reads; Secure when served over TLS."""
    secure = request.scope.get("scheme") == "https"
    common: dict[str, Any] = {"path": "/", "samesite": "strict", "secure": secure, "max_age": max_age}
    return [
        Cookie(key=SESSION_COOKIE, value=session, httponly=True, **common),
        Cookie(key=CSRF_COOKIE, value=csrf, httponly=False, **common),
    ]


@post(
    "/api/auth/session",
    status_code=HTTP_204_NO_CONTENT,
    summary="Log in (HTTP Basic) and get a session cookie",
    operation_id="login",
    tags=["session"],
)
async def login(request: AnyRequest) -> Response[None]:
    # Only a password starts a session: a bearer token (15 minutes, a chain bounded by token_max_age_seconds) or a
    # session cookie must not be turned into a 12-hour session, nor that into new token chains.
    if request.headers.get("authorization", "")[:6].lower() != "basic ":
        raise errors.Unauthorized("log in with HTTP Basic credentials")
    runtime: Runtime = request.app.state.runtime
    ttl = runtime.settings.session_ttl_seconds
    token, csrf = await runtime.auth.start_session(request.user, ttl)
    await runtime.commands.account.logged_in(request.user)
    return Response(None, status_code=HTTP_204_NO_CONTENT, cookies=_cookies(request, token, csrf, ttl))


@post(
    "/api/auth/login",
    status_code=200,
    summary="Log in for a bearer token (queue-ti's login)",
    description="The token is a signed JWT valid for `token_ttl_seconds` (15 minutes by default): send it as "
    "`Authorization: Bearer <token>` on any /api route and in the `authorization` metadata of gRPC calls. Failed "
    "logins count toward the same limits as Basic credentials (429 past them).",
    operation_id="tokenLogin",
    tags=["session"],
    security=[],
    **strict_body(TokenLoginBody),
)
async def token_login(request: AnyRequest, data: TokenLoginBody) -> TokenView:
    runtime: Runtime = request.app.state.runtime
    address = request.client.host if request.client else None
    try:
        token = await runtime.auth.login(data.username, data.password, address)
    except errors.Unauthorized:
        await runtime.audit.login_refused(data.username, "token", address)
        raise
    return TokenView(token=token)


@post(
    "/api/auth/refresh",
    status_code=200,
    summary="A new bearer token for the caller, read from the user as stored now",
    description=(
        "A deleted user, a suspended tenant or a changed password ends the token instead (401 or 403). A refreshed "
        "token continues its chain: refreshing is refused (401) once token_max_age_seconds (12 hours) have passed "
        "since the password login that began it."
    ),
    operation_id="tokenRefresh",
    tags=["session"],
)
async def token_refresh(request: AnyRequest) -> TokenView:
    runtime: Runtime = request.app.state.runtime
    authorization = request.headers.get("authorization", "")
    token = authorization[7:].strip() if authorization[:7].lower() == "bearer " else None
    return TokenView(token=await runtime.auth.refresh(request.user.username, request.user.user_id, token))


@delete(
    "/api/auth/session",
    status_code=HTTP_204_NO_CONTENT,
    summary="Log out: end the session everywhere",
    operation_id="logout",
    tags=["session"],
)
async def logout(request: AnyRequest) -> Response[None]:
    runtime: Runtime = request.app.state.runtime
    token = request.cookies.get(SESSION_COOKIE)
    # Only a session that really ended is announced: any caller could otherwise flush every instance's caches.
    if token and await runtime.auth.end_session(token):
        await runtime.invalidation.changed()  # other instances drop the session from their caches too
    return Response(None, status_code=HTTP_204_NO_CONTENT, cookies=_cookies(request, "", "", 0))


@get("/api/auth/me", summary="Who is calling", operation_id="getMe", tags=["session"])
async def me(request: AnyRequest) -> MeView:
    principal = request.user
    return MeView(
        username=principal.username,
        role=principal.role,
        tenant=principal.tenant_slug,
        grants=[MyGrantView(action=a, topic_pattern=p, consumer_group=g) for a, p, g in principal.grants],  # type: ignore[arg-type]
    )


@put(
    "/api/auth/password",
    status_code=HTTP_204_NO_CONTENT,
    summary="Change your own password (ends your sessions and cached credentials everywhere)",
    operation_id="changePassword",
    tags=["session"],
    **strict_body(PasswordChangeBody),
)
async def change_password(request: AnyRequest, data: PasswordChangeBody) -> Response[None]:
    runtime: Runtime = request.app.state.runtime
    await runtime.commands.account.change_password(request.user, data.current_password, data.new_password)
    return Response(None, status_code=HTTP_204_NO_CONTENT, cookies=_cookies(request, "", "", 0))
