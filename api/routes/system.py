"""Liveness, readiness and version: what load balancers and operators poll."""

from __future__ import annotations

import asyncio
import hmac
from typing import Any

from litestar import MediaType, Request, Response, get
from litestar.openapi.datastructures import ResponseSpec
from prometheus_client import CONTENT_TYPE_LATEST

from api.schemas import AuthStatusView, HealthView, ReadinessView, VersionView
from mq import __version__, errors
from mq.runtime import Runtime

READY_TIMEOUT_SECONDS = 2.0


@get("/healthz", summary="Liveness: the process answers (no I/O)", operation_id="getHealth", tags=["system"])
async def healthz() -> HealthView:
    return HealthView(status="ok")


@get(
    "/readyz",
    summary="Readiness: Postgres (and Redis when configured) answer",
    operation_id="getReadiness",
    tags=["system"],
    responses={503: ResponseSpec(ReadinessView, description="A dependency is not answering")},
)
async def readyz(request: Request[Any, Any, Any]) -> Response[ReadinessView]:
    runtime: Runtime = request.app.state.runtime
    checks: dict[str, str] = {}

    async def check(name: str, probe: Any) -> None:
        try:
            await asyncio.wait_for(probe, READY_TIMEOUT_SECONDS)
            checks[name] = "ok"
        except Exception as exc:
            checks[name] = f"failed: {type(exc).__name__}"

    probes = [check("postgres", runtime.operations.ping())]
    if runtime.redis is not None:
        probes.append(check("redis", runtime.redis.ping()))
    await asyncio.gather(*probes)
    if all(v == "ok" for v in checks.values()):
        return Response(ReadinessView(status="ready", checks=checks), status_code=200)
    body = ReadinessView("not_ready", checks, code="unavailable", error="a dependency is not answering")
    return Response(body, status_code=503)


# Litestar appends the charset to text types itself; prometheus_client's constant carries one already.
_METRICS_TYPE = "; ".join(p.strip() for p in CONTENT_TYPE_LATEST.split(";") if not p.strip().startswith("charset"))


@get(
    "/metrics",
    summary="Prometheus metrics (a bearer token when SKIPLOCK_METRICS_TOKEN is set)",
    media_type=MediaType.TEXT,
    operation_id="getMetrics",
    tags=["system"],
)
async def metrics(request: Request[Any, Any, Any]) -> Response[bytes]:
    runtime: Runtime = request.app.state.runtime
    settings = runtime.settings
    token = settings.metrics_token
    if token is None and not settings.on_loopback and not settings.metrics_public:
        raise errors.Forbidden(
            "/metrics names every tenant's slugs and topics: set SKIPLOCK_METRICS_TOKEN, or SKIPLOCK_METRICS_PUBLIC"
            " where only Prometheus reaches this port"
        )
    if token is not None:
        given = request.headers.get("authorization", "")
        expected = f"Bearer {token.get_secret_value()}"
        if not hmac.compare_digest(given.encode(), expected.encode()):
            raise errors.Unauthorized("/metrics needs the metrics bearer token")
    redis = runtime.redis
    await runtime.metrics.read_gauges(runtime.operations, redis.ping if redis is not None else None)
    return Response(runtime.metrics.exposition(), media_type=_METRICS_TYPE)


@get("/api/version", summary="Server version", operation_id="getVersion", tags=["system"])
async def version() -> VersionView:
    return VersionView(version=__version__)


@get("/api/auth/status", summary="How to authenticate", operation_id="getAuthStatus", tags=["session"])
async def auth_status() -> AuthStatusView:
    return AuthStatusView(auth_required=True, methods=["basic", "session", "bearer"])
