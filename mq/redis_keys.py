"""Every Redis key and pub/sub channel Skiplock uses, built here with how long each lives.

Keys carry the tenant's id wherever they hold a tenant's data, so no two tenants ever share one. Nothing in Redis
is durable state: each key expires by itself, and losing them all costs a cache refill or a limiter reset.

- `skiplock:bucket:enqueue:<tenant>`: a tenant's enqueue-rate token bucket; lives until it would be full, + 1 s.
- `skiplock:bucket:dequeue:<tenant>:<topic>`: a topic's throughput token bucket; the same.
- `skiplock:topic:<tenant>:<topic>`: a topic's config and whether it is paused, the cache's tier 2;
  `config_cache_redis_ttl_seconds`.
- `skiplock:login-failures:user:<sha256 of the username>`: failed logins of a username;
  `login_failure_window_seconds` from the first.
- `skiplock:login-failures:pair:<sha256>:<address>` and `skiplock:login-failures:addr:<address>`: failed logins
  of a username from an address, and from an address; the same window.

The token buckets' expiry is set by their Lua script (`mq/token_bucket.lua`), the login counters' by theirs
(`mq/tenancy/login_failures.lua`), the config entries' by `mq.queue.configs` (SET EX).
"""

from __future__ import annotations

# Pub/sub channels (`mq.broadcast`; Postgres NOTIFY carries the same names with ':' as '_').
CONFIG_CHANNEL = "skiplock:config:invalidate"
AUTH_CHANNEL = "skiplock:auth:invalidate"
SCHEDULE_CHANNEL = "skiplock:workers:schedule"

_BUCKET = "skiplock:bucket:"
_TOPIC_CONFIG = "skiplock:topic:"  # was "skiplock:topic-config:" before topics could be paused
_LOGIN_FAILURES = "skiplock:login-failures:"


def enqueue_bucket(tenant_id: int) -> str:
    return f"{_BUCKET}enqueue:{tenant_id}"


def dequeue_bucket(tenant_id: int, topic: str, group_id: int | None = None) -> str:
    """A topic's throughput limit; each consumer group of it has its own bucket (`#<group id>`)."""
    return f"{_BUCKET}dequeue:{tenant_id}:{topic}" + ("" if group_id is None else f"#{group_id}")


def topic_config(tenant_id: int, topic: str) -> str:
    return f"{_TOPIC_CONFIG}{tenant_id}:{topic}"


def login_failures_of_user(user_hash: str) -> str:
    return f"{_LOGIN_FAILURES}user:{user_hash}"


def login_failures_of_pair(user_hash: str, address: str) -> str:
    return f"{_LOGIN_FAILURES}pair:{user_hash}:{address}"


def login_failures_of_address(address: str) -> str:
    return f"{_LOGIN_FAILURES}addr:{address}"
