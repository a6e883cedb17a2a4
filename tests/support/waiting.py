"""Waiting for something observable instead of for a fixed time: poll until it holds, fail with what was seen."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(check: Callable[[], T], *, timeout: float = 10, interval: float = 0.05, what: str = "") -> T:
    """Call `check` until it returns something truthy (returned), or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what or check!r} (last: {value!r})")
        time.sleep(interval)


async def eventually(
    check: Callable[[], Awaitable[T] | T], *, timeout: float = 10, interval: float = 0.05, what: str = ""
) -> T:
    """Call (and await, if it is a coroutine) `check()` until it returns something truthy (returned), or fail after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        value: T = await result if inspect.isawaitable(result) else result  # type: ignore[assignment]
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what or check!r} (last: {value!r})")
        await asyncio.sleep(interval)
