"""Consumer groups against a model (Hypothesis, stateful): enqueues into a topic with groups, each group's dequeues,
acks, nacks and extends with current, stale or no receipts, lapsed leases, groups created (`latest` or `earliest`)
and deleted, dead letters requeued, strays (what an instance that did not know the topic had groups stores), and
every job that repairs state (`tests.support.healing`) run at any step, in any order. After every step the server's
view equals the model's: the topic's messages, each message's deliveries (`GET /api/messages/{id}`), the groups in
creation order, and the DLQ's dead letters by group; and no group ever receives a message it acked or was never
owed (a dequeue of up to 100 drains what a group owes: every owed message is received).

Time is not waited for: a lease lapses by moving the delivery's `available_at` into the past in Postgres (an
instant in 2000, so lapsed deliveries come first, in the order they lapsed). The topic has `max_retries` 2. At
least one group always exists (a topic without groups is the plain lifecycle, `test_lifecycle_model.py`).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import httpx
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from mq.ids import uuid7_batch
from mq.queue.sql.insert import InsertPlan, insert_statement
from tests.integration.helpers import b64, unb64
from tests.support.healing import HEALING_JOBS, run_job
from tests.support.servers import ADMIN, Server

MAX_RETRIES = 2
MAX_GROUPS = 4


@dataclass
class Delivery:
    tick: int  # the order the group's dequeues take its available deliveries in
    status: str = "pending"  # as stored: pending or processing
    retry_count: int = 0
    receipt: str | None = None
    old_receipts: list[str] = field(default_factory=list)
    lapsed: bool = False

    @property
    def seen(self) -> str:
        return "pending" if self.status == "processing" and self.lapsed else self.status


@dataclass
class Message:
    id: str
    payload: bytes
    tick: int
    deliveries: dict[str, Delivery]
    #: A stray not owed to any group yet: the groups that existed when it was stored (the settler owes it to those
    #: still there, an `earliest` group's creation to those and itself). None for a message owed when stored.
    stray_of: set[str] | None = None


class GroupLifecycle(RuleBasedStateMachine):
    server: Server
    database_url: str
    tenant_slug: str
    tenant_id: int
    #: The topic's max_inflight, per group (`LimitedGroupLifecycle`), or None.
    limit: int | None = None

    def __init__(self) -> None:
        super().__init__()
        self.topic = f"fan-{uuid.uuid4().hex[:10]}"
        self.dlq = f"{self.topic}.dlq"
        self.http = httpx.Client(
            base_url=self.server.base_url, auth=ADMIN, headers={"X-Tenant": self.tenant_slug}, timeout=30
        )
        config = {"max_retries": MAX_RETRIES, "max_inflight": self.limit}
        r = self.http.put(f"/api/topic-configs/{self.topic}", json=config)
        assert r.status_code == 200, r.text
        self.groups: list[str] = []  # in creation order
        self.held: dict[str, set[str]] = {}  # per group, the leases holding one of its slots (a limited topic)
        self.names = (f"g{n}" for n in itertools.count())
        self.messages: dict[str, Message] = {}
        self.dead: Counter[tuple[str, bytes]] = Counter()  # the DLQ's copies: (group, payload)
        self.acked: set[tuple[str, str]] = set()  # (group, message id) of every successful ack
        self.clock = itertools.count(1)
        self.lapses = itertools.count(1)
        for _ in range(2):
            self._create(next(self.names), "latest")

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

    def _create(self, name: str, start: str) -> None:
        r = self.http.post(f"/api/topics/{self.topic}/consumer-groups", json={"consumer_group": name, "start": start})
        assert r.status_code == 201, r.text
        self.groups.append(name)
        self.held[name] = set()
        if start == "earliest":  # every message stored now, in its queue position
            for m in self.messages.values():
                if m.stray_of is not None:  # owed at last, to the groups it missed as well
                    self._settle(m)
                    m.stray_of = None
                m.deliveries[name] = Delivery(tick=m.tick)

    def _settle(self, m: Message) -> None:
        """A stray owed to the groups that existed when it was stored and still do (if any)."""
        assert m.stray_of is not None
        owed = [g for g in self.groups if g in m.stray_of]
        if owed:
            m.deliveries = {g: Delivery(tick=m.tick) for g in owed}
            m.stray_of = None

    def _run(self, coroutine: Any) -> Any:
        async def run() -> Any:
            pool = await asyncpg.create_pool(self.database_url, min_size=1, max_size=2)
            try:
                return await coroutine(pool)
            finally:
                await pool.close()

        return asyncio.run(run())

    def _done(self, m: Message, group: str) -> None:
        """The group is done with the message: its delivery goes, and the message once no group owes it."""
        del m.deliveries[group]
        self.held.get(group, set()).discard(m.id)
        if not m.deliveries:
            del self.messages[m.id]

    def _dead_letter(self, m: Message, group: str) -> None:
        self.dead[(group, m.payload)] += 1
        self._done(m, group)

    def _leased(self, group: str) -> list[tuple[str, Message]]:
        return sorted(
            ((group, m) for m in self.messages.values() if m.deliveries.get(group, Delivery(0)).status == "processing"),
            key=lambda gm: gm[1].id,
        )

    def _any_leased(self) -> bool:
        return any(d.status == "processing" for m in self.messages.values() for d in m.deliveries.values())

    def _pick_leased(self, data: st.DataObject) -> tuple[str, Message, Delivery]:
        group, m = data.draw(st.sampled_from([gm for g in self.groups for gm in self._leased(g)]))
        return group, m, m.deliveries[group]

    def _receipt(self, d: Delivery, which: str) -> str | None:
        if which == "stale" and d.old_receipts:
            return d.old_receipts[-1]
        return None if which == "none" else d.receipt

    @staticmethod
    def _lease_outcome(d: Delivery | None, receipt: str | None) -> int:
        """The status an ack, nack or extend answers: 2xx when it acts, else 409 or 404."""
        if d is not None and d.status == "processing" and (receipt is None or receipt == d.receipt):
            return 200
        if d is not None and receipt is not None:
            return 409
        return 404

    # --- rules -----------------------------------------------------------------------------------------------

    @rule(payload=st.binary(min_size=0, max_size=8))
    def enqueue(self, payload: bytes) -> None:
        r = self.http.post("/api/messages", json={"topic": self.topic, "payload": b64(payload)})
        assert r.status_code == 201, r.text
        mid = r.json()["id"]
        tick = next(self.clock)
        self.messages[mid] = Message(mid, payload, tick, {g: Delivery(tick=tick) for g in self.groups})

    @rule(data=st.data(), count=st.sampled_from([1, 2, 3, 100]))
    def dequeue(self, data: st.DataObject, count: int) -> None:
        group = data.draw(st.sampled_from(self.groups))
        body = {"topic": self.topic, "count": count, "consumer_group": group}
        r = self.http.post("/api/messages/dequeue", json=body)
        assert r.status_code == 200, r.text
        got = {m["id"]: m for m in r.json()["messages"]}
        assert not {(group, i) for i in got} & self.acked, "a group received a message it acked"
        available = sorted(
            ((m, m.deliveries[group]) for m in self.messages.values() if group in m.deliveries),
            key=lambda md: (md[1].tick, md[0].id),
        )
        if self.limit is not None:  # the lapsed leases' slots are freed first; spent ones use up room too
            self.held[group] = {i for i in self.held[group] if not self.messages[i].deliveries[group].lapsed}
            count = min(count, self.limit - len(self.held[group]))
        picked = [(m, d) for m, d in available if d.seen == "pending"][:count]  # spent ones use up the count
        expected = []
        for m, d in picked:
            if d.status == "processing":  # a lapsed lease counts as an attempt
                if d.retry_count + 1 >= MAX_RETRIES:
                    self._dead_letter(m, group)
                    continue
                d.retry_count += 1
            expected.append((m, d))
        assert sorted(got) == sorted(m.id for m, _ in expected), (group, got.keys(), [m.id for m, _ in expected])
        for m, d in expected:
            view = got[m.id]
            assert unb64(view["payload"]) == m.payload and view["retry_count"] == d.retry_count
            if d.receipt:
                d.old_receipts.append(d.receipt)
            d.status, d.receipt, d.lapsed = "processing", view["receipt"], False
            self.held[group].add(m.id)

    @precondition(lambda self: self._any_leased())
    @rule(data=st.data(), which=st.sampled_from(["current", "stale", "none"]), other=st.booleans())
    def ack(self, data: st.DataObject, which: str, other: bool) -> None:
        """`other`: a group acks with the receipt of another group's lease (its own delivery may be anywhere)."""
        group, m, d = self._pick_leased(data)
        receipt = self._receipt(d, which)
        as_group = data.draw(st.sampled_from(self.groups)) if other else group
        r = self.http.post(f"/api/messages/{m.id}/ack", json={"receipt": receipt, "consumer_group": as_group})
        mine = m.deliveries.get(as_group)
        expected = self._lease_outcome(mine, receipt if as_group == group or receipt is None else str(uuid.uuid4()))
        assert r.status_code == (204 if expected == 200 else expected), (r.text, as_group, group)
        if expected == 200:
            self.acked.add((as_group, m.id))
            self._done(m, as_group)

    @precondition(lambda self: self._any_leased())
    @rule(data=st.data(), which=st.sampled_from(["current", "current", "stale", "none"]))
    def nack(self, data: st.DataObject, which: str) -> None:
        group, m, d = self._pick_leased(data)
        receipt = self._receipt(d, which)
        body = {"receipt": receipt, "error": "boom", "consumer_group": group}
        r = self.http.post(f"/api/messages/{m.id}/nack", json=body)
        expected = self._lease_outcome(d, receipt)
        assert r.status_code == expected, r.text
        if expected != 200:
            return
        outcome = r.json()["outcome"]
        if d.retry_count + 1 < MAX_RETRIES:
            assert outcome == "retry"
            d.status, d.receipt, d.lapsed = "pending", None, False
            d.retry_count, d.tick = d.retry_count + 1, next(self.clock)
            self.held[group].discard(m.id)
        else:
            assert outcome == "dlq"
            self._dead_letter(m, group)

    @precondition(lambda self: self._any_leased())
    @rule(data=st.data(), which=st.sampled_from(["current", "stale", "none"]))
    def extend(self, data: st.DataObject, which: str) -> None:
        group, m, d = self._pick_leased(data)
        receipt = self._receipt(d, which)
        body = {"receipt": receipt, "visibility_timeout_seconds": 300, "consumer_group": group}
        r = self.http.post(f"/api/messages/{m.id}/visibility", json=body)
        expected = self._lease_outcome(d, receipt)
        if expected == 200 and self.limit is not None and m.id not in self.held[group]:
            expected = 409  # its slot was freed (a dequeue after its lease lapsed): lease_lost
        assert r.status_code == expected, r.text
        if expected == 200:
            d.lapsed = False

    @precondition(lambda self: self._any_leased())
    @rule(data=st.data())
    def lease_lapses(self, data: st.DataObject) -> None:
        group, m, d = self._pick_leased(data)
        n = next(self.lapses)
        self._sql(
            """WITH lapsed AS (
                   SELECT d.group_id, d.available_at, d.receipt FROM deliveries AS d
                   WHERE d.message_id = $1::uuid AND d.group_id = (
                       SELECT g.id FROM consumer_groups AS g JOIN tenants AS t ON t.id = g.tenant_id
                       WHERE t.slug = $4 AND g.topic = $5 AND g.name = $2)
               ), ledger AS (  -- a limited group's recorded lease lapses with it
                   UPDATE inflight_leases AS l
                   SET deadline = '2000-01-01T00:00:00Z'::timestamptz + make_interval(secs => $3)
                   FROM lapsed AS x
                   WHERE l.group_id = x.group_id AND l.receipt = x.receipt AND l.deadline = x.available_at
               )
               UPDATE deliveries SET available_at = '2000-01-01T00:00:00Z'::timestamptz + make_interval(secs => $3)
               WHERE message_id = $1::uuid AND group_id = (SELECT group_id FROM lapsed)""",
            m.id,
            group,
            float(n),
            self.tenant_slug,
            self.topic,
        )
        d.lapsed, d.tick = True, -1_000_000 + n

    @precondition(lambda self: len(self.groups) < MAX_GROUPS)
    @rule(start=st.sampled_from(["latest", "earliest"]))
    def create_group(self, start: str) -> None:
        self._create(next(self.names), start)

    @precondition(lambda self: len(self.groups) > 1)
    @rule(data=st.data())
    def delete_group(self, data: st.DataObject) -> None:
        group = data.draw(st.sampled_from(self.groups))
        r = self.http.delete(f"/api/topics/{self.topic}/consumer-groups/{group}")
        assert r.status_code == 204, r.text
        self.groups.remove(group)
        del self.held[group]
        for m in list(self.messages.values()):
            if group in m.deliveries:
                self._done(m, group)

    @precondition(lambda self: bool(+self.dead))
    @rule(data=st.data())
    def requeue(self, data: st.DataObject) -> None:
        """A group's dead letter goes back to that group only, or to every group when it is gone."""
        r = self.http.get("/api/messages", params={"topic": self.dlq, "limit": 200})
        letters = sorted(r.json()["items"], key=lambda v: v["id"])
        v = data.draw(st.sampled_from(letters))
        r = self.http.post(f"/api/messages/{v['id']}/requeue")
        assert r.status_code == 204, r.text
        group, payload = v["consumer_group"], unb64(v["payload"])
        self.dead[(group, payload)] -= 1
        tick = next(self.clock)
        owed = [group] if group in self.groups else self.groups
        self.messages[v["id"]] = Message(v["id"], payload, tick, {g: Delivery(tick=tick) for g in owed})

    @rule(payload=st.binary(min_size=0, max_size=8))
    def stray(self, payload: bytes) -> None:
        """A message stored by an instance whose cached config does not know the topic has groups: the statement
        of a topic without groups, owing it to none."""
        [mid] = uuid7_batch(1)
        plain = insert_statement(InsertPlan(uniform=True))
        values = {"topic": self.topic, "priority": 0, "max_retries": MAX_RETRIES, "delay": 0.0, "ttl": 0}
        arguments = plain.args(tenant=self.tenant_id, ids=[mid], payloads=[payload], metadata=[None], **values)
        self._run(lambda pool: pool.execute(plain.text, *arguments))
        tick = next(self.clock)
        self.messages[str(mid)] = Message(str(mid), payload, tick, {}, stray_of=set(self.groups))

    @rule(job=st.sampled_from(HEALING_JOBS))
    def heal(self, job: str) -> None:
        """A job that repairs state runs now (the settler as if every group's staleness had passed)."""
        self._run(lambda pool: run_job(pool, job, self.tenant_id, self.topic))
        if job == "group_settler":
            for m in self.messages.values():
                if m.stray_of is not None:
                    self._settle(m)
        if job == "inflight_keeper" and self.limit is not None:  # lapsed leases' slots are freed
            for group, held in self.held.items():
                self.held[group] = {i for i in held if not self.messages[i].deliveries[group].lapsed}

    # --- the server's view equals the model's ------------------------------------------------------------------

    @invariant()
    def views_agree(self) -> None:
        r = self.http.get(f"/api/topics/{self.topic}/consumer-groups")
        assert r.json()["items"] == self.groups
        r = self.http.get("/api/messages", params={"topic": self.topic, "limit": 200})
        stored = {v["id"]: (v["status"], unb64(v["payload"])) for v in r.json()["items"]}
        assert stored == {m.id: ("pending", m.payload) for m in self.messages.values()}
        for m in self.messages.values():
            detail = self.http.get(f"/api/messages/{m.id}").json()
            if m.stray_of is not None:
                assert detail["deliveries"] is None, m.id  # owed to no group yet
                continue
            deliveries = [(x["consumer_group"], x["status"], x["retry_count"]) for x in detail["deliveries"]]
            model = [(g, m.deliveries[g].seen, m.deliveries[g].retry_count) for g in self.groups if g in m.deliveries]
            assert deliveries == model, m.id
        r = self.http.get("/api/messages", params={"topic": self.dlq, "limit": 200})
        dead = Counter((v["consumer_group"], unb64(v["payload"])) for v in r.json()["items"])
        assert dead == +self.dead


class LimitedGroupLifecycle(GroupLifecycle):
    """The same on a topic with `max_inflight` 2: each group's dequeues lease what its own slots leave room for,
    and a lease whose slot was freed cannot be extended."""

    limit = 2


@pytest.mark.parametrize("machine", [GroupLifecycle, LimitedGroupLifecycle], ids=["unlimited", "max_inflight"])
def test_consumer_groups_match_their_model(
    server: Server, database_url: str, tenant: Any, machine: type[GroupLifecycle]
) -> None:
    machine.server, machine.database_url, machine.tenant_slug = server, database_url, tenant.slug
    machine.tenant_id = tenant.id
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
