"""Shared fixtures: one local SparkSession for the whole test run, and small data helpers.

The session uses local[2], 2 shuffle partitions, no UI, and two test-only speed settings
(serial GC with C1-only JIT, no whole-stage codegen) that roughly halve start-up and per-query
time on tiny data. They are not job defaults.
"""

from __future__ import annotations

import os
import sys

import pytest

# Suites that run in their own pytest process, left out of the main run unless
# SPARK_DP_TEST_SUITE names them: tests/connect (make test-connect: a classic session and a Spark
# Connect client cannot share a process) and tests/airflow_run (make airflow-test: the DAG's
# real spark-submits, minutes long).
SEPARATE_SUITES = ("airflow_run", "connect")
collect_ignore = [s for s in SEPARATE_SUITES if os.environ.get("SPARK_DP_TEST_SUITE") != s]

TEST_SPARK_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.driver.memory": "2g",
}


def session_builder(connect: bool = False):
    """A session builder for local[2] with the test settings (a Spark Connect server started in
    this process when ``connect``), the workers on this interpreter."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    builder = builder.remote("local[2]") if connect else builder.master("local[2]")
    builder = builder.appName("spark_dp-tests")
    for key, value in TEST_SPARK_CONF.items():
        builder = builder.config(key, value)
    return builder


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test run."""
    session = session_builder().getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def pairs_df(spark):
    """Factory: a (user_id, item) DataFrame from a {user: [items]} mapping."""

    def make(sets: dict, user_col: str = "user_id", item_col: str = "item"):
        rows = [(str(u), str(i)) for u, items in sets.items() for i in items]
        return spark.createDataFrame(rows, f"{user_col} string, {item_col} string")

    return make


@pytest.fixture
def incidences_df(spark):
    """Factory: a (record_id, user_id) DataFrame from a {record: [users]} mapping."""

    def make(records: dict, record_col: str = "record_id", user_col: str = "user_id"):
        rows = [(str(r), str(u)) for r, users in records.items() for u in users]
        return spark.createDataFrame(rows, f"{record_col} string, {user_col} string")

    return make


@pytest.fixture
def cache(spark):
    """A :class:`spark_dp.caching.CacheScope` released when the test ends."""
    from spark_dp.caching import CacheScope

    with CacheScope() as scope:
        yield scope
