"""Writing a DataFrame into a topic: each task sends its partition through `POST /api/messages/batch`.

A task turns its Arrow record batches into messages (`columns.Columns`), sends them in batches of `batchSize` with
at most `inFlight` requests under way, and retries back-pressure (429 and 503, honouring `Retry-After`) and lost
answers within `retryBudgetSeconds`: a capped topic makes a job slower, not failed. A batch the server refuses for
some of its items (400/413 with the items' indexes) goes to the reject sink without them and is sent again
(`onInvalid=reject`), or fails the task (`fail`). Delivery is at least once: a task Spark runs again sends its
rows again; keyed rows upsert, so a re-run leaves one pending message per key.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from skiplock_client import errors
from skiplock_client.client import AsyncClient
from skiplock_client.models import EnqueueBody
from skiplock_client.retry import RetryPolicy
from skiplock_client.spark.columns import Columns, row_json
from skiplock_client.spark.options import WriteOptions

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger("skiplock_client.spark")


@dataclass
class WriteReport(WriterCommitMessage):
    """What one task did (its commit message), or a job's totals."""

    rows: int = 0
    messages: int = 0
    batches: int = 0
    retries: int = 0
    rejected: int = 0
    seconds: float = 0.0

    @classmethod
    def total(cls, reports: list[WriterCommitMessage | None]) -> WriteReport:
        done = [r for r in reports if isinstance(r, WriteReport)]
        return cls(
            rows=sum(r.rows for r in done),
            messages=sum(r.messages for r in done),
            batches=sum(r.batches for r in done),
            retries=sum(r.retries for r in done),
            rejected=sum(r.rejected for r in done),
            seconds=max((r.seconds for r in done), default=0.0),
        )

    def line(self) -> str:
        rate = self.rows / self.seconds if self.seconds else 0.0
        return (
            f"{self.rows} rows, {self.messages} messages in {self.batches} batches, {self.retries} retries, "
            f"{self.rejected} rejected, {rate:,.0f} rows/s"
        )


class _Rejects:
    """Rejected rows of one task, written where `rejectPath` says when the task ends."""

    def __init__(self, options: WriteOptions) -> None:
        self.options = options
        self.rows: list[dict[str, Any]] = []

    def add(self, row: str, code: str, error: str) -> None:
        self.rows.append({"row": row, "code": code, "error": error})

    def flush(self) -> None:
        if not self.rows or self.options.reject_path is None:
            return
        folder = Path(self.options.reject_path)
        folder.mkdir(parents=True, exist_ok=True)
        name = f"rejected-{uuid.uuid4().hex}"
        if self.options.reject_format == "parquet":
            import pyarrow as pa  # noqa: PLC0415 - only where Parquet rejects are asked for
            import pyarrow.parquet as pq  # noqa: PLC0415

            pq.write_table(pa.Table.from_pylist(self.rows), folder / f"{name}.parquet")
        else:
            (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in self.rows))


class _Task:
    """One task's partition, sent with a bounded number of requests under way."""

    def __init__(self, options: WriteOptions, columns: Columns) -> None:
        self.options = options
        self.columns = columns
        self.report = WriteReport()
        self.rejects = _Rejects(options)
        self.policy = RetryPolicy(
            attempts=1_000_000, budget_seconds=options.retry_budget_seconds, max_backoff_seconds=5.0, every_429=True
        )

    async def run(self, batches: Iterator[pa.RecordBatch]) -> WriteReport:
        started = time.monotonic()
        connection = self.options.connection
        async with AsyncClient(
            connection.url,
            auth=connection.auth,
            tenant=connection.tenant,
            verify=connection.verify,
            timeout=connection.timeout,
            max_connections=self.options.in_flight,
            retry=self.policy,
        ) as client:
            slots = asyncio.Semaphore(self.options.in_flight)
            sending: set[asyncio.Task[None]] = set()
            size = self.options.batch_size
            items: list[EnqueueBody] = []
            rows: list[dict[str, Any]] | None = []  # the rows as dicts, when the payload is the whole row
            try:
                for record_batch in batches:
                    batch_items, batch_rows = self.columns.items(record_batch)
                    self.report.rows += len(batch_items)
                    items += batch_items
                    rows = rows + batch_rows if rows is not None and batch_rows is not None else None
                    while len(items) >= size:
                        await self._start(client, _Chunk(items[:size], rows[:size] if rows else None), slots, sending)
                        items, rows = items[size:], (rows[size:] if rows else rows)
                if items:
                    await self._start(client, _Chunk(items, rows or None), slots, sending)
                await asyncio.gather(*sending)
            finally:
                for task in sending:
                    task.cancel()
                self.report.retries = client.retries
        self.rejects.flush()
        self.report.seconds = time.monotonic() - started
        return self.report

    async def _start(
        self,
        client: AsyncClient,
        chunk: _Chunk,
        slots: asyncio.Semaphore,
        sending: set[asyncio.Task[None]],
    ) -> None:
        await slots.acquire()
        for task in [t for t in sending if t.done()]:
            sending.discard(task)
            task.result()  # a failed batch fails the task now
        task = asyncio.create_task(self._send(client, chunk))
        task.add_done_callback(lambda _: slots.release())
        sending.add(task)

    async def _send(self, client: AsyncClient, chunk: _Chunk) -> None:
        while chunk.items:
            try:
                await client.send_prepared(self.options.topic, chunk.items, self.policy)
            except (errors.InvalidRequest, errors.PayloadTooLarge) as exc:
                bad = _bad_items(exc)
                if self.options.on_invalid == "fail" or not bad:
                    raise
                chunk = self._reject(chunk, bad)
                continue
            self.report.batches += 1
            self.report.messages += len(chunk.items)
            return

    def _reject(self, chunk: _Chunk, bad: dict[int, tuple[str, str]]) -> _Chunk:
        """The rejected items to the sink; what is left of the chunk."""
        for index, (code, error) in bad.items():
            row = chunk.rows[index] if chunk.rows else None
            self.rejects.add(row_json(row) if row is not None else _item_json(chunk.items[index]), code, error)
            self.report.rejected += 1
        keep = [i for i in range(len(chunk.items)) if i not in bad]
        return _Chunk([chunk.items[i] for i in keep], [chunk.rows[i] for i in keep] if chunk.rows else None)


@dataclass
class _Chunk:
    """One request's messages, and the rows they came from when the payload is the whole row (for rejects)."""

    items: list[EnqueueBody]
    rows: list[dict[str, Any]] | None


def _bad_items(exc: errors.SkiplockError) -> dict[int, tuple[str, str]]:
    """index -> (code, error) of the items a refused batch names."""
    details = exc.details if isinstance(exc.details, list) else []
    return {
        d["index"]: (str(d.get("code", exc.error_code)), str(d.get("error", exc.message)))
        for d in details
        if isinstance(d, dict) and isinstance(d.get("index"), int)
    }


def _item_json(item: EnqueueBody) -> str:
    return json.dumps({"payload": item.payload.decode(errors="replace"), "key": item.key, "topic": item.topic})


def write_partition(options: WriteOptions, columns: Columns, batches: Iterator[pa.RecordBatch]) -> WriteReport:
    report = asyncio.run(_Task(options, columns).run(batches))
    log.info("skiplock: task wrote %s", report.line())
    return report


def _finish(options: WriteOptions, messages: list[WriterCommitMessage | None], what: str) -> None:
    total = WriteReport.total(messages)
    log.info("skiplock: %s: %s", what, total.line())
    if options.summary_path:
        Path(options.summary_path).write_text(json.dumps({**total.__dict__, "outcome": what}))


def _aborted(options: WriteOptions, messages: list[WriterCommitMessage | None], what: str) -> None:
    done = WriteReport.total(messages)
    log.error(
        "skiplock: %s failed; tasks that finished had enqueued %d messages (%s). Delivery is at least once: a "
        "re-run sends them again (keyed rows upsert: one pending message per key)",
        what,
        done.messages,
        done.line(),
    )
    if options.summary_path:
        Path(options.summary_path).write_text(json.dumps({**done.__dict__, "outcome": "aborted"}))


class SkiplockWriter(DataSourceArrowWriter):
    def __init__(self, options: WriteOptions, columns: Columns) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteReport:
        return write_partition(self.options, self.columns, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        _finish(self.options, messages, "job committed")

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        _aborted(self.options, messages, "the job")


class SkiplockStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: WriteOptions, columns: Columns) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteReport:
        return write_partition(self.options, self.columns, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - Spark's name
        _finish(self.options, messages, f"micro-batch {batchId} committed")

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        _aborted(self.options, messages, f"micro-batch {batchId}")
