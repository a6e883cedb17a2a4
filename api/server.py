"""Serving the app over HTTP: uvicorn with Skiplock's protocol guards, proxy rules and graceful shutdown.

The process that calls this (`skiplock.cli`) decides what the app hosts beside the API and which servers it needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

import uvicorn
from litestar.types import ASGIApp

from api.http_protocol import GuardedHttpProtocol
from mq.settings import Settings


class _Server(uvicorn.Server):
    """Uvicorn re-raises a captured SIGTERM after shutting down, which would kill this process before it stops
    the embedded servers; here a signal only asks for a graceful shutdown and the caller returns normally."""

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


_UVICORN_OPTIONS: dict[str, Any] = {
    "access_log": False,
    "loop": "uvloop",
    "http": GuardedHttpProtocol,  # httptools, with header size and time limits
    "lifespan": "on",
    "timeout_graceful_shutdown": 25,
    "log_config": None,  # logging is configured once for the process (mq.logs), uvicorn's loggers included
}


def _connection_options(settings: Settings) -> dict[str, Any]:
    """X-Forwarded-For and X-Forwarded-Proto are believed from `trusted_proxies` only: they set the client address
    (login limiting) and the scheme (the session cookie's Secure flag behind a TLS-terminating proxy). Idle
    kept-alive connections stay `keep_alive_seconds` (uvicorn's 5 s default races clients that reuse them)."""
    return {
        "proxy_headers": True,
        "forwarded_allow_ips": settings.trusted_proxies,
        "timeout_keep_alive": settings.keep_alive_seconds,
    }


async def serve(settings: Settings, app: ASGIApp) -> None:
    """Serve `app` until SIGTERM or Ctrl-C; exits the process with 1 when the server could not start."""
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        **_connection_options(settings),
        **_UVICORN_OPTIONS,
    )
    server = _Server(config)
    await server.serve()

    if server.should_exit and not server.started:
        sys.exit(1)


def serve_processes(settings: Settings, app_factory: str) -> None:
    """`settings.workers` server processes on one port, each building its app with `app_factory`
    ("module:function", reading its settings from the environment). Blocks until they stop."""
    uvicorn.run(
        app_factory,
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level=settings.log_level.lower(),
        **_connection_options(settings),
        **_UVICORN_OPTIONS,
    )
