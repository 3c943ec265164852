"""A job without a budget store records its run in the default ledger (issue 44,
docs/privacy/budget.md#the-default-ledger): every job that spends ε, the preview included, with
no cap unless one is set; a test seed runs again and is marked; ``--no-ledger`` opts out; a
driver that cannot write its ledger says so in one line before anything else runs.

The test session's ledger is in its own ``XDG_STATE_HOME`` (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spark_dp.budget import BudgetStore
from spark_dp.budget.ledger import Ledger, default_ledger_path
from spark_dp.jobs import partition_selection, preview
from spark_dp.randomness.key_file import write_key_file
from spark_dp.release_ids import default_dataset_id
from tests.conftest import STATE_HOME
from tests.support.log_capture import warnings_logged


@pytest.fixture(scope="module")
def words(spark, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ledger_jobs")
    rows = [(f"u{u}", f"w{(u * 7 + k) % 20}") for u in range(400) for k in range(3)]
    spark.createDataFrame(rows, "user_id string, item string").write.parquet(str(root / "words"))
    return root / "words"


def _runs(dataset: str) -> list:
    with BudgetStore.open(Ledger.resolve().prepare(), ledger=True) as ledger:
        return ledger.runs(dataset)


def _selection(words: Path, out: Path, *extra: str) -> list[str]:
    return [
        *("--input", str(words), "--output", str(out), "--algorithm", "basic"),
        *("--epsilon", "0.5", "--log-level", "WARNING", *extra),
    ]


def test_the_test_session_never_writes_the_users_own_state():
    assert os.environ["XDG_STATE_HOME"] == STATE_HOME
    assert default_ledger_path() == Path(STATE_HOME) / "spark-dp" / "ledger.db"
    assert not str(default_ledger_path()).startswith(str(Path.home() / ".local"))


def test_every_release_without_a_store_is_recorded_without_a_cap(words, tmp_path):
    dataset = default_dataset_id(str(words))
    before = len(_runs(dataset))
    assert partition_selection.main(_selection(words, tmp_path / "o")) == 0
    budget = json.loads((tmp_path / "o.report.json").read_text())["budget"]
    assert budget["recorded"] and budget["ledger"] and not budget["enforced"]
    assert budget["store"] == f"sqlite:///{default_ledger_path()}"
    assert (budget["dataset"], budget["epsilon"]) == (dataset, 0.5)
    report = tmp_path / "preview.json"
    assert preview.main(["--input", str(words), "--epsilon", "0.2", "--report", str(report),
                         "--log-level", "WARNING"]) == 0  # fmt: skip
    runs = _runs(dataset)[before:]
    assert [(r.job, r.epsilon, r.state) for r in runs] == [
        ("partition_selection", 0.5, "committed"),
        ("preview", 0.2, "committed"),
    ]
    assert runs[0].run == budget["run"]
    assert json.loads(report.read_text())["budget"]["run"] == runs[1].run


def test_no_ledger_keeps_no_record(words, tmp_path):
    dataset = default_dataset_id(str(words))
    before = len(_runs(dataset))
    assert partition_selection.main(_selection(words, tmp_path / "o", "--no-ledger")) == 0
    budget = json.loads((tmp_path / "o.report.json").read_text())["budget"]
    assert not budget["recorded"] and "--no-ledger" in budget["note"]
    assert len(_runs(dataset)) == before


def test_a_seeded_rerun_runs_again_and_a_key_files_does_not(words, tmp_path):
    """``--seed`` + ``--overwrite`` (a test's re-run) runs again, as before the ledger, and is
    recorded and marked each time, saying what it replaced; the same request with a key file
    is the store's rule: exit 0 and nothing done for the same paths, exit 2 for another."""
    out = tmp_path / "o"
    seeded = _selection(words, out, "--seed", "3", "--ledger-file", str(tmp_path / "l.db"))
    assert partition_selection.main(seeded) == 0
    first = json.loads((tmp_path / "o.report.json").read_text())
    with warnings_logged() as lines:
        assert partition_selection.main([*seeded, "--overwrite"]) == 0
    again = json.loads((tmp_path / "o.report.json").read_text())
    assert again["release"]["id"] == first["release"]["id"]  # the same key and rows
    (line,) = [x for x in lines if "--overwrite replaced the release at" in x]
    assert f"run {first['budget']['run']}, ε=0.5" in line and "spent ε=1, δ=2e-05 in all" in line
    with BudgetStore.open(f"sqlite:///{tmp_path / 'l.db'}", ledger=True) as ledger:
        assert [(r.test_seed, r.state) for r in ledger.runs()] == [(True, "committed")] * 2
    key = tmp_path / "key"
    write_key_file(key)
    keyed = _selection(words, tmp_path / "k", "--noise-key-file", str(key))
    assert partition_selection.main(keyed) == 0
    stamp = (tmp_path / "k.report.json").stat().st_mtime_ns
    assert partition_selection.main([*keyed, "--overwrite"]) == 0  # an Airflow retry
    assert (tmp_path / "k.report.json").stat().st_mtime_ns == stamp
    other = _selection(words, tmp_path / "k2", "--noise-key-file", str(key))
    assert partition_selection.main(other) == 2 and not (tmp_path / "k2").exists()


def _without_a_jvm(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """``spark-dp partition-selection argv`` where no JVM can start."""
    return subprocess.run(
        [sys.executable, "-m", "spark_dp", "partition-selection", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "JAVA_HOME": "/nonexistent", **env},
    )


def test_a_driver_that_cannot_write_its_ledger_says_so_and_runs_only_without_it(words, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory\n")
    env = {"XDG_STATE_HOME": str(blocked / "state")}  # under a file: nothing can be made there
    argv = _selection(words, tmp_path / "o", "--dry-run")
    done = _without_a_jvm(argv, env)
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert "cannot write the default ledger" in lines[0] and "--no-ledger" in lines[0]
    assert "shared store (--budget-store postgresql://" in lines[0]
    assert _without_a_jvm([*argv, "--no-ledger"], env).returncode == 0
    missing = _without_a_jvm([*argv, "--ledger-file", str(tmp_path / "nope" / "l.db")], {})
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    both = _without_a_jvm([*argv, "--no-ledger", "--budget-store", "sqlite:///b.db"], {})
    assert both.returncode == 2 and "only applies to a run without a store" in both.stderr


def test_the_ledger_is_found_by_flag_environment_or_state_directory(tmp_path, monkeypatch):
    from spark_dp.errors import BudgetStoreUnavailable

    monkeypatch.setenv("SPARK_DP_LEDGER", str(tmp_path / "env.db"))
    assert Ledger.resolve() == Ledger(tmp_path / "env.db", default=False)
    assert Ledger.resolve(str(tmp_path / "flag.db")).path == tmp_path / "flag.db"
    monkeypatch.delenv("SPARK_DP_LEDGER")
    monkeypatch.setenv("XDG_STATE_HOME", "relative/state")  # ignored (XDG base directories)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert Ledger.resolve().path == tmp_path / "home/.local/state/spark-dp/ledger.db"
    monkeypatch.delenv("XDG_STATE_HOME")

    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    with pytest.raises(BudgetStoreUnavailable, match=r"no home directory.*--no-ledger"):
        Ledger.resolve()
