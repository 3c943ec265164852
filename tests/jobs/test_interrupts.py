"""A run interrupted while Spark writes its output leaves no staged directory behind.

The interrupt abandons the write's py4j call, but the write goes on in the JVM: a task that
ends after the staged directory was removed recreates it when it closes its part file and
aborts (an empty ``.<output>.tmp-*/_temporary/0/_temporary`` tree). The run's clean-up
(:func:`spark_dp.jobs.run_session.open_staging`) therefore cancels the session's jobs and waits for
their tasks to end before it removes the staged files (:func:`spark_dp.jobs.signals.
cancel_after_interrupt`). Here the clean-up runs while tasks of a real write are still
running and queued, and the books then take a second to close.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_dp.io.paths import PathPlan
from spark_dp.jobs.run_session import RunSession, open_staging
from spark_dp.jobs.signals import Interrupted
from spark_dp.jobs.spec import RunHooks

TASK_SECONDS = 0.5
PARTITIONS = 16  # more tasks than the session's 2 cores: new ones start while the write runs


def _running_tasks(spark: SparkSession) -> int:
    infos = spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()
    return sum(e.numRunningTasks() for e in infos)


def _wait(condition: Callable[[], bool], seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_an_interrupt_during_the_write_leaves_no_staged_directory(
    spark: SparkSession, tmp_path: Path
) -> None:
    session = RunSession("partition_selection", {})  # the test's session: not the run's

    def slow(x: int) -> int:
        time.sleep(TASK_SECONDS)
        return x

    pause = F.udf(slow, "long")  # each task: one slow row
    rows = spark.range(0, PARTITIONS, numPartitions=PARTITIONS).select(pause("id").alias("id"))
    writers: list[threading.Thread] = []
    with pytest.raises(Interrupted), session:  # what the runner's line does on its way out
        with open_staging(
            session, PathPlan([]), overwrite=False, spark_conf={}, hooks=RunHooks()
        ) as staging:
            staged = staging.stage("output", str(tmp_path / "out"))

            def write() -> None:  # the call the interrupt abandoned: it fails once cancelled
                try:
                    rows.write.parquet(staged)
                except Exception:
                    pass

            writers.append(threading.Thread(target=write, daemon=True))
            writers[0].start()
            _wait(lambda: (Path(staged) / "_temporary").exists() and _running_tasks(spark) > 0)
            raise Interrupted(signal.SIGINT)
    time.sleep(1.0)  # the books closing (a slow disk): tasks not cancelled would go on
    writers[0].join(60)
    _wait(lambda: _running_tasks(spark) == 0 and not writers[0].is_alive())
    time.sleep(0.5)  # a task's abort, had it come after the clean-up
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert spark.range(3).count() == 3  # the session still works
