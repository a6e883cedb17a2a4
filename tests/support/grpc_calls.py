"""What the gRPC tests share: a bearer token from the REST login, and the call metadata that carries it."""

from __future__ import annotations

import httpx

from tests.support.servers import Server


async def login_token(server: Server, username: str, password: str) -> str:
    """A bearer token for the user, from `POST /api/auth/login`."""
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as c:
        r = await c.post("/api/auth/login", json={"username": username, "password": password})
        assert r.status_code == 200, r.text
        token: str = r.json()["token"]
        return token


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    """gRPC call metadata carrying the token."""
    return (("authorization", f"Bearer {token}"),)
