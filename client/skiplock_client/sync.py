"""`Client`: the same API for code that does not use asyncio (scripts, Spark executors, threaded workers).

It runs one `AsyncClient` on one event loop in one background thread, started with the client and stopped by
`close`: calls from any thread are handed to that loop and waited for, so no call starts an event loop of its own
and the connection pool is shared by every thread.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, Concatenate, ParamSpec, TypeVar, Unpack

from skiplock_client.client import AsyncClient, ClientOptions
from skiplock_client.consumer import BatchConsumerOptions, Consumer, ConsumerOptions
from skiplock_client.models import Message, TopicConfig

P = ParamSpec("P")
R = TypeVar("R")


class _Portal:
    """An event loop in a daemon thread, taking coroutines from other threads."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="skiplock-client", daemon=True)
        self._thread.start()

    def call(self, coroutine: Coroutine[Any, Any, R]) -> R:
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError("a blocking Client call from inside its own event loop (use AsyncClient there)")
        future: Future[R] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return future.result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


def _blocking(
    method: Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[Client, P], R]:
    def call(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._portal.call(method(self._client, *args, **kwargs))

    call.__name__ = method.__name__
    call.__doc__ = method.__doc__
    return call


class SyncConsumer:
    """A consumer runtime driven from synchronous code: `run_forever()` blocks until `stop()` or SIGTERM/SIGINT."""

    def __init__(self, portal: _Portal, consumer: Consumer) -> None:
        self._portal = portal
        self.consumer = consumer

    def run_forever(self) -> None:
        previous: dict[signal.Signals, Any] = {}
        if self.consumer.handle_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, lambda *_: self.consumer.stop())
        try:
            self._portal.call(self.consumer.run())
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def stop(self) -> None:
        self.consumer.stop()


class Client:
    """Skiplock's REST API, blocking. Takes `AsyncClient`'s arguments; use as `with Client(...) as client:`."""

    def __init__(self, base_url: str = "http://127.0.0.1:8080", **options: Unpack[ClientOptions]) -> None:
        self._portal = _Portal()

        async def make() -> AsyncClient:  # created on the portal's loop, where its connections will live
            return AsyncClient(base_url, **options)

        self._client = self._portal.call(make())

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._portal.call(self._client.aclose())
        self._portal.stop()

    @property
    def batch_size(self) -> int:
        return self._client.batch_size

    # `AsyncClient.consumer`'s options (`ConsumerOptions`, see there).
    def consumer(self, topic: str, handler: Callable[..., Any], **options: Unpack[ConsumerOptions]) -> SyncConsumer:
        """A consumer runtime whose handler is a plain function (run in a pool of `concurrency` threads); start it
        with `consumer.run_forever()`. The options are `Consumer`'s, documented there."""
        return SyncConsumer(self._portal, self._client.consumer(topic, handler, **options))

    def batch_consumer(
        self, topic: str, handler: Callable[[list[Message]], Any], **options: Unpack[BatchConsumerOptions]
    ) -> SyncConsumer:
        """A consumer runtime calling `handler(messages)` with up to `batch_size` messages at a time; the other
        options are `consumer`'s."""
        return self.consumer(topic, handler, batch=True, **options)

    login = _blocking(AsyncClient.login)
    logout = _blocking(AsyncClient.logout)
    me = _blocking(AsyncClient.me)
    version = _blocking(AsyncClient.version)
    send = _blocking(AsyncClient.send)
    send_batch = _blocking(AsyncClient.send_batch)
    receive = _blocking(AsyncClient.receive)
    ack = _blocking(AsyncClient.ack)
    ack_batch = _blocking(AsyncClient.ack_batch)
    nack = _blocking(AsyncClient.nack)
    extend = _blocking(AsyncClient.extend)
    message = _blocking(AsyncClient.message)
    story = _blocking(AsyncClient.story)
    consumers = _blocking(AsyncClient.consumers)
    start_bulk_job = _blocking(AsyncClient.start_bulk_job)
    redrive = _blocking(AsyncClient.redrive)
    bulk_job = _blocking(AsyncClient.bulk_job)
    error_classes = _blocking(AsyncClient.error_classes)
    messages = _blocking(AsyncClient.messages)
    audit = _blocking(AsyncClient.audit)
    delete_message = _blocking(AsyncClient.delete_message)
    delete_by_key = _blocking(AsyncClient.delete_by_key)
    requeue = _blocking(AsyncClient.requeue)
    requeue_all = _blocking(AsyncClient.requeue_all)
    create_consumer_group = _blocking(AsyncClient.create_consumer_group)
    consumer_groups = _blocking(AsyncClient.consumer_groups)
    delete_consumer_group = _blocking(AsyncClient.delete_consumer_group)
    purge = _blocking(AsyncClient.purge)
    topics = _blocking(AsyncClient.topics)
    stats = _blocking(AsyncClient.stats)
    topic_configs = _blocking(AsyncClient.topic_configs)
    topic_config = _blocking(AsyncClient.topic_config)

    def set_topic_config(self, topic: str, config: TopicConfig | None = None, **fields: Any) -> TopicConfig:
        return self._portal.call(self._client.set_topic_config(topic, config, **fields))

    delete_topic_config = _blocking(AsyncClient.delete_topic_config)
    tenants = _blocking(AsyncClient.tenants)
    tenant_info = _blocking(AsyncClient.tenant_info)
    create_tenant = _blocking(AsyncClient.create_tenant)
    update_tenant = _blocking(AsyncClient.update_tenant)
    delete_tenant = _blocking(AsyncClient.delete_tenant)
    users = _blocking(AsyncClient.users)
    user = _blocking(AsyncClient.user)
    create_user = _blocking(AsyncClient.create_user)
    update_user = _blocking(AsyncClient.update_user)
    delete_user = _blocking(AsyncClient.delete_user)
    grants = _blocking(AsyncClient.grants)
    grant = _blocking(AsyncClient.grant)
    revoke = _blocking(AsyncClient.revoke)
    trim_message_log = _blocking(AsyncClient.trim_message_log)
    replay = _blocking(AsyncClient.replay)
    topic_schemas = _blocking(AsyncClient.topic_schemas)
    topic_schema = _blocking(AsyncClient.topic_schema)
    set_topic_schema = _blocking(AsyncClient.set_topic_schema)
    delete_topic_schema = _blocking(AsyncClient.delete_topic_schema)
    schedules = _blocking(AsyncClient.schedules)
    schedule = _blocking(AsyncClient.schedule)
    set_schedule = _blocking(AsyncClient.set_schedule)
    delete_schedule = _blocking(AsyncClient.delete_schedule)
    run_schedule = _blocking(AsyncClient.run_schedule)
