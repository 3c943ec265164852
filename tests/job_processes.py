"""Jobs run as real processes in tests that kill them: the quick Spark settings and the
environment (tests/test_commit_kill.py, tests/test_budget_kills.py).

``SPARK_DP_TEST_COMMIT_DELAY`` slows each commit step to the given seconds, so that a test can
kill the driver at a chosen moment of the write.
"""

from __future__ import annotations

import os
import sys

__all__ = ["FAST", "job_env"]

FAST = [
    "--master", "local[2]",
    "--spark-conf", "spark.ui.enabled=false",
    "--spark-conf", "spark.sql.shuffle.partitions=2",
    "--spark-conf", "spark.sql.codegen.wholeStage=false",
    "--spark-conf", "spark.driver.extraJavaOptions=-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
]  # fmt: skip
"""Settings that roughly halve a small job's start-up and per-query time."""


def job_env(delay: float | None = None) -> dict[str, str]:
    """The job's environment: this interpreter for the workers; slow commit steps if ``delay``."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    env.pop("SPARK_DP_TEST_COMMIT_DELAY", None)
    if delay is not None:
        env["SPARK_DP_TEST_COMMIT_DELAY"] = str(delay)
    return env
