"""`consumer()` and `batch_consumer()`, on both clients, take the consumer runtime's parameters by name, with its
defaults, types and docs, so that an editor or a type checker sees them (they were `**options`); so does the
blocking `Client` take `AsyncClient`'s."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest
from skiplock_client import AsyncClient, Client
from skiplock_client.consumer import Consumer


def _options(function: Callable[..., Any]) -> dict[str, tuple[Any, Any]]:
    """Keyword-only parameters: name -> (default, annotation as written)."""
    parameters = inspect.signature(function).parameters.values()
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in parameters), function
    return {p.name: (p.default, p.annotation) for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}


RUNTIME = _options(Consumer.__init__)
BATCH_RUNTIME = {name: option for name, option in RUNTIME.items() if name != "batch"}  # batch_consumer sets it


def test_the_runtime_has_options() -> None:
    assert {"concurrency", "prefetch", "visibility_timeout", "handle_signals"} <= set(RUNTIME)


@pytest.mark.parametrize("method", [AsyncClient.consumer, Client.consumer], ids=["async", "sync"])
def test_consumer_takes_the_runtimes_parameters(method: Callable[..., Any]) -> None:
    assert _options(method) == RUNTIME


@pytest.mark.parametrize("method", [AsyncClient.batch_consumer, Client.batch_consumer], ids=["async", "sync"])
def test_batch_consumer_takes_the_runtimes_parameters_but_batch(method: Callable[..., Any]) -> None:
    assert _options(method) == BATCH_RUNTIME


@pytest.mark.parametrize(
    "function", [Consumer.__init__, AsyncClient.consumer, Client.consumer], ids=["runtime", "async", "sync"]
)
def test_every_parameter_is_documented(function: Callable[..., Any]) -> None:
    documented = set(re.findall(r"`(\w+)`", inspect.getdoc(function) or ""))
    assert set(RUNTIME) - documented == set()


def test_the_blocking_client_takes_the_async_clients_parameters() -> None:
    assert _options(Client.__init__) == _options(AsyncClient.__init__)
    assert set(_options(Client.__init__)) >= {"auth", "tenant", "timeout", "retry", "batch_size"}
