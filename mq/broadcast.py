"""Small messages to every instance: "drop what you cached about X".

Published on Redis pub/sub; where no Redis is configured, or a publish to it fails, on Postgres NOTIFY instead.
Every instance listens on both (Postgres through the process's one LISTEN connection, `mq.db.listener`), so a
message arrives whichever way it was sent (the publisher receives its own too). Handlers must be idempotent and
cheap: they run on the event loop for each message, and once with `None` after a listener (re)connects, since
messages may have been missed while it was away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from redis.exceptions import RedisError

from mq import redis_client
from mq.db.engine import DATABASE_ERRORS
from mq.db.listener import PostgresListener
from mq.db.repository import OperationsRepository
from mq.redis_client import RedisClient

log = logging.getLogger(__name__)

Handler = Callable[[bytes | None], None]
_RETRY_SECONDS = 1.0


def _pg_channel(channel: str) -> str:
    """Postgres channel names are identifiers: `skiplock:config:invalidate` -> `skiplock_config_invalidate`."""
    return channel.replace(":", "_").replace("-", "_")


class Broadcast:
    def __init__(
        self,
        redis: RedisClient | None,
        redis_url: str | None,
        listener: PostgresListener,
        operations: OperationsRepository,
    ) -> None:
        """`redis` publishes; the Redis subscriber gets its own connection from `redis_url` (without the shared
        client's read timeout: a quiet channel is not an error); Postgres notifications arrive through `listener`
        and are sent through `operations`."""
        self._redis = redis
        self._redis_url = redis_url
        self._listener = listener
        self._operations = operations
        self._handlers: dict[str, list[Handler]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._subscriber: RedisClient | None = None
        self._subscribed = asyncio.Event()  # the Redis subscriber is subscribed (set at once without Redis)
        self._warned = False

    def on(self, channel: str, handler: Handler) -> None:
        """Call `handler(payload)` for each message on `channel` (register before `start`)."""
        self._handlers.setdefault(channel, []).append(handler)

    async def start(self) -> None:
        if self._redis_url:
            self._subscriber = redis_client.connect(
                self._redis_url, socket_timeout=None, socket_connect_timeout=2, health_check_interval=30
            )
            self._tasks.append(asyncio.create_task(self._listen_redis(self._subscriber), name="broadcast-redis"))
        else:
            self._subscribed.set()
        for channel in self._handlers:
            await self._listener.listen(_pg_channel(channel), self._received_from_postgres(channel))
        self._listener.on_reconnect(self._dispatch_all)

    async def listening(self) -> None:
        """Wait until messages sent from now on arrive both ways (tests; nothing needs to wait in production)."""
        await self._subscribed.wait()
        await self._listener.listening.wait()

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._subscriber is not None:
            await self._subscriber.aclose()

    async def publish(self, channel: str, payload: bytes) -> None:
        """Send to every instance; never raises (a lost message is healed by the receivers' cache TTLs)."""
        if self._redis is not None:
            try:
                await self._redis.publish(channel, payload)
            except (RedisError, OSError) as exc:
                if not self._warned:
                    log.warning("cannot publish on Redis (%s); sending invalidations through Postgres", exc)
                    self._warned = True
            else:
                return
        try:
            await self._operations.notify(_pg_channel(channel), payload.decode())
        except DATABASE_ERRORS as exc:
            log.warning("cannot publish an invalidation on %s: %s; caches catch up within their TTL", channel, exc)

    def _dispatch(self, channel: str, payload: bytes | None) -> None:
        for handler in self._handlers.get(channel, ()):
            try:
                handler(payload)
            except Exception:
                log.exception("broadcast handler for %s failed", channel)

    def _dispatch_all(self) -> None:
        for channel in self._handlers:
            self._dispatch(channel, None)

    async def _listen_redis(self, redis: RedisClient) -> None:
        first = True
        while True:
            pubsub = None
            try:
                await redis_client.ready(redis)
                pubsub = redis.pubsub(ignore_subscribe_messages=True)
                await pubsub.subscribe(*self._handlers)
                self._subscribed.set()
                if not first:
                    self._dispatch_all()  # something may have been published while we were not listening
                first = False
                async for message in pubsub.listen():
                    if message and message.get("type") == "message":
                        channel = message["channel"]
                        self._dispatch(channel.decode() if isinstance(channel, bytes) else channel, message["data"])
            except (RedisError, OSError) as exc:
                log.debug("broadcast: Redis subscriber %s; resubscribing", exc)
                await asyncio.sleep(_RETRY_SECONDS)
            finally:
                if pubsub is not None:
                    with contextlib.suppress(RedisError, OSError):
                        await pubsub.aclose()

    def _received_from_postgres(self, channel: str) -> Callable[[str], None]:
        return lambda payload: self._dispatch(channel, payload.encode())
