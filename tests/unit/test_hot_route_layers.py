"""The hot routes apply every layer the framework would (issue 41): each hot route's handler in the app has no
guard, dependency, hook, middleware or body limit of its own that the lean path skips, the app's middleware is
the list the lean path mirrors, and a layer added to either stops the server from starting."""

from __future__ import annotations

from typing import Any

import pytest

from api.app import create_app
from api.hot_routes import _ACK, _ROUTES, HotRoutes, mirrored_layers
from mq.settings import Settings

SETTINGS = Settings(database_url="postgresql://unused")
# Litestar's notes on handler signatures, shown once when a server starts
pytestmark = pytest.mark.filterwarnings("ignore::litestar.exceptions.LitestarDeprecationWarning")


def _app() -> Any:
    return create_app(SETTINGS)


def _handlers(app: Any) -> list[Any]:
    paths = [route.sample_path for route in [*_ROUTES.values(), _ACK]]
    return [app.asgi_router.handle_routing(path=path, method="POST")[1] for path in paths]


def test_every_hot_route_applies_every_layer_of_the_app() -> None:
    app = _app()
    handlers = _handlers(app)
    assert len(handlers) == 5
    for handler in handlers:
        assert mirrored_layers(app, handler) == []
    hot = HotRoutes(app, SETTINGS)
    # the lean path answers with the app's status and decodes the app's body type
    assert [r.status for r in hot._routes.values()] + [hot._ack.status] == [h.status_code for h in handlers]


async def _guard(connection: Any, handler: Any) -> None:
    return None


@pytest.mark.parametrize("change", ["a guard on the app", "a middleware", "a hook on the handler"])
def test_a_layer_the_hot_path_does_not_apply_stops_the_server(change: str) -> None:
    app = _app()
    handler = _handlers(app)[0]
    if change == "a guard on the app":
        app.guards.append(_guard)
    elif change == "a middleware":
        app.middleware.append(type("Audit", (), {}))
    else:
        handler.before_request = _guard
    assert mirrored_layers(app, handler) != []
    with pytest.raises(RuntimeError, match="would skip"):
        HotRoutes(app, SETTINGS)


def test_the_benchmarks_auth_less_server_starts() -> None:
    """`bench.noauth` swaps the authentication middleware; the hot path applies the swapped check (`make bench`'s
    auth part runs it)."""
    from bench.noauth import FixedPrincipal, fixed_principal

    hot = HotRoutes(create_app(SETTINGS, auth_middleware=FixedPrincipal), SETTINGS, auth=FixedPrincipal)
    assert hot._authenticate is fixed_principal
