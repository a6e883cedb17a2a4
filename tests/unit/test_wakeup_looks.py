"""`WakeupHub`'s standing empty looks: an empty look stands for the instance's next polls of its topic until its
due time, at most `EMPTY_LOOK_SECONDS`, and stops at once when a message may be there that no waiter was woken for."""

from __future__ import annotations

import asyncio
from typing import Any

from mq.queue.wakeups import EMPTY_LOOK_SECONDS, EVERYONE, WakeupHub


def _hub() -> WakeupHub:
    hub = WakeupHub(listener=None)  # type: ignore[arg-type] (nothing here listens or notifies)
    hub._flush_wanted.set = lambda: None  # type: ignore[method-assign] (no outbox sender runs)
    return hub


def _run(test: Any) -> None:
    asyncio.run(test())


def test_an_empty_look_stands_until_its_due_time_at_most_a_moment() -> None:
    async def test() -> None:
        hub, now = _hub(), asyncio.get_running_loop().time()
        assert hub.empty_until(1, "orders", now) is None
        hub.found_empty(hub.looking(1, "orders"), now + 60)
        until = hub.empty_until(1, "orders", now)
        assert until is not None and now < until <= now + EMPTY_LOOK_SECONDS + 0.01
        hub.found_empty(hub.looking(1, "orders"), now + 0.001)  # something is due sooner: only until then
        assert hub.empty_until(1, "orders", now) == now + 0.001
        assert hub.empty_until(1, "orders", now + 0.002) is None
        assert hub.empty_until(2, "orders", now) is None  # another tenant's topic of the same name
        assert hub.empty_until(1, "other", now) is None

    _run(test)


def test_a_wake_up_every_message_of_which_woke_a_waiter_leaves_it_standing() -> None:
    async def test() -> None:
        hub, now = _hub(), asyncio.get_running_loop().time()
        with hub.waiter(1, "orders") as first, hub.waiter(1, "orders") as second:
            hub.found_empty(hub.looking(1, "orders"), now + 60)
            hub.published(1, {"orders": 1})  # the first waiter takes it
            assert first.is_set() and not second.is_set()
            assert hub.empty_until(1, "orders", now) is not None
            hub.published(1, {"orders": 2})  # one woken for, one left over: the next polls must look
            assert hub.empty_until(1, "orders", now) is None
            first.clear()
            second.clear()
            hub.found_empty(hub.looking(1, "orders"), now + 60)
            hub.published(1, ["orders"])  # everyone (a resume, a config change)
            assert hub.empty_until(1, "orders", now) is None

    _run(test)


def test_a_look_a_wake_up_overtook_does_not_stand() -> None:
    async def test() -> None:
        hub, now = _hub(), asyncio.get_running_loop().time()
        look = hub.looking(1, "orders")
        hub.published(1, {"orders": 1})  # no waiter: the message is there for whoever looks
        hub.found_empty(look, now + 60)  # (its lease ran before the message committed)
        assert hub.empty_until(1, "orders", now) is None

    _run(test)


def test_a_wake_up_a_leaving_waiter_did_not_use_ends_it() -> None:
    async def test() -> None:
        hub, now = _hub(), asyncio.get_running_loop().time()
        with hub.waiter(1, "orders"):
            hub.found_empty(hub.looking(1, "orders"), now + 60)
            hub.published(1, {"orders": 1})
            assert hub.empty_until(1, "orders", now) is not None
        assert hub.empty_until(1, "orders", now) is None  # it left with the wake-up: nobody took that message

    _run(test)


def test_a_reconnect_ends_every_look() -> None:
    async def test() -> None:
        hub, now = _hub(), asyncio.get_running_loop().time()
        hub.found_empty(hub.looking(1, "orders"), now + 60)
        hub._received("1:orders")  # another instance's resume: every waiter, and the look
        assert hub.empty_until(1, "orders", now) is None
        hub.found_empty(hub.looking(1, "orders"), now + 60)
        hub._wake_all()  # the listener reconnected: notifications may have been missed
        assert hub.empty_until(1, "orders", now) is None
        assert EVERYONE > 1

    _run(test)
