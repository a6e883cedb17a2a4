"""The one tree of domain errors. Each docstring is the default message; `api.errors` maps classes to HTTP."""

from __future__ import annotations

from typing import Any


class SkiplockError(Exception):
    """Something went wrong."""

    def __init__(self, message: str | None = None, details: Any = None) -> None:
        self.message = message or (type(self).__doc__ or "").strip()
        self.details = details
        super().__init__(self.message)


class InvalidRequest(SkiplockError):
    """The request is not valid."""


class ReservedTopic(InvalidRequest):
    """Topics ending in `.dlq` are dead-letter topics; messages reach them only by failing."""


class InvalidSchema(InvalidRequest):
    """The schema does not parse or compile."""


class SchemaViolation(InvalidRequest):
    """The payload does not fit the topic's schema."""


class UnsupportedMediaType(SkiplockError):
    """A request body must be JSON (`Content-Type: application/json`)."""


class Unauthorized(SkiplockError):
    """Valid credentials are required."""


class Forbidden(SkiplockError):
    """You are not allowed to do that."""


class NotFound(SkiplockError):
    """No such resource."""


class MessageNotFound(NotFound):
    """No such message."""


class ConsumerGroupRequired(InvalidRequest):
    """This topic has consumer groups: it is consumed through them only (name one in `consumer_group`)."""


class LeaseLost(SkiplockError):
    """The message was delivered again since this receipt was issued; the receipt is stale."""


class KeyConflict(SkiplockError):
    """A pending message with the same key already exists on that topic."""


class AlreadyExists(SkiplockError):
    """That name is taken."""


class GroupExists(AlreadyExists):
    """This topic already has a consumer group of that name."""


class IncompatibleSchema(SkiplockError):
    """The new schema version would refuse messages the current one accepts (`compatibility: backward`)."""


class NotReplayable(SkiplockError):
    """The topic is not replayable: set `replayable` in its config to keep a message log."""


class LastAdmin(SkiplockError):
    """This is the tenant's last tenant_admin: make another user tenant_admin first, or the tenant has none left."""


class TenantNotEmpty(SkiplockError):
    """The tenant still holds messages; delete it with force=true to drop them too."""


class PayloadTooLarge(SkiplockError):
    """The payload is larger than the allowed maximum."""


class QueueFull(SkiplockError):
    """The topic holds as many messages as its max_depth allows."""

    def __init__(self, message: str | None = None, details: Any = None, retry_after: int = 1) -> None:
        super().__init__(message, details)
        self.retry_after = retry_after


class RateLimited(SkiplockError):
    """Too many requests; slow down."""

    def __init__(self, message: str | None = None, details: Any = None, retry_after: int = 1) -> None:
        super().__init__(message, details)
        self.retry_after = retry_after


class QuotaExceeded(SkiplockError):
    """The tenant's quota does not allow this."""

    def __init__(self, message: str | None = None, details: Any = None, retry_after: int | None = None) -> None:
        """`retry_after`: seconds after which retrying may succeed (429); None: not before the quota changes (403)."""
        super().__init__(message, details)
        self.retry_after = retry_after


class Unavailable(SkiplockError):
    """The service cannot answer right now; try again."""

    def __init__(self, message: str | None = None, details: Any = None, retry_after: int = 1) -> None:
        super().__init__(message, details)
        self.retry_after = retry_after
