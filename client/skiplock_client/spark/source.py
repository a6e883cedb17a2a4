"""`SkiplockDataSource`: the `skiplock` format for `spark.read`, `df.write` and `df.writeStream`.

Planned on the driver: the options are read and checked, the columns matched against the DataFrame's schema and
the credentials tried (`GET /api/auth/me`) before any task runs, so a typo or a wrong password fails the job at
once with a sentence that says which.
"""

from __future__ import annotations

import asyncio

from pyspark.sql.datasource import DataSource, DataSourceReader
from pyspark.sql.types import StructType

from skiplock_client.spark.columns import Columns
from skiplock_client.spark.history import HISTORY_SCHEMA, FilteringHistoryReader, HistoryReader
from skiplock_client.spark.options import OptionError, ReadOptions, WriteOptions, check_connection
from skiplock_client.spark.reader import SCHEMA, FilteringReader, SkiplockReader
from skiplock_client.spark.writer import SkiplockStreamWriter, SkiplockWriter


class SkiplockDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "skiplock"

    def schema(self) -> str:
        return HISTORY_SCHEMA if self.options.get("history", "false").lower() == "true" else SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        options = ReadOptions.from_options(self.options)
        asyncio.run(check_connection(options.connection))
        if options.history:
            return FilteringHistoryReader(options) if options.push_filters else HistoryReader(options)
        return FilteringReader(options) if options.push_filters else SkiplockReader(options)

    def writer(self, schema: StructType, overwrite: bool) -> SkiplockWriter:
        return SkiplockWriter(*self._planned(schema, overwrite))

    def streamWriter(self, schema: StructType, overwrite: bool) -> SkiplockStreamWriter:  # noqa: N802 - Spark's name
        return SkiplockStreamWriter(*self._planned(schema, overwrite))

    def _planned(self, schema: StructType, overwrite: bool) -> tuple[WriteOptions, Columns]:
        if overwrite:
            raise OptionError(
                "Skiplock takes mode('append') only: messages are added to a topic, never replaced (purge a topic "
                "through the API to empty it)"
            )
        options = WriteOptions.from_options(self.options)
        columns = Columns.checked(schema, options)
        asyncio.run(check_connection(options.connection))
        return options, columns
