"""Helpers of the ``spark-submit`` tests (tests/runtime/test_cluster.py,
tests/runtime/test_fault_injection.py).

* :func:`submit_env`: the zip from :mod:`spark_dp.packaging`, the job scripts copied out of the
  checkout, and a bare interpreter that sees spark_dp's dependencies but not spark_dp itself
  (a venv whose ``.pth`` adds this venv's site-packages as a plain path, so the editable
  install's finder never loads): what runs on the cluster must come from the zip.
* :func:`submit`: one ``spark-submit`` of a job, which must exit 0.
* :func:`submit_with_triggers`: the same, streaming the driver's log and calling a function
  when a line matches (fault injection: kill an executor when a stage starts).
* :func:`event_log`: the Spark event log of an application (executors added and removed,
  speculative task attempts, cached blocks stored), written when the submit passes
  :func:`event_log_conf`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spark_dp.packaging import build_zip
from tests.support.standalone_cluster import spark_submit

ROOT = Path(__file__).resolve().parents[2]
_FAST_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"  # test-only start-up savings
SUBMIT_CONF = [
    "--conf",
    f"spark.driver.extraJavaOptions={_FAST_JVM}",
    "--conf",
    f"spark.executor.extraJavaOptions={_FAST_JVM}",
    "--conf",
    "spark.sql.codegen.wholeStage=false",
    "--conf",
    "spark.ui.enabled=false",
    "--conf",
    "spark.sql.shuffle.partitions=4",
    "--conf",
    "spark.executor.memory=640m",
    "--driver-memory",
    "1g",
]


def submit_env(base: Path, jobs: Iterable[str]) -> dict[str, Any]:
    """Zip, job scripts outside the checkout, and an interpreter without spark_dp, in ``base``.

    Returns:
        ``{"base", "zip", "jobs", "env"}``: the directory, the zip's path, the directory of the
        copied job scripts and the environment of a submit (both interpreters: the bare one).
    """
    zip_path = build_zip(base / "spark_dp.zip")
    scripts = base / "jobs"
    scripts.mkdir()
    for name in jobs:
        shutil.copy(ROOT / "jobs" / f"{name}.py", scripts / f"{name}.py")
    bare = base / "bare-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    sp = next((bare / "lib").glob("python*/site-packages"))
    (sp / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    python = str(bare / "bin" / "python")
    probe = subprocess.run(
        [python, "-c", "import pyspark, numpy, scipy; import spark_dp"],
        capture_output=True,
        text=True,
        cwd=base,
    )
    assert "No module named 'spark_dp'" in probe.stderr, probe.stderr
    run_env = dict(
        os.environ, PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=python, SPARK_LOCAL_IP="127.0.0.1"
    )
    run_env.pop("PYTHONPATH", None)
    return {"base": base, "zip": str(zip_path), "jobs": scripts, "env": run_env}


def submit_command(
    env: dict[str, Any], master: str, job: str, args: Sequence[str], conf: Sequence[str] = ()
) -> list[str]:
    """The ``spark-submit`` command line of ``job`` (extra ``--conf`` pairs in ``conf``)."""
    cmd = [spark_submit(), "--master", master, *SUBMIT_CONF, *conf, "--py-files", env["zip"]]
    return [*cmd, str(env["jobs"] / f"{job}.py"), *args]


def submit(
    env: dict[str, Any],
    master: str,
    job: str,
    args: Sequence[str],
    *,
    conf: Sequence[str] = (),
    log_level: str = "WARNING",
) -> str:
    """Run ``job`` under spark-submit; assert exit 0 and return its output (stdout, stderr)."""
    t0 = time.perf_counter()
    cmd = [*submit_command(env, master, job, args, conf), "--log-level", log_level]
    done = subprocess.run(
        cmd, env=env["env"], cwd=env["base"], capture_output=True, text=True, timeout=600
    )
    output = done.stdout + done.stderr  # the Python driver's log is in spark-submit's stdout
    assert done.returncode == 0, f"{job} on {master} failed:\n{output[-4000:]}"
    print(f"spark-submit {job} on {master}: {time.perf_counter() - t0:.1f} s")
    return output


@dataclass
class Triggered:
    """A finished submit with triggers: exit code, output, what each action returned, and the
    seconds the job ran after each one."""

    returncode: int
    output: str
    fired: list[Any] = field(default_factory=list)
    seconds_after: list[float] = field(default_factory=list)
    timed_out: bool = False


def submit_with_triggers(
    env: dict[str, Any],
    master: str,
    job: str,
    args: Sequence[str],
    triggers: Sequence[str],
    action: Callable[[list[str]], Any],
    *,
    conf: Sequence[str] = (),
    timeout: float = 600.0,
) -> Triggered:
    """Run ``job`` at log level INFO, reading its output as it comes; call ``action(lines)``,
    with the lines read so far, on the first line that matches the next regular expression of
    ``triggers`` (each fires once, in order).

    spark-submit merges the Python driver's stderr (spark_dp's log) into its own stdout, so the
    job's stdout and stderr are read as one stream. The submit is stopped (by its pid) if it
    outlives ``timeout`` seconds.
    """
    cmd = [*submit_command(env, master, job, args, conf), "--log-level", "INFO"]
    proc = subprocess.Popen(
        cmd,
        env=env["env"],
        cwd=env["base"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    result = Triggered(returncode=-1, output="")

    def stop() -> None:
        result.timed_out = True
        proc.kill()

    watchdog = threading.Timer(timeout, stop)
    watchdog.start()
    lines: list[str] = []
    pending = [re.compile(t) for t in triggers]
    fired_at: list[float] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if pending and pending[0].search(line):
                pending.pop(0)
                fired_at.append(time.perf_counter())
                result.fired.append(action(lines))
        result.returncode = proc.wait()
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    result.seconds_after = [time.perf_counter() - t for t in fired_at]
    result.output = "".join(lines)
    return result


EVENT_LOG_CONF = (
    "spark.eventLog.enabled=true",
    "spark.eventLog.compress=false",
    "spark.eventLog.logBlockUpdates.enabled=true",  # cached partitions stored (and again)
)


def application_id(lines: Iterable[str]) -> str | None:
    """The standalone application id the driver logged (``app-...``), if it did yet."""
    for line in lines:
        found = re.search(r"app ID (app-[0-9-]+)", line)
        if found:
            return found.group(1)
    return None


def event_log_conf(directory: Path) -> list[str]:
    """``--conf`` pairs that write the application's event log under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    pairs = [*EVENT_LOG_CONF, f"spark.eventLog.dir=file://{directory}"]
    return [token for pair in pairs for token in ("--conf", pair)]


def event_log(directory: Path) -> list[dict[str, Any]]:
    """The events of the applications that logged to ``directory`` (plain or rolling logs)."""
    files = sorted(p for p in directory.rglob("*") if p.is_file() and "events" in p.name)
    files += sorted(p for p in directory.iterdir() if p.is_file() and p.name.startswith("app-"))
    assert files, f"no event log under {directory}"
    return [json.loads(line) for p in files for line in p.read_text().splitlines() if line.strip()]


def events_named(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The events of type ``SparkListener<name>``."""
    return [e for e in events if e.get("Event") == f"SparkListener{name}"]
