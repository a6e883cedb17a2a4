"""`consumer()` and `batch_consumer()`, on both clients, take the consumer runtime's options by name and type
(`**options: Unpack[ConsumerOptions]`, PEP 692), so that an editor or a type checker sees them; the options'
TypedDicts are exactly `Consumer`'s keyword parameters, whose defaults and documentation are the one place they
are written. The blocking `Client` takes `AsyncClient`'s parameters the same way (`ClientOptions`)."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

import pytest
from skiplock_client import AsyncClient, Client
from skiplock_client.client import ClientOptions
from skiplock_client.consumer import BatchConsumerOptions, Consumer, ConsumerOptions


def _options(function: Callable[..., Any]) -> dict[str, tuple[Any, Any]]:
    """Keyword-only parameters: name -> (default, annotation as written)."""
    parameters = inspect.signature(function).parameters.values()
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in parameters), function
    return {p.name: (p.default, p.annotation) for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}


RUNTIME = _options(Consumer.__init__)
RUNTIME_TYPES = {name: hint for name, hint in typing.get_type_hints(Consumer.__init__).items() if name in RUNTIME}


def test_the_runtime_has_options() -> None:
    assert {"concurrency", "prefetch", "visibility_timeout", "handle_signals"} <= set(RUNTIME)


def test_the_options_are_the_runtimes_parameters() -> None:
    assert typing.get_type_hints(ConsumerOptions) == RUNTIME_TYPES
    batch = {name: hint for name, hint in RUNTIME_TYPES.items() if name != "batch"}  # batch_consumer sets it
    assert typing.get_type_hints(BatchConsumerOptions) == batch


@pytest.mark.parametrize(
    ("method", "options"),
    [
        (AsyncClient.consumer, ConsumerOptions),
        (Client.consumer, ConsumerOptions),
        (AsyncClient.batch_consumer, BatchConsumerOptions),
        (Client.batch_consumer, BatchConsumerOptions),
    ],
    ids=["async", "sync", "async-batch", "sync-batch"],
)
def test_each_method_takes_them_typed(method: Callable[..., Any], options: type) -> None:
    parameters = list(inspect.signature(method).parameters.values())
    assert parameters[-1].kind is inspect.Parameter.VAR_KEYWORD
    assert typing.get_type_hints(method)[parameters[-1].name] == typing.Unpack[options]  # type: ignore[valid-type]
    assert [p.name for p in parameters[:-1]] == ["self", "topic", "handler"]


def test_every_option_is_documented() -> None:
    documented = set(re.findall(r"`(\w+)`", inspect.getdoc(Consumer.__init__) or ""))
    assert set(RUNTIME) - documented == set()


def test_the_blocking_client_takes_the_async_clients_parameters() -> None:
    hints = typing.get_type_hints(AsyncClient.__init__)
    keywords = {name: hints[name] for name in _options(AsyncClient.__init__)}
    assert typing.get_type_hints(ClientOptions) == keywords
    assert set(keywords) >= {"auth", "tenant", "timeout", "retry", "batch_size"}
    parameters = list(inspect.signature(Client.__init__).parameters.values())
    assert [p.name for p in parameters[:-1]] == ["self", "base_url"]
    assert typing.get_type_hints(Client.__init__)[parameters[-1].name] == typing.Unpack[ClientOptions]
