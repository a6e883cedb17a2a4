"""The Litestar application factory."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

from litestar import Litestar
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import ScalarRenderPlugin

from api.auth import AuthMiddleware
from api.deadline import RequestDeadline
from api.errors import EXCEPTION_HANDLERS
from api.input_checks import RequestChecks
from api.observability import ObservabilityMiddleware, stamp_response
from api.openapi import finish_document
from api.routes.admin import AdminController
from api.routes.audit import AuditController
from api.routes.history import MessageLogController
from api.routes.messages import MessageController
from api.routes.schedules import ScheduleController
from api.routes.schemas import TopicSchemaController
from api.routes.session import change_password, login, logout, me, token_login, token_refresh
from api.routes.system import auth_status, healthz, metrics, readyz, version
from api.routes.tenancy import TenantController, UserController
from api.routes.topics import ConsumerGroupController, TopicConfigController, TopicConsoleController, TopicController
from api.schemas import strict_body_names
from api.ui import ConsoleFiles, console_routes
from mq import __version__
from mq.runtime import Runtime
from mq.settings import Settings, get_settings

#: Something that runs beside the API for as long as the app does, on the app's `Runtime` (the scheduled jobs,
#: when the process that serves the API hosts them too: composed by `skiplock.process`, never imported here).
HostedService = Callable[[Runtime], AbstractAsyncContextManager[None]]


def create_app(
    settings: Settings | None = None,
    *,
    hosted: Sequence[HostedService] = (),
    auth_middleware: type[Any] = AuthMiddleware,
) -> Litestar:
    """The API: an app that opens its `Runtime` on startup (the database must be reachable and migrated) and runs
    each of `hosted` on it until shutdown. `auth_middleware` is replaced only by the benchmark, to measure what
    authentication costs."""
    settings = settings or get_settings()
    app = Litestar(
        route_handlers=[
            MessageController,
            TopicController,
            TopicConfigController,
            TenantController,
            UserController,
            AdminController,
            TopicConsoleController,
            ConsumerGroupController,
            MessageLogController,
            TopicSchemaController,
            ScheduleController,
            AuditController,
            healthz,
            readyz,
            metrics,
            version,
            auth_status,
            login,
            token_login,
            token_refresh,
            logout,
            me,
            change_password,
            *console_routes(ConsoleFiles(settings.admin_ui_dir)),
        ],
        lifespan=[_lifespan(settings, hosted, bootstrap_users=True)],
        middleware=[
            ObservabilityMiddleware,
            DefineMiddleware(RequestDeadline, seconds=settings.request_timeout_seconds),
            auth_middleware,
            RequestChecks,  # after authentication: parameters and bodies no request may hold (`api.input_checks`)
        ],
        before_send=[stamp_response],
        exception_handlers=EXCEPTION_HANDLERS,
        request_max_body_size=settings.max_request_body_bytes,
        openapi_config=OpenAPIConfig(
            title="Skiplock",
            version=__version__,
            path="/schema",
            description="Multi-tenant message queue on Postgres. Every /api route but /api/version and "
            "/api/auth/status needs HTTP Basic credentials.",
            render_plugins=[ScalarRenderPlugin()],
        ),
        logging_config=None,  # the process configures logging once (`skiplock.cli`)
        debug=False,
    )
    finish_document(app.openapi_schema, strict_body_names())  # built once here and served as is from then on
    return app


def create_worker_app(settings: Settings, *, hosted: Sequence[HostedService]) -> Litestar:
    """What `skiplock worker` serves on `worker_port` beside its jobs (`hosted`): liveness, readiness and the
    metrics its jobs count, for a probe and a scrape. No other route, no users bootstrapped."""
    return Litestar(
        route_handlers=[healthz, readyz, metrics],
        lifespan=[_lifespan(settings, hosted, bootstrap_users=False)],
        middleware=[ObservabilityMiddleware],
        before_send=[stamp_response],
        exception_handlers=EXCEPTION_HANDLERS,
        openapi_config=None,
        logging_config=None,
        debug=False,
    )


def _lifespan(
    settings: Settings, hosted: Sequence[HostedService], *, bootstrap_users: bool
) -> Callable[[Litestar], AbstractAsyncContextManager[None]]:
    """Opens the app's `Runtime` on startup (the database must be reachable and migrated) and runs each of `hosted`
    on it until shutdown."""

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        app.state.runtime = runtime = await Runtime.open(settings, bootstrap_users=bootstrap_users)
        if bootstrap_users:  # the API: a token key too short, or one it cannot keep, stops it now, not at a login
            _ = runtime.auth.tokens
        async with AsyncExitStack() as stack:
            stack.push_async_callback(runtime.close)
            for service in hosted:
                await stack.enter_async_context(service(runtime))
            # Everything alive now (the framework, the routes, the pools) lives as long as the process: keep it
            # out of the collector's full passes, which otherwise walk it all again every few thousand requests.
            gc.collect()
            gc.freeze()
            yield

    return lifespan
