"""The Redis client a URL asks for: one server, a Sentinel-managed primary, or a Redis Cluster (docs/scale-out.md,
"Redis at that scale").

- `redis://host:6379/0` (`rediss://` with TLS, `unix://`): one server (redis-py's `Redis`).
- `redis+sentinel://host:26379,host2:26379/<service>/0` (`rediss+sentinel://`): the primary that the Sentinels at
  those addresses name for `<service>` (redis-py's `Sentinel.master_for`); a failover moves the client to the new
  primary by itself.
- `redis+cluster://host:7000,host2:7001/` (`rediss+cluster://`): a Redis Cluster reached through any of those
  nodes (redis-py's `RedisCluster`). Every key of a tenant carries the tenant's hash tag (`mq.redis_keys`), so a
  tenant's buckets and cached configs live on one node; the broadcast channels are classic pub/sub, which a
  cluster delivers to subscribers on every node.

Credentials and the database number go in the URL as redis-py reads them (`redis://:password@host/0`).
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.sentinel import Sentinel

#: A client of one server, a Sentinel's primary or a cluster: the commands Skiplock sends work on each.
RedisClient = aioredis.Redis | RedisCluster


def connect(url: str, **options: Any) -> RedisClient:
    """The client `url` asks for; `options` (timeouts) apply to every connection it opens."""
    parts = urllib.parse.urlsplit(url)
    scheme, _, kind = parts.scheme.partition("+")
    if kind not in ("", "sentinel", "cluster"):
        raise ValueError(f"a Redis URL's scheme is redis, rediss, redis+sentinel or redis+cluster, not {parts.scheme}")
    if not kind:
        return aioredis.from_url(url, **options)
    tls = scheme == "rediss"
    username, password = parts.username or None, parts.password or None
    hosts = [_address(node) for node in parts.netloc.rpartition("@")[2].split(",") if node]
    if kind == "cluster":
        nodes = [ClusterNode(host, port) for host, port in hosts]
        return RedisCluster(startup_nodes=nodes, ssl=tls, username=username, password=password, **options)
    service, _, database = parts.path.strip("/").partition("/")
    if not service:
        raise ValueError("a redis+sentinel URL names its service: redis+sentinel://host:26379/<service>/0")
    # Any: redis-py types Sentinel's constructor in some releases and not in others
    make_sentinel: Any = Sentinel
    sentinel = make_sentinel(
        hosts, sentinel_kwargs={**options}, ssl=tls, username=username, password=password, **options
    )
    primary: aioredis.Redis = sentinel.master_for(service, db=int(database or 0))
    return primary


def _address(node: str) -> tuple[str, int]:
    host, _, port = node.rpartition(":")
    return (host or node, int(port)) if port.isdigit() and host else (node, 6379)


async def ready(client: RedisClient) -> None:
    """A cluster client learns the cluster's slots before its first pub/sub (its commands do so by themselves)."""
    if isinstance(client, RedisCluster):
        await client.initialize()
