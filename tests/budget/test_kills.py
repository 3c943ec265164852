"""Kills and the budget (issues 34, 44): real jobs in subprocesses against a real SQLite store,
each held or killed at a moment of its run by the runner's moment callback
(:func:`tests.support.job_processes.at_moment`: ``KILL@charged``, ``HOLD@charged``, ...).

* a run killed before it reads data is charged nothing;
* one killed after its charge and before it recorded its release id drew nothing: its retry
  takes the charge over;
* one killed with a complete release staged (read from the staging by whoever can), its CSV
  input then rewritten with the same name, size and modification time: its retry is a second
  charge, refused over the cap (before, it "took over the charge" and released again);
* two processes of one request at once: the second is refused with one line;
* a kill (SIGINT, SIGTERM, SIGKILL) with the outputs staged stays charged.

Signals go to the driver only (as a scheduler sends them, or the callback to its own process);
the JVM is killed with the process group afterwards.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from spark_dp.budget import BudgetStore
from spark_dp.randomness.key_file import write_key_file
from tests.support.job_processes import FAST, HELD, at_moment, job_env

pytestmark = pytest.mark.slow  # seven job processes

EPSILON = 1.0


def _csv(path: Path, shift: int) -> None:
    """600 users with 3 of 20 items each; ``shift`` moves every item (same size)."""
    rows = [f"u{u:03d},w{(u * shift + k) % 20:02d}" for u in range(600) for k in range(3)]
    path.write_text("user_id,item\n" + "\n".join(rows) + "\n", encoding="utf-8")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    _csv(tmp_path / "words.csv", 7)
    with BudgetStore.open(f"sqlite:///{tmp_path / 'budget.db'}") as store:
        store.set_cap("words", 1.5, 1e-3)
    return tmp_path


def _key(work: Path, name: str) -> str:
    write_key_file(work / name)
    return name


def _argv(work: Path, out: str, key: str) -> list[str]:
    return [
        *("--input", "words.csv", "--output", out, "--epsilon", str(EPSILON)),
        *("--algorithm", "basic", "--noise-key-file", key),
        *("--budget-store", f"sqlite:///{work / 'budget.db'}", "--dataset-id", "words"),
        *("--overwrite", *FAST),
    ]


def _states(work: Path) -> list[tuple[str, str | None]]:
    """(state, release) of every run, oldest first (read directly, as any reader can)."""
    with sqlite3.connect(work / "budget.db", timeout=30) as conn:
        return list(
            conn.execute(
                "SELECT state, release FROM spark_dp_budget_v2_runs ORDER BY started_at"
            ).fetchall()
        )


def _run(work: Path, spec: str | None, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """The job, at moment ``spec`` (``None``: a plain run); its JVM killed afterwards."""
    cmd = at_moment(spec or "NONE@never", "partition-selection", *argv)
    proc = subprocess.Popen(
        cmd, cwd=work, env=job_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    try:
        _, err = proc.communicate(timeout=900)
    finally:
        _kill_group(proc.pid)
    return subprocess.CompletedProcess(cmd, proc.returncode, "", err)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)  # the JVM, if it outlived its driver
    except ProcessLookupError:
        pass


def _budget(work: Path):
    with BudgetStore.open(f"sqlite:///{work / 'budget.db'}") as store:
        (row,) = store.summary()
        return row, store.runs()


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "error:" in line]


def test_kills_before_any_read_charge_nothing(work: Path) -> None:
    done = _run(work, "INT@reserved", _argv(work, "a", _key(work, "ka")))
    assert done.returncode == 130, done.stderr[-3000:]
    assert _states(work)[-1][0] == "released"  # freed by the run itself
    assert _run(work, "KILL@reserved", _argv(work, "b", _key(work, "kb"))).returncode == -9
    row, runs = _budget(work)
    (killed,) = [r for r in runs if r.state == "reserved"]
    assert killed.stale and row.stale_runs == 1  # its process is gone: spark-dp budget says so
    with BudgetStore.open(f"sqlite:///{work / 'budget.db'}") as store:
        assert store.settle(killed.run) == "released"
    row, _ = _budget(work)
    assert (row.spent_epsilon, row.reserved_epsilon) == (0, 0)  # nothing charged


def test_a_kill_before_the_release_id_is_taken_over_by_its_retry(work: Path) -> None:
    key = _key(work, "kc")
    assert _run(work, "KILL@charged", _argv(work, "c", key)).returncode == -9
    ((state, release),) = _states(work)
    assert (state, release) == ("charged", None)  # it read nothing yet: no key was bound
    row, (killed,) = _budget(work)
    assert killed.stale and row.reserved_epsilon == pytest.approx(EPSILON)  # still counted
    retry = _run(work, None, _argv(work, "c", key))  # the same request: it adopts the charge
    assert retry.returncode == 0, retry.stderr[-3000:]
    row, runs = _budget(work)
    assert row.spent_epsilon == pytest.approx(EPSILON) and row.reserved_epsilon == 0
    assert [(r.run, r.state) for r in runs] == [(killed.run, "committed")]


def test_a_staged_release_and_a_rewritten_input_never_release_twice(work: Path) -> None:
    """Issue 44, case 1: cap ε = 1.5, a release of ε = 1 killed with its complete release
    staged (read there), the CSV rewritten to D' with the same name, size and modification
    time: the retry is a new charge, refused (exit 3, one line, before Spark starts); the first
    run's release id stays in the store."""
    key = _key(work, "kd")
    assert _run(work, "KILL@staged", _argv(work, "d", key)).returncode == -9
    (staged,) = work.glob(".d.tmp-*")
    assert pq.read_table(staged).num_rows > 0  # a complete release, readable by whoever can
    ((state, release),) = _states(work)
    assert state == "charged" and release is not None
    csv = work / "words.csv"
    st = csv.stat()
    _csv(csv, 11)
    os.utime(csv, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert csv.stat().st_size == st.st_size
    t0 = time.monotonic()
    retry = _run(work, None, _argv(work, "d", key))
    assert retry.returncode == 3, retry.stderr[-3000:]
    (line,) = _errors(retry.stderr)
    assert "budget refused" in line and "spent ε=1" in line and "cap ε=1.5" in line
    assert time.monotonic() - t0 < 60  # refused before Spark started
    assert _states(work) == [("charged", release)]  # one charge, one release, on the books
    row, _ = _budget(work)
    assert row.spent_epsilon + row.reserved_epsilon == pytest.approx(EPSILON)


def test_two_processes_of_one_request_never_run_at_once(work: Path) -> None:
    key = _key(work, "ke")
    argv = _argv(work, "e", key)
    held = subprocess.Popen(
        at_moment("HOLD@charged", "partition-selection", *argv), cwd=work, env=job_env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 600
        while not (work / HELD).exists():
            assert held.poll() is None and time.monotonic() < deadline, "never held"
            time.sleep(0.1)
        second = _run(work, None, argv)
        assert second.returncode == 3, second.stderr[-3000:]
        (line,) = _errors(second.stderr)
        assert "is in flight" in line and f"pid {held.pid}" in line
    finally:
        _kill_group(held.pid)
        held.wait()
    (only,) = _states(work)
    assert only[0] == "charged"  # the first run's: the second never reserved


@pytest.mark.parametrize("sig", ["INT", "TERM", "KILL"])
def test_a_kill_with_the_outputs_staged_stays_charged(work: Path, sig: str) -> None:
    done = _run(work, f"{sig}@staged", _argv(work, "f", _key(work, "kf")))
    assert done.returncode == {"INT": 130, "TERM": 143, "KILL": -9}[sig], done.stderr[-3000:]
    ((state, release),) = _states(work)
    assert release is not None  # the data was read and digested
    assert state == ("charged" if sig == "KILL" else "failed")  # SIGKILL: until settled
    row, _ = _budget(work)
    assert row.spent_epsilon + row.reserved_epsilon == pytest.approx(EPSILON)
    assert not (work / "f.report.json").exists()  # killed before the commit point
