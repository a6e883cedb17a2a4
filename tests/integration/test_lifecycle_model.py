"""The message lifecycle against a model (Hypothesis, stateful): enqueues with and without keys, dequeues from the
topic and its DLQ, acks, nacks and extends with current, stale or no receipts, requeues, TTL expiry, lapsed
leases, reaper runs, nacks that save state in the metadata, and the message log's replays and trims, in any
order. After every step the server's view of every message (browse, all statuses, metadata) equals the model's,
and so does the topic's message log (it is replayable): every successful ack not trimmed, once, in order.

Time is not waited for: a lease lapses, or a TTL passes, by moving that message's timestamp into the past in
Postgres (a lapsed lease gets an instant in 2000, so lapsed messages come first, in the order they lapsed). The
topic has `max_retries` 2, so dead letters come quickly.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import uuid
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import httpx
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from tests.integration.helpers import b64, unb64
from tests.support.servers import ADMIN, Server

MAX_RETRIES = 2


@dataclass
class Message:
    id: str
    topic: str
    payload: bytes
    key: str | None
    tick: int  # the order dequeues take available messages in
    status: str = "pending"  # as stored: pending, processing, failed, expired
    retry_count: int = 0
    max_retries: int = MAX_RETRIES
    receipt: str | None = None
    old_receipts: list[str] = field(default_factory=list)
    lapsed: bool = False
    ttl_passed: bool = False
    in_dlq: bool = False
    metadata: dict[str, Any] | None = None  # saved state merged in by nacks

    @property
    def seen(self) -> str:
        """The status a reader sees (docs/semantics.md, "What readers see")."""
        if self.status in ("pending", "processing") and self.ttl_passed:
            return "expired"
        if self.status == "processing" and self.lapsed:
            return "pending"
        return self.status

    @property
    def takeable(self) -> bool:
        return self.seen == "pending"


class Lifecycle(RuleBasedStateMachine):
    server: Server
    database_url: str
    tenant_slug: str
    #: The topic's max_inflight (`LimitedLifecycle`), or None.
    limit: int | None = None

    def __init__(self) -> None:
        super().__init__()
        self.topic = f"life-{uuid.uuid4().hex[:10]}"
        self.dlq = f"{self.topic}.dlq"
        self.http = httpx.Client(
            base_url=self.server.base_url, auth=ADMIN, headers={"X-Tenant": self.tenant_slug}, timeout=30
        )
        config = {"max_retries": MAX_RETRIES, "replayable": True, "max_inflight": self.limit}
        r = self.http.put(f"/api/topic-configs/{self.topic}", json=config)
        assert r.status_code == 200, r.text
        #: With a limit: the messages whose lease holds a slot, as the server records them (a lapsed lease's is
        #: freed by the topic's next dequeue; a message deleted without an ack keeps its slot)
        self.held: set[str] = set()
        self.messages: dict[str, Message] = {}
        # the message log: each successful ack, in order (id, payload, key), and each entry's metadata
        self.logged: list[tuple[str, bytes, str | None]] = []
        self.logged_metadata: list[dict[str, Any] | None] = []
        self.clock = itertools.count(1)
        self.lapses = itertools.count(1)

    def teardown(self) -> None:
        self.http.close()

    # --- helpers ---------------------------------------------------------------------------------------------

    def _sql(self, statement: str, *args: Any) -> None:
        async def run() -> None:
            conn = await asyncpg.connect(self.database_url)
            try:
                await conn.execute(statement, *args)
            finally:
                await conn.close()

        asyncio.run(run())

    def _live_twin(self, topic: str, key: str | None, besides: str | None = None) -> Message | None:
        if key is None:
            return None
        for m in self.messages.values():
            if m.id != besides and m.topic == topic and not m.in_dlq and m.key == key and m.status == "pending":
                return m
        return None

    def _expire(self, m: Message) -> None:
        """What the expiry reaper (or an enqueue meeting a dead twin) does: expire_to_dlq is off by default."""
        m.status, m.receipt = "expired", None

    def _to_dlq(self, m: Message) -> None:
        m.topic, m.in_dlq, m.status, m.retry_count, m.max_retries = self.dlq, True, "pending", 0, 0
        m.receipt, m.lapsed, m.ttl_passed, m.tick = None, False, False, next(self.clock)

    def _pick(self, processing: bool) -> st.SearchStrategy[Message]:
        return st.sampled_from(sorted(self.messages.values(), key=lambda m: m.id)).filter(
            lambda m: (m.status == "processing") == processing
        )

    # --- rules -----------------------------------------------------------------------------------------------

    @rule(key=st.sampled_from([None, None, "a", "b"]), payload=st.binary(min_size=0, max_size=8))
    def enqueue(self, key: str | None, payload: bytes) -> None:
        body: dict[str, Any] = {"topic": self.topic, "payload": b64(payload)}
        if key is not None:
            body["key"] = key
        r = self.http.post("/api/messages", json=body)
        assert r.status_code == 201, r.text
        mid = r.json()["id"]
        twin = self._live_twin(self.topic, key)
        if twin is not None and twin.ttl_passed:
            self._expire(twin)  # a dead twin is no twin: expired first
            twin = None
        if twin is not None:
            assert mid == twin.id
            twin.payload, twin.metadata = payload, None
        else:
            assert mid not in self.messages
            self.messages[mid] = Message(mid, self.topic, payload, key, next(self.clock))

    @rule(count=st.integers(1, 3), dlq=st.booleans())
    def dequeue(self, count: int, dlq: bool) -> None:
        topic = self.dlq if dlq else self.topic
        r = self.http.post("/api/messages/dequeue", json={"topic": topic, "count": count})
        assert r.status_code == 200, r.text
        got = {m["id"]: m for m in r.json()["messages"]}
        if self.limit is not None and not dlq:
            self._check_leased(got, self._limited_dequeue(count))
            return
        expected = []
        for m in sorted((m for m in self.messages.values() if m.topic == topic), key=lambda m: (m.tick, m.id)):
            if len(expected) == count:
                break
            if not m.takeable:
                continue
            if m.status == "processing":  # a lapsed lease counts as an attempt
                if m.retry_count + 1 >= m.max_retries:
                    if m.in_dlq:
                        m.status, m.retry_count, m.receipt = "failed", m.retry_count + 1, None
                    else:
                        self._to_dlq(m)
                    continue
                m.retry_count += 1
            expected.append(m)
        self._check_leased(got, expected)

    def _limited_dequeue(self, count: int) -> list[Message]:
        """What the server's limited dequeue leases (`MessageRepository.dequeue`): the lapsed leases' slots freed
        first, then statements of at most the room left; a lapsed message dead-lettered takes its place in a
        statement without a slot, and the next statement asks for as many as were dead-lettered, only when the
        last one got all it asked for."""
        self.held = {i for i in self.held if not (i in self.messages and self.messages[i].lapsed)}
        assert self.limit is not None
        room, wanted, leased = self.limit - len(self.held), count, []
        while True:
            ask = min(wanted, room)
            ordered = sorted((m for m in self.messages.values() if m.topic == self.topic), key=lambda m: (m.tick, m.id))
            rows = [m for m in ordered if m.takeable][:ask]
            fated = [m for m in rows if m.status == "processing" and m.retry_count + 1 >= m.max_retries]
            for m in rows:
                if m in fated:
                    self._to_dlq(m)
                    continue
                if m.status == "processing":
                    m.retry_count += 1
                m.status, m.lapsed = "processing", False
                leased.append(m)
                room -= 1
            if not fated or len(rows) != wanted:
                break
            wanted = len(fated)
        self.held |= {m.id for m in leased}
        return leased

    def _check_leased(self, got: dict[str, Any], expected: list[Message]) -> None:
        assert sorted(got) == sorted(m.id for m in expected), (got.keys(), [m.id for m in expected])
        for m in expected:
            view = got[m.id]
            assert unb64(view["payload"]) == m.payload and view["retry_count"] == m.retry_count
            if m.receipt:
                m.old_receipts.append(m.receipt)
            m.status, m.receipt, m.lapsed = "processing", view["receipt"], False

    def _receipt(self, m: Message, which: str) -> str | None:
        if which == "stale" and m.old_receipts:
            return m.old_receipts[-1]
        return None if which == "none" else m.receipt

    def _lease_outcome(self, m: Message, receipt: str | None) -> int:
        """The status an ack, nack or extend answers: 2xx when it acts, else 409 or 404."""
        if m.status == "processing" and (receipt is None or receipt == m.receipt):
            return 200
        if receipt is not None and m.status in ("processing", "pending"):
            return 409
        return 404

    @precondition(lambda self: any(m.status == "processing" for m in self.messages.values()))
    @rule(data=st.data(), which=st.sampled_from(["current", "stale", "none"]))
    def ack(self, data: st.DataObject, which: str) -> None:
        m = data.draw(self._pick(processing=True))
        receipt = self._receipt(m, which)
        r = self.http.post(f"/api/messages/{m.id}/ack", json={"receipt": receipt})
        expected = self._lease_outcome(m, receipt)
        assert r.status_code == (204 if expected == 200 else expected), r.text
        if expected == 200:
            self.held.discard(m.id)
            del self.messages[m.id]
            if not m.in_dlq:  # the DLQ is a topic of its own, not replayable
                self.logged.append((m.id, m.payload, m.key))
                self.logged_metadata.append(m.metadata)

    @precondition(lambda self: any(m.status == "processing" for m in self.messages.values()))
    @rule(
        data=st.data(),
        which=st.sampled_from(["current", "current", "stale", "none"]),
        saved=st.none() | st.dictionaries(st.sampled_from(["page", "step"]), st.integers(0, 9), max_size=2),
    )
    def nack(self, data: st.DataObject, which: str, saved: dict[str, int] | None) -> None:
        m = data.draw(self._pick(processing=True))
        receipt = self._receipt(m, which)
        body: dict[str, Any] = {"receipt": receipt, "error": "boom"}
        if saved is not None:
            body["metadata"] = saved
        r = self.http.post(f"/api/messages/{m.id}/nack", json=body)
        expected = self._lease_outcome(m, receipt)
        assert r.status_code == expected, r.text
        if expected != 200:
            return
        outcome = r.json()["outcome"]
        self.held.discard(m.id)  # its slot is free (superseded by a twin too)
        m.receipt, m.lapsed = None, False
        if saved is not None:
            m.metadata = {**(m.metadata or {}), **saved}
        if m.retry_count + 1 < m.max_retries:
            twin = self._live_twin(m.topic, m.key, besides=m.id)
            if twin is not None and twin.ttl_passed:
                self._expire(twin)
                twin = None
            assert outcome == "retry"
            if twin is not None:  # superseded by the newer pending twin
                del self.messages[m.id]
                return
            m.status, m.retry_count, m.tick = "pending", m.retry_count + 1, next(self.clock)
        elif m.in_dlq:
            assert outcome == "failed"
            m.status, m.retry_count = "failed", m.retry_count + 1
        else:
            assert outcome == "dlq"
            self._to_dlq(m)

    @precondition(lambda self: any(m.status == "processing" for m in self.messages.values()))
    @rule(data=st.data(), which=st.sampled_from(["current", "stale", "none"]))
    def extend(self, data: st.DataObject, which: str) -> None:
        m = data.draw(self._pick(processing=True))
        receipt = self._receipt(m, which)
        r = self.http.post(
            f"/api/messages/{m.id}/visibility", json={"receipt": receipt, "visibility_timeout_seconds": 300}
        )
        expected = self._lease_outcome(m, receipt)
        if expected == 200 and self.limit is not None and m.topic == self.topic and m.id not in self.held:
            expected = 409  # its slot was freed (a dequeue after its lease lapsed): lease_lost
        assert r.status_code == expected, r.text
        if expected == 200:
            m.lapsed = False

    @precondition(lambda self: any(m.status == "processing" and not m.lapsed for m in self.messages.values()))
    @rule(data=st.data())
    def lease_lapses(self, data: st.DataObject) -> None:
        m = data.draw(self._pick(processing=True).filter(lambda m: not m.lapsed))
        n = next(self.lapses)
        self._sql(
            """WITH lapsed AS (
                   SELECT id, available_at, receipt FROM messages WHERE id = $1::uuid
               ), ledger AS (  -- a limited topic's recorded lease lapses with it
                   UPDATE inflight_leases AS l
                   SET deadline = '2000-01-01T00:00:00Z'::timestamptz + make_interval(secs => $2)
                   FROM lapsed AS x WHERE l.receipt = x.receipt AND l.deadline = x.available_at
               )
               UPDATE messages SET available_at = '2000-01-01T00:00:00Z'::timestamptz + make_interval(secs => $2)
               WHERE id = $1::uuid""",
            m.id,
            float(n),
        )
        m.lapsed, m.tick = True, -1_000_000 + n

    @precondition(lambda self: any(m.status == "pending" and not m.ttl_passed for m in self.messages.values()))
    @rule(data=st.data())
    def ttl_passes(self, data: st.DataObject) -> None:
        m = data.draw(self._pick(processing=False).filter(lambda m: m.status == "pending" and not m.ttl_passed))
        self._sql("UPDATE messages SET expires_at = now() - interval '1 second' WHERE id = $1::uuid", m.id)
        m.ttl_passed = True

    @rule()
    def reaper_runs(self) -> None:
        r = self.http.post("/api/admin/expiry-reaper/run")
        assert r.status_code == 200, r.text
        for m in self.messages.values():
            if m.ttl_passed and m.status in ("pending", "processing"):
                self._expire(m)

    @precondition(lambda self: any(m.in_dlq for m in self.messages.values()))
    @rule(data=st.data())
    def requeue(self, data: st.DataObject) -> None:
        m = data.draw(st.sampled_from(sorted((m for m in self.messages.values() if m.in_dlq), key=lambda m: m.id)))
        r = self.http.post(f"/api/messages/{m.id}/requeue")
        if m.seen not in ("pending", "failed"):
            assert r.status_code in (404, 409), r.text
            return
        twin = self._live_twin(self.topic, m.key)
        if twin is not None and twin.ttl_passed:
            self._expire(twin)
            twin = None
        if twin is not None:
            assert r.status_code == 409 and r.json()["code"] == "key_conflict", r.text
            return
        assert r.status_code == 204, r.text
        m.topic, m.in_dlq, m.status, m.retry_count, m.max_retries = self.topic, False, "pending", 0, MAX_RETRIES
        m.receipt, m.lapsed, m.tick = None, False, next(self.clock)

    def _log(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.http.get(
            f"/api/topics/{self.topic}/message-log", params={"limit": 1000}
        ).json()["items"]
        return items

    @precondition(lambda self: self.logged)
    @rule(data=st.data(), by_key=st.booleans())
    def replay(self, data: st.DataObject, by_key: bool) -> None:
        """One entry (a range from its acked_at to the next one's), or every entry of a key: one message again, or
        the key's pending twin updated (entries of one key fold into one message, as enqueues of it would)."""
        log = self._log()
        keys = sorted({key for _, _, key in self.logged if key is not None})
        if by_key and keys:
            key = data.draw(st.sampled_from(keys))
            body: dict[str, Any] = {"key": key}
            entries = [entry for entry in self.logged if entry[2] == key]
        else:
            n = data.draw(st.integers(0, len(log) - 1))
            body = {"from_time": log[n]["acked_at"]}
            if n + 1 < len(log):
                body["to_time"] = log[n + 1]["acked_at"]
            entries = [self.logged[n]]
        before = set(self.messages)
        r = self.http.post(f"/api/topics/{self.topic}/replay", json=body)
        assert r.status_code == 200 and r.json() == {"replayed": len(entries)}, r.text
        listed = self.http.get("/api/messages", params={"topic": self.topic, "limit": 200}).json()["items"]
        new = [v["id"] for v in listed if v["id"] not in before]
        replayed_id, payload, key = entries[-1]
        # a replayed message names the one it replays (its story's link back)
        metadata = {**(self.logged_metadata[self.logged.index(entries[-1])] or {}), "skiplock_replay_of": replayed_id}
        twin = self._live_twin(self.topic, key)
        if twin is not None and twin.ttl_passed:
            self._expire(twin)
            twin = None
        if twin is not None:
            assert new == []
            twin.payload, twin.metadata = payload, metadata
        else:
            [mid] = new
            self.messages[mid] = Message(mid, self.topic, payload, key, next(self.clock), metadata=metadata)

    @precondition(lambda self: self.logged)
    @rule(data=st.data())
    def trim(self, data: st.DataObject) -> None:
        """Before an entry's acked_at (the entries before it go), or before a time to come (all of them)."""
        log = self._log()
        n = data.draw(st.integers(0, len(log)))
        before = log[n]["acked_at"] if n < len(log) else "2100-01-01T00:00:00Z"
        r = self.http.delete(f"/api/topics/{self.topic}/message-log", params={"before": before})
        assert r.status_code == 200 and r.json() == {"deleted": n}, r.text
        self.logged, self.logged_metadata = self.logged[n:], self.logged_metadata[n:]

    # --- the server's view equals the model's ------------------------------------------------------------------

    @invariant()
    def views_agree(self) -> None:
        server: dict[str, tuple[str, str, int, bytes, dict[str, Any] | None]] = {}
        for topic in (self.topic, self.dlq):
            r = self.http.get("/api/messages", params={"topic": topic, "limit": 200})
            assert r.status_code == 200, r.text
            for v in r.json()["items"]:
                server[v["id"]] = (v["topic"], v["status"], v["retry_count"], unb64(v["payload"]), v["metadata"])
        model = {m.id: (m.topic, m.seen, m.retry_count, m.payload, m.metadata) for m in self.messages.values()}
        assert server == model
        log = self.http.get(f"/api/topics/{self.topic}/message-log", params={"limit": 1000}).json()["items"]
        assert [(e["id"], unb64(e["payload"]), e["key"]) for e in log] == self.logged
        assert [e["metadata"] for e in log] == self.logged_metadata


class LimitedLifecycle(Lifecycle):
    """The same lifecycle on a topic with `max_inflight` 2: what each dequeue leases follows the slots the model
    holds, and a lease whose slot was freed cannot be extended."""

    limit = 2


@pytest.mark.parametrize("machine", [Lifecycle, LimitedLifecycle], ids=["unlimited", "max_inflight"])
def test_the_message_lifecycle_matches_its_model(
    server: Server, database_url: str, tenant: Any, machine: type[Lifecycle]
) -> None:
    machine.server, machine.database_url, machine.tenant_slug = server, database_url, tenant.slug
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=int(os.environ.get("SKIPLOCK_MODEL_EXAMPLES", "6")),
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            derandomize=os.environ.get("SKIPLOCK_MODEL_RANDOM") != "1",
        ),
    )


pytestmark = pytest.mark.slow
