"""The process that checks payloads against topic schemas (`python -m mq.schemas.sandbox`), apart from the API.

A schema is a tenant's program: a JSON Schema whose `$ref`s fan out through `anyOf` costs time exponential in
its depth, an Avro record's error pass grows with the payload's nesting, a pattern may backtrack. Neither
`jsonschema-rs` nor `fastavro` lets go of the GIL or can be interrupted while it works, so a check run in the
API's process (its event loop or a thread) holds every other request while it runs. Here it runs in a process of
its own, which the API kills when a check outlives its time budget (`mq.schemas.checks`).

Frames on stdin and stdout: a 4-byte big-endian length (a reply's header also holds the process's CPU seconds
so far, `mq.schemas.processes`), then a msgpack-encoded request (`Request`) or reply.
The process keeps each schema it compiled (by the key the API gave it) and is told a schema's text only the first
time; it answers `Missing` for a key it no longer holds, and the API sends the text again.
"""

from __future__ import annotations

import sys
import time
from typing import BinaryIO

import msgspec

from mq import errors
from mq.schemas.compatibility import first_break
from mq.schemas.formats import Checker, SchemaFormat, Violation, compile_schema
from mq.schemas.processes import REPLY_HEADER, REQUEST_HEADER
from mq.schemas.wire import (
    Check,
    Checked,
    Compare,
    Compared,
    Compile,
    Compiled,
    Missing,
    Reply,
    Request,
    Verdict,
)

#: Compiled schemas a process keeps; past it, it starts again from none (the API resends what it needs).
MAX_COMPILED = 10_000


class Sandbox:
    def __init__(self) -> None:
        self.compiled: dict[int, Checker] = {}

    def handle(self, request: Request) -> Reply:
        if isinstance(request, Check):
            return self.check(request)
        if isinstance(request, Compile):
            return Compiled(error=_compile_error(request.format, request.schema))
        return Compared(problem=_compare(request))

    def check(self, request: Check) -> Reply:
        for key, schema_format, text in request.schemas:
            if len(self.compiled) >= MAX_COMPILED:
                self.compiled.clear()
            try:
                self.compiled[key] = compile_schema(schema_format, text)
            except Exception:  # stored schemas compiled when they were stored; a library change may refuse one
                self.compiled[key] = _REFUSE_ALL
        missing = sorted({key for key, _ in request.items if key not in self.compiled})
        if missing:
            return Missing(keys=missing)
        verdicts: list[Verdict | None] = []
        for key, payload in request.items:
            violation = self.compiled[key](payload)
            verdicts.append(None if violation is None else Verdict(violation.pointer, violation.reason))
        return Checked(verdicts=verdicts)


#: The checker of a stored schema that no longer compiles (a library changed): every payload refused, saying so.
_REFUSE_ALL = Checker(lambda _: False, lambda _: Violation("", "the topic's schema no longer compiles: store it again"))


def _compile_error(schema_format: SchemaFormat, text: str) -> str | None:
    try:
        compile_schema(schema_format, text)
    except errors.InvalidSchema as exc:
        return exc.message
    return None


def _compare(request: Compare) -> str | None:
    return first_break(request.format, request.current, request.new)


def _read(stream: BinaryIO, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def main() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    decoder = msgspec.msgpack.Decoder(Request)
    encoder = msgspec.msgpack.Encoder()
    sandbox = Sandbox()
    stdout.write(REPLY_HEADER.pack(0, time.process_time()))  # ready: the imports are done
    stdout.flush()
    while True:
        header = _read(stdin, REQUEST_HEADER.size)
        if header is None:
            return
        body = _read(stdin, REQUEST_HEADER.unpack(header)[0])
        if body is None:
            return
        data = encoder.encode(sandbox.handle(decoder.decode(body)))
        stdout.write(REPLY_HEADER.pack(len(data), time.process_time()) + data)  # with the CPU it used so far
        stdout.flush()


if __name__ == "__main__":
    main()
