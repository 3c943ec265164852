"""A run interrupted while Spark writes its output leaves no staged directory behind.

The interrupt abandons the write's py4j call, but the write goes on in the JVM: a task that
ends after the staged directory was removed recreates it when it closes its part file and
aborts (an empty ``.<output>.tmp-*/_temporary/0/_temporary`` tree). The run's clean-up
(:func:`spark_dp.jobs.runner._finish`) therefore cancels the session's jobs and waits for their
tasks to end before it removes the staged files (:func:`spark_dp.jobs.signals.
cancel_after_interrupt`). Here the clean-up runs while tasks of a real write are still
running and queued, and the books take a second to close.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from argparse import Namespace
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_dp.io.fs import LocalFS
from spark_dp.io.staging import Staging
from spark_dp.jobs.partition_selection import SPEC
from spark_dp.jobs.run import Run
from spark_dp.jobs.runner import _finish
from spark_dp.jobs.signals import Interrupted

TASK_SECONDS = 0.5
PARTITIONS = 16  # more tasks than the session's 2 cores: new ones start while the write runs


class _SlowBooks:
    """A lease whose books take a second to close (a ledger or budget store on a slow disk):
    the clean-up takes time, while tasks go on starting unless they were cancelled first."""

    def end(self) -> None:
        time.sleep(1.0)


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
    staging = Staging(lambda _p: LocalFS())
    staged = staging.stage("output", str(tmp_path / "out"))

    def slow(x: int) -> int:
        time.sleep(TASK_SECONDS)
        return x

    pause = F.udf(slow, "long")  # each task: one slow row
    rows = spark.range(0, PARTITIONS, numPartitions=PARTITIONS).select(pause("id").alias("id"))

    def write() -> None:  # the call the interrupt abandoned: it fails once its job is cancelled
        try:
            rows.write.parquet(staged)
        except Exception:
            pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    _wait(lambda: (Path(staged) / "_temporary").exists() and _running_tasks(spark) > 0)
    run = Run(SPEC, Namespace(), logging.getLogger("test"))
    run.spark, run.staging, run.failed = spark, staging, Interrupted(signal.SIGINT)
    run.lease = _SlowBooks()
    _finish(run)  # what the runner does on its way out (this session is not the run's: kept)
    writer.join(60)
    _wait(lambda: _running_tasks(spark) == 0 and not writer.is_alive())
    time.sleep(0.5)  # a task's abort, had it come after the clean-up
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert spark.range(3).count() == 3  # the session still works
