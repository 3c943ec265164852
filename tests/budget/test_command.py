"""``spark-dp budget``: set-cap, set-accountant, the table / JSON listing, runs and settle; the
default ledger when no ``--store`` is given."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import sqlalchemy as sa

from spark_dp import cli
from spark_dp.budget import BudgetStore
from spark_dp.budget.schema import RUNS

KEYS = {
    "dataset",
    "cap_epsilon",
    "cap_delta",
    "spent_epsilon",
    "spent_delta",
    "reserved_epsilon",
    "reserved_delta",
    "releases",
}


def test_set_cap_then_list(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'budget.db'}"
    assert (
        cli.main(["budget", "set-cap", "--store", url, "--dataset", "words", "--epsilon", "2"]) == 0
    )
    assert (
        cli.main(
            [
                *("budget", "set-cap", "--store", url, "--dataset", "pairs", "--epsilon", "1"),
                *("--delta", "1e-6", "--window-days", "30"),
            ]
        )
        == 0
    )
    with BudgetStore.open(url) as store:
        done = store.charge(store.reserve(dataset="words", identity="i1", job="j", epsilon=0.5,
                                          delta=0))  # fmt: skip
        store.commit(store.bind(done, "r1"))
        store.reserve(dataset="words", identity="i2", job="j", epsilon=0.25, delta=0)
    capsys.readouterr()
    assert cli.main(["budget", "--store", url, "--json"]) == 0
    rows = {r["dataset"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == {"words", "pairs"} and KEYS <= set(rows["words"])
    words = rows["words"]
    assert (words["spent_epsilon"], words["reserved_epsilon"], words["releases"]) == (0.5, 0.25, 1)
    assert words["remaining_epsilon"] == 1.25 and rows["pairs"]["window_days"] == 30
    assert cli.main(["budget", "--store", url]) == 0
    table = capsys.readouterr().out
    assert "words" in table and "1.25" in table and "(per 30 days)" in table


def test_set_cap_if_missing_keeps_an_existing_cap(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'budget.db'}"
    base = ["budget", "set-cap", "--store", url, "--dataset", "words", "--if-missing"]
    assert cli.main([*base, "--epsilon", "2"]) == 0  # none yet: set
    assert cli.main([*base, "--epsilon", "9"]) == 0  # kept
    assert "kept" in capsys.readouterr().out
    with BudgetStore.open(url) as store:
        assert [b.cap_epsilon for b in store.summary()] == [2.0]


def test_set_accountant_adds_the_filter_column(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'budget.db'}"
    cli.main(["budget", "set-cap", "--store", url, "--dataset", "d", "--epsilon", "1"])
    cli.main(["budget", "set-cap", "--store", url, "--dataset", "e", "--epsilon", "1",
              "--delta", "1e-6"])  # fmt: skip
    assert cli.main(["budget", "set-accountant", "--store", url, "--accountant", "zcdp"]) == 0
    capsys.readouterr()
    assert cli.main(["budget", "--store", url]) == 0
    assert "zcdp ε" in capsys.readouterr().out
    assert cli.main(["budget", "--store", url, "--json"]) == 0
    rows = {r["dataset"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["e"]["accountant"] == "zcdp" and rows["e"]["tight_epsilon"] == 0.0
    assert rows["d"]["tight_epsilon"] is None  # a cap with δ = 0: basic composition
    for legacy in ("pld", "rdp"):  # no longer offered: one line, why and what instead
        assert cli.main(["budget", "set-accountant", "--store", url, "--accountant", legacy]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "use zcdp" in err and "preview" in err


def test_errors_exit_2_with_one_line(tmp_path, capsys):
    assert cli.main(["budget", "--store", str(tmp_path / "budget.db")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a database URL" in err
    url = f"sqlite:///{tmp_path / 'budget.db'}"
    for bad in (["--epsilon", "-1"], ["--epsilon", "1", "--delta", "2"],
                ["--epsilon", "1", "--window-days", "0"], ["--epsilon", "x"]):  # fmt: skip
        assert cli.main(["budget", "set-cap", "--store", url, "--dataset", "d", *bad]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
    assert not (tmp_path / "budget.db").exists()  # a bad value never creates the store
    assert cli.main(["budget", "set-accountant", "--store", url, "--accountant", "x"]) == 2
    assert cli.main(["budget", "set-accountant", "--store", url]) == 2  # --accountant needed
    assert capsys.readouterr().err.count("\n") == 2
    assert not (tmp_path / "budget.db").exists()


def test_a_store_that_is_not_a_database_exits_2_with_one_line(tmp_path, capsys):
    path = tmp_path / "notes.db"
    path.write_text("not a database\n" * 100)
    assert cli.main(["budget", "--store", f"sqlite:///{path}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a budget store" in err
    assert path.read_text() == "not a database\n" * 100


def _immutable(path) -> None:
    """Make ``path`` read-only for this user (root: chattr +i, which root cannot write past)."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        path.parent.chmod(0o555)
        return
    if shutil.which("chattr") is None:
        pytest.skip("running as root without chattr: no way to make a file read-only for root")
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"running as root and chattr +i is refused here ({done.stderr.strip()})")


def _writable(path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], check=False)
    else:
        path.parent.chmod(0o755)
        path.chmod(0o644)


def test_a_read_only_store_exits_1_with_one_line(tmp_path, capsys):
    path = tmp_path / "ro" / "budget.db"
    path.parent.mkdir()
    url = f"sqlite:///{path}"
    assert cli.main(["budget", "set-cap", "--store", url, "--dataset", "d", "--epsilon", "1"]) == 0
    _immutable(path)
    try:
        capsys.readouterr()
        assert cli.main(["budget", "--store", url]) == 0  # reading still works
        code = cli.main(["budget", "set-cap", "--store", url, "--dataset", "d", "--epsilon", "2"])
        err = capsys.readouterr().err
        assert code == 1 and err.count("\n") == 1 and "cannot be written" in err, err
    finally:
        _writable(path)


def test_runs_are_listed_and_stale_ones_settled(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'budget.db'}"
    with BudgetStore.open(url) as store:
        store.set_cap("words", 2.0)
        reserved = store.reserve(dataset="words", identity="a", job="j", epsilon=0.5, delta=0)
        charged = store.charge(
            store.reserve(
                dataset="words", identity="b", job="j", epsilon=0.25, delta=0, test_seed=True
            )
        )
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # both processes were killed
        conn.execute(RUNS.update().values(pid=int(dead.stdout)))
    engine.dispose()
    capsys.readouterr()
    assert cli.main(["budget", "--store", url]) == 0
    assert "2 stale: spark-dp budget settle" in capsys.readouterr().out
    assert cli.main(["budget", "runs", "--store", url]) == 0
    table = capsys.readouterr().out
    assert "reserved (stale)" in table and "charged (stale) [test seed]" in table
    assert cli.main(["budget", "settle", "--store", url, "--stale"]) == 0
    out = capsys.readouterr().out
    assert f"run {reserved.run}: released" in out and f"run {charged.run}: failed" in out
    assert cli.main(["budget", "runs", "--store", url, "--json"]) == 0
    runs = {r["run"]: r for r in json.loads(capsys.readouterr().out)}
    assert runs[charged.run]["shown_state"] == "failed (charged)" and runs[charged.run]["test_seed"]
    assert cli.main(["budget", "--store", url, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["spent_epsilon"], row["reserved_epsilon"], row["failed_releases"]) == (0.25, 0, 1)
    assert cli.main(["budget", "settle", "--store", url, "--run", charged.run]) == 2
    assert "nothing to settle" in capsys.readouterr().err


def test_the_installed_command_lists_json(tmp_path):
    url = f"sqlite:///{tmp_path / 'budget.db'}"
    with BudgetStore.open(url) as store:
        store.set_cap("words", 1.0)
    done = subprocess.run(
        [sys.executable, "-m", "spark_dp", "budget", "--store", url, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)
    assert row["dataset"] == "words" and row["cap_epsilon"] == 1.0 and row["releases"] == 0


def test_without_a_store_each_command_works_on_the_default_ledger(tmp_path, monkeypatch, capsys):
    """``spark-dp budget`` lists the default ledger ($XDG_STATE_HOME/spark-dp/ledger.db; the
    test session's own state directory), and creates nothing to list it."""
    from spark_dp.budget.ledger import Ledger, default_ledger_path

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ledger = tmp_path / "state" / "spark-dp" / "ledger.db"
    assert default_ledger_path() == ledger
    assert cli.main(["budget"]) == 0
    assert "no run recorded yet" in capsys.readouterr().out
    assert cli.main(["budget", "runs"]) == 0 and not ledger.exists()
    capsys.readouterr()
    with BudgetStore.open(Ledger.resolve().prepare(), ledger=True) as books:  # as a job does
        r = books.reserve(dataset="/data/words", identity="i", job="j", epsilon=0.5, delta=0)
        books.commit(books.bind(books.charge(r), "r1"))
    assert cli.main(["budget"]) == 0
    out = capsys.readouterr().out
    assert "/data/words" in out and f"(ledger sqlite:///{ledger})" in out
    assert "-: no cap" in out  # recorded, never refused
    assert cli.main(["budget", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["cap_epsilon"], row["spent_epsilon"], row["releases"]) == (None, 0.5, 1)
    assert cli.main(["budget", "set-cap", "--dataset", "/data/words", "--epsilon", "2"]) == 0
    assert cli.main(["budget", "runs", "--json"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("SPARK_DP_LEDGER", str(tmp_path / "elsewhere.db"))  # another ledger
    assert cli.main(["budget"]) == 0
    assert "elsewhere.db: no run recorded yet" in capsys.readouterr().out
    monkeypatch.delenv("SPARK_DP_LEDGER")
    assert cli.main(["budget", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["cap_epsilon"], row["remaining_epsilon"]) == (2.0, 1.5)
