"""Failed-login limiting: counters per client address and per username in Redis, shared by every instance.

Only failures count, and only a credential check that missed the cache reaches here, so a client that knows its
password never pays a Redis round trip. Without Redis (or while it is down) logins are not limited rather than
refused: the password check itself still stands.
"""

from __future__ import annotations

import logging

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from mq import errors

log = logging.getLogger(__name__)

_PREFIX = "skiplock:login-failures"


class LoginLimiter:
    def __init__(self, redis: aioredis.Redis | None, per_user: int, per_address: int, window_seconds: int) -> None:
        self._redis = redis
        self._per_user = per_user
        self._per_address = per_address
        self._window = window_seconds
        self._warned = False

    def _keys(self, address: str | None, username: str) -> list[tuple[str, int]]:
        keys = [(f"{_PREFIX}:user:{username}", self._per_user)]
        if address:
            keys.append((f"{_PREFIX}:addr:{address}", self._per_address))
        return keys

    async def check(self, address: str | None, username: str) -> None:
        """Raise RateLimited when the address or the username used up its failures in the current window."""
        if self._redis is None:
            return
        keys = self._keys(address, username)
        try:
            counts = await self._redis.mget([key for key, _ in keys])
            over = [key for (key, limit), count in zip(keys, counts, strict=True) if int(count or 0) >= limit]
            if over:
                ttl = max([await self._redis.ttl(key) for key in over] + [1])
                raise errors.RateLimited("too many failed logins; try again later", retry_after=ttl)
        except (RedisError, OSError) as exc:
            self._unavailable(exc)

    async def failed(self, address: str | None, username: str) -> None:
        if self._redis is None:
            return
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                for key, _ in self._keys(address, username):
                    pipe.incr(key)
                    pipe.expire(key, self._window, nx=True)
                await pipe.execute()
        except (RedisError, OSError) as exc:
            self._unavailable(exc)

    def _unavailable(self, exc: Exception) -> None:
        if not self._warned:
            log.warning("login limiting is off while Redis does not answer (%s)", exc)
            self._warned = True
