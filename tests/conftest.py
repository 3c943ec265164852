"""Shared fixtures: one local SparkSession for the whole test run (its settings:
tests/support/spark_session.py), and small data helpers.

Every job run without a budget store is recorded in the default ledger, in the user's state
directory (``$XDG_STATE_HOME/spark-dp/ledger.db``): the test session points ``XDG_STATE_HOME``
at a directory of its own, removed at its end, before anything runs (the job processes, the
sweep, the Airflow and Spark Connect suites inherit it), so no test ever writes the
developer's real ``~/.local/state``; ``SPARK_DP_LEDGER`` is unset for the same reason.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest

from tests.support.spark_session import session_builder

# Suites that run in their own pytest process, left out of the main run unless
# SPARK_DP_TEST_SUITE names them: tests/connect (make test-connect: a classic session and a Spark
# Connect client cannot share a process), tests/airflow_run (make airflow-test: the DAG's
# real spark-submits, minutes long) and tests/sweep (make sweep: a few hundred command lines,
# each its own process, minutes long), tests/delta (make test-delta: Delta Lake's jars, on the
# Spark line a Delta release is built for) and tests/graphframes (make test-graphframes: the
# GraphFrames jar of each Spark line).
SEPARATE_SUITES = ("airflow_run", "connect", "delta", "graphframes", "sweep")

STATE_HOME = tempfile.mkdtemp(prefix="spark_dp-test-state-")
os.environ["XDG_STATE_HOME"] = STATE_HOME
os.environ.pop("SPARK_DP_LEDGER", None)
atexit.register(shutil.rmtree, STATE_HOME, True)
collect_ignore = [s for s in SEPARATE_SUITES if os.environ.get("SPARK_DP_TEST_SUITE") != s]


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


def pytest_collection_modifyitems(config, items):
    """Files with a slow test first (make test's worker processes take whole files in this
    order, so the long files start early rather than after the short ones), and with
    SPARK_DP_DRIVER_ONLY=1 (make test-pythons) only the tests that need no Spark session."""
    slow_files = {i.path for i in items if i.get_closest_marker("slow")}
    items.sort(key=lambda i: i.path not in slow_files)  # stable: the order within a file stays
    if os.environ.get("SPARK_DP_DRIVER_ONLY") != "1":
        return
    spark_tests = [i for i in items if "spark" in getattr(i, "fixturenames", ())]
    if spark_tests:
        config.hook.pytest_deselected(items=spark_tests)
        items[:] = [i for i in items if "spark" not in getattr(i, "fixturenames", ())]
