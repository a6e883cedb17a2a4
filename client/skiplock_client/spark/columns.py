"""Which columns become what: the payload (a binary or string column, or the whole row as JSON), and the optional
key, topic, metadata, priority and delay columns. Checked against the DataFrame's schema on the driver, before any
task runs; applied to Arrow record batches on the executors, a column at a time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from skiplock_client.models import EnqueueBody
from skiplock_client.spark.options import OptionError, WriteOptions

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

_INTEGRAL = ("ByteType", "ShortType", "IntegerType", "LongType")
_NUMERIC = (*_INTEGRAL, "FloatType", "DoubleType", "DecimalType")
#: option -> (the Spark types its column may have, what it holds)
_ALLOWED = {
    "payloadColumn": (("BinaryType", "StringType"), "the payload: binary, or a string sent as UTF-8"),
    "keyColumn": (("StringType", *_INTEGRAL), "the upsert key: a string or a whole number"),
    "topicColumn": (("StringType",), "each row's topic: a string"),
    "metadataColumn": (("MapType", "StructType"), "the metadata: a map or a struct"),
    "priorityColumn": (_INTEGRAL, "the priority: a whole number 0..9"),
    "delayColumn": (_NUMERIC, "the delay in seconds: a number"),
}


def _encode_default(value: Any) -> Any:
    return str(value)  # anything msgspec cannot encode by itself (e.g. an interval) goes as its text


_JSON = msgspec.json.Encoder(enc_hook=_encode_default)


@dataclass(frozen=True)
class Columns:
    payload: str | None
    key: str | None
    topic: str | None
    metadata: str | None
    priority: str | None
    delay: str | None
    #: Map columns: Arrow gives their values as (key, value) pairs, which the whole-row JSON turns into objects.
    maps: tuple[str, ...] = ()

    @classmethod
    def checked(cls, schema: StructType, options: WriteOptions) -> Columns:
        """The mapping, or OptionError naming the column that is missing or of the wrong type."""
        fields = {f.name: type(f.dataType).__name__ for f in schema.fields}
        chosen = {
            "payloadColumn": options.payload_column,
            "keyColumn": options.key_column,
            "topicColumn": options.topic_column,
            "metadataColumn": options.metadata_column,
            "priorityColumn": options.priority_column,
            "delayColumn": options.delay_column,
        }
        for option, column in chosen.items():
            if column is None:
                continue
            if column not in fields:
                raise OptionError(f"{option}: no column {column!r} (the columns are {', '.join(fields)})")
            allowed, meaning = _ALLOWED[option]
            if fields[column] not in allowed:
                raise OptionError(
                    f"{option}: column {column!r} is {fields[column]}, but it must hold {meaning} "
                    f"({', '.join(allowed)})"
                )
        return cls(
            options.payload_column,
            options.key_column,
            options.topic_column,
            options.metadata_column,
            options.priority_column,
            options.delay_column,
            tuple(name for name, kind in fields.items() if kind == "MapType"),
        )

    def items(self, batch: pa.RecordBatch) -> tuple[list[EnqueueBody], list[dict[str, Any]] | None]:
        """The batch's rows as messages, in order; and the rows as dicts when the payload is the whole row (kept for
        a reject sink)."""
        rows: list[dict[str, Any]] | None = None
        if self.payload is None:
            rows = batch.to_pylist()
            for row in rows:
                for name in self.maps:
                    row[name] = _metadata(row[name])
            payloads = [_JSON.encode(row) for row in rows]
        else:
            payloads = [p.encode() if isinstance(p, str) else p for p in _column(batch, self.payload)]
        if not (self.key or self.topic or self.metadata or self.priority or self.delay):  # the common case, fast
            return [EnqueueBody(p if p is not None else b"") for p in payloads], rows
        n = len(payloads)
        keys = [None if k is None else str(k) for k in _column(batch, self.key)] if self.key else [None] * n
        topics = _column(batch, self.topic) if self.topic else [None] * n
        metadata = [_metadata(m) for m in _column(batch, self.metadata)] if self.metadata else [None] * n
        priorities = _column(batch, self.priority) if self.priority else [0] * n
        delays = _column(batch, self.delay) if self.delay else [0] * n
        return [
            EnqueueBody(
                payload=payload if payload is not None else b"",
                topic=topic,
                metadata=meta,
                key=key,
                delay_seconds=float(delay or 0),
                priority=priority or 0,
            )
            for payload, topic, meta, key, priority, delay in zip(
                payloads, topics, metadata, keys, priorities, delays, strict=True
            )
        ], rows


def _column(batch: pa.RecordBatch, name: str) -> list[Any]:
    values: list[Any] = batch.column(batch.schema.get_field_index(name)).to_pylist()
    return values


def _metadata(value: Any) -> dict[str, Any] | None:
    """A map column comes from Arrow as (key, value) pairs, a struct as a dict."""
    if value is None:
        return None
    return dict(value) if isinstance(value, list) else value


def row_json(row: dict[str, Any]) -> str:
    return _JSON.encode(row).decode()
