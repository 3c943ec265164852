"""Fixtures of the contribution-bounding tests.

``aqe_off``: adaptive query execution re-plans every shuffle stage of a query, which costs a
Spark job per stage; on the tiny test tables that is most of the run time (measured ≈ 30%).
Modules that run many small queries opt in with ``pytestmark``. The plans are the same
logical plans; AQE-specific behaviour (coalesced partitions under the global rank) stays
covered by test_orders.py, which keeps the session's setting, and by the benchmarks, which
run the job with AQE on and check the result against the sequential greedy.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession


@pytest.fixture
def aqe_off(spark: SparkSession) -> Iterator[SparkSession]:
    """Run the test with ``spark.sql.adaptive.enabled=false``, then restore the setting."""
    old = spark.conf.get("spark.sql.adaptive.enabled")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    yield spark
    spark.conf.set("spark.sql.adaptive.enabled", old)
