"""What one process runs: the API, and the scheduled jobs beside it unless `run_workers` is off; or the jobs alone,
with health and metrics on `worker_port`."""

from __future__ import annotations

from litestar import Litestar

from api.app import HostedService, create_app, create_worker_app
from api.hot_routes import HotRoutes, with_hot_routes
from api.queue_ti.service import grpc_server
from mq.settings import Settings, get_settings
from workers.scheduler import hosted_workers


def server_app(settings: Settings | None = None) -> HotRoutes | Litestar:
    """The app `skiplock serve` runs (also uvicorn's factory when it runs several processes): the API, its hot
    routes answered on their lean path (`api.hot_routes`)."""
    settings = settings or get_settings()
    hosted: list[HostedService] = [hosted_workers] if settings.run_workers else []
    if settings.grpc_port:
        hosted.append(grpc_server)  # queue-ti's gRPC service, in the API's event loop
    return with_hot_routes(create_app(settings, hosted=hosted), settings)


def worker_app(settings: Settings) -> Litestar:
    """The app `skiplock worker` serves on `worker_port`: the jobs, with /healthz, /readyz and /metrics."""
    return create_worker_app(settings, hosted=[hosted_workers])
