"""The test SparkSession's settings and builder (tests/conftest.py and tests/connect use them).

The session uses local[2], 2 shuffle partitions, no UI, and two test-only speed settings
(serial GC with C1-only JIT, no whole-stage codegen) that roughly halve start-up and per-query
time on tiny data. They are not job defaults.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from spark_dp.session import with_log4j2_config

TEST_SPARK_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # spark_dp's log4j2 configuration, as jobs use it: the bad-input tests check stderr
    "spark.driver.extraJavaOptions": with_log4j2_config("-XX:+UseSerialGC -XX:TieredStopAtLevel=1"),
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.driver.memory": "2g",
}


DELTA_JARS_ENV = "SPARK_DP_DELTA_JARS"
"""Comma-separated Delta Lake jars (``make test-delta`` fetches them into ``.cache/jars``): the
Delta suite's session starts with them and Delta's extension and catalog."""

DELTA_TEST_CONF = {"spark.databricks.delta.snapshotPartitions": "2"}
"""A test-only speed setting of the Delta suite's sessions and jobs: Delta rebuilds a table's
snapshot in 50 partitions by default, which on local[2] and tables of a few hundred rows makes
each read or write of a Delta table several times slower (not a job default: a real table's
log wants Delta's own)."""


GRAPHFRAMES_JAR_ENV = "SPARK_DP_GRAPHFRAMES_JAR"
"""The GraphFrames jar of this Spark line (``make test-graphframes`` copies it into
``.cache/jars``): the GraphFrames suite's session starts with it."""


def session_builder(connect: bool = False) -> Any:
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
    jars = [os.environ.get(k, "") for k in (DELTA_JARS_ENV, GRAPHFRAMES_JAR_ENV)]
    if any(jars):
        builder = builder.config("spark.jars", ",".join(j for j in jars if j))
    if os.environ.get(DELTA_JARS_ENV):
        from spark_dp.io.delta import DELTA_SESSION_CONF

        for key, value in {**DELTA_SESSION_CONF, **DELTA_TEST_CONF}.items():
            builder = builder.config(key, value)
    return builder
