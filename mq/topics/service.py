"""`TopicAdmin`: administering a tenant's topics, in four rooms: `config` (summaries, stats, configs, pause and
resume, usage: `mq.topics.config`), `groups` (consumer groups: `mq.topics.groups`), `browser` (reading messages by
offset and in keyset pages, and the charts' series: `mq.topics.browsing`) and `bulk` (actions on many messages,
bulk jobs, purge, delete by key, a DLQ's requeue: `mq.topics.bulk`). Each reads and writes through
`TopicRepository`; the data plane (enqueue, dequeue, ack, nack, extend, one message by id) is
`mq.queue.service.QueueService`.

Raises only `mq.errors`. Who may do what is the API's business (`api.routes.topics`).
"""

from __future__ import annotations

import asyncio

from mq.queue.service import QueueService
from mq.topics.browsing import MessageBrowser
from mq.topics.bulk import BulkActions
from mq.topics.config import TopicConfigs
from mq.topics.groups import ConsumerGroups
from mq.topics.repository import TopicRepository


class TopicAdmin:
    def __init__(self, repository: TopicRepository, queue: QueueService) -> None:
        self.config = TopicConfigs(repository, queue)
        self.groups = ConsumerGroups(repository, queue)
        self.browser = MessageBrowser(repository)
        self.bulk = BulkActions(repository, queue, self.browser)

    async def close(self) -> None:
        """Stop this process's background work: bulk jobs (they show as interrupted) and group releases."""
        await asyncio.gather(self.bulk.close(), self.groups.close())
