"""The Python client of Skiplock's REST API (`skiplock-client`), a distribution of its own: it imports nothing of
the server, so it installs into any application's environment (aiohttp and msgspec are its dependencies).

`AsyncClient` is the API (producer, consumer calls, admin); `Client` the same for synchronous code; `Consumer`
the runtime that runs a handler over a topic's messages (`client.consumer(topic, handler, ...)`).
"""

from skiplock_client._version import __version__
from skiplock_client.client import AsyncClient
from skiplock_client.consumer import Consumer
from skiplock_client.errors import (
    AlreadyExists,
    Conflict,
    Forbidden,
    Internal,
    InvalidRequest,
    KeyConflict,
    LastAdmin,
    LeaseLost,
    MessageNotFound,
    NotFound,
    PayloadTooLarge,
    QueueFull,
    QuotaExceeded,
    RateLimited,
    ReservedTopic,
    SkiplockError,
    TenantNotEmpty,
    TlsError,
    TooManyRequests,
    TransportError,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)
from skiplock_client.handling import Middleware, Retry
from skiplock_client.models import (
    BatchAck,
    Grant,
    Item,
    Me,
    Message,
    Page,
    Quotas,
    StatRow,
    Tenant,
    Topic,
    TopicConfig,
    TopicConfigView,
    User,
)
from skiplock_client.retry import RetryPolicy
from skiplock_client.sync import Client, SyncConsumer

__all__ = [
    "AlreadyExists",
    "AsyncClient",
    "BatchAck",
    "Client",
    "Conflict",
    "Consumer",
    "Forbidden",
    "Grant",
    "Internal",
    "InvalidRequest",
    "Item",
    "KeyConflict",
    "LastAdmin",
    "LeaseLost",
    "Me",
    "Message",
    "MessageNotFound",
    "Middleware",
    "NotFound",
    "Page",
    "PayloadTooLarge",
    "QueueFull",
    "QuotaExceeded",
    "Quotas",
    "RateLimited",
    "ReservedTopic",
    "Retry",
    "RetryPolicy",
    "SkiplockError",
    "StatRow",
    "SyncConsumer",
    "Tenant",
    "TenantNotEmpty",
    "TlsError",
    "TooManyRequests",
    "Topic",
    "TopicConfig",
    "TopicConfigView",
    "TransportError",
    "Unauthorized",
    "Unavailable",
    "UnsupportedMediaType",
    "User",
    "__version__",
]
