"""Failed-login limiting, shared by every instance through Redis (docs/security.md, "Logins and lockout").

As OWASP's authentication cheat sheet advises, failures are counted per (username, client address), per client
address and per username, each with its own ceiling over one window:

- per (username, address), low (`login_failure_limit`): one client guessing one user's password is stopped
  quickly, and only that client: the user's own clients elsewhere keep logging in;
- per address, higher (`login_failure_limit_per_address`): one client spraying many usernames is stopped;
- per username, far higher (`login_failure_limit_per_username`): a distributed guess at one user from many
  addresses is stopped, while a single attacker cannot reach it alone.

Only checks that would need a password verification are counted or limited: a credential this instance has
verified before is recognised without one (`mq.tenancy.auth`), so a working producer is never locked out by
someone else's failures. Without Redis (or while it does not answer) logins are not limited rather than refused;
the password check itself still stands, and so does the bound on concurrent verifications (`PasswordChecks`).
"""

from __future__ import annotations

import hashlib
import logging
from importlib import resources

from redis.exceptions import RedisError

from mq import errors, redis_keys
from mq.redis_client import RedisClient

log = logging.getLogger(__name__)

_SCRIPT = resources.files(__package__).joinpath("login_failures.lua").read_text()


class LoginLimiter:
    def __init__(
        self,
        redis: RedisClient | None,
        per_pair: int,
        per_address: int,
        window_seconds: int,
        per_username: int | None = None,
    ) -> None:
        self._redis = redis
        self._limits = (per_pair, per_address, per_username or per_pair * 100)
        self._window = window_seconds
        self._script = redis.register_script(_SCRIPT) if redis is not None else None
        self._warned = False

    def _keys(self, address: str | None, username: str) -> list[tuple[str, int]]:
        """Counter keys with their ceilings (every key lives `window_seconds` from its first failure). Usernames
        are hashed into keys: any text may be one, and keys are listed by operators."""
        user = hashlib.sha256(username.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        per_pair, per_address, per_username = self._limits
        keys = [(redis_keys.login_failures_of_user(user), per_username)]
        if address:
            keys += [
                (redis_keys.login_failures_of_pair(user, address), per_pair),
                (redis_keys.login_failures_of_address(address), per_address),
            ]
        return keys

    async def check(self, address: str | None, username: str) -> None:
        """Raise RateLimited when any of the caller's counters reached its ceiling in the current window."""
        if self._redis is None:
            return
        keys = self._keys(address, username)
        try:
            async with self._redis.pipeline(transaction=False) as reads:  # (a cluster's keys: their own slots)
                for key, _ in keys:
                    reads.get(key)
                counts = await reads.execute()
            self._warned = False  # answering again: the next outage is worth a line of its own
            over = [key for (key, limit), count in zip(keys, counts, strict=True) if int(count or 0) >= limit]
            if over:
                ttl = max([await self._redis.ttl(key) for key in over] + [1])
                raise errors.RateLimited("too many failed logins; try again later", retry_after=ttl)
        except (RedisError, OSError) as exc:
            self._unavailable(exc)

    async def failed(self, address: str | None, username: str) -> None:
        if self._script is None:
            return
        try:
            for key, _ in self._keys(address, username):  # one key a call: on a cluster they are in other slots
                await self._script(keys=[key], args=[self._window])
        except (RedisError, OSError) as exc:
            self._unavailable(exc)

    def _unavailable(self, exc: Exception) -> None:
        if not self._warned:
            log.warning("login limiting is off while Redis does not answer (%s)", exc)
            self._warned = True
