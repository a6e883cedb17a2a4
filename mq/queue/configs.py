"""Topic configuration lookups with an in-process cache; the global defaults fill what a topic leaves unset."""

from __future__ import annotations

import time

from mq.queue.repository import MessageRepository
from mq.queue.types import EffectiveConfig, TopicConfig
from mq.settings import Settings

_MAX_ENTRIES = 10_000


class TopicConfigs:
    """Resolves a topic's effective settings. Entries live `ttl_seconds`; a miss costs one primary-key lookup."""

    def __init__(self, repository: MessageRepository, settings: Settings, ttl_seconds: float = 5.0) -> None:
        self._repository = repository
        self._settings = settings
        self._ttl = ttl_seconds
        # (tenant, topic) -> (expiry, the topic's own config, its effective config): merged once per fetch
        self._cache: dict[tuple[int, str], tuple[float, TopicConfig | None, EffectiveConfig]] = {}

    async def get(self, tenant_id: int, topic: str) -> TopicConfig | None:
        """The topic's own overrides, or None when it has no config."""
        return (await self._entry(tenant_id, topic))[1]

    async def _entry(self, tenant_id: int, topic: str) -> tuple[float, TopicConfig | None, EffectiveConfig]:
        key = (tenant_id, topic)
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            return hit
        row = await self._repository.topic_config(tenant_id, topic)
        config = TopicConfig(**dict(row)) if row is not None else None
        if len(self._cache) >= _MAX_ENTRIES:
            self._cache.clear()
        entry = self._cache[key] = (now + self._ttl, config, self.merge(config))
        return entry

    def invalidate(self, tenant_id: int, topic: str) -> None:
        self._cache.pop((tenant_id, topic), None)

    async def effective(self, tenant_id: int, topic: str) -> EffectiveConfig:
        return (await self._entry(tenant_id, topic))[2]

    def merge(self, config: TopicConfig | None) -> EffectiveConfig:
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
        )
