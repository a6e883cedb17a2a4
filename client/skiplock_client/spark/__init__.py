"""Spark: datasets into Skiplock topics through the REST batch endpoint, and topics back out, as a PySpark 4 Python
data source (`pip install 'skiplock-client[spark]'`). Register it, then use the `skiplock` format:

    from skiplock_client.spark import SkiplockDataSource
    spark.dataSource.register(SkiplockDataSource)
    df.write.format("skiplock").mode("append").option("url", ...).option("topic", "orders").save()

docs/spark.md lists the options; `python -m skiplock_client.spark.enqueue` is a ready job.
"""

from skiplock_client.spark.options import OptionError
from skiplock_client.spark.source import SkiplockDataSource
from skiplock_client.spark.writer import WriteReport

__all__ = ["OptionError", "SkiplockDataSource", "WriteReport"]
