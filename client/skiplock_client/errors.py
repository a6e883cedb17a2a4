"""One exception class per error code of the contract, each carrying the status, the code, the server's sentence,
its details, the request id and (for 429 and 503) the `Retry-After` seconds.

`raise_for` turns an error response into the class of its code; a code this client does not know (a newer server)
becomes the class of its status, so `except NotFound` keeps working.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import msgspec


class SkiplockError(Exception):
    """An error answered by the server, or a request that could not be completed."""

    code: ClassVar[str] = "error"
    status: int | None = None

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        details: Any = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        self.error_code = code or self.code
        self.details = details
        self.request_id = request_id
        self.retry_after = retry_after

    def __str__(self) -> str:
        where = f" (request {self.request_id})" if self.request_id else ""
        return f"{self.error_code}: {self.message}{where}"


class TransportError(SkiplockError):
    """The request did not get an answer: the connection failed, was cut, or timed out. A request that was sent may
    have taken effect (see `send`'s note on retries)."""

    code = "transport_error"


class TlsError(TransportError):
    """The TLS handshake failed: a certificate not trusted, a client certificate refused. Never retried."""

    code = "tls_error"


class InvalidRequest(SkiplockError):
    code, status = "invalid_request", 400


class ReservedTopic(InvalidRequest):
    code = "reserved_topic"


class InvalidSchema(InvalidRequest):
    """A schema that does not parse or compile (its `error` names the problem)."""

    code = "invalid_schema"


class SchemaViolation(InvalidRequest):
    """The payload does not fit the topic's schema: `details` name where (a JSON pointer) and why (in a batch, per
    item)."""

    code = "schema_violation"


class ConsumerGroupRequired(InvalidRequest):
    """The topic has consumer groups: consume it as one of them (`consumer_group`)."""

    code = "consumer_group_required"


class Unauthorized(SkiplockError):
    code, status = "unauthorized", 401


class Forbidden(SkiplockError):
    code, status = "forbidden", 403


class NotFound(SkiplockError):
    code, status = "not_found", 404


class MessageNotFound(NotFound):
    code = "message_not_found"


class Conflict(SkiplockError):
    """A 409 of a code this client does not know."""

    code, status = "conflict", 409


class LeaseLost(Conflict):
    """The message was leased again by another dequeue since this receipt was issued: whoever holds the new lease
    owns it now."""

    code = "lease_lost"


class KeyConflict(Conflict):
    code = "key_conflict"


class AlreadyExists(Conflict):
    code = "already_exists"


class GroupExists(AlreadyExists):
    code = "group_exists"


class NotReplayable(Conflict):
    """The topic keeps no message log (its config's `replayable` is off)."""

    code = "not_replayable"


class IncompatibleSchema(Conflict):
    """A new schema version would refuse messages the current one accepts (`compatibility="backward"`)."""

    code = "incompatible_schema"


class TenantNotEmpty(Conflict):
    code = "tenant_not_empty"


class LastAdmin(Conflict):
    """The change would leave the tenant without a tenant_admin."""

    code = "last_admin"


class PayloadTooLarge(SkiplockError):
    code, status = "payload_too_large", 413


class UnsupportedMediaType(SkiplockError):
    code, status = "unsupported_media_type", 415


class TooManyRequests(SkiplockError):
    """A 429 of a code this client does not know."""

    code, status = "too_many_requests", 429


class QueueFull(TooManyRequests):
    """The topic holds `max_depth` messages; `retry_after` says when to try again."""

    code = "queue_full"


class RateLimited(TooManyRequests):
    code = "rate_limited"


class QuotaExceeded(TooManyRequests):
    """A tenant quota: retryable only when the server gave a `retry_after` (a rate); a size or count quota is 403
    or a 429 without one, and waiting will not lift it."""

    code = "quota_exceeded"


class Internal(SkiplockError):
    code, status = "internal", 500


class Unavailable(SkiplockError):
    """A dependency of the server is not answering (or the server is stopping); `retry_after` says when to retry."""

    code, status = "unavailable", 503


BY_CODE: dict[str, type[SkiplockError]] = {
    cls.code: cls
    for cls in (
        InvalidRequest,
        ReservedTopic,
        InvalidSchema,
        SchemaViolation,
        ConsumerGroupRequired,
        Unauthorized,
        Forbidden,
        NotFound,
        MessageNotFound,
        LeaseLost,
        KeyConflict,
        AlreadyExists,
        GroupExists,
        NotReplayable,
        IncompatibleSchema,
        TenantNotEmpty,
        LastAdmin,
        PayloadTooLarge,
        UnsupportedMediaType,
        QueueFull,
        RateLimited,
        QuotaExceeded,
        Internal,
        Unavailable,
    )
}
_BY_STATUS: dict[int, type[SkiplockError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    429: TooManyRequests,
    500: Internal,
    503: Unavailable,
}


class _ErrorBody(msgspec.Struct):
    code: str = ""
    error: str = ""
    details: Any = None


def retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: the server sends seconds; treat anything else as absent


def error_for(status: int, body: bytes, headers: Mapping[str, str], reason: str | None = None) -> SkiplockError:
    """The exception for an error response (status >= 400); `headers` looked up case-insensitively."""
    try:
        parsed = msgspec.json.decode(body, type=_ErrorBody)
    except (msgspec.DecodeError, msgspec.ValidationError):
        parsed = _ErrorBody(error=body[:200].decode(errors="replace") or (reason or ""))
    cls = BY_CODE.get(parsed.code) or _BY_STATUS.get(status) or SkiplockError
    return cls(
        parsed.error or reason or f"HTTP {status}",
        status=status,
        code=parsed.code or None,
        details=parsed.details,
        request_id=headers.get("X-Request-Id"),
        retry_after=retry_after(headers),
    )
