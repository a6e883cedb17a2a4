"""PySpark 4 in local[2] (Java 17), one SparkSession for the whole test session, its Python workers on this
interpreter; the data source registered once."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.servers import ADMIN, Server
from tests.support.tenants import Tenant


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from skiplock_client.spark import SkiplockDataSource

    session = (
        SparkSession.builder.master("local[2]")
        .appName("skiplock-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.dataSource.register(SkiplockDataSource)
    yield session
    session.stop()


@pytest.fixture
def connection(server: Server, tenant: Tenant) -> dict[str, str]:
    """The data source's connection options: the platform admin addressing this test's tenant."""
    return {"url": server.base_url, "username": ADMIN[0], "password": ADMIN[1], "tenant": tenant.slug}
