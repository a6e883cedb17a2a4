"""The blocking `Client` (one event loop in one background thread, shared by calling threads), sessions, and the
admin calls."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from skiplock_client import AsyncClient, Client, Forbidden, Message, NotFound, Quotas, Unauthorized

from tests.support.servers import ADMIN, Server
from tests.support.tenants import Tenant
from tests.support.waiting import wait_until


def test_the_sync_client_sends_receives_and_acks_from_many_threads(server: Server, tenant: Tenant) -> None:
    def loops() -> int:  # the client's threads (others of the session's may start or end meanwhile)
        return sum(t.name == "skiplock-client" for t in threading.enumerate())

    loops_before = loops()
    with Client(server.base_url, auth=ADMIN, tenant=tenant.slug) as client:
        assert loops() == loops_before + 1  # one loop thread, whatever the number of calls
        with ThreadPoolExecutor(8) as pool:
            ids = list(pool.map(lambda n: client.send("sync", f"m{n}"), range(40)))
        assert len(set(ids)) == 40
        got = client.receive("sync", 100)
        assert {m.id for m in got} == set(ids)
        answer = client.ack_batch(got[:30])
        assert answer.acked == 30 and answer.failed == []
        for message in got[30:]:
            client.ack(message)
        assert client.messages("sync").total == 0
        assert loops() == loops_before + 1
    assert loops() == loops_before


def test_a_sync_consumer_runs_plain_handlers_in_threads(server: Server, tenant: Tenant) -> None:
    with Client(server.base_url, auth=ADMIN, tenant=tenant.slug) as client:
        client.send_batch("threads", [f"m{n}" for n in range(30)])
        names: set[str] = set()
        seen: list[str] = []

        def handle(message: Message) -> None:
            names.add(threading.current_thread().name)
            seen.append(message.text())

        consumer = client.consumer("threads", handle, concurrency=4, wait_seconds=1)
        runner = threading.Thread(target=consumer.run_forever)
        runner.start()
        wait_until(lambda: len(seen) >= 30, what="30 handled")
        consumer.stop()
        runner.join(10)
        assert not runner.is_alive()
        assert sorted(seen) == sorted(f"m{n}" for n in range(30))
        assert all(name.startswith("skiplock-threads") for name in names)
        assert client.messages("threads").total == 0


async def test_a_session_replaces_basic_credentials(server: Server, make_user, tenant: Tenant) -> None:  # type: ignore[no-untyped-def]
    username, password = await make_user("tenant_admin", tenant)
    async with AsyncClient(server.base_url, auth=(username, password)) as sk:
        await sk.login()
        assert (await sk.me()).username == username
        await sk.send("session", b"x")  # an unsafe request: the CSRF token goes with it
        await sk.logout()
        assert (await sk.me()).username == username  # back on Basic credentials
    async with AsyncClient(server.base_url, auth=(username, "wrong password!")) as sk:
        with pytest.raises(Unauthorized):
            await sk.me()


async def test_admin_calls(server: Server, sk: AsyncClient) -> None:
    await sk.set_topic_config("admin", max_retries=2, max_depth=50, retry_backoff_seconds=[0])
    assert (await sk.topic_config("admin")).max_depth == 50
    assert [c.topic for c in await sk.topic_configs()] == ["admin"]
    await sk.send("admin", b"b")
    [m] = await sk.receive("admin")
    assert await sk.nack(m, "no") == "retry"
    [m] = await sk.receive("admin")
    assert await sk.nack(m, "no") == "dlq"
    assert await sk.requeue_all("admin") == 1
    first = await sk.send("admin", b"a", key="k")
    topics = {t.topic: t for t in await sk.topics()}
    assert topics["admin"].pending == 2 and topics["admin"].config is not None
    assert {(r.topic, r.status, r.count) for r in await sk.stats()} == {("admin", "pending", 2)}
    assert await sk.delete_by_key("admin", "k") == 1
    with pytest.raises(NotFound):
        await sk.message(first)
    assert await sk.purge("admin") == 1
    await sk.delete_topic_config("admin")
    assert await sk.topic_configs() == []

    slug = f"c-{uuid.uuid4().hex[:8]}"
    async with AsyncClient(server.base_url, auth=ADMIN) as platform:
        tenant = await platform.create_tenant(slug, "Client tenant", Quotas(max_topics=3))
        assert tenant.quotas.max_topics == 3
        assert (await platform.update_tenant(slug, status="suspended")).status == "suspended"
        assert (await platform.tenant_info(slug)).name == "Client tenant"
        await platform.update_tenant(slug, status="active")
    async with AsyncClient(server.base_url, auth=ADMIN, tenant=slug) as admin:
        user = await admin.create_user(f"member-{slug}", "a long enough password")
        grant = await admin.grant(user.id, "produce", "orders.*")
        assert [g.topic_pattern for g in await admin.grants(user.id)] == ["orders.*"]
        async with AsyncClient(server.base_url, auth=(user.username, "a long enough password")) as member:
            await member.send("orders.eu", b"x")
            with pytest.raises(Forbidden):
                await member.send("refunds", b"x")
        await admin.revoke(user.id, grant.id)
        assert (await admin.users()).total == 1
        await admin.delete_user(user.id)
    async with AsyncClient(server.base_url, auth=ADMIN) as platform:
        await platform.delete_tenant(slug, force=True)
        with pytest.raises(NotFound):
            await platform.tenant_info(slug)


async def test_audit_trail_and_attempts_from_the_client(sk: AsyncClient) -> None:
    topic = f"audit-{uuid.uuid4().hex[:8]}"
    await sk.set_topic_config(topic, max_retries=5)
    message_id = await sk.send(topic, b"x")
    (leased,) = await sk.receive(topic)
    await sk.nack(leased, error="not yet")
    attempts = (await sk.message(message_id)).attempts
    assert [(a.attempt, a.outcome, a.error) for a in attempts] == [(1, "nacked", "not yet")]
    page = await sk.audit(action="topic_config.", topic=topic)
    assert [(e.action, e.target) for e in page.items] == [("topic_config.update", topic)]
    assert page.items[0].details is not None and page.items[0].details["max_retries"] == 5
    assert page.next_cursor is None
