"""The consumer runtime against a real server: leases kept, acks and nacks, stopping, crashes, poison messages."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from typing import Any

import msgspec
from skiplock_client import AsyncClient, Message, Middleware, Retry

from tests.support.servers import ADMIN, ROOT, Server
from tests.support.tenants import Tenant
from tests.support.waiting import eventually


async def _run(consumer: Any) -> asyncio.Task[None]:
    return asyncio.create_task(consumer.run())


async def test_every_message_is_handled_once_and_acked(sk: AsyncClient) -> None:
    ids = await sk.send_batch("work", [f"m{n}" for n in range(250)])
    seen: list[str] = []

    async def handle(message: Message) -> None:
        seen.append(message.id)

    consumer = sk.consumer("work", handle, concurrency=8, prefetch=50, wait_seconds=1, handle_signals=False)
    task = await _run(consumer)
    await eventually(lambda: len(seen) >= 250, what="250 handled")
    consumer.stop()
    await task
    assert sorted(seen) == sorted(ids)
    assert (await sk.messages("work")).total == 0  # acked: deleted


async def test_a_long_handler_keeps_its_lease(sk: AsyncClient) -> None:
    """A 5 s handler under a 2 s visibility timeout: the runtime extends the lease, nobody else gets the message,
    and it is acked once, never redelivered."""
    mid = await sk.send("slow", b"x")
    calls: list[int] = []

    async def handle(message: Message) -> None:
        calls.append(message.retry_count)
        await asyncio.sleep(5)

    consumer = sk.consumer("slow", handle, visibility_timeout=2, wait_seconds=1, handle_signals=False)
    task = await _run(consumer)
    await eventually(lambda: calls, what="the handler started")
    deadline = time.monotonic() + 4.5
    while time.monotonic() < deadline:  # past two visibility timeouts: still leased to the consumer
        assert await sk.receive("slow") == []
        await asyncio.sleep(0.5)
    await eventually(lambda: consumer.handled == 1, what="the handler returned")
    consumer.stop()
    await task
    assert calls == [0]
    assert (await sk.messages("slow")).total == 0, f"{mid} should be acked"


async def test_failures_nack_with_the_error_and_end_in_the_dlq(sk: AsyncClient) -> None:
    await sk.set_topic_config("poison", max_retries=2, retry_backoff_seconds=[0])
    mid = await sk.send("poison", b"boom")
    attempts: list[int] = []

    def handle(message: Message) -> None:  # a plain function: run in a thread
        attempts.append(message.retry_count)
        raise ValueError(f"cannot handle {message.payload!r}")

    consumer = sk.consumer("poison", handle, wait_seconds=1, handle_signals=False)
    task = await _run(consumer)
    dead = await eventually(lambda: _dlq(sk, "poison"), what="the dead letter")
    consumer.stop()
    await task
    assert attempts == [0, 1]
    assert dead.original_topic == "poison" and dead.id == mid
    assert dead.last_error == "ValueError: cannot handle b'boom'"


async def _dlq(sk: AsyncClient, topic: str) -> Message | None:
    page = await sk.messages(f"{topic}.dlq")
    return page.items[0] if page.items else None


async def test_a_handler_chooses_its_retry_delay(sk: AsyncClient) -> None:
    mid = await sk.send("later", b"x")
    tried: list[float] = []

    async def handle(message: Message) -> None:
        tried.append(time.monotonic())
        raise Retry(delay=60, reason="not yet")

    consumer = sk.consumer("later", handle, wait_seconds=1, handle_signals=False)
    task = await _run(consumer)
    await eventually(lambda: sk.message(mid), what="the message")
    await eventually(lambda: tried, what="a try")
    message = await eventually(lambda: _nacked(sk, mid), what="the nack")
    consumer.stop()
    await task
    assert message.last_error == "Retry: not yet" and message.retry_count == 1
    assert len(tried) == 1  # not again within the minute


async def test_a_deferral_saves_its_state_for_the_next_attempt(sk: AsyncClient) -> None:
    """A handler returns Retry(metadata=...): the next attempt sees it merged into the message's metadata."""
    await sk.set_topic_config("resumable", retry_backoff_seconds=[0], max_retries=5)
    mid = await sk.send("resumable", b"x", metadata={"job": "export"})
    seen: list[dict[str, Any] | None] = []

    async def handle(message: Message) -> Retry | None:
        seen.append(message.metadata)
        page = (message.metadata or {}).get("page", 0)
        return Retry(delay=0, metadata={"page": page + 1}) if page < 2 else None

    consumer = sk.consumer("resumable", handle, wait_seconds=1, handle_signals=False)
    task = await _run(consumer)
    await eventually(lambda: len(seen) >= 3 or None, what="three attempts")
    consumer.stop()
    await task
    assert seen == [{"job": "export"}, {"job": "export", "page": 1}, {"job": "export", "page": 2}]
    assert (await sk.messages("resumable")).total == 0  # the third attempt returned: acked
    assert mid


async def _nacked(sk: AsyncClient, mid: str) -> Message | None:
    message = await sk.message(mid)
    return message if message.status == "pending" and message.retry_count == 1 else None


async def test_stopping_releases_prefetched_messages_at_once(sk: AsyncClient) -> None:
    """A consumer holding 10 prefetched messages behind one slow handler stops: the 10 are released at once, so
    another consumer takes them right away, not after their 30 s leases."""
    await sk.send_batch("handoff", [f"m{n}" for n in range(11)])
    started = asyncio.Event()

    async def handle(message: Message) -> None:
        started.set()
        await asyncio.sleep(1)

    consumer = sk.consumer(
        "handoff", handle, concurrency=1, prefetch=10, visibility_timeout=30, wait_seconds=1, handle_signals=False
    )
    task = await _run(consumer)
    await asyncio.wait_for(started.wait(), 10)
    consumer.stop()
    await task
    assert consumer.handled == 1  # the running handler finished within the grace period
    taken = await sk.receive("handoff", 20)
    assert len(taken) == 10
    assert all(m.last_error and m.last_error.startswith("released") for m in taken)


async def test_a_handler_past_the_grace_period_is_cancelled_and_released(sk: AsyncClient) -> None:
    await sk.send("stuck", b"x")
    started = asyncio.Event()

    async def handle(message: Message) -> None:
        started.set()
        await asyncio.sleep(60)

    consumer = sk.consumer("stuck", handle, grace_period=0.5, wait_seconds=1, handle_signals=False)
    task = await _run(consumer)
    await asyncio.wait_for(started.wait(), 10)
    consumer.stop()
    await asyncio.wait_for(task, 5)
    [again] = await sk.receive("stuck")
    assert again.last_error is not None and "grace period" in again.last_error


async def test_a_lost_lease_is_never_acked(sk: AsyncClient) -> None:
    """The handler outlives its lease without extensions (the keeper is kept from running): another consumer takes
    the message, and the first one's ack is refused rather than deleting the other's lease."""
    mid = await sk.send("lost", b"x")
    started, release = asyncio.Event(), asyncio.Event()

    async def handle(message: Message) -> None:
        started.set()
        await release.wait()

    consumer = sk.consumer("lost", handle, prefetch=0, visibility_timeout=1, wait_seconds=1, handle_signals=False)
    consumer._keep_leases = _never  # type: ignore[method-assign]
    task = await _run(consumer)
    await asyncio.wait_for(started.wait(), 10)
    retaken = await eventually(lambda: sk.receive("lost", visibility_timeout=30), timeout=15, what="the lapse")
    assert retaken[0].id == mid and retaken[0].retry_count == 1
    release.set()
    await eventually(lambda: consumer.handled == 1, what="the handler returned")
    consumer.stop()
    await task
    message = await sk.message(mid)
    assert message.status == "processing" and message.receipt is None  # still the second consumer's


async def _never() -> None:
    await asyncio.Event().wait()


async def test_a_batch_handler_gets_lists(sk: AsyncClient) -> None:
    await sk.send_batch("bulk", [f"m{n}" for n in range(45)])
    sizes: list[int] = []

    async def handle(messages: list[Message]) -> None:
        sizes.append(len(messages))

    consumer = sk.batch_consumer("bulk", handle, batch_size=20, wait_seconds=1, handle_signals=False)
    task = await _run(consumer)
    await eventually(lambda: sum(sizes) >= 45, what="45 handled")
    consumer.stop()
    await task
    assert sum(sizes) == 45 and max(sizes) <= 20
    assert (await sk.messages("bulk")).total == 0


class Order(msgspec.Struct):
    order_id: int
    amount: float


async def test_a_typed_handler_gets_models_and_undecodable_payloads_go_the_dlq_path(sk: AsyncClient) -> None:
    await sk.set_topic_config("orders", max_retries=1)
    await sk.send("orders", {"order_id": 7, "amount": 9.5})
    bad = await sk.send("orders", b"not json at all")
    orders: list[Order] = []

    async def handle(order: Order) -> None:
        orders.append(order)

    consumer = sk.consumer("orders", handle, model=Order, wait_seconds=1, handle_signals=False)
    task = await _run(consumer)
    dead = await eventually(lambda: _dlq(sk, "orders"), what="the undecodable message's dead letter")
    consumer.stop()
    await task
    assert orders == [Order(7, 9.5)]
    assert dead.id == bad and dead.last_error is not None and dead.last_error.startswith("undecodable payload")


async def test_middleware_sees_each_call(sk: AsyncClient) -> None:
    await sk.send_batch("hooks", [b"ok", b"fail"])
    events: list[str] = []

    class Record(Middleware):
        async def before(self, subject: Any) -> None:
            events.append(f"before {subject.text()}")

        def after(self, subject: Any, result: Any) -> None:
            events.append(f"after {subject.text()} {result}")

        def on_error(self, subject: Any, error: BaseException) -> None:
            events.append(f"error {subject.text()} {error}")

    async def handle(message: Message) -> str:
        if message.payload == b"fail":
            raise RuntimeError("no")
        return "done"

    consumer = sk.consumer("hooks", handle, middleware=[Record()], wait_seconds=1, handle_signals=False)
    task = await _run(consumer)
    await eventually(lambda: len(events) >= 4, what="four hook calls")
    consumer.stop()
    await task
    assert set(events) == {"after ok done", "before fail", "before ok", "error fail no"}  # "fail" may be retried


async def test_prometheus_counters(sk: AsyncClient) -> None:
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    await sk.send_batch("counted", [b"a", b"b", b"c"])
    consumer = sk.consumer("counted", _noop, metrics=registry, wait_seconds=1, handle_signals=False)
    task = await _run(consumer)
    labels = {"topic": "counted", "outcome": "acked"}
    await eventually(lambda: registry.get_sample_value("skiplock_client_messages_total", labels) == 3)
    consumer.stop()
    await task
    assert registry.get_sample_value("skiplock_client_handler_seconds_count", {"topic": "counted"}) == 3


async def _noop(message: Message) -> None:
    return None


CRASHING_CONSUMER = """
import asyncio, os, sys
from skiplock_client import AsyncClient

async def main():
    async with AsyncClient(sys.argv[1], auth=(sys.argv[2], sys.argv[3]), tenant=sys.argv[4]) as sk:
        async def handle(message):
            print("handling", message.id, flush=True)
            await asyncio.sleep(3600)
        await sk.consumer("crash", handle, concurrency=5, visibility_timeout=2, wait_seconds=1).run()

asyncio.run(main())
"""


async def test_a_crashed_consumers_messages_come_back(server: Server, tenant: Tenant, sk: AsyncClient) -> None:
    ids = set(await sk.send_batch("crash", [f"m{n}" for n in range(5)]))
    process = subprocess.Popen(
        [sys.executable, "-c", CRASHING_CONSUMER, server.base_url, *ADMIN, tenant.slug],
        stdout=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        handling = {process.stdout.readline().split()[1].decode() for _ in range(5)}
        assert handling == ids
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        if process.stdout is not None:
            process.stdout.close()
    await eventually(lambda: _pending(sk, "crash", 5), timeout=15, what="the leases to lapse")
    back = await sk.receive("crash", 10)
    assert {m.id for m in back} == ids and all(m.retry_count == 1 for m in back)


async def _pending(sk: AsyncClient, topic: str, n: int) -> bool:
    """Lapsed leases read as pending."""
    return (await sk.messages(topic, status="pending")).total == n


async def test_consumer_runtimes_of_three_groups_each_handle_every_message_once(sk: AsyncClient) -> None:
    """Fan-out through the client: one runtime per consumer group, each sees all 120 messages once; the messages
    go once every group acked them."""
    groups = ("billing", "shipping", "audit")
    for name in groups:
        made = await sk.create_consumer_group("fanned", name)
        assert made.consumer_group == name and made.start == "latest"
    assert [g.consumer_group for g in await sk.consumer_groups("fanned")] == list(groups)
    ids = await sk.send_batch("fanned", [f"m{n}" for n in range(120)])
    seen: dict[str, list[str]] = {name: [] for name in groups}

    def handler(name: str) -> Any:
        async def handle(message: Message) -> None:
            seen[name].append(message.id)

        return handle

    runtimes = [
        sk.consumer("fanned", handler(name), concurrency=4, wait_seconds=1, handle_signals=False, consumer_group=name)
        for name in groups
    ]
    tasks = [await _run(r) for r in runtimes]
    await eventually(lambda: all(len(seen[n]) >= 120 for n in groups), what="every group handled every message")
    for r in runtimes:
        r.stop()
    await asyncio.gather(*tasks)
    assert all(sorted(seen[n]) == sorted(ids) for n in groups)
    assert (await sk.messages("fanned")).total == 0
    stats = {g.consumer_group: g for g in await sk.consumer_groups("fanned")}
    assert all(stats[n].pending == 0 and stats[n].processing == 0 for n in groups)
    await sk.delete_consumer_group("fanned", "audit")
    assert [g.consumer_group for g in await sk.consumer_groups("fanned")] == ["billing", "shipping"]
