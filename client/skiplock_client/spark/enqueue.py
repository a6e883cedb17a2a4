"""`python -m skiplock_client.spark.enqueue`: a dataset (Parquet, CSV, JSON, ORC or any format Spark reads) into a
topic, with a summary; exit status 0 only when every row was enqueued or, with `--on-invalid reject`, rejected.
Also runs under `spark-submit` (the session it finds is used). Credentials: `--username` and `--password`, a
`--credentials-file`, or SKIPLOCK_USERNAME / SKIPLOCK_PASSWORD; they are never printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from skiplock_client.spark.options import Connection, OptionError, check_connection


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m skiplock_client.spark.enqueue", description=__doc__)
    parser.add_argument("--input", required=True, help="the dataset's path (a file or a folder)")
    parser.add_argument("--format", default="parquet", help="parquet (default), csv, json, orc, ...")
    parser.add_argument("--read-option", action="append", default=[], metavar="K=V", help="an option of the reader")
    parser.add_argument("--url", default=os.environ.get("SKIPLOCK_URL"), help="the server (or SKIPLOCK_URL)")
    parser.add_argument("--topic", help="the topic (or --topic-column)")
    parser.add_argument("--tenant", help="the tenant a platform admin addresses")
    parser.add_argument("--username")
    parser.add_argument("--password")
    parser.add_argument("--credentials-file")
    for column in ("key", "payload", "topic", "metadata", "priority", "delay"):
        parser.add_argument(f"--{column}-column")
    parser.add_argument("--batch-size", type=int, help="messages per request (default: the server's largest)")
    parser.add_argument("--in-flight", type=int, help="requests under way per task (default 4)")
    parser.add_argument("--partitions", type=int, help="repartition the input first (tasks sending at once)")
    parser.add_argument("--retry-budget-seconds", type=float)
    parser.add_argument("--on-invalid", choices=("fail", "reject"), default="fail")
    parser.add_argument("--reject-path")
    parser.add_argument("--reject-format", choices=("json", "parquet"))
    parser.add_argument("--master", help="Spark's master when not under spark-submit (default local[*])")
    return parser.parse_args(argv)


def options(args: argparse.Namespace, summary: Path) -> dict[str, str]:
    chosen = {
        "url": args.url,
        "topic": args.topic,
        "tenant": args.tenant,
        "username": args.username,
        "password": args.password,
        "credentialsFile": args.credentials_file,
        "keyColumn": args.key_column,
        "payloadColumn": args.payload_column,
        "topicColumn": args.topic_column,
        "metadataColumn": args.metadata_column,
        "priorityColumn": args.priority_column,
        "delayColumn": args.delay_column,
        "batchSize": args.batch_size,
        "inFlight": args.in_flight,
        "retryBudgetSeconds": args.retry_budget_seconds,
        "onInvalid": args.on_invalid,
        "rejectPath": args.reject_path,
        "rejectFormat": args.reject_format,
        "summaryPath": str(summary),
    }
    return {k: str(v) for k, v in chosen.items() if v is not None}


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    # the server and the credentials first: a wrong password is told in a second, not after Spark has started
    try:
        asyncio.run(check_connection(Connection.from_options(options(args, Path("unused")))))
    except OptionError as exc:
        print(f"skiplock enqueue FAILED: {exc}")
        return 1
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession  # noqa: PLC0415 - after the arguments: --help needs no JVM

    from skiplock_client.spark import SkiplockDataSource  # noqa: PLC0415

    builder = SparkSession.builder.appName("skiplock-enqueue")
    if args.master or "SPARK_HOME" not in os.environ:
        builder = builder.master(args.master or "local[*]")
    spark = builder.getOrCreate()
    spark.dataSource.register(SkiplockDataSource)
    reader = spark.read.format(args.format)
    for option in args.read_option:
        name, _, value = option.partition("=")
        reader = reader.option(name, value)
    frame = reader.load(args.input)
    if args.partitions:
        frame = frame.repartition(args.partitions)
    with tempfile.TemporaryDirectory(prefix="skiplock-enqueue-") as folder:
        summary = Path(folder) / "summary.json"
        started = time.monotonic()
        try:
            frame.write.format("skiplock").mode("append").options(**options(args, summary)).save()
        except Exception as exc:
            done = json.loads(summary.read_text()) if summary.exists() else {}
            print(f"skiplock enqueue FAILED after {time.monotonic() - started:.1f} s: {_first_line(exc)}")
            if done:
                print(f"enqueued before the failure: {done['messages']} messages (a re-run sends them again)")
            return 1
        totals = json.loads(summary.read_text())
    seconds = time.monotonic() - started
    print(
        f"skiplock enqueue: {totals['rows']} rows -> {totals['messages']} messages in {totals['batches']} batches, "
        f"{totals['retries']} retries, {totals['rejected']} rejected, {seconds:.1f} s "
        f"({totals['rows'] / seconds if seconds else 0:,.0f} rows/s)"
    )
    return 0


def _first_line(exc: BaseException) -> str:
    """Spark wraps the data source's error in long traces; the line our own error left says what happened."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    ours = [line for line in lines if "skiplock_client." in line and ": " in line and not line.startswith("File ")]
    if ours:
        return ours[-1].split("skiplock_client.", 1)[1]
    errors = [line for line in lines if "Error:" in line and "Traceback" not in line]
    return errors[-1] if errors else (lines[0] if lines else type(exc).__name__)


if __name__ == "__main__":
    sys.exit(main())
