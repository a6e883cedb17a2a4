"""Topic configuration: two cache tiers in front of Postgres, invalidated on every instance when a config changes.

Tier 1 is in process (at most `_MAX_ENTRIES`, `ttl_seconds`); tier 2 is Redis (`skiplock:topic:<tenant>:<topic>`,
`redis_ttl_seconds`, the config or null, whether the topic is paused, its consumer groups and its schema); then
Postgres. The hot path
(every enqueue and dequeue) normally stops at tier 1: a dict lookup.

A write (`changed`, after the config or the pause is committed) drops both tiers' entries and broadcasts the
(tenant, topic) (`mq.broadcast`: Redis pub/sub, Postgres NOTIFY without Redis); every instance drops its tier-1
entry on receipt.
A missed broadcast (Redis restarting) is healed by the tier-1 TTL, so a config is never stale for long. Readers
fill tier 2 only where it is empty (SET NX), so a reader that fetched the old row just before a write cannot
overwrite what a later reader stored; one that does refill it with the old row after the write's delete leaves it
stale for at most `redis_ttl_seconds`.
"""

from __future__ import annotations

import logging
import time

import msgspec
from redis.exceptions import RedisError

from mq import redis_keys
from mq.broadcast import Broadcast
from mq.queue.repository import MessageRepository
from mq.queue.types import DeliveryPlan, EffectiveConfig, SchemaRef, TopicConfig
from mq.redis_client import RedisClient
from mq.settings import Settings
from mq.ttl_cache import TtlCache

log = logging.getLogger(__name__)

CHANNEL = redis_keys.CONFIG_CHANNEL
_MAX_ENTRIES = 10_000
#: Tier 1's and tier 2's lifetimes: together, how long an instance may act on a config that changed (a missed
#: broadcast, and a tier-2 refill with the old row just after the write). A consumer group is settled after it.
TTL_SECONDS = 5.0
REDIS_TTL_SECONDS = 30
STALE_SECONDS = TTL_SECONDS + REDIS_TTL_SECONDS


class _Stored(msgspec.Struct, array_like=True):
    """Tier 2's entry: the topic's config (None: it has none) and whether it is paused."""

    config: TopicConfig | None
    paused: bool
    groups: tuple[tuple[str, int], ...] = ()
    schema: SchemaRef | None = None


_DECODER = msgspec.json.Decoder(_Stored)
_CONFIG_FIELDS = TopicConfig.__struct_fields__


class TopicConfigs:
    """Resolves a topic's own config and its effective settings (the global defaults fill what it leaves unset)."""

    def __init__(
        self,
        repository: MessageRepository,
        settings: Settings,
        redis: RedisClient | None = None,
        broadcast: Broadcast | None = None,
        ttl_seconds: float = TTL_SECONDS,
        redis_ttl_seconds: int = REDIS_TTL_SECONDS,
    ) -> None:
        self._repository = repository
        self._settings = settings
        self._redis = redis
        self._broadcast = broadcast
        self._redis_ttl = redis_ttl_seconds
        self._redis_warned = False
        self._redis_away_until = 0.0  # after a failure, Postgres only for a second: no timeout per lookup
        # (tenant, topic) -> (the topic's own config, its effective config): merged once per fetch
        self._cache: TtlCache[tuple[int, str], tuple[TopicConfig | None, EffectiveConfig]] = TtlCache(
            ttl_seconds, _MAX_ENTRIES
        )
        # tenant -> the plan of its statements that name a message by id (`tenant_plan`)
        self._plans: TtlCache[int, DeliveryPlan] = TtlCache(ttl_seconds, _MAX_ENTRIES)
        if broadcast is not None:
            broadcast.on(CHANNEL, self._on_broadcast)

    async def get(self, tenant_id: int, topic: str) -> TopicConfig | None:
        """The topic's own overrides, or None when it has no config."""
        return (await self._entry(tenant_id, topic))[0]

    async def effective(self, tenant_id: int, topic: str) -> EffectiveConfig:
        return (await self._entry(tenant_id, topic))[1]

    async def tenant_plan(self, tenant_id: int) -> DeliveryPlan:
        """The plan of the tenant's acks, nacks and extensions, which name a message by id (its topic is known
        only to the statement): `limited` when some topic of the tenant has a max_inflight (they count leases out),
        `logged` when some is replayable (its acks keep the log); other tenants' statements stay as they are. In
        process only, dropped with any config change of the tenant."""
        hit = self._plans.get(tenant_id)
        if hit is None:
            hit = self._plans.put(tenant_id, await self._repository.tenant_plan(tenant_id))
        return hit

    async def _entry(self, tenant_id: int, topic: str) -> tuple[TopicConfig | None, EffectiveConfig]:
        key = (tenant_id, topic)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        redis_key = redis_keys.topic_config(tenant_id, topic)
        stored = await self._redis_get(redis_key)
        entry = _DECODER.decode(stored) if stored is not None else None
        if entry is None:
            row = await self._repository.topic_config(tenant_id, topic)
            config = TopicConfig(**{f: row[f] for f in _CONFIG_FIELDS}) if row["configured"] else None
            groups = tuple(zip(row["group_names"], row["group_ids"], strict=True))
            schema = None
            if row["schema_version"] is not None:
                schema = SchemaRef(row["schema_version"], row["schema_format"], row["schema_json"])
            entry = _Stored(config, row["paused"], groups, schema)
            await self._redis_fill(redis_key, msgspec.json.encode(entry))
        effective = self.merge(entry.config, paused=entry.paused, groups=entry.groups, schema=entry.schema)
        return self._cache.put(key, (entry.config, effective))

    async def changed(self, tenant_id: int, topic: str) -> None:
        """A topic's config was written or deleted, the topic paused or resumed, a group of it created or deleted, or
        its schema replaced or deleted (and committed): forget it here, in Redis and everywhere."""
        self._cache.pop((tenant_id, topic))
        self._plans.pop(tenant_id)
        if self._redis is not None:
            try:
                await self._redis.delete(redis_keys.topic_config(tenant_id, topic))
            except (RedisError, OSError) as exc:
                self._redis_failed(exc)
        if self._broadcast is not None:
            await self._broadcast.publish(CHANNEL, f"{tenant_id}:{topic}".encode())

    def _on_broadcast(self, payload: bytes | None) -> None:
        if payload is None:  # the listener reconnected: anything may have changed meanwhile
            self._cache.clear()
            self._plans.clear()
            return
        tenant, _, topic = payload.decode().partition(":")  # topic names have no ':'
        self._cache.pop((int(tenant), topic))
        self._plans.pop(int(tenant))

    def _redis_usable(self) -> bool:
        return self._redis is not None and time.monotonic() >= self._redis_away_until

    async def _redis_get(self, key: str) -> bytes | None:
        if self._redis is None or not self._redis_usable():
            return None
        try:
            value = await self._redis.get(key)
        except (RedisError, OSError) as exc:
            self._redis_failed(exc)
            return None
        return value if isinstance(value, bytes) else None

    async def _redis_fill(self, key: str, value: bytes) -> None:
        if self._redis is None or not self._redis_usable():
            return
        try:
            await self._redis.set(key, value, ex=self._redis_ttl, nx=True)
        except (RedisError, OSError) as exc:
            self._redis_failed(exc)

    def _redis_failed(self, exc: BaseException) -> None:
        self._redis_away_until = time.monotonic() + 1.0
        if not self._redis_warned:
            log.warning("topic config cache: Redis unreachable (%s); reading configs from Postgres", exc)
            self._redis_warned = True

    def merge(
        self,
        config: TopicConfig | None,
        *,
        paused: bool = False,
        groups: tuple[tuple[str, int], ...] = (),
        schema: SchemaRef | None = None,
    ) -> EffectiveConfig:
        s = self._settings
        c = config or TopicConfig()
        return EffectiveConfig(
            max_retries=c.max_retries if c.max_retries is not None else s.max_retries,
            message_ttl_seconds=c.message_ttl_seconds if c.message_ttl_seconds is not None else s.message_ttl_seconds,
            max_depth=c.max_depth or None,
            throughput_limit=c.throughput_limit or None,
            visibility_timeout_seconds=c.visibility_timeout_seconds or s.visibility_timeout_seconds,
            retry_backoff_seconds=(
                c.retry_backoff_seconds if c.retry_backoff_seconds is not None else s.retry_backoff_seconds
            ),
            dlq_enabled=c.dlq_enabled if c.dlq_enabled is not None else s.dlq_enabled,
            expire_to_dlq=c.expire_to_dlq if c.expire_to_dlq is not None else s.expire_to_dlq,
            replayable=bool(c.replayable),
            replay_window_seconds=c.replay_window_seconds or None,
            max_inflight=c.max_inflight or None,
            paused=paused,
            groups=groups,
            schema=schema,
        )
