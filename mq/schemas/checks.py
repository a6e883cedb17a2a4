"""`SchemaChecks`: every schema check (a payload on enqueue, a new version's compilation and compatibility) runs
in schema-check processes (`mq.schemas.sandbox`), never on the event loop, each within a time budget.

Why processes: the validators hold the GIL and cannot be interrupted (measured: a thread running a 0.8 s
`jsonschema-rs` check let the event loop run twice), so a costly check in the API's process holds every tenant's
requests. A process that outlives the budget is killed, and a warm spare takes its place.

- **Budget**: `schema_check_budget_ms` of the process's own CPU time per check (read from /proc: a check waiting
  for a core on a busy machine is not charged for it), and at most `WALL_FACTOR` times that in wall time. A check
  over it refuses its message (`CHECK_TOO_COSTLY`), never the others: a batch of checks sent together that runs
  over is checked again one message at a time, each with the budget.
- **Sharing**: the checks of one tenant that arrive in the same turn of the event loop travel in one frame (one
  round trip for many concurrent enqueues). Tenants take turns for the processes; a tenant whose check ran over
  the budget in the last `COSTLY_SECONDS` gets one process at a time, so the others keep theirs.
- **Cost when off**: nothing. The processes start with the first check (a tenant with a schema), one by one as
  load needs them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import struct
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from mq import errors
from mq.schemas.formats import SchemaFormat, Violation
from mq.schemas.wire import Check, Checked, Compare, Compared, Compile, Compiled, Missing, Reply, Request

log = logging.getLogger(__name__)

#: The reason a message is refused when checking it ran over the budget (the contract's `details.reason`).
CHECK_TOO_COSTLY = "check_too_costly"
#: A check may take this many times its budget in wall time (waiting for a core) before it is stopped all the same.
WALL_FACTOR = 20
#: How long a tenant whose check ran over the budget gets one process at a time.
COSTLY_SECONDS = 60.0
#: Schema texts the API keeps keys for; past it, every process is told again what it needs.
MAX_KEYS = 10_000

_HEADER = struct.Struct(">I")
_ENCODE = msgspec.msgpack.Encoder().encode
_REPLIES: msgspec.msgpack.Decoder[Reply] = msgspec.msgpack.Decoder(Reply)
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class TooCostly(Exception):
    """A check ran over its budget (its process was stopped)."""


def _cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of a process so far, or None where /proc does not tell."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS


class _Process:
    """One schema-check process and the schema keys it has been told."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.known: set[int] = set()

    @classmethod
    async def start(cls) -> _Process:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "mq.schemas.sandbox",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        started = cls(proc)
        await started._read()  # the process's "ready" (its imports are done)
        return started

    async def _read(self) -> bytes:
        assert self.proc.stdout is not None
        size = _HEADER.unpack(await self.proc.stdout.readexactly(_HEADER.size))[0]
        return await self.proc.stdout.readexactly(size) if size else b""

    async def ask(self, request: Request, budget: float) -> Reply:
        """One round trip, within `budget` seconds of the process's CPU (`TooCostly` past it: the process is
        killed)."""
        assert self.proc.stdin is not None
        data = _ENCODE(request)
        self.proc.stdin.write(_HEADER.pack(len(data)) + data)
        reading = asyncio.ensure_future(self._read())
        used_before = _cpu_seconds(self.proc.pid)
        started = time.monotonic()
        wait = budget
        while True:
            done, _ = await asyncio.wait((reading,), timeout=wait)
            if done:
                try:
                    return _REPLIES.decode(reading.result())
                except asyncio.IncompleteReadError:  # the process died on it (memory, a crash): as costly
                    log.warning("a schema-check process exited during a check (code %s)", self.proc.returncode)
                    self.kill()
                    raise TooCostly from None
            used = _cpu_seconds(self.proc.pid)
            spent = budget if used is None or used_before is None else used - used_before
            if spent >= budget or time.monotonic() - started >= budget * WALL_FACTOR:
                reading.cancel()
                self.kill()
                raise TooCostly
            wait = max(budget - spent, 0.005)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()

    async def close(self) -> None:
        self.kill()
        with contextlib.suppress(Exception):
            await self.proc.wait()


@dataclass
class _Request:
    """A caller's payloads, each with its schema key; answered with one verdict per payload."""

    items: list[tuple[int, bytes]]
    future: asyncio.Future[list[Violation | None]]


@dataclass
class _Job:
    tenant_id: int
    requests: list[_Request] = field(default_factory=list)


class SchemaChecks:
    def __init__(self, processes: int, budget_seconds: float) -> None:
        self.processes = processes
        self.budget = budget_seconds
        self._keys: dict[tuple[SchemaFormat, str], int] = {}
        self._texts: dict[int, tuple[SchemaFormat, str]] = {}
        self._next_key = 1  # keys are never reused: a process may still hold an old one
        self._idle: list[_Process] = []
        self._running = 0  # processes started (idle or busy), spare excluded
        self._spare: asyncio.Task[_Process] | None = None
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
                f"compiling the schema took longer than its budget ({self._budget_text()})",
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
        processes = list(self._idle)
        self._idle.clear()
        if self._spare is not None:
            self._spare.cancel()
            with contextlib.suppress(BaseException):
                processes.append(await self._spare)
        for process in processes:
            await process.close()

    def _budget_text(self) -> str:
        return f"{round(self.budget * 1000)} ms"

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

    # --- processes -------------------------------------------------------------------------------------------

    async def _take(self) -> _Process:
        if self._idle:
            return self._idle.pop()
        self._running += 1
        try:
            if self._spare is not None:
                spare, self._spare = self._spare, None
                process = await spare
            else:
                process = await _Process.start()
        except BaseException:
            self._running -= 1
            raise
        self._keep_spare()
        return process

    def _keep_spare(self) -> None:
        if self._spare is None:
            self._spare = asyncio.get_running_loop().create_task(_Process.start())

    async def _replace(self) -> _Process:
        """Another process for one that was killed."""
        self._running -= 1
        return await self._take()

    def _give_back(self, process: _Process | None) -> None:
        """A process back to the idle ones (None: it was killed)."""
        if process is None:
            self._running -= 1
        else:
            self._idle.append(process)
        self._dispatch()

    async def _alone(self, request: Request) -> Reply:
        """A request of its own (a new schema version), outside the tenants' turns."""
        process = await self._take()
        try:
            reply = await process.ask(request, self.budget)
        except BaseException:
            await process.close()
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
        """Start waiting jobs while processes are free (or may be started), tenants in turn."""
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
            task = asyncio.get_running_loop().create_task(self._run(job))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            skipped = 0

    async def _run(self, job: _Job) -> None:
        process: _Process | None = None
        try:
            process = await self._take()
            process = await self._answer(process, job)
        except BaseException as exc:
            for request in job.requests:
                if not request.future.done():
                    request.future.set_exception(exc if isinstance(exc, Exception) else asyncio.CancelledError())
            if process is not None:
                await process.close()
                process = None
            if not isinstance(exc, Exception):
                raise
        finally:
            self._busy[job.tenant_id] -= 1
            if not self._busy[job.tenant_id]:
                del self._busy[job.tenant_id]
            self._give_back(process)

    async def _answer(self, process: _Process, job: _Job) -> _Process | None:
        """Check the job's payloads together; if that runs over the budget, one at a time. Returns the process
        (or a replacement) to give back, None if the last one was killed."""
        items = [item for request in job.requests for item in request.items]
        try:
            verdicts = await self._checked(process, items)
        except TooCostly:
            self._over_budget(job.tenant_id)
            if len(items) == 1:
                job.requests[0].future.set_result([_costly()])
                return None
            process = await self._replace()
            for request in job.requests:
                answers: list[Violation | None] = []
                for item in request.items:  # the others of a refused request need no check
                    if answers and answers[-1] is not None and answers[-1].reason == CHECK_TOO_COSTLY:
                        answers.append(None)
                        continue
                    try:
                        answers.append((await self._checked(process, [item]))[0])
                    except TooCostly:
                        self._over_budget(job.tenant_id)
                        answers.append(_costly())
                        process = await self._replace()
                request.future.set_result(answers)
            return process
        at = 0
        for request in job.requests:
            request.future.set_result(verdicts[at : at + len(request.items)])
            at += len(request.items)
        return process

    async def _checked(self, process: _Process, items: list[tuple[int, bytes]]) -> list[Violation | None]:
        keys = {key for key, _ in items}
        reply = await process.ask(Check(self._told(process, keys - process.known), items), self.budget)
        if isinstance(reply, Missing):  # the process forgot (it started again from none): tell it again
            process.known.difference_update(reply.keys)
            reply = await process.ask(Check(self._told(process, set(reply.keys)), items), self.budget)
        assert isinstance(reply, Checked)
        return [None if v is None else Violation(v.pointer, v.reason) for v in reply.verdicts]

    def _told(self, process: _Process, keys: set[int]) -> list[tuple[int, SchemaFormat, str]]:
        process.known.update(keys)
        return [(key, *self._texts[key]) for key in sorted(keys)]

    def _over_budget(self, tenant_id: int) -> None:
        self.too_costly += 1
        now = time.monotonic()
        for expired in [t for t, until in self._costly_until.items() if until <= now]:
            del self._costly_until[expired]
        self._costly_until[tenant_id] = now + COSTLY_SECONDS
        log.warning("a schema check of tenant %s ran over its budget; its process was stopped", tenant_id)


def _costly() -> Violation:
    return Violation("", CHECK_TOO_COSTLY)
