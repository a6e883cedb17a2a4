"""`python -m api` (what `make run` calls): start embedded servers if needed, migrate, bootstrap, serve.

SIGTERM or Ctrl-C stops the HTTP server gracefully, then the embedded servers: nothing is left running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

import uvicorn
import uvloop
from litestar import Litestar

from api.app import create_app
from api.http_protocol import GuardedHttpProtocol
from mq.db.embedded import EmbeddedPostgres, EmbeddedRedis
from mq.db.engine import migrate
from mq.logs import configure_logging
from mq.settings import DEFAULT_ADMIN_PASSWORD, Settings, get_settings

log = logging.getLogger("skiplock")


class _Server(uvicorn.Server):
    """Uvicorn re-raises a captured SIGTERM after shutting down, which would kill this process before it stops
    the embedded servers; here a signal only asks for a graceful shutdown and `main` exits normally."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.handle_exit, sig, None)
        try:
            yield
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Stop accepting; and from the first signal on, long polls answer at once (empty), so that in-flight
        requests finish within the graceful shutdown instead of holding it for up to 20 s."""
        super().handle_exit(sig, frame)
        runtime = getattr(getattr(self.config.app, "state", None), "runtime", None)
        if runtime is not None:
            runtime.wakeups.stop_waiting()


def main() -> None:
    settings = get_settings()
    configure_logging(settings.log_level, settings.log_format)
    embedded: list[EmbeddedPostgres | EmbeddedRedis] = []
    try:
        settings = _with_embedded_servers(settings, embedded)
        if settings.migrate_on_start:
            assert settings.database_url is not None
            migrate(settings.database_url)
        _announce(settings)
        if settings.workers > 1:
            _serve_workers(settings)
        else:
            uvloop.run(serve(settings))  # uvicorn's loop option only applies when uvicorn makes the loop
    finally:
        for server in reversed(embedded):
            server.stop()
        if embedded:
            log.info("embedded servers stopped")


def _with_embedded_servers(settings: Settings, started: list[EmbeddedPostgres | EmbeddedRedis]) -> Settings:
    updates: dict[str, str] = {}
    data_dir = settings.data_dir.resolve()
    if not settings.database_url:
        pg = EmbeddedPostgres(data_dir / "postgres")
        started.append(pg)
        updates["database_url"] = pg.start()
    if not settings.redis_url:
        redis = EmbeddedRedis(data_dir / "redis")
        started.append(redis)
        updates["redis_url"] = redis.start()
    return settings.model_copy(update=updates) if updates else settings


_UVICORN_OPTIONS: dict[str, Any] = {
    "access_log": False,
    "loop": "uvloop",
    "http": GuardedHttpProtocol,  # httptools, with header size and time limits
    "lifespan": "on",
    "timeout_graceful_shutdown": 25,
    "log_config": None,  # logging is configured once for the process (mq.logs), uvicorn's loggers included
}


def _proxy_options(settings: Settings) -> dict[str, Any]:
    """X-Forwarded-For and X-Forwarded-Proto are believed from `trusted_proxies` only: they set the client address
    (login limiting) and the scheme (the session cookie's Secure flag behind a TLS-terminating proxy)."""
    return {"proxy_headers": True, "forwarded_allow_ips": settings.trusted_proxies}


def _announce(settings: Settings) -> None:
    base = f"http://{settings.host}:{settings.port}"
    log.info("Skiplock on %s (OpenAPI at %s/schema); admin user %r", base, base, settings.admin_username)
    if settings.admin_password.get_secret_value() == DEFAULT_ADMIN_PASSWORD:
        log.warning("the platform admin has the default password: for local use only")
    if not settings.on_loopback and settings.metrics_token is None and not settings.metrics_public:
        log.warning(
            "/metrics answers 403 on %s: set SKIPLOCK_METRICS_TOKEN (or SKIPLOCK_METRICS_PUBLIC=true where only "
            "Prometheus can reach the port): it names every tenant's slugs and topics",
            settings.host,
        )


def _serve_workers(settings: Settings) -> None:
    """Several server processes on one port; each reads its settings from the environment, where the embedded
    servers' URLs are put first. This process supervises them and stops the embedded servers last."""
    assert settings.database_url is not None
    os.environ["SKIPLOCK_DATABASE_URL"] = settings.database_url
    if settings.redis_url:
        os.environ["SKIPLOCK_REDIS_URL"] = settings.redis_url
    os.environ["SKIPLOCK_MIGRATE_ON_START"] = "false"
    uvicorn.run(
        "api.app:create_app",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level=settings.log_level.lower(),
        **_proxy_options(settings),
        **_UVICORN_OPTIONS,
    )


async def serve(settings: Settings, app: Litestar | None = None) -> None:
    """Serve `app` (default: the product's) until SIGTERM or Ctrl-C."""
    config = uvicorn.Config(
        app or create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        **_proxy_options(settings),
        **_UVICORN_OPTIONS,
    )
    server = _Server(config)
    await server.serve()

    if server.should_exit and not server.started:
        sys.exit(1)


if __name__ == "__main__":
    main()
