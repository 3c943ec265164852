"""A driver killed (SIGKILL) during the write or the commit leaves no release or a complete
one, and the next run on the same target succeeds; contribution bounding resumes its rounds.

Real jobs in subprocesses, killed at a chosen moment of their commit by the moment callback of
:func:`tests.support.job_processes.at_moment`: everything staged and nothing moved (commit step 0),
right after the commit journal appeared (4), and after the output was moved into place but
before the report (7).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.job_processes import FAST, at_moment, job_env

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def _run(job: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "jobs" / f"{job}.py"), *args, *FAST],
        cwd=cwd,
        env=job_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )


def _spawn(cmd: list[str], cwd: Path) -> subprocess.Popen[str]:
    """A job process in a session of its own (the JVM dies with the driver's process group)."""
    return subprocess.Popen(
        cmd,
        cwd=cwd,
        env=job_env(),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )


def _killed_at(command: str, args: list[str], cwd: Path, step: int) -> None:
    """Run the job, SIGKILLed (by itself) after change ``step`` of its commit; the JVM of its
    process group after it."""
    proc = _spawn(at_moment(f"KILL@commit {step}", command, *args, *FAST), cwd)
    try:
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == -signal.SIGKILL, err[-3000:]
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _kill_when(job: str, args: list[str], cwd: Path, moment: Callable[[], bool]) -> None:
    """Start the job, SIGKILL it (and its JVM) as soon as ``moment()`` holds."""
    proc = _spawn([sys.executable, str(ROOT / "jobs" / f"{job}.py"), *args, *FAST], cwd)
    deadline = time.monotonic() + 900
    try:
        while not moment():
            assert proc.poll() is None, f"the job ended before the moment: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "the moment never came"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _hidden(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith("."))


def _release(
    root: Path, name: str, rows: Callable[[dict], int], report_name: str = "report.json"
) -> dict | None:
    """The release at ``name``: None without a report; with one, its output must match it."""
    report = root / f"{name}.{report_name}"
    if not report.exists():
        return None
    doc = json.loads(report.read_text())
    assert pq.read_table(root / name).num_rows == rows(doc)
    return doc


def _items(doc: dict) -> int:
    return int(doc["outputs"]["output_items"])


def test_partition_selection_killed_at_every_moment(tmp_path: Path) -> None:
    users = [f"u{i}" for i in range(400) for _ in range(3)]
    items = [f"w{(i * 7 + k) % 40}" for i in range(400) for k in range(3)]
    pq.write_table(pa.table({"user_id": users, "item": items}), tmp_path / "words.parquet")
    before = (tmp_path / "words.parquet").read_bytes()
    args = ["--input", "words.parquet", "--output", "out", "--epsilon", "2", "--overwrite"]

    first = _run("partition_selection", [*args, "--seed", "1"], tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    old = _release(tmp_path, "out", _items)
    assert old is not None
    # everything staged, nothing moved; the journal written; the output moved in, not the report
    for k, step in enumerate((0, 4, 7)):
        _killed_at("partition-selection", [*args, "--seed", str(k + 2)], tmp_path, step)
        if step == 4:
            assert (tmp_path / ".out.report.json.journal").exists()
        left = _release(tmp_path, "out", _items)  # no report, or a complete release
        assert left is None or left["release"]["id"] == old["release"]["id"], k
        assert (tmp_path / "words.parquet").read_bytes() == before
    final = _run("partition_selection", [*args, "--seed", "9"], tmp_path)
    assert final.returncode == 0, final.stderr[-3000:]
    assert "the commit of an interrupted run" in final.stderr  # recovered, then ran
    new = _release(tmp_path, "out", _items)
    assert new is not None and new["release"]["id"] != old["release"]["id"]
    assert _hidden(tmp_path) == []
    assert (tmp_path / "words.parquet").read_bytes() == before


def test_contribution_bounding_resumes_after_a_kill(tmp_path: Path) -> None:
    records = [f"r{i}" for i in range(3000) for _ in range(2)]
    owners = [f"u{(i * 13 + k * 7) % 700}" for i in range(3000) for k in range(2)]
    pq.write_table(pa.table({"record_id": records, "user_id": owners}), tmp_path / "graph.parquet")
    args = [
        *("--input", "graph.parquet", "--output", "out", "--max-contributions", "2"),
        *("--seed", "4", "--driver-threshold-rows", "0", "--order", "hash"),
    ]
    work = tmp_path / "out_work"

    def some_round_saved() -> bool:  # os.walk skips directories that vanish while it looks
        return (work / "meta.json").exists() and any("round-0001" in d for d, _, _ in os.walk(work))

    _kill_when("contribution_bounding", args, tmp_path, some_round_saved)
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "out.report.confidential.json").exists()
    assert (work / "meta.json").exists()
    again = _run("contribution_bounding", args, tmp_path)  # no --overwrite: resumes
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resuming" in again.stderr
    rows = lambda d: int(d["outputs"]["selected"]["rows"])
    doc = _release(tmp_path, "out", rows, "report.confidential.json")
    assert doc is not None and doc["selected"] > 0
    assert not work.exists() and _hidden(tmp_path) == []
    assert pq.read_table(tmp_path / "out_user_state").num_rows == 700


def test_a_later_release_to_the_same_output_survives_the_re_run(tmp_path: Path) -> None:
    """Issue 39: a run with --overwrite killed during its commit (its output moved in, the old
    report moved aside); a release with another --report and --overwrite; a plain re-run. The
    re-run must not delete the later release's output or put an old report back. Issue 44: the
    later release replaces the output and its report together: the old out.report.json, which
    described the output it replaced, leaves with it (no report beside an output it does not
    describe)."""
    users = [f"u{i}" for i in range(400) for _ in range(3)]
    items = [f"w{(i * 7 + k) % 40}" for i in range(400) for k in range(3)]
    pq.write_table(pa.table({"user_id": users, "item": items}), tmp_path / "words.parquet")
    args = ["--input", "words.parquet", "--output", "out", "--epsilon", "2"]
    assert _run("partition_selection", [*args, "--seed", "1"], tmp_path).returncode == 0
    _killed_at("partition-selection", [*args, "--seed", "2", "--overwrite"], tmp_path, 7)
    assert (tmp_path / ".out.report.json.journal").exists()  # killed mid-commit
    later = _run(
        "partition_selection",
        [*args, "--seed", "3", "--report", "other.json", "--overwrite"],
        tmp_path,
    )
    assert later.returncode == 0, later.stderr[-3000:]
    assert "restored" in later.stderr and "rolled back" in later.stderr  # logged as it happened
    assert not (tmp_path / "out.report.json").exists()  # left with the output it described
    assert "out.report.json describes the output this run replaces" in later.stderr
    doc = json.loads((tmp_path / "other.json").read_text())
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    again = _run("partition_selection", [*args, "--seed", "1"], tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr
    assert json.loads((tmp_path / "other.json").read_text()) == doc
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == files
    assert pq.read_table(tmp_path / "out").num_rows == _items(doc)
    assert _hidden(tmp_path) == []


def test_sigterm_removes_the_staged_files_and_exits_143(tmp_path: Path) -> None:
    """Issue 39: SIGTERM from outside (a scheduler stopping the task) while Spark works: one
    line, exit code 143, nothing left behind."""
    users = [f"u{i}" for i in range(400) for _ in range(3)]
    items = [f"w{(i * 7 + k) % 40}" for i in range(400) for k in range(3)]
    pq.write_table(pa.table({"user_id": users, "item": items}), tmp_path / "words.parquet")
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "jobs" / "partition_selection.py"), "--input",
         "words.parquet", "--output", "out", "--epsilon", "2", *FAST],
        cwd=tmp_path, env=job_env(), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "stage write output: started" in line:
            proc.send_signal(signal.SIGTERM)
            break
    rest = proc.stderr.read()
    assert proc.wait(timeout=300) == 143, "".join(seen) + rest
    lines = [x for x in rest.splitlines() if x.strip() and not re.match(r"\d\d:\d\d:\d\d ", x)]
    assert lines == [
        "spark-dp partition-selection: error: interrupted by SIGTERM: staged files removed"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["words.parquet"]
