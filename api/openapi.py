"""What the OpenAPI document says beyond what Litestar derives from the routes: every operation documents the
contract's error shape, `{code, error, details?}`, for each status it may answer with an error (Litestar documents
its own `ValidationException` shape, which Skiplock never sends), and how it authenticates (HTTP Basic, or the
session cookie with the CSRF header on unsafe methods; none on the probes, a bearer token on /metrics).

Per-route lists of error statuses are left to the schema work of the API's next revision; until then every
operation documents the statuses any `/api` request can meet (bad input, auth, missing, conflicts, limits,
dependency faults), and the fuzzing (tests/fuzz) checks every answer against the document.
"""

from __future__ import annotations

import json

from litestar.openapi.spec import (
    Components,
    OpenAPI,
    OpenAPIHeader,
    OpenAPIMediaType,
    OpenAPIResponse,
    OpenAPIType,
    Reference,
    Schema,
    SecurityRequirement,
    SecurityScheme,
)

from api.auth import CSRF_HEADER, SESSION_COOKIE
from api.errors import DOMAIN_ERRORS, HTTP_STATUS_CODES

ERROR_SCHEMA = "Error"

_DESCRIPTIONS = {
    400: "The request is not valid (invalid_request, reserved_topic)",
    401: "Credentials are missing or wrong (unauthorized; WWW-Authenticate: Basic)",
    403: "Not allowed (forbidden, quota_exceeded for max_topics)",
    404: "No such resource (not_found, message_not_found), or another tenant's",
    405: "Method not allowed on this route (invalid_request)",
    409: "Conflict (lease_lost, key_conflict, already_exists, tenant_not_empty)",
    413: "Payload or request too large (payload_too_large)",
    415: "A body must be application/json (unsupported_media_type)",
    429: "Limited; retry after Retry-After (queue_full, rate_limited, quota_exceeded)",
    500: "A server bug (internal); never carries a stack trace",
    503: "A dependency is not answering; retry after Retry-After (unavailable)",
}
_RETRY_AFTER = {429, 503}


def error_schema() -> Schema:
    codes = sorted({cls.code for cls, _ in DOMAIN_ERRORS} | set(HTTP_STATUS_CODES.values()) | {"internal"})
    return Schema(
        type=OpenAPIType.OBJECT,
        required=["code", "error"],
        properties={
            "code": Schema(type=OpenAPIType.STRING, enum=codes, description="Stable, snake_case"),
            "error": Schema(type=OpenAPIType.STRING, description="A sentence for people"),
            "details": Schema(description="Optional: per-item errors of a batch, or the limit that refused"),
        },
        description="Every error Skiplock answers",
    )


SECURITY_SCHEMES = {
    "basicAuth": SecurityScheme(type="http", scheme="basic", description="A user's username and password"),
    "sessionCookie": SecurityScheme(
        type="apiKey",
        name=SESSION_COOKIE,
        security_scheme_in="cookie",
        description="The session POST /api/auth/session starts (the admin UI's)",
    ),
    "csrfToken": SecurityScheme(
        type="apiKey",
        name=CSRF_HEADER.decode(),
        security_scheme_in="header",
        description="With a session, on unsafe methods: the value of the skiplock_csrf cookie",
    ),
    "metricsToken": SecurityScheme(type="http", scheme="bearer", description="SKIPLOCK_METRICS_TOKEN, when set"),
    "bearerToken": SecurityScheme(
        type="http",
        scheme="bearer",
        bearer_format="JWT",
        description="A token from POST /api/auth/login (queue-ti's login), valid token_ttl_seconds",
    ),
}
#: Operations anyone may call (load balancers' probes, what a client asks before logging in).
PUBLIC_OPERATIONS = frozenset({"getHealth", "getReadiness", "getVersion", "getAuthStatus", "tokenLogin"})
_SAFE_METHODS = frozenset({"get", "head", "options"})


def _security(operation_id: str | None, method: str) -> list[SecurityRequirement]:
    if operation_id in PUBLIC_OPERATIONS:
        return []
    if operation_id == "getMetrics":
        return [{}, {"metricsToken": []}]
    if operation_id == "login":
        return [{"basicAuth": []}]
    session: SecurityRequirement = (
        {"sessionCookie": []}
        if method in _SAFE_METHODS
        else {
            "sessionCookie": [],
            "csrfToken": [],
        }
    )
    return [{"basicAuth": []}, {"bearerToken": []}, session]


def finish_document(document: OpenAPI, strict_bodies: set[str]) -> None:
    """Document authentication, and the error responses (`document_errors`)."""
    components = document.components or Components()
    document.components = components
    components.security_schemes = dict(SECURITY_SCHEMES)
    for item in (document.paths or {}).values():
        for method in ("get", "put", "post", "delete", "patch"):
            operation = getattr(item, method, None)
            if operation is not None:
                operation.security = _security(operation.operation_id, method)
    document_errors(document, strict_bodies)


def document_errors(document: OpenAPI, strict_bodies: set[str]) -> None:
    """Replace every operation's error responses with the contract's error shape, and say of every request body
    that refuses unknown fields (`strict_bodies`, schema names) that it does (`additionalProperties: false`)."""
    components = document.components or Components()
    document.components = components
    schemas = dict(components.schemas or {})
    schemas[ERROR_SCHEMA] = error_schema()
    for name in strict_bodies & set(schemas):
        schema = schemas[name]
        if isinstance(schema, Schema):
            schema.additional_properties = False
    for schema in schemas.values():
        _any_json_may_be_null(schema)
    components.schemas = schemas
    ref = Reference(ref=f"#/components/schemas/{ERROR_SCHEMA}")
    for path, item in (document.paths or {}).items():
        if not path.startswith("/api/") and path != "/metrics":
            continue
        for method in ("get", "put", "post", "delete", "patch"):
            operation = getattr(item, method, None)
            if operation is None:
                continue
            responses = {k: v for k, v in (operation.responses or {}).items() if not k.startswith(("4", "5"))}
            for status, description in _DESCRIPTIONS.items():
                headers: dict[str, OpenAPIHeader | Reference] | None = None
                if status in _RETRY_AFTER:
                    headers = {
                        "Retry-After": OpenAPIHeader(schema=Schema(type=OpenAPIType.STRING), description="Seconds")
                    }
                responses[str(status)] = OpenAPIResponse(
                    description=description,
                    headers=headers,
                    content={"application/json": OpenAPIMediaType(schema=ref)},
                )
            for status, response in responses.items():
                if status == "204" and isinstance(response, OpenAPIResponse):
                    response.content = None  # no body, so no media type
            operation.responses = responses


def _any_json_may_be_null(schema: Schema | Reference) -> None:
    """`oneOf: [{}, {type: null}]` (what a nullable `msgspec.Raw` becomes) fails for null, which matches both
    branches: say `anyOf` there."""
    if not isinstance(schema, Schema):
        return
    if schema.one_of and any(isinstance(s, Schema) and s == Schema() for s in schema.one_of):
        schema.any_of, schema.one_of = schema.one_of, None
    for child in (schema.properties or {}).values():
        _any_json_may_be_null(child)


def openapi_json(document: OpenAPI) -> str:
    """The document as the snapshot `docs/openapi.json` holds it: sorted keys, two-space indents, final newline."""
    return json.dumps(document.to_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
