# syntax=docker/dockerfile:1
# One image for the three roles of a deployment:
#   docker run IMAGE              the API (`skiplock api`) with the admin console at /
#   docker run IMAGE worker       the scheduled jobs alone
#   docker run IMAGE migrate      `alembic upgrade head`, then exit (run once per release, before the new API)
# It takes SKIPLOCK_DATABASE_URL and SKIPLOCK_REDIS_URL: no embedded servers here (docs/deploy.md). The API serves
# HTTP on 8080 and queue-ti's gRPC service on 50051 (SKIPLOCK_GRPC_PORT, 0 = off); give it SKIPLOCK_TOKEN_SECRET (the
# key that signs bearer tokens, shared by every instance): the image's root is not writable, so the key cannot be
# generated into data_dir.
# Build: docker build -t skiplock:0.1.0 --build-arg VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) .
# Pin the bases by digest for reproducible builds: --build-arg PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:...
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG NODE_IMAGE=node:20-bookworm-slim

# --- the admin console: a static build, typed from the OpenAPI document -------------------------------------------
# checkov:skip=CKV_DOCKER_7:the bases are versioned tags given as build arguments (defaults above), never latest
FROM ${NODE_IMAGE} AS console
WORKDIR /src/admin-ui
COPY admin-ui/package.json admin-ui/package-lock.json ./
# `npm install`, not `npm ci`: the lock, written by npm 11, leaves other platforms' optional packages out (build.sh).
RUN npm install --no-audit --no-fund --loglevel=error
COPY docs/openapi.json /src/docs/openapi.json
COPY admin-ui/ ./
RUN npm run --silent build

# --- the server: a virtualenv with Skiplock and its dependencies (all wheels: no compiler needed) -----------------
FROM ${PYTHON_IMAGE} AS server
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/skiplock
WORKDIR /src
COPY pyproject.toml README.md ./
COPY mq/ mq/
COPY api/ api/
COPY workers/ workers/
COPY skiplock/ skiplock/
COPY migrations/ migrations/
RUN /opt/skiplock/bin/pip install --no-compile . \
 && /opt/skiplock/bin/python -m compileall -q /opt/skiplock/lib

# --- the runtime: the virtualenv and the console's build, run as an unprivileged user ------------------------------
FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="Skiplock" \
      org.opencontainers.image.description="Multi-tenant message queue on Postgres with a REST API and an admin console" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.documentation="https://github.com/skiplock/skiplock/blob/main/docs/deploy.md" \
      org.opencontainers.image.source="https://github.com/skiplock/skiplock"
# A fixed numeric uid/gid, so Kubernetes' runAsNonRoot can verify it; no home, no shell.
RUN groupadd --system --gid 10001 skiplock \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin skiplock
COPY --from=server /opt/skiplock /opt/skiplock
COPY --from=console /src/admin-ui/dist /opt/skiplock/admin-ui
# Nothing is written at run time (bytecode is compiled above; logs go to stderr), so the root filesystem may be
# read-only. The API binds every interface (HTTP and gRPC); it migrates only when told to (SKIPLOCK_MIGRATE_ON_START).
ENV PATH=/opt/skiplock/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    SKIPLOCK_HOST=0.0.0.0 \
    SKIPLOCK_PORT=8080 \
    SKIPLOCK_GRPC_PORT=50051 \
    SKIPLOCK_MIGRATE_ON_START=false \
    SKIPLOCK_ADMIN_UI_DIR=/opt/skiplock/admin-ui
WORKDIR /opt/skiplock
USER 10001:10001
# HTTP (REST API, admin console, /metrics) and queue-ti's gRPC service (plaintext HTTP/2).
EXPOSE 8080 50051
# The API's liveness (the worker's: `python -m skiplock.healthcheck 8081` with SKIPLOCK_WORKER_PORT=8081; migrate
# has no port and compose disables the check for it).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 CMD ["python", "-m", "skiplock.healthcheck"]
ENTRYPOINT ["skiplock"]
CMD ["api"]
