"""Bearer tokens (queue-ti's login, contract "queue-ti wire compatibility"): short-lived JWTs signed with HS256.

PyJWT signs and checks them; OWASP's advice for JWTs holds: one algorithm (HS256) accepted, so `none` and an
algorithm switch are refused; `exp`, `iat`, `sub` and the credentials version required; the issuer checked; the
key never logged nor sent. A token names its user (`sub`, the username; `uid`, the user's id) and carries a
credentials version (`cv`): an HMAC, under the signing key, of the user's id, password hash, role and tenant. A
password change, a role change or a deletion changes or removes what the version is checked against, which ends
every token issued before, on every instance, within the credential cache's bound (`Authenticator`); a suspended
tenant is refused as with any credential.

A token also carries when the password login that began its chain happened (`auth_time`, OpenID Connect's
claim); a refresh keeps it, and refuses once `token_max_age_seconds` has passed since: a stolen token cannot be
refreshed forever without the password.

The key comes from `token_secret`, or is generated once and kept in `data_dir/token.key` (mode 0600): the
instances of a deployment must share one (the Helm chart's Secret).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import jwt

from mq import errors
from mq.tenancy.repository import UserRecord

ALGORITHM = "HS256"
ISSUER = "skiplock"
KEY_FILE = "token.key"
_MIN_KEY_BYTES = 32


@dataclass(frozen=True, slots=True)
class TokenClaims:
    username: str
    user_id: str
    credentials_version: str
    expires_at: float
    #: When the password login that began this token's chain happened (a token without it: its `iat`).
    began_at: float


class TokenSigner:
    def __init__(self, key: bytes, ttl_seconds: int, max_age_seconds: int = 43200) -> None:
        if len(key) < _MIN_KEY_BYTES:
            raise ValueError(f"the token signing key needs at least {_MIN_KEY_BYTES} bytes")
        self._key = key
        self.ttl_seconds = ttl_seconds
        self.max_age_seconds = max_age_seconds

    def issue(self, user: UserRecord, began_at: float | None = None) -> str:
        """A token for the user; `began_at`: its chain's password login (None: now, a login). A token never
        outlives its chain."""
        now = int(time.time())
        began = now if began_at is None else int(began_at)
        claims = {
            "iss": ISSUER,
            "sub": user.username,
            "uid": str(user.id),
            "cv": self.credentials_version(user),
            "iat": now,
            "auth_time": began,
            "exp": min(now + self.ttl_seconds, began + self.max_age_seconds),
        }
        return jwt.encode(claims, self._key, algorithm=ALGORITHM)

    def renewable(self, claims: TokenClaims) -> bool:
        """Whether a refresh may renew the token: its chain began less than `max_age_seconds` ago."""
        return time.time() < claims.began_at + self.max_age_seconds

    def read(self, token: str) -> TokenClaims:
        """The token's claims once its signature, issuer and expiry hold; Unauthorized otherwise (one message for
        every reason: a caller learns nothing about which check failed)."""
        try:
            claims = jwt.decode(
                token,
                self._key,
                algorithms=[ALGORITHM],
                issuer=ISSUER,
                options={"require": ["exp", "iat", "sub", "iss", "uid", "cv"]},
            )
        except jwt.PyJWTError:
            raise errors.Unauthorized("invalid or expired bearer token") from None
        if not all(isinstance(claims[k], str) for k in ("sub", "uid", "cv")):
            raise errors.Unauthorized("invalid or expired bearer token")
        began = claims.get("auth_time", claims["iat"])
        if not isinstance(began, int | float) or isinstance(began, bool):
            raise errors.Unauthorized("invalid or expired bearer token")
        return TokenClaims(claims["sub"], claims["uid"], claims["cv"], float(claims["exp"]), float(began))

    def credentials_version(self, user: UserRecord) -> str:
        material = f"{user.id}\x00{user.password_hash}\x00{user.role}\x00{user.tenant_id}".encode()
        return hmac.new(self._key, b"cv\x00" + material, hashlib.sha256).hexdigest()[:32]

    def matches(self, claims: TokenClaims, user: UserRecord) -> bool:
        return str(user.id) == claims.user_id and hmac.compare_digest(
            self.credentials_version(user), claims.credentials_version
        )


def signing_key(secret: str | None, data_dir: Path) -> bytes:
    """The configured secret, or the key kept in the data folder (made on first use, readable by its owner
    only)."""
    if secret:
        return secret.encode()
    path = data_dir / KEY_FILE
    try:
        return bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        pass
    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process of this data folder made it first
        return bytes.fromhex(path.read_text().strip())
    try:
        os.write(fd, key.hex().encode())
    finally:
        os.close(fd)
    return key
