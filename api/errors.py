"""The one mapping from errors to responses: every error is `{code, error, details?}` with a stable code."""

from __future__ import annotations

import logging
from typing import Any

from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, ValidationException

from mq import errors
from mq.faults import is_dependency_fault

log = logging.getLogger(__name__)

# Domain error class -> HTTP status (its stable code is the class's own, `errors.SkiplockError.code`). The most
# specific class wins (subclasses listed first).
DOMAIN_ERRORS: list[tuple[type[errors.SkiplockError], int]] = [
    (errors.ReservedTopic, 400),
    (errors.ConsumerGroupRequired, 400),
    (errors.InvalidSchema, 400),
    (errors.SchemaViolation, 400),
    (errors.InvalidRequest, 400),
    (errors.UnsupportedMediaType, 415),
    (errors.Unauthorized, 401),
    (errors.Forbidden, 403),
    (errors.MessageNotFound, 404),
    (errors.NotFound, 404),
    (errors.LeaseLost, 409),
    (errors.KeyConflict, 409),
    (errors.GroupExists, 409),
    (errors.NotReplayable, 409),
    (errors.IncompatibleSchema, 409),
    (errors.AlreadyExists, 409),
    (errors.TenantNotEmpty, 409),
    (errors.LastAdmin, 409),
    (errors.PayloadTooLarge, 413),
    (errors.QueueFull, 429),
    (errors.RateLimited, 429),
    (errors.QuotaExceeded, 429),
    (errors.Unavailable, 503),
]

# Framework errors by status: unknown routes, wrong methods, oversized or unparsable bodies.
HTTP_STATUS_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "invalid_request",
    409: "key_conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
    503: "unavailable",
}

WWW_AUTHENTICATE = {"WWW-Authenticate": 'Basic realm="skiplock"'}
#: The admin console marks its requests with `X-Requested-With: skiplock-console`; its 401s challenge with a scheme
#: browsers do not prompt for (a Basic challenge opens the browser's own login dialog over the console's).
CONSOLE_MARK = "skiplock-console"
CONSOLE_WWW_AUTHENTICATE = {"WWW-Authenticate": 'Session realm="skiplock"'}


def error_response(
    status: int,
    code: str,
    message: str,
    details: Any = None,
    headers: dict[str, str] | None = None,
    request: Request[Any, Any, Any] | None = None,
) -> Response[dict[str, Any]]:
    body: dict[str, Any] = {"code": code, "error": message}
    if details is not None:
        body["details"] = details
    if status == 401:
        console = request is not None and request.headers.get("x-requested-with") == CONSOLE_MARK
        headers = {**(headers or {}), **(CONSOLE_WWW_AUTHENTICATE if console else WWW_AUTHENTICATE)}
    return Response(body, status_code=status, media_type=MediaType.JSON, headers=headers)


def code_of(exc: errors.SkiplockError) -> str:
    """The contract's code for a domain error (for errors reported inside a body, such as a bulk action's)."""
    for cls, _ in DOMAIN_ERRORS:
        if isinstance(exc, cls):
            return exc.code
    return "internal"


def status_of(exc: BaseException) -> int:
    """The status the handlers below answer `exc` with (for metrics, which see the exception, not the response)."""
    if isinstance(exc, HTTPException):
        return exc.status_code
    for cls, status in DOMAIN_ERRORS:
        if isinstance(exc, cls):
            refusal = isinstance(exc, errors.QueueFull | errors.RateLimited | errors.QuotaExceeded)
            return 403 if refusal and exc.retry_after is None else status  # type: ignore[attr-defined]
    return 503 if is_dependency_fault(exc) else 500


def count_refusal(request: Request[Any, Any, Any], code: str) -> None:
    """A 4xx answered: `skiplock_http_refusals_total` by the caller's tenant (when known) and code."""
    app = request.scope.get("app")
    runtime = getattr(app.state, "runtime", None) if app is not None else None
    if runtime is None:
        return
    principal = request.scope.get("user")
    tenant = getattr(principal, "tenant_slug", None) or ""
    runtime.metrics.refusals.labels(tenant, code).inc()


def handle_domain_error(request: Request[Any, Any, Any], exc: errors.SkiplockError) -> Response[dict[str, Any]]:
    for cls, status in DOMAIN_ERRORS:
        if isinstance(exc, cls):
            code = exc.code
            headers = None
            if isinstance(exc, errors.QueueFull | errors.RateLimited | errors.QuotaExceeded | errors.Unavailable):
                if exc.retry_after is None:  # a quota that waiting will not lift
                    count_refusal(request, code)
                    return error_response(403, code, exc.message, exc.details)
                headers = {"Retry-After": str(exc.retry_after)}
            if status < 500:
                count_refusal(request, code)
            return error_response(status, code, exc.message, exc.details, headers, request)
    return handle_unexpected_error(request, exc)


def handle_http_error(request: Request[Any, Any, Any], exc: HTTPException) -> Response[dict[str, Any]]:
    status = exc.status_code
    if status >= 500:
        return handle_unexpected_error(request, exc)
    details = None
    message = exc.detail
    if isinstance(exc, ValidationException):
        details = [_validation_detail(e) for e in (exc.extra or [])] if isinstance(exc.extra, list) else None
        message = "the request is not valid"
        if details and len(details) == 1:
            message = details[0]["error"]
    elif status == 404:
        message = "no such route"
    elif status == 405:
        message = "method not allowed on this route"
    elif status == 413:
        message = "request body is too large"
    code = HTTP_STATUS_CODES.get(status, "invalid_request")
    headers = {k: v for k, v in (exc.headers or {}).items() if k.lower() in ("allow", "retry-after")} or None
    count_refusal(request, code)
    return error_response(status, code, message, details, headers)


def _validation_detail(entry: Any) -> dict[str, Any]:
    if isinstance(entry, dict):
        key = entry.get("key")
        message = str(entry.get("message", "invalid value"))
        return (
            {"field": key, "code": "invalid_request", "error": message}
            if key
            else {"code": "invalid_request", "error": message}
        )
    return {"code": "invalid_request", "error": str(entry)}


def handle_unexpected_error(_: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    if is_dependency_fault(exc):
        log.warning("dependency unavailable: %s: %s", type(exc).__name__, exc)
        return error_response(
            503, "unavailable", "a dependency is not answering; retry shortly", headers={"Retry-After": "1"}
        )
    log.error("internal error: %s", type(exc).__name__, exc_info=exc)
    return error_response(500, "internal", "internal server error")


EXCEPTION_HANDLERS: dict[Any, Any] = {
    errors.SkiplockError: handle_domain_error,
    HTTPException: handle_http_error,
    Exception: handle_unexpected_error,
}
