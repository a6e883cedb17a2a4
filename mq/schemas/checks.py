"""`SchemaChecks`: every schema check (a payload on enqueue, a new version's compilation and compatibility) runs
in schema-check processes (`mq.schemas.sandbox`), never on the event loop, each within a time budget.

Why processes: the validators hold the GIL and cannot be interrupted (measured: a thread running a 0.8 s
`jsonschema-rs` check let the event loop run twice), so a costly check in the API's process holds every tenant's
requests. A process that outlives the budget is killed (`mq.schemas.processes`), and a warm spare takes its place.
The usual round trip runs on callbacks alone (a frame written, the reply read by the pipe's protocol): no task per
check.

- **Budget**: `schema_check_budget_ms` of the process's own CPU time per check (read from /proc: a check waiting
  for a core on a busy machine is not charged for it), and at most `WALL_FACTOR` times that in wall time. A check
  over it refuses its message (`CHECK_TOO_COSTLY`), never the others: a batch of checks sent together that runs
  over is checked again one message at a time, each with the budget.
- **Sharing**: the checks of one tenant that arrive in the same turn of the event loop travel in one frame (one
  round trip for many concurrent enqueues). Tenants take turns for the processes; a tenant whose check ran over
  the budget in the last `COSTLY_SECONDS` gets one process at a time, so the others keep theirs.
- **In process when bounded**: a check whose cost is bounded by construction (`mq.schemas.cost`: a schema that is
  a finite tree once its references are followed, and payloads small enough for it) runs in the API's process,
  giving the event loop to other requests every 2 ms, at a fraction of a round trip's cost; everything else goes
  to the processes.
- **Cost when off**: nothing. The processes start with the first check that needs one, one by one as load needs
  them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mq import errors
from mq.schemas.cost import PAYLOAD_UNITS, REQUEST_UNITS, Weight, inline_weight
from mq.schemas.formats import UNEXPLAINED, Checker, SchemaFormat, Violation, compile_schema
from mq.schemas.processes import SandboxProcess, TooCostly
from mq.schemas.wire import Check, Checked, Compare, Compared, Compile, Compiled, Missing, Reply, Request

log = logging.getLogger(__name__)

#: The reason a message is refused when checking it ran over the budget (the contract's `details.reason`).
CHECK_TOO_COSTLY = "check_too_costly"
#: How long a tenant whose check ran over the budget gets one process at a time.
COSTLY_SECONDS = 60.0
#: In-process checks run this long at most before the event loop runs others (and a payload's check at most about
#: 3 ms: `mq.schemas.cost.PAYLOAD_UNITS`); a typical batch of 100 takes well under one slice.
SLICE_SECONDS = 0.002
#: Schema texts the API keeps keys for; past it, every process is told again what it needs.
MAX_KEYS = 10_000

__all__ = ["CHECK_TOO_COSTLY", "SchemaChecks", "TooCostly"]


@dataclass
class _Request:
    """A caller's payloads, each with its schema key; answered with one verdict per payload."""

    items: list[tuple[int, bytes]]
    future: asyncio.Future[list[Violation | None]]


@dataclass
class _Job:
    tenant_id: int
    requests: list[_Request] = field(default_factory=list)

    @property
    def items(self) -> list[tuple[int, bytes]]:
        return [item for request in self.requests for item in request.items]


class SchemaChecks:
    def __init__(self, processes: int, budget_seconds: float) -> None:
        self.processes = processes
        self.budget = budget_seconds
        self._keys: dict[tuple[SchemaFormat, str], int] = {}
        self._texts: dict[int, tuple[SchemaFormat, str]] = {}
        self._next_key = 1  # keys are never reused: a process may still hold an old one
        #: (format, text) -> (weight, checker) of a schema checked in process; None: always in the processes
        self._inline: dict[tuple[SchemaFormat, str], tuple[Weight, Checker] | None] = {}
        self._idle: list[SandboxProcess] = []
        self._running = 0  # processes started or starting (idle or busy), the spare excluded
        self._spare: asyncio.Task[SandboxProcess] | None = None
        self._gathering: dict[int, _Job] = {}
        self._waiting: dict[int, deque[_Job]] = {}
        self._turns: deque[int] = deque()
        self._busy: dict[int, int] = {}  # tenant -> jobs running
        self._costly_until: dict[int, float] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.too_costly = 0  # checks stopped over their budget, since start (metrics)

    # --- the callers' side -----------------------------------------------------------------------------------

    async def check(
        self, tenant_id: int, schema_format: SchemaFormat, schema_json: str, payloads: Sequence[bytes]
    ) -> list[Violation | None]:
        """One verdict per payload: None when it fits, or why not (`CHECK_TOO_COSTLY` as the reason when its
        check ran over the budget)."""
        inline = self._inline.get((schema_format, schema_json))
        if inline is None and (schema_format, schema_json) not in self._inline:
            inline = self._inline_checker(schema_format, schema_json)
        if inline is not None:
            quick = await _in_process(inline[0], inline[1], payloads)
            if quick is not None and not any(verdict is UNEXPLAINED for verdict in quick):
                return quick
            # too costly for the event loop, or some do not fit: why is the processes' to say (explaining costs far
            # more than checking)
        key = self._key(schema_format, schema_json)
        loop = asyncio.get_running_loop()
        request = _Request([(key, p) for p in payloads], loop.create_future())
        job = self._gathering.get(tenant_id)
        if job is None:
            if not self._gathering:
                loop.call_soon(self._gathered)
            job = self._gathering[tenant_id] = _Job(tenant_id)
        job.requests.append(request)
        return await request.future

    async def compile(self, schema_format: SchemaFormat, schema_json: str) -> None:
        """Raise `InvalidSchema` naming the problem if the schema does not compile (or compiling it ran over the
        budget)."""
        try:
            reply = await self._alone(Compile(schema_format, schema_json))
        except TooCostly:
            raise errors.InvalidSchema(
                f"compiling the schema took longer than its budget ({round(self.budget * 1000)} ms)",
                details={"reason": CHECK_TOO_COSTLY},
            ) from None
        assert isinstance(reply, Compiled)
        if reply.error is not None:
            raise errors.InvalidSchema(reply.error)

    async def first_break(self, schema_format: SchemaFormat, current: str, new: str) -> str | None:
        """What the new version refuses that the current one accepts (`mq.schemas.compatibility`), or None;
        `TooCostly` if deciding it ran over the budget."""
        reply = await self._alone(Compare(schema_format, current, new))
        assert isinstance(reply, Compared)
        return reply.problem

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for process in self._idle:
            process.close()
        self._idle.clear()
        if self._spare is not None:
            self._spare.cancel()
            with contextlib.suppress(BaseException):  # cancelled while starting: nothing to close
                (await self._spare).close()

    def _inline_checker(self, schema_format: SchemaFormat, schema_json: str) -> tuple[Weight, Checker] | None:
        """The weight and in-process checker of a schema whose checks are bounded (`mq.schemas.cost`), else None;
        kept per schema text."""
        if len(self._inline) >= MAX_KEYS:
            self._inline.clear()
        weight = inline_weight(schema_format, schema_json)
        found = None
        if weight is not None:
            try:  # (bounded too: a schema of at most `MAX_INLINE_WEIGHT` nodes)
                found = (weight, compile_schema(schema_format, schema_json))
            except errors.InvalidSchema:
                found = None  # the processes answer for it
        self._inline[(schema_format, schema_json)] = found
        return found

    def _key(self, schema_format: SchemaFormat, schema_json: str) -> int:
        found = self._keys.get((schema_format, schema_json))
        if found is None:
            if len(self._keys) >= MAX_KEYS:  # forgotten here; a process told a forgotten key is told a new one
                self._keys.clear()
                self._texts.clear()
            found, self._next_key = self._next_key, self._next_key + 1
            self._keys[(schema_format, schema_json)] = found
            self._texts[found] = (schema_format, schema_json)
        return found

    def _told(self, process: SandboxProcess, keys: set[int]) -> list[tuple[int, SchemaFormat, str]]:
        process.known.update(keys)
        return [(key, *self._texts[key]) for key in sorted(keys)]

    # --- processes -------------------------------------------------------------------------------------------

    async def _take(self) -> SandboxProcess:
        """An idle process, the spare, or a new one (counted in `_running`)."""
        if self._idle:
            return self._idle.pop()
        self._running += 1
        try:
            if self._spare is not None:
                spare, self._spare = self._spare, None
                process = await spare
            else:
                process = await SandboxProcess.start()
        except BaseException:
            self._running -= 1
            raise
        if self._spare is None:
            self._spare = asyncio.get_running_loop().create_task(SandboxProcess.start())
        return process

    def _give_back(self, process: SandboxProcess | None) -> None:
        """A process back to the idle ones (None or dead: it was killed, one fewer runs)."""
        if process is not None and process.alive:
            self._idle.append(process)
        else:
            self._running -= 1
        self._dispatch()

    async def _alone(self, request: Request) -> Reply:
        """A request of its own (a new schema version), outside the tenants' turns."""
        process = await self._take()
        try:
            reply = await process.ask(request, self.budget)
        except BaseException:
            process.close()
            self._give_back(None)
            raise
        self._give_back(process)
        return reply

    # --- tenants' checks -------------------------------------------------------------------------------------

    def _gathered(self) -> None:
        jobs, self._gathering = self._gathering, {}
        for tenant_id, job in jobs.items():
            if tenant_id not in self._waiting:
                self._waiting[tenant_id] = deque()
                self._turns.append(tenant_id)
            self._waiting[tenant_id].append(job)
        self._dispatch()

    def _dispatch(self) -> None:
        """Send waiting jobs while processes are free (or may be started), tenants in turn."""
        now = time.monotonic()
        skipped = 0
        while self._turns and skipped < len(self._turns) and (self._idle or self._running < self.processes):
            tenant_id = self._turns[0]
            self._turns.rotate(-1)
            if self._busy.get(tenant_id, 0) and self._costly_until.get(tenant_id, 0.0) > now:
                skipped += 1  # one process at a time for a tenant whose checks ran over
                continue
            queue = self._waiting[tenant_id]
            job = queue.popleft()
            if not queue:
                del self._waiting[tenant_id]
                self._turns.remove(tenant_id)
            self._busy[tenant_id] = self._busy.get(tenant_id, 0) + 1
            skipped = 0
            if self._idle:
                self._send(self._idle.pop(), job)
            else:
                self._in_task(self._start_then_send(job))

    def _in_task(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _start_then_send(self, job: _Job) -> None:
        try:
            process = await self._take()
        except Exception as exc:  # the process would not start: the callers get the error
            self._done(job, None, exc)
            return
        self._send(process, job)

    def _send(self, process: SandboxProcess, job: _Job) -> None:
        items = job.items
        keys = {key for key, _ in items}
        reply = process.ask(Check(self._told(process, keys - process.known), items), self.budget)
        reply.add_done_callback(functools.partial(self._answered, process, job))

    def _answered(self, process: SandboxProcess, job: _Job, reply: asyncio.Future[Reply]) -> None:
        exc = reply.exception()
        if isinstance(exc, TooCostly):
            self._over_budget(job.tenant_id)
            self._running -= 1  # (that process is gone)
            if len(job.items) == 1:
                self._done(job, None, [CHECK_TOO_COSTLY_VIOLATION])
            else:
                self._in_task(self._one_by_one(job))
            return
        if exc is not None:
            self._done(job, process, exc)
            return
        answer = reply.result()
        if isinstance(answer, Missing):  # the process forgot (it started again from none): tell it again
            process.known.difference_update(answer.keys)
            self._send(process, job)
            return
        assert isinstance(answer, Checked)
        self._done(job, process, [None if v is None else Violation(v.pointer, v.reason) for v in answer.verdicts])

    async def _one_by_one(self, job: _Job) -> None:
        """A job that ran over the budget, checked again a payload at a time, each with the budget; the rest of a
        request once one of its payloads ran over is not checked (the request is refused)."""
        process: SandboxProcess | None = None
        try:
            process = await self._take()
            for request in job.requests:
                answers: list[Violation | None] = []
                for item in request.items:
                    if any(a is CHECK_TOO_COSTLY_VIOLATION for a in answers):
                        answers.append(None)
                        continue
                    try:
                        answers.append(await self._checked_alone(process, item))
                    except TooCostly:
                        self._over_budget(job.tenant_id)
                        answers.append(CHECK_TOO_COSTLY_VIOLATION)
                        self._running -= 1
                        process = await self._take()
                if not request.future.done():
                    request.future.set_result(answers)
        except BaseException as exc:
            self._done(job, process, exc if isinstance(exc, Exception) else asyncio.CancelledError())
            if not isinstance(exc, Exception):
                raise
            return
        self._done(job, process, None)

    async def _checked_alone(self, process: SandboxProcess, item: tuple[int, bytes]) -> Violation | None:
        reply = await process.ask(Check(self._told(process, {item[0]} - process.known), [item]), self.budget)
        if isinstance(reply, Missing):
            process.known.difference_update(reply.keys)
            reply = await process.ask(Check(self._told(process, {item[0]}), [item]), self.budget)
        assert isinstance(reply, Checked)
        verdict = reply.verdicts[0]
        return None if verdict is None else Violation(verdict.pointer, verdict.reason)

    def _done(
        self, job: _Job, process: SandboxProcess | None, outcome: list[Violation | None] | BaseException | None
    ) -> None:
        """Answer the job's callers (a list: their verdicts in order; an exception: each fails with it; None: they
        were answered already), and free its process and its tenant's turn."""
        at = 0
        for request in job.requests:
            if request.future.done():
                continue
            if isinstance(outcome, BaseException):
                request.future.set_exception(outcome)
            elif outcome is not None:
                request.future.set_result(outcome[at : at + len(request.items)])
            at += len(request.items)
        self._busy[job.tenant_id] -= 1
        if not self._busy[job.tenant_id]:
            del self._busy[job.tenant_id]
        if process is not None:
            self._give_back(process)
        else:
            self._dispatch()

    def _over_budget(self, tenant_id: int) -> None:
        self.too_costly += 1
        now = time.monotonic()
        for expired in [t for t, until in self._costly_until.items() if until <= now]:
            del self._costly_until[expired]
        self._costly_until[tenant_id] = now + COSTLY_SECONDS
        log.warning("a schema check of tenant %s ran over its budget; its process was stopped", tenant_id)


#: The verdict of a payload whose check ran over the budget.
CHECK_TOO_COSTLY_VIOLATION = Violation("", CHECK_TOO_COSTLY)


async def _in_process(weight: Weight, checker: Checker, payloads: Sequence[bytes]) -> list[Violation | None] | None:
    """The cheap pass (`Checker.quickly`) over the payloads in this process, giving the event loop to others
    whenever a slice has taken `SLICE_SECONDS` (a payload takes at most `PAYLOAD_UNITS`: about 3 ms at the very
    most); None when a payload or the request is too costly for it."""
    sizes = list(map(len, payloads))
    per_byte = weight.per_byte
    if max(sizes, default=0) * per_byte > PAYLOAD_UNITS or sum(sizes) * per_byte > REQUEST_UNITS:
        units = [weight.units(payload) for payload in payloads]  # the bound is over: count exactly
        if max(units, default=0) > PAYLOAD_UNITS or sum(units) > REQUEST_UNITS:
            return None
    verdicts: list[Violation | None] = []
    clock = time.perf_counter
    until = clock() + SLICE_SECONDS
    for payload in payloads:
        verdicts.append(checker.quickly(payload))
        if clock() > until:
            await asyncio.sleep(0)  # others' requests run between slices
            until = clock() + SLICE_SECONDS
    return verdicts
