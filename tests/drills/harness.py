"""The drills' load: producers and consumers over HTTP against real servers, with a ledger of what the server
acknowledged, checked message by message at the end.

Producers enqueue plain messages (single and batch) and keyed ones; each payload carries a token of its own, so
every delivery is checked against what was enqueued under that token. Keys are each enqueued twice in a row
(the second an upsert, or a new message if the first was already leased): for a key, the content of its last
acknowledged enqueue must be delivered; an earlier one may be superseded. Requests whose answer never came
(a killed server) are not in the ledger: if they were written, their deliveries count as `unacknowledged`, never
as lost or duplicated. Consumers lease with a short visibility timeout and ack; a token acked twice is a double
delivery, a token delivered again before its ack answered is a redelivery (after a lapsed lease: an ack lost with
a killed server); an ack whose answer was lost may have committed: if its message is gone from the server at
the end, it was delivered (`acked_answer_lost`); so may an ack answered 5xx (Postgres stopped while the ack
committed: the answer cannot say whether it did). Consumers read the DLQ too: a message whose lease lapsed
max_retries times is dead-lettered there (a lapse counts as an attempt), not lost.

With consumer groups (`groups=`), the topic has a group per name and each group has a ledger of its own: its
consumers dequeue and ack as the group, every group must receive every token, and a dead letter read from the DLQ is
credited to the group whose delivery it was (`consumer_group`). An ack whose answer was lost committed when the
message is gone or no longer owes that group a delivery.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

TOPIC = "drill"
VISIBILITY = 5


def seconds(short: float, long: float) -> float:
    """A drill's duration: `short` in the suite (CI), `long` under `make drills` (SKIPLOCK_DRILL_LONG=1)."""
    return long if os.environ.get("SKIPLOCK_DRILL_LONG") == "1" else short


@dataclass
class Ledger:
    expected: dict[str, bytes] = field(default_factory=dict)  # token -> payload the server acknowledged
    superseded_ok: set[str] = field(default_factory=set)  # tokens a later enqueue of the same key may replace
    delivered: Counter[str] = field(default_factory=Counter)  # token -> deliveries whose ack answered 200
    received: Counter[str] = field(default_factory=Counter)  # token -> deliveries, acked or not
    seen: dict[str, bytes] = field(default_factory=dict)  # token -> the payload a delivery carried
    dead_lettered: set[str] = field(default_factory=set)  # tokens delivered from the DLQ
    # token -> message id of deliveries whose ack never answered (the server was killed): it may have committed
    ack_unanswered: dict[str, str] = field(default_factory=dict)
    acked_answer_lost: set[str] = field(default_factory=set)  # of those, the ones gone from the server: acked
    statuses: Counter[str] = field(default_factory=Counter)  # "enqueue 201", "dequeue 503", "error ConnectError"
    slow: int = 0  # requests that took longer than the request deadline allows
    enqueued_at: float = 0.0

    def note(self, kind: str, response: httpx.Response | BaseException, started: float) -> None:
        label = response.status_code if isinstance(response, httpx.Response) else type(response).__name__
        self.statuses[f"{kind} {label}"] += 1
        if time.monotonic() - started > 35:
            self.slow += 1

    def count(self, prefix: str) -> int:
        return sum(n for k, n in self.statuses.items() if k.split()[1].startswith(prefix))

    def settled(self, token: str) -> bool:
        """Delivered (its ack answered 200, or it answered nothing and the message is gone), or superseded."""
        return bool(self.delivered[token]) or token in self.acked_answer_lost or token in self.superseded_ok

    def lost_tokens(self) -> list[str]:
        return [t for t in self.expected if not self.settled(t)]

    def result(self) -> dict[str, Any]:
        lost = self.lost_tokens()
        changed = [t for t, raw in self.seen.items() if t in self.expected and raw != self.expected[t]]
        return {
            "acknowledged_enqueues": len(self.expected),
            "delivered": sum(1 for t in self.expected if self.delivered[t]),
            # delivered, and their ack committed though its answer was lost with a killed server
            "acked_answer_lost": sum(1 for t in self.acked_answer_lost if not self.delivered[t]),
            "lost": len(lost),
            "changed": len(changed),
            # a token acked twice: a double delivery inside a visibility window (must be 0)
            "double_acked": sum(n - 1 for n in self.delivered.values() if n > 1),
            # deliveries after a lapsed lease (an ack or a dequeue's answer lost with a killed server): allowed
            "redeliveries": sum(n - 1 for n in self.received.values() if n > 1),
            # delivered, though their enqueue never answered 2xx (answer lost with a killed server)
            # reached the DLQ after max_retries lapsed leases (acks lost with killed servers) and consumed there
            "dead_lettered": len(self.dead_lettered),
            "unacknowledged_deliveries": sum(1 for t in self.delivered if t not in self.expected),
            "5xx": self.count("5"),
            "500": self.count("500"),
            "slow_requests": self.slow,
            "statuses": dict(sorted(self.statuses.items())),
        }


def _payload(token: str) -> bytes:
    return json.dumps({"token": token, "pad": "x" * 64}).encode()


class Load:
    """`producers` and `consumers` tasks against whatever `base_url()` answers now (a drill may move it)."""

    def __init__(
        self,
        base_url: Callable[[], str],
        auth: tuple[str, str],
        tenant: str,
        producers: int = 4,
        consumers: int = 4,
        groups: Sequence[str] = (),
    ) -> None:
        """`groups`: consumer groups of the topic (created beforehand), each with `consumers` of its own."""
        self.base_url = base_url
        self.auth = auth
        self.headers = {"X-Tenant": tenant}
        self.tenant = tenant
        self.ledger = Ledger()
        # Each group's ledger shares what was enqueued and the request tallies with the first.
        self.ledgers: dict[str | None, Ledger] = {None: self.ledger} if not groups else {}
        for group in groups:
            self.ledgers[group] = Ledger(
                expected=self.ledger.expected, superseded_ok=self.ledger.superseded_ok, statuses=self.ledger.statuses
            )
        self.producing = asyncio.Event()
        self.consuming = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._producers, self._consumers = producers, consumers
        self.acked_tokens: set[str] = set()

    def start(self) -> None:
        self.producing.set()
        self.consuming.set()
        self._tasks = [asyncio.create_task(self._produce(n)) for n in range(self._producers)]
        self._tasks += [
            asyncio.create_task(self._consume(group)) for group in self.ledgers for _ in range(self._consumers)
        ]

    def lost_tokens(self) -> list[str]:
        return [t for ledger in self.ledgers.values() for t in ledger.lost_tokens()]

    def results(self) -> dict[str, dict[str, Any]]:
        """Each group's figures (one entry, "", without groups)."""
        return {group or "": ledger.result() for group, ledger in self.ledgers.items()}

    async def stop_producing(self) -> None:
        self.producing.clear()

    async def drain(self, timeout: float) -> None:
        """Consume until every acknowledged token was delivered (or `timeout`), then stop."""
        self.producing.clear()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            await self._settle_unanswered_acks()
            if not self.lost_tokens():
                break
            await asyncio.sleep(1)
        self.consuming.clear()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _settle_unanswered_acks(self) -> None:
        """An ack whose answer was lost with a killed server may have committed: its message is then gone (404),
        and was delivered; if it is still there, its lease lapses and it comes back to a consumer. (A message
        gone because a later delivery's ack committed, its 200 still on the way, is counted once: by that 200.)
        A group's ack committed when the message no longer owes the group a delivery."""
        for group, ledger in self.ledgers.items():
            for token, message_id in list(ledger.ack_unanswered.items()):
                if ledger.delivered[token]:
                    del ledger.ack_unanswered[token]
                    continue
                r = await self._request("lookup", "GET", f"/api/messages/{message_id}")
                if r is None or r.status_code not in (200, 404):
                    continue
                found = r.json() if r.status_code == 200 else None
                owed = found is not None and (
                    group is None
                    or found["topic"] != TOPIC  # a dead letter: there until acked
                    or any(d["consumer_group"] == group for d in found.get("deliveries") or [])
                )
                if not owed:
                    ledger.acked_answer_lost.add(token)
                    del ledger.ack_unanswered[token]

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.base_url(), auth=self.auth, headers=self.headers, timeout=httpx.Timeout(40, connect=2)
        )

    async def _request(self, kind: str, method: str, path: str, **kwargs: Any) -> httpx.Response | None:
        started = time.monotonic()
        try:
            async with self._client() as c:
                response = await c.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            self.ledger.note(kind, exc, started)
            await asyncio.sleep(0.2)  # the server is away: do not spin
            return None
        self.ledger.note(kind, response, started)
        if response.status_code >= 500:
            await asyncio.sleep(min(float(response.headers.get("Retry-After", "1")), 1.0))
        return response

    async def _produce(self, n: int) -> None:
        ledger = self.ledger
        round_ = 0
        while self.producing.is_set():
            round_ += 1
            if round_ % 3 == 0:  # a batch of plain messages
                tokens = [uuid.uuid4().hex for _ in range(10)]
                body = {"topic": TOPIC, "messages": [{"payload": _b64(_payload(t))} for t in tokens]}
                r = await self._request("enqueue", "POST", "/api/messages/batch", json=body)
                if r is not None and r.status_code == 201:
                    for t in tokens:
                        ledger.expected[t] = _payload(t)
            elif round_ % 3 == 1:  # a plain single
                t = uuid.uuid4().hex
                body = {"topic": TOPIC, "payload": _b64(_payload(t))}
                r = await self._request("enqueue", "POST", "/api/messages", json=body)
                if r is not None and r.status_code == 201:
                    ledger.expected[t] = _payload(t)
            else:  # a key, twice: the first content may be superseded by the second
                key = f"k-{n}-{uuid.uuid4().hex[:12]}"
                first, second = uuid.uuid4().hex, uuid.uuid4().hex
                for token in (first, second):
                    body = {"topic": TOPIC, "payload": _b64(_payload(token)), "key": key}
                    r = await self._request("enqueue", "POST", "/api/messages", json=body)
                    if r is not None and r.status_code == 201:
                        ledger.expected[token] = _payload(token)
                ledger.superseded_ok.add(first)

    async def _consume(self, group: str | None) -> None:
        rounds = 0
        while self.consuming.is_set():
            rounds += 1
            # Every fifth round reads the DLQ: a message whose leases lapsed max_retries times waits there.
            dlq = rounds % 5 == 0
            as_group = None if dlq else group
            body = {
                "topic": f"{TOPIC}.dlq" if dlq else TOPIC,
                "count": 10,
                "visibility_timeout_seconds": VISIBILITY,
                "wait_seconds": 0 if dlq else 1,  # dead letters are few: no waiting on them
                **({"consumer_group": as_group} if as_group else {}),
            }
            r = await self._request("dequeue", "POST", "/api/messages/dequeue", json=body)
            if r is None or r.status_code != 200:
                continue
            messages = r.json()["messages"]
            if not messages:
                continue
            acks = {
                "acks": [
                    {"id": m["id"], "receipt": m["receipt"], **({"consumer_group": as_group} if as_group else {})}
                    for m in messages
                ]
            }
            a = await self._request("ack", "POST", "/api/messages/ack", json=acks)
            failed = {f["id"] for f in a.json()["failed"]} if a is not None and a.status_code == 200 else set()
            for m in messages:
                # A dead letter is the group's whose delivery it was.
                ledger = self.ledgers.get(m.get("consumer_group") if dlq and group else group)
                if ledger is None:
                    continue
                raw = base64.b64decode(m["payload"])
                with contextlib.suppress(ValueError, KeyError):
                    token = json.loads(raw)["token"]
                    ledger.received[token] += 1
                    if a is None or a.status_code != 200:
                        # the leases lapse; the messages come back, unless the ack committed: an ack that got no
                        # answer, or a 5xx (the database went away while it committed, and the server cannot know
                        # whether it did), is looked up at the end
                        if a is None or a.status_code >= 500:
                            ledger.ack_unanswered[token] = m["id"]
                        continue
                    ledger.seen[token] = raw
                    if m["id"] not in failed:
                        ledger.delivered[token] += 1
                        if dlq:
                            ledger.dead_lettered.add(token)

    async def cancel(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def report(name: str, figures: dict[str, Any]) -> None:
    """Print a drill's figures (make drills shows them; docs/reliability.md records them)."""
    print(f"\nDRILL {name}: " + json.dumps(figures, sort_keys=True))
