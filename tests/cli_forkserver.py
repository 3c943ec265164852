"""Run many ``spark-dp`` command lines, each in its own process, without paying the imports.

``python -m tests.cli_forkserver < cases.json > results.json``: this process imports the
``spark-dp`` command and every job module once, then forks one child per case. The child
changes to the case's directory, points its stdout and stderr (file descriptors 1 and 2, so
anything a JVM would print is caught too) at files, and runs the command line exactly as the
console script does: ``sys.exit(spark_dp.cli.main(argv))``, or a ``jobs/<name>.py`` script as
``__main__``. The parent records each child's real exit status and output.

A case: ``{"id", "argv", "cwd", "script"?, "env"?}``. A result: ``{"id", "code", "stdout",
"stderr"}``. Cases run ``PARALLEL`` at a time.
"""

from __future__ import annotations

import importlib
import json
import os
import runpy
import sys
import tempfile
from typing import Any

PARALLEL = 4


def _child(case: dict[str, Any], out: str, err: str) -> None:
    os.chdir(case["cwd"])
    os.environ.update(case.get("env") or {})
    for fd, path in ((1, out), (2, err)):
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(handle, fd)
        os.close(handle)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    code = 1
    try:
        if case.get("script"):
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
        os._exit(int(code))


def run_cases(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run every case in a forked child (``PARALLEL`` at a time); return their results."""
    import spark_dp.cli  # noqa: F401  (imported once, inherited by every child)

    for job in ("generate", "partition_selection", "contribution_bounding", "distinct_count"):
        importlib.import_module(f"spark_dp.jobs.{job}")
    tmp = tempfile.mkdtemp(prefix="spark_dp-forkserver-")
    running: dict[int, tuple[dict[str, Any], str, str]] = {}
    results: list[dict[str, Any]] = []
    queue = list(cases)
    while queue or running:
        while queue and len(running) < PARALLEL:
            case = queue.pop(0)
            out, err = (os.path.join(tmp, f"{case['id']}.{s}") for s in ("out", "err"))
            pid = os.fork()
            if pid == 0:
                _child(case, out, err)
            running[pid] = (case, out, err)
        pid, status = os.wait()
        case, out, err = running.pop(pid)
        with open(out, encoding="utf-8", errors="replace") as fo:
            stdout = fo.read()
        with open(err, encoding="utf-8", errors="replace") as fe:
            stderr = fe.read()
        results.append(
            {"id": case["id"], "code": os.waitstatus_to_exitcode(status), "stdout": stdout,
             "stderr": stderr}
        )  # fmt: skip
    return results


def run_in_server(cases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Run ``cases`` in a fresh fork server process (a test's own imports stay out of the
    children); the results by case id."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-m", "tests.cli_forkserver"],
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
    json.dump(run_cases(json.load(sys.stdin)), sys.stdout)
