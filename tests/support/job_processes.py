"""Jobs run as real processes in tests that kill them: the quick Spark settings, the
environment, and a job held at a moment of its run (tests/jobs/test_kill_during_commit.py,
tests/budget/test_kills.py, the sweep, the Delta suite).

A job's moments (``run_job(..., hooks=RunHooks(moments=f))``, :mod:`spark_dp.jobs.runner`)
are reached
from a process through :func:`at_moment`: a tiny ``python -c`` wrapper that runs the
``spark-dp`` command with a callback that, at the named moment, sends the process a signal
(``KILL@commit 3``, ``TERM@staged``) or writes a file and waits there until it is killed
(``HOLD@charged``, the file ``<cwd>/.held``), so a test acts on a run held in a window of its
choice. Nothing in the environment changes a job's behaviour.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["FAST", "HELD", "at_moment", "job_env", "moment_callback"]

ROOT = Path(__file__).resolve().parents[2]

FAST = [
    "--master", "local[2]",
    "--spark-conf", "spark.ui.enabled=false",
    "--spark-conf", "spark.sql.shuffle.partitions=2",
    "--spark-conf", "spark.sql.codegen.wholeStage=false",
    "--spark-conf", "spark.driver.extraJavaOptions=-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
]  # fmt: skip
"""Settings that roughly halve a small job's start-up and per-query time."""

HELD = ".held"
"""The file a ``HOLD@moment`` run writes in its working directory once it is held."""

_WRAPPER = """
import sys
from tests.support.job_processes import moment_callback
from spark_dp.cli import JOBS
from spark_dp.jobs.runner import RunHooks
from spark_dp.jobs.runner import run_job
import importlib
job = importlib.import_module("spark_dp.jobs." + JOBS[sys.argv[2]][0])
sys.exit(run_job(job.SPEC, sys.argv[3:], hooks=RunHooks(moments=moment_callback(sys.argv[1]))))
"""


def moment_callback(spec: str):
    """The callback of ``SIG@moment`` (a signal to this process at that moment, its name as
    the runner says it: ``charged``, ``staged``, ``commit 3``; a bare number is a commit step)
    or ``HOLD@moment`` (write :data:`HELD`, then wait to be killed)."""
    import signal
    import time

    action, _, at = spec.partition("@")
    at = f"commit {at}" if at.isdigit() else at

    def moment(name: str) -> None:
        if name != at:
            return
        if action == "HOLD":
            Path(HELD).write_text(str(os.getpid()), encoding="utf-8")
            while True:
                time.sleep(1)
        os.kill(os.getpid(), getattr(signal, f"SIG{action}"))

    return moment


def at_moment(spec: str, command: str, *argv: str) -> list[str]:
    """The command line of ``spark-dp <command> argv`` run with :func:`moment_callback`
    (``spec``), for ``subprocess`` (with :func:`job_env`, which puts this checkout first)."""
    return [sys.executable, "-c", _WRAPPER, spec, command, *argv]


def job_env() -> dict[str, str]:
    """The job's environment: this interpreter for the workers, this checkout importable (the
    wrapper of :func:`at_moment` imports this module)."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return dict(
        os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=path
    )
