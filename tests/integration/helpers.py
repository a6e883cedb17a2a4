"""Small helpers that keep the tests about behaviour rather than HTTP plumbing."""

from __future__ import annotations

import base64
from typing import Any

import httpx


def b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


async def enqueue(client: httpx.AsyncClient, topic: str, payload: bytes | str = b"x", **fields: Any) -> str:
    r = await client.post("/api/messages", json={"topic": topic, "payload": b64(payload), **fields})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def dequeue(client: httpx.AsyncClient, topic: str, count: int = 1, **fields: Any) -> list[dict[str, Any]]:
    r = await client.post("/api/messages/dequeue", json={"topic": topic, "count": count, **fields})
    assert r.status_code == 200, r.text
    messages: list[dict[str, Any]] = r.json()["messages"]
    return messages


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["code"] == code, body
    assert isinstance(body["error"], str) and body["error"]
    return body


def metric(exposition: str, name: str, **labels: str) -> float | None:
    """The value of one sample in Prometheus text (None if absent); `name` as exposed, e.g. `..._total`."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return None


def metric_sum(exposition: str, name: str, **labels: str) -> float:
    """The sum of the samples named `name` (with these labels), 0 if none: a gauge over every label value."""
    from prometheus_client.parser import text_string_to_metric_families

    return sum(
        float(sample.value)
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items())
    )


async def long_polls_waiting(base_url: str | httpx.URL, at_least: int = 1) -> None:
    """Wait until the server at `base_url` has at least this many dequeues waiting for a message."""
    from tests.support.waiting import eventually

    async def enough() -> bool:
        async with httpx.AsyncClient(base_url=base_url) as c:
            return metric_sum((await c.get("/metrics")).text, "skiplock_long_polls_waiting") >= at_least

    await eventually(enough, what=f"{at_least} long polls waiting")
