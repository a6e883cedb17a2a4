"""The client's message history: the log as an async iterator, trims, and replays that resume by themselves."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from skiplock_client import AsyncClient, Client, QueueFull

from tests.support.servers import ADMIN, Server
from tests.support.tenants import Tenant


async def test_the_log_pages_as_an_iterator_and_a_replay_resumes_past_max_depth(server: Server, tenant: Tenant) -> None:
    async with AsyncClient(server.base_url, auth=ADMIN, tenant=tenant.slug) as sk:
        await sk.set_topic_config("history", replayable=True)
        for n in range(6):
            await sk.send("history", f"h{n}")
            [m] = await sk.receive("history", 1)
            await sk.ack(m)
        until = datetime.now(UTC)
        entries = [e async for e in sk.message_log("history", page_size=4)]
        assert [e.text() for e in entries] == [f"h{n}" for n in range(6)]
        assert [e.text() async for e in sk.message_log("history", since=entries[2].acked_at)] == [
            "h2",
            "h3",
            "h4",
            "h5",
        ]

        await sk.set_topic_config("history", replayable=True, max_depth=4)
        with pytest.raises(QueueFull) as refused:
            await sk.replay("history", until=until, resume=False)
        assert refused.value.details["replayed"] == 4

        async def drain() -> list[str]:
            got = await sk.receive("history", 10)
            if got:
                await sk.ack_batch(got)
            return [m.text() for m in got]

        assert await drain() == ["h0", "h1", "h2", "h3"]
        await sk.set_topic_config("history", replayable=True, max_depth=1)
        replay = asyncio.create_task(  # refused after each one: it waits, and goes on once a consumer made room
            sk.replay("history", since=refused.value.details["resume_from"], until=until, pause_seconds=0.2)
        )
        drained: list[str] = []
        while not replay.done() or len(drained) < 2:
            drained += await drain()
            await asyncio.sleep(0.05)
        assert await replay == 2
        assert drained == ["h4", "h5"]
        assert await sk.trim_message_log("history", datetime.now(UTC)) >= 6

    with Client(server.base_url, auth=ADMIN, tenant=tenant.slug) as sync:
        assert sync.replay("history", until=until) == 0  # trimmed: nothing left to replay


async def test_a_replay_to_one_consumer_group(server: Server, tenant: Tenant) -> None:
    async with AsyncClient(server.base_url, auth=ADMIN, tenant=tenant.slug) as sk:
        await sk.set_topic_config("fan-history", replayable=True)
        for group in ("billing", "audit"):
            await sk.create_consumer_group("fan-history", group)
        await sk.send("fan-history", "order-1")
        for group in ("billing", "audit"):
            got = await sk.receive("fan-history", 1, consumer_group=group)
            await sk.ack_batch(got, consumer_group=group)
        assert await sk.replay("fan-history", consumer_group="billing") == 1
        assert await sk.receive("fan-history", 5, consumer_group="audit") == []
        [again] = await sk.receive("fan-history", 5, consumer_group="billing")
        assert again.text() == "order-1" and again.consumer_group == "billing"


async def test_a_messages_story_through_the_client(server: Server, tenant: Tenant) -> None:
    async with AsyncClient(server.base_url, auth=ADMIN, tenant=tenant.slug) as sk:
        await sk.set_topic_config("told", replayable=True)
        mid = await sk.send("told", "once")
        [m] = await sk.receive("told", 1)
        await sk.ack(m)
        told = await sk.story(mid, topic="told")
        assert told.state == "acked" and told.message is None and told.acked_at
        assert [e.kind for e in told.events] == ["enqueued", "acked"]
        await sk.replay("told", since=told.acked_at)
        [replayed] = [e for e in (await sk.story(mid, topic="told")).events if e.kind == "replayed"]
        assert replayed.message_id is not None
    with Client(server.base_url, auth=ADMIN, tenant=tenant.slug) as sync:
        again = sync.story(replayed.message_id)
        assert again.replay_of == mid and again.message is not None and again.message.text() == "once"


async def test_consumers_and_error_classes_through_the_client(server: Server, tenant: Tenant) -> None:
    async with AsyncClient(server.base_url, auth=ADMIN, tenant=tenant.slug) as sk:
        await sk.set_topic_config("watched", max_retries=1)
        await sk.send("watched", "a")
        await sk.send("watched", "b")
        [m] = await sk.receive("watched", 1)
        [held] = await sk.consumers("watched")
        assert held.consumer == "admin" and held.holding == 1 and held.consumer_group is None
        await sk.nack(m, error="ValueError: nope")
        classes = await sk.error_classes("watched.dlq")
        assert classes.scanned == 1 and classes.items[0].error_class == "ValueError"
        assert classes.items[0].example_id == m.id


async def test_a_redrive_at_a_pace_through_the_client(server: Server, tenant: Tenant) -> None:
    async with AsyncClient(server.base_url, auth=ADMIN, tenant=tenant.slug) as sk:
        await sk.set_topic_config("redriven", max_retries=1)
        for n in range(3):
            await sk.send("redriven", f"r{n}")
        for m in await sk.receive("redriven", 3):
            await sk.nack(m, error="down")
        job = await sk.redrive("redriven", rate_per_second=100)
        assert job.topic == "redriven.dlq" and job.action == "requeue" and job.rate_per_second == 100
        while job.state == "running":
            await asyncio.sleep(0.05)
            job = await sk.bulk_job(job.id)
        assert (job.state, job.done) == ("done", 3)
        assert len(await sk.receive("redriven", 10)) == 3
