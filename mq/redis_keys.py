"""Every Redis key and pub/sub channel Skiplock uses, built here with how long each lives.

Keys carry the tenant's id wherever they hold a tenant's data, so no two tenants ever share one, and carry it as
their hash tag (`{<tenant id>}`): on a Redis Cluster all of a tenant's keys are in one slot, on one node
(`mq.redis_client`). Nothing in Redis is durable state: each key expires by itself, and losing them all costs a
cache refill or a limiter reset.

- `skiplock:{<tenant>}:bucket:enqueue`: a tenant's enqueue-rate token bucket; lives until it would be full, + 1 s.
- `skiplock:{<tenant>}:bucket:dequeue:<topic>`: a topic's throughput token bucket; the same.
- `skiplock:{<tenant>}:topic:<topic>`: a topic's config and whether it is paused, the cache's tier 2;
  `config_cache_redis_ttl_seconds`.
- `skiplock:login-failures:{u:<sha256 of the username>}:user`: failed logins of a username;
  `login_failure_window_seconds` from the first.
- `skiplock:login-failures:{u:<sha256>}:pair:<address>` and `skiplock:login-failures:{a:<address>}:addr`: failed
  logins of a username from an address, and from an address; the same window.

The token buckets' expiry is set by their Lua script (`mq/token_bucket.lua`), the login counters' by theirs
(`mq/tenancy/login_failures.lua`, run on one key at a time), the config entries' by `mq.queue.configs` (SET EX).
Releases before this one named the keys without hash tags (`skiplock:bucket:enqueue:<tenant>`, ...): during a
rolling upgrade the two releases' instances fill two buckets, so a rate limit allows up to twice its rate until
the old instances are gone, and the config caches' tier 2 is refilled.
"""

from __future__ import annotations

# Pub/sub channels (`mq.broadcast`; Postgres NOTIFY carries the same names with ':' as '_').
CONFIG_CHANNEL = "skiplock:config:invalidate"
AUTH_CHANNEL = "skiplock:auth:invalidate"
SCHEDULE_CHANNEL = "skiplock:workers:schedule"

_LOGIN_FAILURES = "skiplock:login-failures:"


def _tenant(tenant_id: int) -> str:
    """A tenant's keys' prefix, its id the hash tag: one slot of a cluster for all of them."""
    return f"skiplock:{{{tenant_id}}}:"


def enqueue_bucket(tenant_id: int) -> str:
    return f"{_tenant(tenant_id)}bucket:enqueue"


def dequeue_bucket(tenant_id: int, topic: str, group_id: int | None = None) -> str:
    """A topic's throughput limit; each consumer group of it has its own bucket (`#<group id>`)."""
    return f"{_tenant(tenant_id)}bucket:dequeue:{topic}" + ("" if group_id is None else f"#{group_id}")


def topic_config(tenant_id: int, topic: str) -> str:
    return f"{_tenant(tenant_id)}topic:{topic}"


def login_failures_of_user(user_hash: str) -> str:
    return f"{_LOGIN_FAILURES}{{u:{user_hash}}}:user"


def login_failures_of_pair(user_hash: str, address: str) -> str:
    return f"{_LOGIN_FAILURES}{{u:{user_hash}}}:pair:{address}"


def login_failures_of_address(address: str) -> str:
    return f"{_LOGIN_FAILURES}{{a:{address}}}:addr"
