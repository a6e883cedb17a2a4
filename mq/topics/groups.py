"""A topic's consumer groups, created, listed and deleted; a deleted group's deliveries released (within the
request's budget, the rest in the background, and `mq.jobs.GroupSettler` for what a request left). Raises only
`mq.errors`."""

from __future__ import annotations

import asyncio
import logging

from mq import errors
from mq.db.engine import DATABASE_ERRORS
from mq.queue.service import QueueService
from mq.queue.validation import check_topic
from mq.topics.repository import Record, TopicRepository
from mq.topics.types import ConsumerGroup, GroupStart

log = logging.getLogger(__name__)

#: Deliveries a deleted group's release deletes per statement.
_RELEASE_BATCH = 5000
#: Seconds a group's deletion releases what it owed in the request; a larger group goes on in the background.
_RELEASE_BUDGET_SECONDS = 2.0


class ConsumerGroups:
    def __init__(self, repository: TopicRepository, queue: QueueService) -> None:
        self.repository = repository
        self.queue = queue
        self._releases: set[asyncio.Task[None]] = set()

    async def create(self, tenant_id: int, topic: str, name: str, start: GroupStart) -> ConsumerGroup:
        """A new consumer group of the topic: it receives every message enqueued from now on, and with `earliest`
        every one already pending or processing. From the first group on, the topic is consumed through groups."""
        _check_group_topic(topic)
        row = await self.repository.create_group(tenant_id, topic, name, start)
        if row is None:
            raise errors.GroupExists(f"topic {topic!r} already has a consumer group {name!r}")
        await self.queue.configs.changed(tenant_id, topic)
        self.queue.wakeups.published(tenant_id, [topic])  # waiting polls look again: earliest may have owed some
        return ConsumerGroup(topic, row["name"], row["start"], row["created_at"])

    async def topics_with(self, tenant_id: int, name: str) -> list[str]:
        """The tenant's topics that have a consumer group named `name`."""
        return await self.repository.topics_with_group(tenant_id, name)

    async def list(self, tenant_id: int, topic: str) -> list[Record]:
        """The topic's groups in creation order, each with what it still owes (`sql.GROUPS_LIST`'s rows)."""
        check_topic(topic, for_enqueue=False)
        return await self.repository.groups(tenant_id, topic)

    async def delete(self, tenant_id: int, topic: str, name: str) -> None:
        """Delete a group: its deliveries go, and the messages no other group owes with them."""
        check_topic(topic, for_enqueue=False)
        group_id = await self.repository.delete_group(tenant_id, topic, name)
        if group_id is None:
            raise errors.NotFound(f"topic {topic!r} has no consumer group {name!r}")
        await self.queue.configs.changed(tenant_id, topic)
        if not await self._release(tenant_id, group_id, _RELEASE_BUDGET_SECONDS):  # large: the rest in the background
            task = asyncio.get_running_loop().create_task(self._release_rest(tenant_id, group_id))
            self._releases.add(task)
            task.add_done_callback(self._releases.discard)

    async def _release_rest(self, tenant_id: int, group_id: int) -> None:
        await self._release(tenant_id, group_id, None)

    async def _release(self, tenant_id: int, group_id: int, budget: float | None) -> bool:
        """Release what a deleted group owed, a batch at a time, within `budget` seconds (None: until done or
        only leased deliveries that stay locked are left: the group settler's next run takes those); whether
        all of it went."""
        loop = asyncio.get_running_loop()
        deadline = None if budget is None else loop.time() + budget
        tries = 0
        try:
            while True:
                if await self.repository.release_group(tenant_id, group_id, _RELEASE_BATCH):
                    if deadline is not None and loop.time() > deadline:
                        return False
                    continue
                if not await self.repository.group_owes(tenant_id, group_id):
                    return True  # its tombstone stays for the group settler (`sql.GROUP_FORGET`)
                tries += 1  # only locked deliveries left (a group ack or nack in flight): a moment later
                if tries > 3 or deadline is not None:
                    return False
                await asyncio.sleep(1)
        except DATABASE_ERRORS as exc:
            log.warning("releasing deleted consumer group %s: %s (the group settler goes on)", group_id, exc)
            return False

    async def close(self) -> None:
        """Stop this process's background releases (the group settler finishes them)."""
        for task in list(self._releases):
            task.cancel()
        if self._releases:
            await asyncio.gather(*self._releases, return_exceptions=True)


def _check_group_topic(topic: str) -> None:
    """Groups belong to topics that take enqueues: not to a dead-letter topic."""
    check_topic(topic, for_enqueue=True)
