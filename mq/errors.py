"""The one tree of domain errors. Each docstring is the default message and `code` the stable code of the contract
(`{code, error, details?}`); `api.errors` maps classes to HTTP statuses."""

from __future__ import annotations

from typing import Any, ClassVar


class SkiplockError(Exception):
    """Something went wrong."""

    code: ClassVar[str] = "internal_error"

    def __init__(self, message: str | None = None, details: Any = None) -> None:
        self.message = message or (type(self).__doc__ or "").strip()
        self.details = details
        super().__init__(self.message)


class InvalidRequest(SkiplockError):
    """The request is not valid."""

    code: ClassVar[str] = "invalid_request"


class ReservedTopic(InvalidRequest):
    """Topics ending in `.dlq` are dead-letter topics; messages reach them only by failing."""

    code: ClassVar[str] = "reserved_topic"


class InvalidSchema(InvalidRequest):
    """The schema does not parse or compile."""

    code: ClassVar[str] = "invalid_schema"


class SchemaViolation(InvalidRequest):
    """The payload does not fit the topic's schema."""

    code: ClassVar[str] = "schema_violation"


class UnsupportedMediaType(SkiplockError):
    """A request body must be JSON (`Content-Type: application/json`)."""

    code: ClassVar[str] = "unsupported_media_type"


class Unauthorized(SkiplockError):
    """Valid credentials are required."""

    code: ClassVar[str] = "unauthorized"


class Forbidden(SkiplockError):
    """You are not allowed to do that."""

    code: ClassVar[str] = "forbidden"


class NotFound(SkiplockError):
    """No such resource."""

    code: ClassVar[str] = "not_found"


class MessageNotFound(NotFound):
    """No such message."""

    code: ClassVar[str] = "message_not_found"


class ConsumerGroupRequired(InvalidRequest):
    """This topic has consumer groups: it is consumed through them only (name one in `consumer_group`)."""

    code: ClassVar[str] = "consumer_group_required"


class LeaseLost(SkiplockError):
    """The message was delivered again since this receipt was issued; the receipt is stale."""

    code: ClassVar[str] = "lease_lost"


class KeyConflict(SkiplockError):
    """A pending message with the same key already exists on that topic."""

    code: ClassVar[str] = "key_conflict"


class AlreadyExists(SkiplockError):
    """That name is taken."""

    code: ClassVar[str] = "already_exists"


class GroupExists(AlreadyExists):
    """This topic already has a consumer group of that name."""

    code: ClassVar[str] = "group_exists"


class IncompatibleSchema(SkiplockError):
    """The new schema version would refuse messages the current one accepts (`compatibility: backward`)."""

    code: ClassVar[str] = "incompatible_schema"


class NotReplayable(SkiplockError):
    """The topic is not replayable: set `replayable` in its config to keep a message log."""

    code: ClassVar[str] = "not_replayable"


class LastAdmin(SkiplockError):
    """This is the tenant's last tenant_admin: make another user tenant_admin first, or the tenant has none left."""

    code: ClassVar[str] = "last_admin"


class TenantNotEmpty(SkiplockError):
    """The tenant still holds messages; delete it with force=true to drop them too."""

    code: ClassVar[str] = "tenant_not_empty"


class PayloadTooLarge(SkiplockError):
    """The payload is larger than the allowed maximum."""

    code: ClassVar[str] = "payload_too_large"


class QueueFull(SkiplockError):
    """The topic holds as many messages as its max_depth allows."""

    code: ClassVar[str] = "queue_full"

    def __init__(self, message: str | None = None, details: Any = None, retry_after: int = 1) -> None:
        super().__init__(message, details)
        self.retry_after = retry_after


class RateLimited(SkiplockError):
    """Too many requests; slow down."""

    code: ClassVar[str] = "rate_limited"

    def __init__(self, message: str | None = None, details: Any = None, retry_after: int = 1) -> None:
        super().__init__(message, details)
        self.retry_after = retry_after


class QuotaExceeded(SkiplockError):
    """The tenant's quota does not allow this."""

    code: ClassVar[str] = "quota_exceeded"

    def __init__(self, message: str | None = None, details: Any = None, retry_after: int | None = None) -> None:
        """`retry_after`: seconds after which retrying may succeed (429); None: not before the quota changes (403)."""
        super().__init__(message, details)
        self.retry_after = retry_after


class Unavailable(SkiplockError):
    """The service cannot answer right now; try again."""

    code: ClassVar[str] = "unavailable"

    def __init__(self, message: str | None = None, details: Any = None, retry_after: int = 1) -> None:
        super().__init__(message, details)
        self.retry_after = retry_after
