"""Typed settings from `SKIPLOCK_*` environment variables, read once per process."""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

#: The bootstrap admin's password when none is set: for a local `make run` only.
DEFAULT_ADMIN_PASSWORD = "skiplock-admin"  # noqa: S105 (a documented local default, refused off loopback)


class Settings(BaseSettings):
    """Every knob of a Skiplock process. Field docstrings are the documentation (see docs/configuration.md)."""

    model_config = SettingsConfigDict(env_prefix="SKIPLOCK_", use_attribute_docstrings=True, extra="ignore")

    # --- server ---------------------------------------------------------------------------------------------
    host: str = "127.0.0.1"
    """Address the HTTP server binds to."""
    port: int = Field(default=8080, ge=0, le=65535)
    """Port the HTTP server listens on (0 picks a free one)."""
    grpc_port: int = Field(default=50051, ge=0, le=65535)
    """Port of queue-ti's gRPC service (`queue.QueueService`, plaintext, bearer tokens), on `host`; 0 = off."""
    grpc_stream_max_unsettled: int = Field(default=32, ge=1, le=10_000)
    """Deliveries a `Subscribe` stream holds at most that it sent and that no `Ack` or `Nack` settled yet (and
    whose lease has not lapsed): past it the stream leases nothing more until one is settled. A subscriber that
    stops reading holds this many messages, not the whole topic."""
    grpc_max_streams_per_user: int = Field(default=64, ge=1, le=100_000)
    """`Subscribe` streams one user may have open at once on an API process; one more answers
    `RESOURCE_EXHAUSTED`."""
    grpc_keepalive_seconds: float = Field(default=30.0, ge=1, le=3600)
    """The gRPC server pings an idle connection this often and drops it when the ping is not answered within as
    long again: a peer gone without closing its connection is dropped within twice this (60 s by default), and its
    streams' leases released."""
    workers: int = Field(default=1, ge=1, le=64)
    """HTTP server processes. Each uses at most one core: about one per core when Postgres runs elsewhere."""
    keep_alive_seconds: float = Field(default=120.0, gt=0, le=3600)
    """How long an idle kept-alive connection stays open. Longer than clients and load balancers keep theirs
    (Go and k6 90 s, AWS ALB 60 s), so the client closes first: a server closing a connection just as a client
    reuses it resets that request."""
    hot_routes: bool = True
    """Answer the five busiest routes (enqueue, batch enqueue, dequeue, batch ack, ack) on a lean path beside the
    framework (`api.hot_routes`): the same answers for about a third less CPU. false: through the framework."""
    log_level: str = "info"

    """Python log level name for the server's logs."""

    # --- storage --------------------------------------------------------------------------------------------
    database_url: str | None = None
    """Postgres URL (`postgresql://user:pass@host:5432/db`). Unset: an embedded Postgres under `data_dir`."""
    redis_url: str | None = None
    """Redis URL (`redis://host:6379/0`; a Sentinel's primary `redis+sentinel://host:26379,host2:26379/<service>/0`;
    a cluster `redis+cluster://host:7000,host2:7001`). Unset: an embedded Redis under `data_dir`."""
    data_dir: Path = Path(".skiplock")
    """Folder for the embedded servers' data; it survives restarts."""
    db_pool_min_size: int = Field(default=2, ge=1)
    """Connections the hot-path pool keeps open."""
    db_pool_max_size: int = Field(default=10, ge=1)
    """Most connections the hot-path pool opens; waiting long polls hold none."""
    db_statement_timeout_seconds: float = Field(default=15, gt=0)
    """Longest a hot-path statement may run (Postgres `statement_timeout`); past it the request answers 503."""
    request_timeout_seconds: float = Field(default=30, gt=20)
    """Longest a request may take, waiting for a pool connection included (503 `unavailable` beyond). Above 20 s:
    long polls wait up to 20."""
    migrate_on_start: bool | None = None
    """Run `alembic upgrade head` when the server starts. Unset: only with the embedded Postgres; `make run` sets it
    on. A deployment leaves it off and runs `skiplock migrate` once per release (the Helm hook, compose's
    `migrate` service)."""

    # --- bootstrap ------------------------------------------------------------------------------------------
    admin_username: str = "admin"
    """Platform admin created on first start if no user of that name exists."""
    admin_password: SecretStr = SecretStr(DEFAULT_ADMIN_PASSWORD)
    """Its password. The default is for local use only: a server bound to any address but loopback refuses to
    start while a platform admin still has it (see `allow_default_admin_password`)."""
    default_tenant: str = "default"
    """Slug of the tenant created on first start ("" creates none)."""

    # --- limits ---------------------------------------------------------------------------------------------
    max_payload_bytes: int = Field(default=256 * 1024, ge=1)
    """Largest message payload, in raw bytes after base64 decoding (413 `payload_too_large` above)."""
    max_metadata_bytes: int = Field(default=16 * 1024, ge=2)
    """Largest `metadata` object, serialized as JSON."""
    max_request_body_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    """Largest HTTP request body (413 above), sized for a full batch of large payloads."""
    coalesce_max_in_flight: int = Field(default=1, ge=1, le=64)
    """Single enqueues, single acks and dequeues of one topic arriving together share one statement; this many
    such statements run at once per process (per kind), and requests arriving meanwhile join the next one. One
    makes the largest batches (on 2 cores: 28% more single enqueues/s than 4); raise it where Postgres has cores
    to spare."""
    tenant_max_statements: int = Field(default=1, ge=0, le=64)
    """Batch statements (enqueues, acks and dequeues of 32 rows or more) of one tenant that run at once per
    process while another tenant is active; more wait in the process, so one tenant's flood does not crowd
    everyone else out of Postgres (docs/operations.md, "Fairness between tenants"). A tenant alone is not capped.
    Raise it where Postgres has cores to spare; 0: no cap."""
    tenant_enqueue_rate: int = Field(default=500, ge=0, le=1_000_000)
    """Messages per second one tenant may enqueue per process while another tenant is active, unless the tenant
    has an enqueue_rate quota of its own: more answers 429 `rate_limited` with Retry-After. The enqueue-rate quota
    that applies by default, so one tenant's flood does not slow everyone else down (docs/operations.md, "Fairness
    between tenants"). A tenant alone is not limited. 0: no limit."""
    schema_check_budget_ms: int = Field(default=100, ge=1, le=60_000)
    """Time budget of one schema check (a payload against its topic's schema, a new version's compilation or
    compatibility), in CPU milliseconds of the process that runs it: past it the check is stopped and its message
    refused (400 `schema_violation`, `details.reason` `check_too_costly`; a version: 409 or 400 naming it)."""
    schema_check_processes: int = Field(default=2, ge=1, le=64)
    """Processes per API process that run schema checks, apart from the event loop (`mq.schemas.checks`), started
    as tenants with schemas need them; a spare one is kept warm to replace one stopped over its budget."""
    max_schedules_per_tenant: int = Field(default=1000, ge=0, le=2**31 - 1)
    """Schedules (periodic messages) a tenant may have when its quotas set no `max_schedules`; one more is refused
    with 403 `quota_exceeded`."""
    max_batch_size: int = Field(default=1000, ge=1, le=10000)
    """Most messages in one batch enqueue, acks in one batch ack, and messages in one dequeue."""
    api_instances: int = Field(default=1, ge=1)
    """How many API instances run. Rate limits live in Redis and are shared; while Redis is unreachable each
    instance limits on its own at rate / this."""

    # --- queue defaults (a topic config overrides them) ----------------------------------------------------
    visibility_timeout_seconds: int = Field(default=30, ge=1, le=43200)
    """How long a dequeued message stays invisible before it is delivered again if not acked."""
    max_retries: int = Field(default=3, ge=0)
    """Nacks a message may take before it moves to its dead-letter topic (or fails)."""
    dlq_enabled: bool = True
    """Move messages that exhausted their retries to `<topic>.dlq`; off: mark them `failed`."""
    message_ttl_seconds: int = Field(default=0, ge=0)
    """Time to live of new messages; 0 keeps them until consumed."""
    retry_backoff_seconds: list[int] = Field(default_factory=list)
    """Delay before retry n after a nack without `delay_seconds`; the last value repeats; empty: retry at once."""
    expire_to_dlq: bool = False
    """Route messages past their TTL to `<topic>.dlq` (as pending) instead of marking them `expired`; a topic
    config overrides it. Needs the DLQ enabled for the topic; messages already in a DLQ just expire."""

    # --- workers (docs/operations.md) -------------------------------------------------------------------------
    run_workers: bool = True
    """Run the scheduled jobs (reapers, gauges) in this API process too, as `make run` does. Any number of
    processes may run them: each job runs on one at a time (a Postgres advisory lock). Off where a separate
    `skiplock worker` deployment runs them."""
    worker_port: int = Field(default=0, ge=0, le=65535)
    """Port on which `skiplock worker` serves `/healthz`, `/readyz` and `/metrics` (its jobs' counters, under the
    same token rules as the API's) on `host`; 0: none. docker-compose.yml and the Helm chart set 8081."""
    expiry_reaper_interval_seconds: float = Field(default=60, gt=0)
    """How often messages past their TTL are marked `expired` (or moved to their DLQ)."""
    delete_reaper_schedule: str = ""
    """5-field cron of the delete reaper, e.g. `0 3 * * *`; empty: off. `PUT /api/admin/delete-reaper/schedule`
    overrides it at runtime for every instance."""
    failed_retention_seconds: int = Field(default=7 * 86400, ge=0)
    """The delete reaper deletes `failed` messages this long after their last change (`expired` ones at once)."""
    audit_retention_days: int = Field(default=90, ge=1, le=36500)
    """The audit trail keeps entries this many days; the expiry reaper's runs drop older ones."""
    reaper_batch_size: int = Field(default=5000, ge=1, le=100_000)
    """Rows per reaper statement: each batch is its own short transaction."""
    archive_reaper_interval_seconds: float = Field(default=300, gt=0)
    """How often the archive reaper makes the message log's next partitions and drops those nothing can see."""
    inflight_keeper_interval_seconds: float = Field(default=10, gt=0)
    """How often the workers recount the limited topics' leases in flight (`max_inflight`): what a purge, a delete
    or a TTL expiry of a leased message leaves counted is freed within this."""
    schedule_poll_seconds: float = Field(default=0.5, gt=0, le=60)
    """How often each worker looks for due schedules (periodic messages): a tick is enqueued at most this late."""
    history_partition_seconds: int = Field(default=86_400, ge=60)
    """The span of `acked_at` one partition of the message log holds (a day: see bench/RESULTS.md, "history")."""
    gauges_interval_seconds: float = Field(default=15, gt=0)
    """How often the leader recounts messages by tenant, topic and status for /metrics (one GROUP BY; a large
    table a range of pages at a time, and the job rests at least 3x its last duration)."""

    # --- observability ----------------------------------------------------------------------------------------
    metrics_token: SecretStr | None = None
    """Bearer token `GET /metrics` requires. Unset: /metrics is open on a loopback address only; on any other
    it answers 403 unless `metrics_public` is set (the metrics name every tenant's slugs and topics)."""
    metrics_public: bool = False
    """Serve /metrics without a token on a non-loopback address (a network only Prometheus can reach)."""
    metrics_max_topics_per_tenant: int = Field(default=50, ge=1)
    """Topic labels per tenant in metrics; further topics are counted under `topic="other"`."""
    log_format: str = Field(default="json", pattern="^(json|text)$")
    """`json`: one JSON object per line (request id, route, status, duration); `text` for reading by eye."""

    admin_ui_dir: Path = Path(__file__).resolve().parent.parent / "admin-ui" / "dist"
    """The admin console's production build, served at `/` (`make run` builds it when missing or stale)."""

    # --- auth -----------------------------------------------------------------------------------------------
    auth_cache_ttl_seconds: float = Field(default=30.0, ge=0)
    """How long a verified credential is trusted before its password hash is checked again."""
    auth_cache_size: int = Field(default=10000, ge=0)
    """Most credentials kept verified in memory per process."""
    session_ttl_seconds: int = Field(default=43200, ge=60)
    """How long an admin UI session lasts after login (stored in Postgres; logout or a password change ends it)."""
    token_ttl_seconds: int = Field(default=900, ge=60, le=86400)
    """How long a bearer token from `POST /api/auth/login` or `/api/auth/refresh` is valid (queue-ti's clients
    refresh it before it ends). A password change, role change, suspension or deletion ends it sooner, on every
    instance within `auth_cache_ttl_seconds`."""
    token_max_age_seconds: int = Field(default=43200, ge=60, le=31_536_000)
    """How long a chain of bearer tokens lasts: `POST /api/auth/refresh` renews a token only within this long of the
    password login that began its chain (401 after); then the client logs in again."""
    token_secret: SecretStr | None = None
    """The key that signs bearer tokens (at least 32 bytes of randomness). Every instance of a deployment must
    share it (the Helm chart keeps it in a Secret). Unset: generated once and kept in `data_dir/token.key`."""
    login_failure_limit: int = Field(default=10, ge=1)
    """Failed logins allowed per (username, client address) within the window; then that client gets 429 for that
    username until the window passes. Clients whose credentials were verified before are never limited."""
    login_failure_limit_per_address: int = Field(default=100, ge=1)
    """Failed logins allowed per client address within the window, whatever the usernames (higher: many users
    may share a proxy)."""
    login_failure_limit_per_username: int = Field(default=1000, ge=1)
    """Failed logins allowed per username within the window from all addresses together: a ceiling against a
    distributed guess, far above what one client can reach (`login_failure_limit`)."""
    login_failure_window_seconds: int = Field(default=300, ge=1)
    """The window over which failed logins are counted (in Redis, shared by every instance)."""
    password_check_concurrency: int = Field(default=2, ge=1, le=64)
    """argon2 verifications or hashes running at once per process (each ~64 MiB and ~170 ms of a core)."""
    password_check_queue: int = Field(default=32, ge=0)
    """Password checks that may wait for one of those; beyond, 503 `unavailable` with Retry-After at once."""
    allow_default_admin_password: bool = False
    """Serve on a non-loopback address although a platform admin still has the default password. For a
    throwaway local setup only: anyone who can reach the port could administer every tenant."""
    trusted_proxies: str = "127.0.0.1"
    """Comma-separated addresses (or `*`) of proxies whose `X-Forwarded-For` / `X-Forwarded-Proto` are believed:
    the client address for login limiting and the scheme for the session cookie's `Secure` flag."""

    @property
    def on_loopback(self) -> bool:
        """Whether the server listens on a loopback address only (no other machine can reach it)."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read from the environment on first use."""
    return Settings()
