"""Response headers a browser relies on: no content sniffing anywhere, and the OpenAPI page locked down."""

from __future__ import annotations

import httpx


async def test_api_answers_are_never_sniffed(client: httpx.AsyncClient) -> None:
    for response in (
        await client.get("/api/topics"),
        await client.get("/api/messages/not-an-id"),  # an error answer too
        await client.get("/api/nope"),
        await client.post("/api/messages", json={"topic": "h", "payload": "eA=="}),
        await client.get("/healthz"),
    ):
        assert response.headers.get("x-content-type-options") == "nosniff", response.request.url
        assert len(response.headers.get_list("x-content-type-options")) == 1


async def test_the_openapi_page_and_document_have_a_csp_and_no_framing(client: httpx.AsyncClient) -> None:
    for path in ("/schema", "/schema/openapi.json"):
        response = await client.get(path, follow_redirects=True)
        assert response.status_code == 200, path
        csp = response.headers.get("content-security-policy", "")
        assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp, path
        # What Scalar loads (checked in Chromium with its 1.72 bundle): its script and Litestar's stylesheet from
        # the CDN, the styles it injects, its fonts from fonts.scalar.com, the document from here.
        assert "script-src https://cdn.jsdelivr.net;" in csp and "style-src 'unsafe-inline' " in csp, path
        assert "https://fonts.scalar.com" in csp.split("font-src")[1].split(";")[0], path
        assert "connect-src 'self';" in csp, path
        assert response.headers.get("x-frame-options") == "DENY", path
        assert response.headers.get("x-content-type-options") == "nosniff", path
    page = (await client.get("/schema", follow_redirects=True)).text
    assert "https://cdn.jsdelivr.net/" in page  # the only origin the page's CSP lets scripts come from
