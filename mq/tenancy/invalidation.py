"""Telling every instance that cached credentials are stale.

When a password, role, grant, tenant status or quota changes, the instance that made the change marks its own
cache stale and publishes on `CHANNEL` (`mq.broadcast`: Redis pub/sub, Postgres NOTIFY without Redis); every
instance (itself included) does the same on receipt. A missed message is healed by the cache's TTL, and a listener
that reconnects marks its cache stale once, since it may have missed something while it was away.
"""

from __future__ import annotations

from collections.abc import Callable

from mq import redis_keys
from mq.broadcast import Broadcast

CHANNEL = redis_keys.AUTH_CHANNEL


class AuthInvalidation:
    def __init__(self, broadcast: Broadcast, forget: Callable[[], None]) -> None:
        self._broadcast = broadcast
        self._forget = forget
        broadcast.on(CHANNEL, lambda _payload: forget())

    async def changed(self) -> None:
        """Credentials changed: drop this instance's cache now and tell the others."""
        self._forget()
        await self._broadcast.publish(CHANNEL, b"1")
