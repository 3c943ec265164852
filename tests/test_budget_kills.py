"""Kills and the budget (issue 34): a run killed before it reads data is charged nothing; one
killed after its first read of input rows, or during the write, stays charged; its retry with
the same key and data costs nothing more. Real jobs in subprocesses against a real SQLite store,
killed when the store shows the moment (SIGINT, SIGTERM, SIGKILL).

``SPARK_DP_TEST_COMMIT_DELAY`` slows each commit step to a second so that a kill lands during
the write. SIGINT and SIGTERM go to the driver only (as a scheduler sends them); the JVM is
killed with the process group afterwards.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_dp.budget import BudgetStore
from spark_dp.randomness.key_file import write_key_file
from tests.job_processes import FAST, job_env

pytestmark = pytest.mark.slow  # seven job processes
ROOT = Path(__file__).resolve().parents[1]

EPSILON = 0.5


@pytest.fixture
def work(tmp_path: Path) -> Path:
    users = [f"u{i}" for i in range(400) for _ in range(3)]
    items = [f"w{(i * 7 + k) % 40}" for i in range(400) for k in range(3)]
    pq.write_table(pa.table({"user_id": users, "item": items}), tmp_path / "words.parquet")
    with BudgetStore.open(f"sqlite:///{tmp_path / 'budget.db'}") as store:
        store.set_cap("words", 10.0, 1e-3)
    return tmp_path


def _key(work: Path, name: str) -> str:
    write_key_file(work / name)
    return name


def _argv(work: Path, out: str, key: str) -> list[str]:
    return [
        *("--input", "words.parquet", "--output", out, "--epsilon", str(EPSILON)),
        *("--noise-key-file", key, "--budget-store", f"sqlite:///{work / 'budget.db'}"),
        *("--dataset-id", "words", "--overwrite", *FAST),
    ]


def _states(work: Path) -> list[tuple[str, str | None]]:
    """(state, release) of every run, oldest first (read directly: the job holds the store)."""
    with sqlite3.connect(work / "budget.db", timeout=30) as conn:
        return list(
            conn.execute(
                "SELECT state, release FROM spark_dp_budget_v2_runs ORDER BY started_at"
            ).fetchall()
        )


def _kill(work: Path, argv: list[str], sig: int, moment: Callable[[], bool]) -> int | None:
    """Start the job, send ``sig`` to its driver when ``moment()`` holds; its exit status."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "jobs" / "partition_selection.py"), *argv],
        cwd=work,
        env=job_env(delay=1.0),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 600
    try:
        while not moment():
            assert proc.poll() is None, f"the job ended before the moment: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "the moment never came"
            time.sleep(0.05)
        os.kill(proc.pid, sig)  # the driver only, as a scheduler's signal
        try:
            return proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            return None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the JVM, if it outlived its driver
        except ProcessLookupError:
            pass
        proc.wait()


def _last_state(work: Path) -> Callable[[str], bool]:
    return lambda state: bool(_states(work)) and _states(work)[-1][0] == state


def _staged(work: Path, out: str) -> Callable[[], bool]:
    return lambda: any(p.name.startswith(f".{out}.tmp-") for p in work.iterdir())


def _budget(work: Path):
    with BudgetStore.open(f"sqlite:///{work / 'budget.db'}") as store:
        (row,) = store.summary()
        return row, {r.run: r for r in store.runs()}


def test_kills_before_any_read_charge_nothing(work: Path) -> None:
    last = _last_state(work)
    code = _kill(work, _argv(work, "a", _key(work, "ka")), signal.SIGINT, lambda: last("reserved"))
    assert code is not None and code != 0
    assert _states(work)[-1][0] == "released"  # freed by the run itself
    _kill(work, _argv(work, "b", _key(work, "kb")), signal.SIGKILL, lambda: last("reserved"))
    row, runs = _budget(work)
    (killed,) = [r for r in runs.values() if r.state == "reserved"]
    assert killed.stale and row.stale_runs == 1  # its process is gone: spark-dp budget says so
    with BudgetStore.open(f"sqlite:///{work / 'budget.db'}") as store:
        assert store.settle(killed.run) == "released"
    row, _ = _budget(work)
    assert (row.spent_epsilon, row.reserved_epsilon) == (0, 0)  # nothing charged


def test_kills_after_the_first_read_stay_charged_and_a_retry_costs_nothing_more(work) -> None:
    last = _last_state(work)
    key = _key(work, "kc")
    _kill(work, _argv(work, "c", key), signal.SIGKILL, lambda: last("charged"))
    row, runs = _budget(work)
    (killed,) = runs.values()
    assert killed.state == "charged" and killed.stale
    assert row.reserved_epsilon == pytest.approx(EPSILON)  # still counted
    # the retry, the same request (key, arguments, input): it adopts the killed run's charge
    # (that run released nothing), so nothing more is charged
    done = subprocess.run(
        [sys.executable, str(ROOT / "jobs" / "partition_selection.py"), *_argv(work, "c", key)],
        cwd=work, env=job_env(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    row, _ = _budget(work)
    assert row.spent_epsilon == pytest.approx(EPSILON) and row.reserved_epsilon == 0
    assert row.releases == 1


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_kill_during_the_write_stays_charged(work: Path, sig: int) -> None:
    key = _key(work, "kd")
    _kill(work, _argv(work, "d", key), sig, _staged(work, "d"))
    ((state, release),) = _states(work)
    assert release is not None  # the data was read and digested
    if sig == signal.SIGINT:
        assert state == "failed"  # the run itself recorded it: failed (charged)
    else:  # SIGKILL (and SIGTERM without a handler) leave it charged until settled
        assert state in ("charged", "failed")
    row, _ = _budget(work)
    assert row.spent_epsilon + row.reserved_epsilon == pytest.approx(EPSILON)
    assert not (work / "d.report.json").exists()  # killed before the commit point
