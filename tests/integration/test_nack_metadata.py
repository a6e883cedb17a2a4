"""Saved state on a deferral (contract, "Concurrency limits and saved state"): a nack's `metadata` is merged into
the message's before the retry; a consumer group's into its own saved state, which only its deliveries carry."""

from __future__ import annotations

import httpx

from tests.integration.helpers import assert_error, dequeue, enqueue


async def _nack(client: httpx.AsyncClient, m: dict[str, object], **body: object) -> httpx.Response:
    return await client.post(f"/api/messages/{m['id']}/nack", json={"receipt": m["receipt"], **body})


async def test_a_nack_merges_its_metadata_into_the_messages_before_the_retry(client: httpx.AsyncClient) -> None:
    r = await client.put("/api/topic-configs/saved", json={"max_retries": 3, "retry_backoff_seconds": [0]})
    assert r.status_code == 200, r.text
    await enqueue(client, "saved", "job", metadata={"tenant": "acme", "step": 0})
    [m] = await dequeue(client, "saved")
    assert (await _nack(client, m, metadata={"step": 1, "cursor": "c1"})).json() == {"outcome": "retry"}
    [m] = await dequeue(client, "saved")
    assert m["metadata"] == {"tenant": "acme", "step": 1, "cursor": "c1"}
    assert (await _nack(client, m)).status_code == 200  # no metadata: kept as it was
    [m] = await dequeue(client, "saved")
    assert m["metadata"] == {"tenant": "acme", "step": 1, "cursor": "c1"}
    assert (await _nack(client, m, metadata={"step": 2})).json() == {"outcome": "dlq"}
    dead = (await client.get(f"/api/messages/{m['id']}")).json()
    assert dead["topic"] == "saved.dlq" and dead["metadata"] == {"tenant": "acme", "step": 2, "cursor": "c1"}


async def test_a_nack_with_metadata_that_is_not_an_object_is_refused_and_changes_nothing(
    client: httpx.AsyncClient,
) -> None:
    await enqueue(client, "saved-bad", "job", metadata={"a": 1})
    [m] = await dequeue(client, "saved-bad")
    for bad in ([1, 2], "text", 7):
        assert_error(await _nack(client, m, metadata=bad), 400, "invalid_request")
    assert (await client.get(f"/api/messages/{m['id']}")).json()["status"] == "processing"
    assert (await _nack(client, m, metadata={"b": 2})).json() == {"outcome": "retry"}
    assert (await client.get(f"/api/messages/{m['id']}")).json()["metadata"] == {"a": 1, "b": 2}


async def test_a_groups_saved_state_is_its_own(client: httpx.AsyncClient) -> None:
    for group in ("billing", "shipping"):
        r = await client.post("/api/topics/saved-fan/consumer-groups", json={"consumer_group": group})
        assert r.status_code == 201, r.text
    r = await client.put("/api/topic-configs/saved-fan", json={"retry_backoff_seconds": [0], "max_retries": 2})
    assert r.status_code == 200, r.text
    await enqueue(client, "saved-fan", "order", metadata={"order": 7})
    [m] = await dequeue(client, "saved-fan", consumer_group="billing")
    r = await _nack(client, m, consumer_group="billing", metadata={"charged": True})
    assert r.json() == {"outcome": "retry"}, r.text
    [again] = await dequeue(client, "saved-fan", consumer_group="billing")
    assert again["metadata"] == {"order": 7, "charged": True}
    [other] = await dequeue(client, "saved-fan", consumer_group="shipping")
    assert other["metadata"] == {"order": 7}  # billing's state is not shipping's
    assert (await client.get(f"/api/messages/{m['id']}")).json()["metadata"] == {"order": 7}
    r = await _nack(client, again, consumer_group="billing", metadata={"refund": "r1"})
    assert r.json() == {"outcome": "dlq"}, r.text
    dlq = await client.get("/api/messages", params={"topic": "saved-fan.dlq", "consumer_group": "billing"})
    [dead] = dlq.json()["items"]
    assert dead["metadata"] == {"order": 7, "charged": True, "refund": "r1"}
