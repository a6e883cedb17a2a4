"""A tenant's topics as an administrator sees them: their summaries and stats, their configs (the overrides, the
defaults and the values in force), pause and resume, and the tenants' usage. Raises only `mq.errors`."""

from __future__ import annotations

from typing import Any

from mq import errors
from mq.queue.service import QueueService
from mq.queue.types import TopicConfig
from mq.queue.validation import check_topic
from mq.quotas import NO_QUOTAS
from mq.topics.repository import Record, TopicRepository
from mq.topics.types import TopicSettings


class TopicConfigs:
    def __init__(self, repository: TopicRepository, queue: QueueService) -> None:
        self.repository = repository
        self.queue = queue

    async def summaries(self, tenant_id: int) -> list[Record]:
        """Every topic with messages, a config, a pause or recent activity (`sql.TOPIC_SUMMARY`'s rows: its counts,
        its config's fields with `configured`, `paused` and its rates); one statement whatever their number."""
        return await self.repository.topic_summaries(tenant_id)

    async def stats(self, tenant_id: int) -> list[dict[str, Any]]:
        return [dict(r) for r in await self.repository.stats(tenant_id)]

    async def configs(self, tenant_id: int) -> list[tuple[str, TopicConfig]]:
        """Every topic config of the tenant, by topic name."""
        rows = await self.repository.topic_configs(tenant_id)
        return [(r["topic"], TopicConfig(**{k: v for k, v in dict(r).items() if k != "topic"})) for r in rows]

    async def get(self, tenant_id: int, topic: str) -> TopicConfig:
        check_topic(topic, for_enqueue=False)
        config = await self.queue.configs.get(tenant_id, topic)
        if config is None:
            raise errors.NotFound(f"topic {topic!r} has no config")
        return config

    async def put(self, tenant_id: int, topic: str, config: TopicConfig) -> TopicConfig:
        """Create or replace a topic's config; every instance uses it from its next operation on. A topic new to
        the tenant must fit its max_topics quota. Dead-letter topics take their topic's config."""
        check_topic(topic, for_enqueue=True)
        quotas = await self.queue.quotas.of(tenant_id) if self.queue.quotas is not None else NO_QUOTAS
        row = await self.repository.put_topic_config(tenant_id, topic, config, quotas.max_topics)
        if config.max_inflight is None:
            await self.queue.repository.stop_counting(tenant_id, topic)  # its in-flight counters
        await self.queue.configs.changed(tenant_id, topic)
        return TopicConfig(**dict(row))

    async def delete(self, tenant_id: int, topic: str) -> None:
        check_topic(topic, for_enqueue=False)
        if not await self.repository.delete_topic_config(tenant_id, topic):
            raise errors.NotFound(f"topic {topic!r} has no config")
        await self.queue.repository.stop_counting(tenant_id, topic)  # its in-flight counters
        await self.queue.configs.changed(tenant_id, topic)

    async def settings(self, tenant_id: int, topic: str) -> TopicSettings:
        """The topic's overrides, the global defaults and the values in force, from the config cache."""
        check_topic(topic, for_enqueue=False)
        configs = self.queue.configs
        overrides = await configs.get(tenant_id, topic)
        effective = await configs.effective(tenant_id, topic)
        return TopicSettings(topic, effective.paused, overrides, configs.merge(None), effective)

    async def pause(self, tenant_id: int, topic: str, by: str) -> None:
        """Dequeues of the topic answer empty from now on, on every instance; enqueues go on."""
        check_topic(topic, for_enqueue=False)
        await self.repository.pause(tenant_id, topic, by)
        await self.queue.configs.changed(tenant_id, topic)

    async def resume(self, tenant_id: int, topic: str) -> None:
        """Dequeues take messages again; long polls waiting on the topic are woken."""
        check_topic(topic, for_enqueue=False)
        await self.repository.resume(tenant_id, topic)
        await self.queue.configs.changed(tenant_id, topic)
        self.queue.wakeups.published(tenant_id, [topic])

    async def usage(self) -> dict[str, tuple[int, int]]:
        """Topics and messages per tenant slug, as the gauge job last counted them."""
        return {r["tenant"]: (r["topics"], r["messages"]) for r in await self.repository.usage()}
