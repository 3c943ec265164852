"""Run many ``spark-dp`` command lines, each in its own process, without paying the imports.

``python -m tests.support.cli_forkserver < cases.json > results.json``: this process imports the
``spark-dp`` command and every job module once, then forks one child per case. The child
changes to the case's directory, points its stdout and stderr (file descriptors 1 and 2, so
anything a JVM would print is caught too) at files, and runs the command line exactly as the
console script does: ``sys.exit(spark_dp.cli.main(argv))``, or a ``jobs/<name>.py`` script as
``__main__``. The parent records each child's real exit status and output.

A case: ``{"id", "argv", "cwd", "script"?, "env"?, "copy_from"?}``, or ``{"id", "cwd",
"steps": [{"argv", "env"?}, ...]}`` whose steps run one after the other in the same directory
(``copy_from``: a directory copied to ``cwd`` first). An ``env`` entry :data:`MOMENT` is no
environment variable: the job command then runs with the moment callback it names
(``KILL@3``, ``TERM@staged``: :func:`tests.support.job_processes.moment_callback`). A result:
``{"id", "code", "stdout", "stderr", "seconds", "files"}`` (``files``: what is in ``cwd``
afterwards, see :func:`tests.sweep.workspace.snapshot`); a case with steps: ``{"id", "steps":
[results]}``. Cases run ``PARALLEL`` at a time.

``--spark`` (the Spark cases of the sweep, ``tests/sweep``): the server first starts one local
SparkSession (as a job would, :func:`spark_dp.session.get_session`), then forks the children
one at a time: each opens its own py4j connection to that JVM (a child killed in the middle of
a call leaves the parent's connection intact) and makes the session its active one, so the job
reuses it instead of starting a JVM (seconds per case instead of ten). What the JVM itself logs
goes to the server's stderr, not the child's.
"""

from __future__ import annotations

import importlib
import json
import os
import runpy
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

MOMENT = "moment"
"""The key of a case's ``env`` that names a moment callback instead of a variable."""
PARALLEL = 4
TIMEOUT = 600.0  # seconds a child may run before it is killed (its code is then -9)
SPARK_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
    "spark.sql.codegen.wholeStage": "false",
    "spark.driver.memory": "1g",
}


def _own_connection() -> None:
    """In a child of a ``--spark`` server: a py4j connection of its own, the session active."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    client: Any = SparkContext._gateway._gateway_client  # type: ignore[union-attr]
    client.thread_connection = threading.local()  # the parent's stays open, unused here
    spark = SparkSession._instantiatedSession
    assert spark is not None
    spark._jvm.SparkSession.setActiveSession(spark._jsparkSession)
    spark._jvm.SparkSession.setDefaultSession(spark._jsparkSession)


def _run(case: dict[str, Any], out: str, err: str, warm: bool) -> int:
    for fd, path in ((1, out), (2, err)):
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(handle, fd)
        os.close(handle)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    code = 1
    try:
        os.chdir(case["cwd"])
        env = dict(case.get("env") or {})
        moment = env.pop(MOMENT, None)
        os.environ.update(env)
        if warm:
            _own_connection()
        if moment is not None:
            code = _at_moment(case["argv"], moment)
        elif case.get("script"):
            sys.argv = [case["script"], *case["argv"]]
            runpy.run_path(case["script"], run_name="__main__")
            code = 0
        else:
            from spark_dp.cli import main

            sys.argv = ["spark-dp", *case["argv"]]
            code = main(case["argv"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return int(code)


def _at_moment(argv: list[str], moment: str) -> int:
    """``spark-dp argv`` (a job command) with the moment callback ``moment``."""
    from spark_dp.cli import JOBS
    from spark_dp.jobs.runner import RunHooks, run_job
    from tests.support.job_processes import moment_callback

    job = importlib.import_module(f"spark_dp.jobs.{JOBS[argv[0]][0]}")
    return run_job(job.SPEC, argv[1:], hooks=RunHooks(moments=moment_callback(moment)))


def _start(case: dict[str, Any], tmp: str, warm: bool) -> tuple[int, str, str]:
    out, err = (os.path.join(tmp, f"{case['id']}.{s}") for s in ("out", "err"))
    pid = os.fork()
    if pid == 0:
        os._exit(_run(case, out, err, warm))
    return pid, out, err


def _result(
    case: dict[str, Any], status: int, out: str, err: str, seconds: float
) -> dict[str, Any]:
    from tests.sweep.workspace import snapshot

    with open(out, encoding="utf-8", errors="replace") as fo:
        stdout = fo.read()
    with open(err, encoding="utf-8", errors="replace") as fe:
        stderr = fe.read()
    code = os.waitstatus_to_exitcode(status)
    return {
        "id": case["id"],
        "code": code,
        "stdout": stdout,
        "stderr": stderr,
        "seconds": round(seconds, 2),
        "files": snapshot(Path(case["cwd"])),
    }


def _wait(pid: int) -> int:
    """The status of child ``pid``, killed after :data:`TIMEOUT` seconds."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


def _sequential(cases: list[dict[str, Any]], tmp: str, warm: bool) -> list[dict[str, Any]]:
    results = []
    for case in cases:
        if case.get("copy_from"):
            shutil.copytree(case["copy_from"], case["cwd"], symlinks=True)
        steps = case.get("steps")
        done = []
        for k, step in enumerate(steps or [case]):
            one = {**case, **step, "id": f"{case['id']}.{k}" if steps else case["id"]}
            t0 = time.monotonic()
            pid, out, err = _start(one, tmp, warm)
            done.append(_result(one, _wait(pid), out, err, time.monotonic() - t0))
        results.append({"id": case["id"], "steps": done} if steps else done[0])
    return results


def run_cases(cases: list[dict[str, Any]], *, spark: bool = False) -> list[dict[str, Any]]:
    """Run every case in a forked child; return their results.

    Args:
        cases: see the module docstring.
        spark: start one SparkSession first and run the cases one at a time on it.
    """
    import spark_dp.cli  # noqa: F401  (imported once, inherited by every child)

    for job in ("generate", "partition_selection", "contribution_bounding", "distinct_count"):
        importlib.import_module(f"spark_dp.jobs.{job}")
    tmp = tempfile.mkdtemp(prefix="spark_dp-forkserver-")
    if spark or any("steps" in c for c in cases):
        if spark:
            from spark_dp.session import get_session

            get_session("spark_dp.sweep", SPARK_CONF, master="local[2]", log_level="ERROR")
        return _sequential(cases, tmp, spark)
    running: dict[int, tuple[dict[str, Any], str, str, float]] = {}
    results: list[dict[str, Any]] = []
    queue = list(cases)
    while queue or running:
        while queue and len(running) < PARALLEL:
            case = queue.pop(0)
            pid, out, err = _start(case, tmp, False)
            running[pid] = (case, out, err, time.monotonic())
        pid, status = os.wait()
        case, out, err, t0 = running.pop(pid)
        results.append(_result(case, status, out, err, time.monotonic() - t0))
    return results


def serve(
    cases: list[dict[str, Any]], *, spark: bool = False, timeout: float = 1800
) -> list[dict[str, Any]]:
    """Run ``cases`` in a fresh server process (``python -m tests.support.cli_forkserver``): their
    results. The server must end cleanly."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.cli_forkserver", *(["--spark"] if spark else [])],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        cwd=root,
        timeout=timeout,
        env=dict(os.environ, PYTHONPATH=str(root)),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results: list[dict[str, Any]] = json.loads(done.stdout)
    return results


def run_in_server(cases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Run ``cases`` in a fresh fork server process (a test's own imports stay out of the
    children); the results by case id."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.cli_forkserver"],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        cwd=root,
        timeout=600,
        env=dict(os.environ, PYTHONPATH=str(root)),
    )
    if done.returncode != 0:
        raise RuntimeError(f"the fork server failed: {done.stderr[-3000:]}")
    return {r["id"]: r for r in json.loads(done.stdout)}


if __name__ == "__main__":
    json.dump(run_cases(json.load(sys.stdin), spark="--spark" in sys.argv), sys.stdout)
