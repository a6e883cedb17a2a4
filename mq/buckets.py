"""Token buckets shared by every API instance through Redis, with a per-instance fallback.

A bucket holds up to `capacity` tokens (one second of `rate` unless told otherwise) and refills at `rate` tokens per
second. One Lua script refills and takes atomically on the Redis server's clock; redis-py loads it once and then
calls it by its SHA (EVALSHA). Idle buckets expire by themselves.

If Redis cannot be reached, the instance keeps limiting with a bucket of its own holding `rate / instances` (the
configured number of API instances), logs that once, and tries Redis again after `_RETRY_REDIS_SECONDS`. A bucket
never fails the request it limits.
"""

from __future__ import annotations

import logging
import math
import time
from importlib import resources

from redis.exceptions import RedisError

from mq.redis_client import RedisClient

log = logging.getLogger(__name__)

_RETRY_REDIS_SECONDS = 1.0

#: Refill and take in one step (KEYS[1] the bucket; see the script for its arguments), loaded once.
_TAKE = resources.files(__package__).joinpath("token_bucket.lua").read_text()


class _LocalBucket:
    """The same bucket in process memory, for when Redis is away."""

    __slots__ = ("at", "tokens")

    def __init__(self, capacity: float) -> None:
        self.tokens = capacity
        self.at = time.monotonic()

    def take(self, rate: float, capacity: float, want: int, whole: bool) -> tuple[int, float]:
        now = time.monotonic()
        self.tokens = min(capacity, self.tokens + (now - self.at) * rate)
        self.at = now
        if want < 0:
            self.tokens = min(capacity, self.tokens - want)
            return 0, 0.0
        if whole:
            need = min(want, capacity)
            if self.tokens >= need:
                self.tokens -= want
                return want, 0.0
            return 0, (need - self.tokens) / rate
        granted = max(0, min(want, math.floor(self.tokens)))
        self.tokens -= granted
        return granted, (1 - self.tokens) / rate if granted == 0 and want > 0 else 0.0


class TokenBuckets:
    def __init__(self, redis: RedisClient | None, instances: int = 1) -> None:
        self._script = redis.register_script(_TAKE) if redis is not None else None
        self._instances = max(1, instances)
        self._local: dict[str, _LocalBucket] = {}
        self._redis_away_until = 0.0
        self._warned = False

    async def take(
        self, key: str, rate: float, want: int, *, whole: bool, capacity: float | None = None
    ) -> tuple[int, float]:
        """Take up to `want` tokens of bucket `key`: all of them or none when `whole`, else as many as there are.
        Returns (tokens granted, seconds until the rest could be granted: 0 when all were)."""
        capacity = max(1.0, capacity if capacity is not None else rate)
        if self._script is not None and time.monotonic() >= self._redis_away_until:
            try:
                granted, wait = await self._script(keys=[key], args=[rate, capacity, want, int(whole)])
            except (RedisError, OSError) as exc:
                self._redis_failed(exc)
            else:
                if self._warned:
                    log.warning("token buckets: Redis is back; limits are shared by every instance again")
                    self._warned = False
                    self._local.clear()
                return int(granted), float(wait)
        return self._take_locally(key, rate, capacity, want, whole)

    async def give_back(self, key: str, rate: float, tokens: int, *, capacity: float | None = None) -> None:
        """Return tokens taken but not used (an empty dequeue, a refused enqueue)."""
        if tokens > 0:
            await self.take(key, rate, -tokens, whole=False, capacity=capacity)

    def _take_locally(self, key: str, rate: float, capacity: float, want: int, whole: bool) -> tuple[int, float]:
        rate, capacity = rate / self._instances, max(1.0, capacity / self._instances)
        bucket = self._local.get(key)
        if bucket is None:
            if len(self._local) >= 10_000:
                self._local.clear()
            bucket = self._local[key] = _LocalBucket(capacity)
        return bucket.take(rate, capacity, want, whole)

    def _redis_failed(self, exc: BaseException) -> None:
        self._redis_away_until = time.monotonic() + _RETRY_REDIS_SECONDS
        if not self._warned:
            log.warning(
                "token buckets: Redis unreachable (%s); limiting per instance at rate / %d until it is back",
                exc,
                self._instances,
            )
            self._warned = True
