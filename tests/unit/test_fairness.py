"""TenantGate: one tenant's batch statements are capped while another tenant is active, never while it is alone."""

from __future__ import annotations

import asyncio

import pytest

from mq.queue.fairness import ACTIVE_SECONDS, TenantGate


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _running_at_once(gate: TenantGate, tenant: int, statements: int) -> int:
    """How many of `statements` concurrent blocks of `tenant` were inside the gate at the same time, at most."""
    inside, most = 0, 0
    release = asyncio.Event()

    async def statement() -> None:
        nonlocal inside, most
        async with gate.slot(tenant):
            inside += 1
            most = max(most, inside)
            await release.wait()
            inside -= 1

    tasks = [asyncio.create_task(statement()) for _ in range(statements)]
    for _ in range(5):
        await asyncio.sleep(0)
    release.set()
    await asyncio.gather(*tasks)
    return most


async def test_a_tenant_alone_is_not_capped() -> None:
    gate = TenantGate(1, Clock())
    assert await _running_at_once(gate, tenant=1, statements=6) == 6


async def test_a_tenant_is_capped_while_another_is_active_and_every_statement_runs() -> None:
    clock = Clock()
    gate = TenantGate(2, clock)
    gate.seen(2)  # tenant 2's single enqueue, a moment ago
    clock.now += ACTIVE_SECONDS / 2
    assert await _running_at_once(gate, tenant=1, statements=6) == 2
    assert not gate._semaphores and not gate._users  # nothing kept once idle


async def test_the_cap_lifts_once_the_other_tenant_has_gone_quiet() -> None:
    clock = Clock()
    gate = TenantGate(1, clock)
    gate.seen(2)
    clock.now += ACTIVE_SECONDS + 0.1
    assert await _running_at_once(gate, tenant=1, statements=4) == 4


async def test_the_other_tenant_is_seen_behind_the_latest_one() -> None:
    """Tenant 1's own statements are the latest; tenant 2, seen just before, still counts as active."""
    clock = Clock()
    gate = TenantGate(1, clock)
    gate.seen(2)
    gate.seen(1)
    gate.seen(1)
    assert gate.others_active(1)
    assert gate.others_active(2)
    assert gate.others_active(3)  # 1 and 2 are both others for 3


async def test_zero_means_no_cap() -> None:
    gate = TenantGate(0, Clock())
    gate.seen(2)
    assert await _running_at_once(gate, tenant=1, statements=5) == 5


async def test_a_cancelled_waiter_does_not_leak_its_slot() -> None:
    clock = Clock()
    gate = TenantGate(1, clock)
    gate.seen(2)
    holding = asyncio.Event()
    release = asyncio.Event()

    async def holder() -> None:
        async with gate.slot(1):
            holding.set()
            await release.wait()

    first = asyncio.create_task(holder())
    await holding.wait()
    waiter = asyncio.create_task(_enter(gate, 1))
    await asyncio.sleep(0)
    waiter.cancel()
    release.set()
    await first
    assert await asyncio.wait_for(_enter(gate, 1), 1) is None
    assert not gate._semaphores and not gate._users


async def _enter(gate: TenantGate, tenant: int) -> None:
    async with gate.slot(tenant):
        return


def test_the_default_enqueue_rate_applies_only_while_another_tenant_is_active() -> None:
    clock = Clock()
    gate = TenantGate(1, clock, enqueue_rate=100)
    assert all(gate.enqueue_wait(1, 1000) == 0 for _ in range(5))  # alone: nothing counted
    gate.seen(2)
    assert gate.enqueue_wait(1, 60) == 0 and gate.enqueue_wait(1, 60) == 0  # a second's worth, then 20 owed
    assert gate.enqueue_wait(1, 1) == pytest.approx(0.2)  # until the debt is paid at 100 per second
    clock.now += 0.1
    assert gate.enqueue_wait(1, 1) == pytest.approx(0.1)
    clock.now += 0.6
    assert gate.enqueue_wait(1, 40) == 0
    assert gate.enqueue_wait(2, 100) == 0  # the other tenant has a rate of its own
    clock.now += ACTIVE_SECONDS + 0.1
    gate.seen(1)
    assert gate.enqueue_wait(1, 1000) == 0  # tenant 2 went quiet: tenant 1 is alone again


def test_no_enqueue_rate_counts_nothing() -> None:
    gate = TenantGate(1, Clock(), enqueue_rate=0)
    gate.seen(2)
    assert all(gate.enqueue_wait(1, 1000) == 0 for _ in range(5))
