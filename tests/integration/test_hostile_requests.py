"""Single requests that used to answer 500, cross-site requests a browser could be tricked into sending, and
names that only looked valid. Each is a client error now: a 4xx with the contract's shape and code."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.integration.helpers import assert_error, b64, enqueue
from tests.support.servers import ADMIN
from tests.support.tenants import Tenant


def _basic(username: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


async def test_a_nul_in_basic_credentials_is_unauthorized(make_client: Any) -> None:
    c = make_client(auth=None)
    for username, password in (("ad\x00min", "x"), ("admin", "pw\x00")):
        r = await c.get("/api/topics", headers=_basic(username, password))
        assert_error(r, 401, "unauthorized")


async def test_huge_offsets_are_invalid_requests(client: httpx.AsyncClient) -> None:
    for path in ("/api/messages", "/api/tenants", "/api/users"):
        for offset in (2**53, 2**63, 2**64, 10**30):  # the bound is 2^53 - 1, exact in a JSON number
            r = await client.get(path, params={"offset": str(offset)})
            assert_error(r, 400, "invalid_request")
    r = await client.get("/api/messages", params={"offset": str(2**53 - 1)})
    assert r.status_code == 200 and r.json()["items"] == []


@pytest.mark.parametrize("slug", ["%FF", "x" * 300, "UPPER"])
async def test_odd_tenant_slugs_are_not_found(client: httpx.AsyncClient, slug: str) -> None:
    assert_error(await client.get(f"/api/tenants/{slug}"), 404, "not_found")


@pytest.mark.parametrize("slug", ["%00", "a%00b"])
async def test_a_nul_in_a_path_is_refused_as_any_string_is(client: httpx.AsyncClient, slug: str) -> None:
    """(Contract, "Bounds...": NUL characters in any string are a 400, path parameters included.)"""
    assert_error(await client.get(f"/api/tenants/{slug}"), 400, "invalid_request")


async def test_an_odd_x_tenant_is_not_found(make_client: Any) -> None:
    c = make_client(headers={"X-Tenant": "Bad_Slug%00"})
    assert_error(await c.get("/api/topics"), 404, "not_found")


async def test_deeply_nested_metadata_is_refused(client: httpx.AsyncClient) -> None:
    nested = "[" * 3000 + "]" * 3000
    body = f'{{"topic": "deep", "payload": "{b64("x")}", "metadata": {{"a": {nested}}}}}'
    r = await client.post("/api/messages", content=body, headers={"Content-Type": "application/json"})
    assert_error(r, 400, "invalid_request")
    batch = f'{{"topic": "deep", "messages": [{{"payload": "{b64("x")}", "metadata": {{"a": {nested}}}}}]}}'
    r = await client.post("/api/messages/batch", content=batch, headers={"Content-Type": "application/json"})
    assert_error(r, 400, "invalid_request")
    # Nesting that Postgres stores well is fine.
    await enqueue(client, "deep", metadata={"a": json.loads("[" * 30 + "]" * 30)})


@pytest.mark.parametrize(
    "quotas",
    [{"max_topics": 2**31}, {"max_messages": 2**63}, {"max_payload_bytes": 2**63}, {"enqueue_rate": 2**63}],
)
async def test_quotas_beyond_what_is_stored_are_refused(
    client: httpx.AsyncClient, tenant: Tenant, quotas: dict[str, int]
) -> None:
    r = await client.patch(f"/api/tenants/{tenant.slug}", json={"quotas": quotas})
    assert_error(r, 400, "invalid_request")
    await enqueue(client, "still-works")


async def test_the_largest_max_topics_quota_works(client: httpx.AsyncClient, tenant: Tenant) -> None:
    r = await client.patch(f"/api/tenants/{tenant.slug}", json={"quotas": {"max_topics": 2**31 - 1}})
    assert r.status_code == 200
    await enqueue(client, "capped-by-a-large-quota")


@pytest.mark.parametrize("name", ["orders\n", "orders.dlq\n", "a\n", "orders\r"])
async def test_names_with_a_trailing_newline_are_refused(client: httpx.AsyncClient, name: str) -> None:
    r = await client.post("/api/messages", json={"topic": name, "payload": b64("x")})
    assert r.status_code == 400, r.text
    assert_error(await client.put(f"/api/topic-configs/{quote(name, safe='')}", json={}), 400, r.json()["code"])
    r = await client.post("/api/tenants", json={"slug": "slug\n", "name": "n"})
    assert_error(r, 400, "invalid_request")


async def test_grant_patterns_with_a_trailing_newline_are_refused(client: httpx.AsyncClient, make_user: Any) -> None:
    users = (await client.get("/api/users")).json()["items"]
    if not users:
        r = await client.post("/api/users", json={"username": "g", "password": "long enough password"})
        users = [r.json()]
    for pattern in ("orders\n", "orders.*\n", "*\n"):
        r = await client.post(f"/api/users/{users[0]['id']}/grants", json={"action": "read", "topic_pattern": pattern})
        assert_error(r, 400, "invalid_request")


# --- cross-site requests -----------------------------------------------------------------------------------------


async def test_unsafe_requests_with_a_body_must_be_json(client: httpx.AsyncClient) -> None:
    body = json.dumps({"topic": "csrf", "payload": b64("x")})
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None):
        headers = {"Content-Type": content_type} if content_type else {}
        r = await client.post("/api/messages", content=body, headers=headers)
        assert_error(r, 415, "unsupported_media_type")
    r = await client.post("/api/messages", content=body, headers={"Content-Type": "application/json; charset=utf-8"})
    assert r.status_code == 201
    assert (await client.get("/api/messages", params={"topic": "csrf"})).json()["total"] == 1
    # Bodiless unsafe requests need no content type.
    assert (await client.post("/api/topics/csrf/requeue")).status_code == 200


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Origin": "https://evil.example", "Sec-Fetch-Site": "same-origin"},
    ],
)
async def test_cross_site_unsafe_requests_are_refused(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    r = await client.post("/api/topics/xs/purge", json={}, headers=headers)
    assert_error(r, 403, "forbidden")
    r = await client.post("/api/messages", json={"topic": "xs", "payload": b64("x")}, headers=headers)
    assert_error(r, 403, "forbidden")
    # Reading is not changing anything: a cross-site GET still cannot read the answer (no CORS).
    assert (await client.get("/api/topics", headers=headers)).status_code == 200


async def test_same_origin_browser_requests_pass(client: httpx.AsyncClient, server: Any) -> None:
    host = server.base_url.removeprefix("http://")
    headers = {"Origin": server.base_url, "Sec-Fetch-Site": "same-origin", "Host": host}
    r = await client.post("/api/messages", json={"topic": "so", "payload": b64("x")}, headers=headers)
    assert r.status_code == 201, r.text
    r = await client.post(
        "/api/messages", json={"topic": "so", "payload": b64("x")}, headers={"Sec-Fetch-Site": "none"}
    )
    assert r.status_code == 201, r.text


async def test_a_cross_site_login_is_refused(make_client: Any) -> None:
    c = make_client(auth=ADMIN)
    r = await c.post("/api/auth/session", headers={"Origin": "https://evil.example"})
    assert_error(r, 403, "forbidden")
    assert "skiplock_session" not in r.cookies
