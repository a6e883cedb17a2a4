"""Who is calling: HTTP Basic credentials checked against the users table, verified hashes cached in memory.

The cache is keyed by a MAC of the credential (keyed BLAKE2b) under a per-process random key, so it never holds a
password or anything that could be tested offline, and a lookup leaks no timing about stored secrets. An entry is
trusted for `auth_cache_ttl_seconds`, or until a change anywhere (password, role, grant, tenant status) makes every
entry stale (`forget`). A stale entry is renewed by reading the user again: if the stored password hash is still
the one the credential was verified against, the password is still right and only the role, grants and tenant
status are taken anew; otherwise (the password changed) the credential is verified from scratch. So argon2 runs
once per credential and password, not once per cache period: at 176 ms of CPU per verification on a 2-core
machine, re-verifying 8 busy credentials every 30 s cost `make bench`'s auth workloads 10% more server CPU per
request.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from mq import errors
from mq.names import is_slug
from mq.tenancy.grants import GrantTuple, Role
from mq.tenancy.limits import LoginLimiter
from mq.tenancy.passwords import PasswordChecks
from mq.tenancy.repository import TenancyRepository, UserRecord
from mq.tenancy.tokens import TokenClaims, TokenSigner
from mq.ttl_cache import TtlCache


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller, and the tenant its request addresses (None for a platform admin without
    X-Tenant)."""

    user_id: str
    username: str
    role: Role
    tenant_id: int | None
    tenant_slug: str | None
    #: A member's grants, (action, topic_pattern, consumer_group); empty for the admin roles, which need none.
    grants: tuple[GrantTuple, ...] = ()

    @property
    def is_platform_admin(self) -> bool:
        return self.role == "platform_admin"

    @property
    def is_member(self) -> bool:
        return self.role == "member"


class Authenticator:
    def __init__(
        self,
        repository: TenancyRepository,
        ttl_seconds: float,
        max_entries: int,
        limiter: LoginLimiter | None = None,
        passwords: PasswordChecks | None = None,
        tokens: Callable[[], TokenSigner] | None = None,
    ) -> None:
        self._repository = repository
        self._make_tokens = tokens
        self._tokens: TokenSigner | None = None
        self._limiter = limiter or LoginLimiter(None, 1, 1, 1)
        self.passwords = passwords or PasswordChecks()
        self._key = secrets.token_bytes(32)
        # MAC of a credential -> (principal, tenant status, the password hash it was verified against: None for
        # sessions). `forget` makes every entry stale; a stale one is renewed (see `_check`).
        self._verified: TtlCache[bytes, tuple[Principal, str | None, str | None]] = TtlCache(ttl_seconds, max_entries)
        self._checking: dict[bytes, asyncio.Lock] = {}  # credentials being checked now
        self._tenants: TtlCache[str, tuple[int, str]] = TtlCache(ttl_seconds, max_entries)  # slug -> (id, slug)
        self._csrf: dict[bytes, str] = {}  # session digest -> its CSRF token
        # bearer tokens whose signature was verified -> (expires at, their claims); what they prove is checked per
        # use (`authenticate_bearer`)
        self._read_tokens: TtlCache[str, tuple[float, TokenClaims]] = TtlCache(ttl_seconds, max_entries)

    async def authenticate(self, username: str, password: str) -> Principal:
        """The caller, or Unauthorized (the same error for an unknown user and a wrong password) or Forbidden
        (suspended tenant)."""
        credential = f"{username}\x00{password}".encode("utf-8", "surrogatepass")
        return await self.authenticate_header(credential, lambda _: (username, password))

    async def authenticate_header(
        self, header: bytes | None, parse: Callable[[bytes | None], tuple[str, str]], address: str | None = None
    ) -> Principal:
        """As `authenticate`, for a raw credential header: a header verified before is recognised by its MAC
        without being decoded; `parse` turns it into (username, password) only on a miss, raising Unauthorized
        when it is missing or malformed. Failed checks count against `address` and the username (429 past the
        limit, see `LoginLimiter`)."""
        if header is None:
            parse(header)  # raises: no credentials
        digest = self._mac(header or b"")
        hit = self._cached(digest)
        if hit is None:
            # One check per credential at a time: a burst of requests with a credential not yet cached (a client
            # opening its connections) waits for the first one's argon2 instead of running one each.
            lock = self._checking.setdefault(digest, asyncio.Lock())
            try:
                async with lock:
                    hit = self._cached(digest) or await self._check(digest, header, parse, address)
            finally:
                if not lock.locked():
                    self._checking.pop(digest, None)
        principal, tenant_status = hit
        if tenant_status == "suspended":
            raise errors.Forbidden("this tenant is suspended")
        return principal

    async def _check(
        self, digest: bytes, header: bytes | None, parse: Callable[[bytes | None], tuple[str, str]], address: str | None
    ) -> tuple[Principal, str | None]:
        """Check a credential that missed the cache, and cache it. A credential verified before (a stale entry) is
        renewed without argon2 and without the login limiter while its password is unchanged: someone else's
        failed logins never lock out a client that knows its password (docs/security.md)."""
        username, password = parse(header)
        stale = self._verified.stale(digest)
        verified_hash = stale[2] if stale is not None else None
        if verified_hash is None:
            await self._limiter.check(address, username)
        user = await self._repository.user_by_username(username)
        still_valid = (
            user is not None
            and verified_hash is not None
            and hmac.compare_digest(user.password_hash.encode(), verified_hash.encode())
        )
        if not still_valid:
            if verified_hash is not None:  # the password changed since: a new check, limited as any other
                await self._limiter.check(address, username)
            if not await self.passwords.verify(user.password_hash if user else None, password) or user is None:
                await self._limiter.failed(address, username)
                raise errors.Unauthorized("invalid username or password")
        assert user is not None
        principal = await self._principal(user)
        self._remember(digest, principal, user.tenant_status, user.password_hash)
        return principal, user.tenant_status

    @property
    def tokens(self) -> TokenSigner:
        """The bearer tokens' signer, made on first use (its key may be a file in the data folder)."""
        if self._tokens is None:
            if self._make_tokens is None:
                raise errors.Unauthorized("bearer tokens are not enabled")
            self._tokens = self._make_tokens()
        return self._tokens

    async def login(self, username: str, password: str, address: str | None) -> str:
        """A bearer token for a user's credentials (`POST /api/auth/login`), checked and limited as Basic
        credentials are."""
        credential = f"{username}\x00{password}".encode("utf-8", "surrogatepass")
        await self.authenticate_header(credential, lambda _: (username, password), address)
        return await self.refresh(username)

    async def refresh(self, username: str, user_id: str | None = None, token: str | None = None) -> str:
        """A new token for the user as stored now (`POST /api/auth/refresh`: `user_id` the caller's, so that a
        user deleted and made again under the same name is not the same user). `token`: the bearer token the
        caller refreshes; the new one continues its chain, which ends `token_max_age_seconds` after the password
        login that began it (401 after). Without one (a login, Basic credentials) a chain begins."""
        began_at = None
        if token is not None:
            claims = self.tokens.read(token)
            if not self.tokens.renewable(claims):
                raise errors.Unauthorized("the token's login is too old to refresh: log in again")
            began_at = claims.began_at
        user = await self._repository.user_by_username(username)
        if user is None or (user_id is not None and str(user.id) != user_id):
            raise errors.Unauthorized("the user no longer exists")
        if user.tenant_status == "suspended":
            raise errors.Forbidden("this tenant is suspended")
        return self.tokens.issue(user, began_at)

    async def authenticate_bearer(self, token: str) -> Principal:
        """The caller of a bearer token: its signature, issuer and expiry checked on every request (PyJWT), its
        user and credentials version against the users table, cached as any credential (`forget` makes the cache
        look again: a changed password or role, or a deleted user, ends the token)."""
        read = self._read_tokens.get(token)  # a token seen before is not decoded again; its expiry is checked
        if read is None or read[0] <= time.time():
            claims = self.tokens.read(token)
            read = self._read_tokens.put(token, (claims.expires_at, claims))
        claims = read[1]
        digest = self._mac(f"bearer\x00{claims.user_id}\x00{claims.credentials_version}".encode())
        hit = self._cached(digest)
        if hit is None:
            user = await self._repository.user_by_username(claims.username)
            if user is None or not self.tokens.matches(claims, user):
                raise errors.Unauthorized("invalid or expired bearer token")
            principal = await self._principal(user)
            self._remember(digest, principal, user.tenant_status, None)
            hit = (principal, user.tenant_status)
        if hit[1] == "suspended":
            raise errors.Forbidden("this tenant is suspended")
        return hit[0]

    async def authenticate_session(self, token: str) -> tuple[Principal, str]:
        """The caller of an admin UI session cookie and the session's CSRF token."""
        digest = self._mac(b"session\x00" + token.encode("utf-8", "surrogatepass"))
        hit = self._cached(digest)
        if hit is None:
            found = await self._repository.session_user(_token_hash(token))
            if found is None:
                raise errors.Unauthorized("the session has ended; log in again")
            user, csrf = found
            principal = await self._principal(user)
            self._remember(digest, principal, user.tenant_status, None)
            self._csrf[digest] = csrf  # after _remember, which may empty both caches when full
            hit = (principal, user.tenant_status)
        if hit[1] == "suspended":
            raise errors.Forbidden("this tenant is suspended")
        return hit[0], self._csrf.get(digest, "")

    async def start_session(self, principal: Principal, ttl_seconds: int) -> tuple[str, str]:
        """A new session for an authenticated caller: (cookie token, CSRF token). Only the token's hash is kept."""
        token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(24)
        await self._repository.create_session(_token_hash(token), uuid.UUID(principal.user_id), csrf, ttl_seconds)
        return token, csrf

    async def end_session(self, token: str) -> bool:
        """End a session; False when the token named none (nothing to forget anywhere)."""
        if not await self._repository.delete_session(_token_hash(token)):
            return False
        self.forget()
        return True

    async def _principal(self, user: UserRecord) -> Principal:
        grants = await self._repository.grants_of(user.id) if user.role == "member" else ()
        return Principal(str(user.id), user.username, user.role, user.tenant_id, user.tenant_slug, grants)

    def _mac(self, credential: bytes) -> bytes:
        """Keyed BLAKE2b, a MAC by design: 0.9 µs per credential where HMAC-SHA256 took 2.6 (OpenSSL's per-call
        setup), on every authenticated request."""
        return hashlib.blake2b(credential, key=self._key, digest_size=32).digest()

    def _cached(self, digest: bytes) -> tuple[Principal, str | None] | None:
        """A fresh entry's (principal, tenant status); None when missing or stale."""
        hit = self._verified.get(digest)
        return (hit[0], hit[1]) if hit is not None else None

    def _remember(
        self, digest: bytes, principal: Principal, tenant_status: str | None, password_hash: str | None
    ) -> None:
        if self._verified.full():
            self._csrf.clear()
        self._verified.put(digest, (principal, tenant_status, password_hash))

    async def address_tenant(self, principal: Principal, slug: str) -> Principal:
        """A platform admin's request for the tenant named in X-Tenant."""
        if not principal.is_platform_admin:
            if slug != principal.tenant_slug:
                raise errors.Forbidden("X-Tenant is for platform admins")
            return principal
        hit = self._tenants.get(slug)
        if hit is None:
            tenant = await self._repository.tenant_by_slug(slug) if is_slug(slug) else None
            if tenant is None:
                raise errors.NotFound(f"no tenant {slug!r}")
            hit = self._tenants.put(slug, (tenant.id, tenant.slug))
        return Principal(principal.user_id, principal.username, principal.role, hit[0], hit[1])

    def forget(self) -> None:
        """Make every cached credential stale and drop cached tenants (a password, role, grant or tenant changed):
        each is checked against the database again on its next use, argon2 only if its password changed."""
        self._verified.expire_all()
        self._tenants.clear()


def _token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
