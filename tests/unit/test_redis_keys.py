"""Every key of a tenant carries the tenant as its hash tag (`mq.redis_keys`): one slot of a Redis Cluster, so one
node, for all of them; tenants spread over the slots."""

from __future__ import annotations

from redis.crc import key_slot

from mq import redis_client, redis_keys


def test_a_tenants_keys_share_one_slot_and_tenants_spread() -> None:
    for tenant in (1, 7, 123456):
        keys = [
            redis_keys.enqueue_bucket(tenant),
            redis_keys.dequeue_bucket(tenant, "orders"),
            redis_keys.dequeue_bucket(tenant, "orders", 3),
            redis_keys.topic_config(tenant, "orders.dlq"),
        ]
        assert all(f"{{{tenant}}}" in key for key in keys)
        assert len({key_slot(key.encode()) for key in keys}) == 1, keys
    assert len({key_slot(redis_keys.enqueue_bucket(tenant).encode()) for tenant in range(1, 101)}) > 90


def test_a_users_failed_login_counters_share_a_slot_and_an_address_has_its_own() -> None:
    user = "0" * 32
    assert key_slot(redis_keys.login_failures_of_user(user).encode()) == key_slot(
        redis_keys.login_failures_of_pair(user, "10.0.0.1").encode()
    )
    assert "{a:10.0.0.1}" in redis_keys.login_failures_of_address("10.0.0.1")


def test_a_url_names_the_kind_of_redis() -> None:
    assert type(redis_client.connect("redis://127.0.0.1:6379/0")).__name__ == "Redis"
    assert type(redis_client.connect("redis+cluster://127.0.0.1:7000,127.0.0.1:7001")).__name__ == "RedisCluster"
    assert type(redis_client.connect("redis+sentinel://127.0.0.1:26379/main/0")).__name__ == "Redis"
    for wrong in ("redis+other://h:1", "redis+sentinel://h:26379"):
        try:
            redis_client.connect(wrong)
        except ValueError:
            continue
        raise AssertionError(wrong)
