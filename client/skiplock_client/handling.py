"""What a handler of the consumer runtime can use, and what watches it: `Retry` (nack with a delay of the handler's
choosing), `Middleware` (hooks around each call) and the optional Prometheus counters."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import Any


class Retry(Exception):
    """Raise or return from a handler to nack its message with this delay (seconds) instead of the topic's
    backoff. `metadata` is saved state: merged into the message's metadata, so the next attempt sees it (a deferral
    that remembers how far it got)."""

    def __init__(
        self, delay: float | None = None, reason: str = "retry requested", *, metadata: dict[str, Any] | None = None
    ) -> None:
        super().__init__(reason)
        self.delay = delay
        self.metadata = metadata


class Middleware:
    """Hooks around each handler call (`subject` is a message, or a list of them for a batch handler). Override
    what you need; each may be a plain or an async method. An exception from `before` fails the message."""

    def before(self, subject: Any) -> Awaitable[None] | None:
        return None

    def after(self, subject: Any, result: Any) -> Awaitable[None] | None:
        return None

    def on_error(self, subject: Any, error: BaseException) -> Awaitable[None] | None:
        return None


class Counters:
    """Optional Prometheus counters (`metrics=` a registry, or True for the default one)."""

    def __init__(self, registry: Any) -> None:
        from prometheus_client import REGISTRY, Counter, Histogram  # noqa: PLC0415 - an optional dependency

        registry = REGISTRY if registry is True else registry
        self.outcomes = Counter(
            "skiplock_client_messages",
            "Messages this consumer finished, by outcome: acked, retry, dlq, failed, released, lease_lost",
            ["topic", "outcome"],
            registry=registry,
        )
        self.seconds = Histogram("skiplock_client_handler_seconds", "Handler durations", ["topic"], registry=registry)


async def maybe_await(value: Any) -> Any:
    """A hook's result, awaited if it is awaitable (hooks may be plain or async)."""
    return await value if inspect.isawaitable(value) else value
