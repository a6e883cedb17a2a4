"""The OpenAPI document is the API's contract: a reviewed snapshot (`docs/openapi.json`), precise enough to generate
clients from (`make openapi-client` type-checks a TypeScript client generated from it)."""

from __future__ import annotations

import json
from typing import Any

from tests.openapi.snapshot import SNAPSHOT, current

METHODS = ("get", "put", "post", "delete", "patch")


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    ]


def test_the_served_document_is_the_reviewed_snapshot() -> None:
    assert current() == SNAPSHOT.read_text(), (
        "the OpenAPI document changed: run `make openapi` and review the diff of docs/openapi.json"
    )


def test_every_operation_is_named_tagged_secured_and_documents_its_errors() -> None:
    document = json.loads(current())
    operations = _operations(document)
    ids = [operation.get("operationId") for _, _, operation in operations]
    assert all(ids) and len(set(ids)) == len(ids), ids
    for method, path, operation in operations:
        assert operation.get("tags"), (method, path)
        assert "security" in operation, (method, path)
        if path.startswith("/api/"):
            for status, response in operation["responses"].items():
                if status.startswith(("4", "5")):
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/Error"}, (method, path, status)
    schemes = document["components"]["securitySchemes"]
    assert schemes["basicAuth"] == {
        "type": "http",
        "scheme": "basic",
        "description": schemes["basicAuth"]["description"],
    }
    assert {"sessionCookie", "csrfToken", "metricsToken"} <= set(schemes)


def test_schemas_are_named_for_what_they_are() -> None:
    """Requests end in Body, responses in View or Page; no anonymous maps where a struct belongs."""
    document = json.loads(current())
    names = set(document["components"]["schemas"])
    shared = {"Error", "Quotas", "TopicConfig", "MessageFilter"}  # shapes sent and returned alike
    odd = {n for n in names if not n.endswith(("Body", "View", "Page", "Item"))} - shared
    assert not odd, odd
    for method, path, operation in _operations(document):
        for status, response in operation["responses"].items():
            schema = (response.get("content") or {}).get("application/json", {}).get("schema")
            if status.startswith("2") and schema is not None:
                assert "$ref" in schema, (method, path, status, schema)
