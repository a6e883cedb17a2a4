"""Telling every instance that cached credentials are stale: a Redis pub/sub channel.

When a password, role, grant or tenant status changes, the instance that made the change drops its own cache and
publishes on `CHANNEL`; every instance (itself included) drops its cache on receipt. A missed message (Redis
restarting, a dropped connection) is healed by the cache's TTL, and a subscriber that reconnects drops its cache
once, since it may have missed something while it was away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import redis.asyncio as aioredis
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

CHANNEL = "skiplock:auth:invalidate"
_RETRY_SECONDS = 1.0


class AuthInvalidation:
    def __init__(self, redis: aioredis.Redis | None, redis_url: str | None, forget: Callable[[], None]) -> None:
        """`redis` publishes; the subscriber gets its own connection from `redis_url`, without the read timeout
        of the shared client (a quiet channel is not an error)."""
        self._redis = redis
        self._redis_url = redis_url
        self._forget = forget
        self._subscriber: aioredis.Redis | None = None
        self._task: asyncio.Task[None] | None = None
        self._warned = False

    async def start(self) -> None:
        if self._redis_url:
            self._subscriber = aioredis.from_url(
                self._redis_url, socket_timeout=None, socket_connect_timeout=2, health_check_interval=30
            )
            self._task = asyncio.create_task(self._listen(self._subscriber), name="auth-invalidation")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._subscriber is not None:
            await self._subscriber.aclose()

    async def changed(self) -> None:
        """Credentials changed: drop this instance's cache now and tell the others."""
        self._forget()
        if self._redis is None:
            return
        try:
            await self._redis.publish(CHANNEL, b"1")
        except (RedisError, OSError) as exc:
            if not self._warned:
                log.warning("cannot publish an auth invalidation (%s); other instances catch up within the TTL", exc)
                self._warned = True

    async def _listen(self, redis: aioredis.Redis) -> None:
        first = True
        while True:
            pubsub = redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(CHANNEL)
                if not first:
                    self._forget()  # something may have changed while we were not listening
                first = False
                async for message in pubsub.listen():
                    if message and message.get("type") == "message":
                        self._forget()
            except (RedisError, OSError) as exc:
                log.debug("auth invalidation subscriber: %s; resubscribing", exc)
                await asyncio.sleep(_RETRY_SECONDS)
            finally:
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]
