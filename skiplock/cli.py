"""The `skiplock` command (`python -m skiplock`; `make run` is `skiplock serve`).

    skiplock [serve]   the API, and the scheduled jobs unless SKIPLOCK_RUN_WORKERS=false; without
                       SKIPLOCK_DATABASE_URL / SKIPLOCK_REDIS_URL, embedded servers with their data in SKIPLOCK_DATA_DIR
    skiplock api       the same; the name deployments use (the image, docker-compose.yml, the Helm chart)
    skiplock worker    the scheduled jobs alone (needs SKIPLOCK_DATABASE_URL), with /healthz, /readyz and /metrics on
                       SKIPLOCK_WORKER_PORT when it is set
    skiplock migrate   bring the database to the current schema and exit (needs SKIPLOCK_DATABASE_URL)

Settings come from the environment (`SKIPLOCK_*`, docs/configuration.md). SIGTERM or Ctrl-C stops gracefully,
then the embedded servers: nothing is left running.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

import uvloop

from api.server import serve, serve_processes
from mq.db.engine import DATABASE_ERRORS, SchemaTooOld, schema_problem, schema_revision
from mq.logs import configure_logging
from mq.migration import migrate
from mq.settings import DEFAULT_ADMIN_PASSWORD, Settings, get_settings
from skiplock.local import EmbeddedPostgres, EmbeddedRedis, EmbeddedServerError
from skiplock.process import server_app, worker_app
from workers.scheduler import run_alone

log = logging.getLogger("skiplock")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="skiplock", description="Skiplock, a multi-tenant message queue on Postgres")
    parser.add_argument("command", nargs="?", default="serve", choices=["serve", "api", "worker", "migrate"])
    command = parser.parse_args(argv).command
    settings = get_settings()
    configure_logging(settings.log_level, settings.log_format)
    if command in ("serve", "api"):
        serve_command(settings)
        return
    if not settings.database_url:
        log.error("SKIPLOCK_DATABASE_URL is not set: `skiplock %s` needs the database's URL", command)
        sys.exit(2)
    if command == "migrate":
        _migrate(settings.database_url)
        log.info("the database is at the current schema")
        return
    _refuse_an_unmigrated_database(settings.database_url)
    if settings.worker_port:
        worker_settings = settings.model_copy(update={"port": settings.worker_port})
        uvloop.run(serve(worker_settings, worker_app(worker_settings)))
    else:
        uvloop.run(run_alone(settings))


def serve_command(settings: Settings) -> None:
    embedded: list[EmbeddedPostgres | EmbeddedRedis] = []
    try:
        try:
            settings = _with_embedded_servers(settings, embedded)
        except EmbeddedServerError as e:
            log.error("%s", e)  # noqa: TRY400 (what is missing, not a traceback)
            sys.exit(2)
        assert settings.database_url is not None
        if _migrates_on_start(settings, embedded):
            _migrate(settings.database_url, embedded=any(isinstance(s, EmbeddedPostgres) for s in embedded))
        else:
            _refuse_an_unmigrated_database(settings.database_url)
        _announce(settings)
        if settings.workers > 1:
            _serve_processes(settings)
        else:
            uvloop.run(serve(settings, server_app(settings)))  # uvicorn's loop option applies only to its own loop
    finally:
        for server in reversed(embedded):
            server.stop()
        if embedded:
            log.info("embedded servers stopped")


def _migrate(url: str, *, embedded: bool = False) -> None:
    try:
        migrate(url)
    except SchemaTooOld as e:
        fresh = "; or, this Postgres being embedded, start afresh: remove its data under SKIPLOCK_DATA_DIR"
        log.error("%s%s", e, fresh if embedded else "")  # noqa: TRY400 (what to do, not a traceback)
        sys.exit(2)


def _refuse_an_unmigrated_database(url: str) -> None:
    """Exit with a clear message, rather than a traceback at the first query, when the database lacks this release's
    schema. An unreachable database is left to the server's own start, which reports it."""
    try:
        revision = asyncio.run(schema_revision(url))
    except DATABASE_ERRORS:  # a timeout is an OSError
        return
    if problem := schema_problem(url, revision):
        log.error("%s", problem)
        sys.exit(2)


def _migrates_on_start(settings: Settings, embedded: list[EmbeddedPostgres | EmbeddedRedis]) -> bool:
    """`SKIPLOCK_MIGRATE_ON_START` when set; unset, only a Postgres this process started itself is migrated."""
    if settings.migrate_on_start is not None:
        return settings.migrate_on_start
    return any(isinstance(server, EmbeddedPostgres) for server in embedded)


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


def _announce(settings: Settings) -> None:
    base = f"http://{settings.host}:{settings.port}"
    log.info("Skiplock on %s (OpenAPI at %s/schema); admin user %r", base, base, settings.admin_username)
    if settings.grpc_port:
        log.info("queue-ti's gRPC service on %s:%d (docs/queue-ti.md)", settings.host, settings.grpc_port)
    if settings.admin_password.get_secret_value() == DEFAULT_ADMIN_PASSWORD:
        log.warning("the platform admin has the default password: for local use only")
    if not settings.on_loopback and settings.metrics_token is None and not settings.metrics_public:
        log.warning(
            "/metrics answers 403 on %s: set SKIPLOCK_METRICS_TOKEN (or SKIPLOCK_METRICS_PUBLIC=true where only "
            "Prometheus can reach the port): it names every tenant's slugs and topics",
            settings.host,
        )


def _serve_processes(settings: Settings) -> None:
    """Several server processes on one port; each reads its settings from the environment, where the embedded
    servers' URLs are put first. This process supervises them and stops the embedded servers last."""
    assert settings.database_url is not None
    os.environ["SKIPLOCK_DATABASE_URL"] = settings.database_url
    if settings.redis_url:
        os.environ["SKIPLOCK_REDIS_URL"] = settings.redis_url
    os.environ["SKIPLOCK_MIGRATE_ON_START"] = "false"
    serve_processes(settings, "skiplock.process:server_app")
