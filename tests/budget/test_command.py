"""``spark-dp budget``: set-cap, set-accountant, and the table / JSON listing."""

from __future__ import annotations

import json
import subprocess
import sys

from spark_dp import cli
from spark_dp.budget import BudgetStore

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
        store.commit(store.reserve(dataset="words", release="r1", job="j", epsilon=0.5, delta=0))
        store.reserve(dataset="words", release="r2", job="j", epsilon=0.25, delta=0)
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


def test_set_accountant_adds_the_tight_column(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'budget.db'}"
    cli.main(["budget", "set-cap", "--store", url, "--dataset", "d", "--epsilon", "1"])
    assert cli.main(["budget", "set-accountant", "--store", url, "--accountant", "rdp"]) == 0
    capsys.readouterr()
    assert cli.main(["budget", "--store", url]) == 0
    assert "rdp ε" in capsys.readouterr().out
    assert cli.main(["budget", "--store", url, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["accountant"] == "rdp" and row["tight_epsilon"] == 0.0


def test_errors_exit_2_with_one_line(tmp_path, capsys):
    assert cli.main(["budget", "--store", str(tmp_path / "budget.db")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a database URL" in err
    url = f"sqlite:///{tmp_path / 'budget.db'}"
    assert cli.main(["budget", "set-cap", "--store", url, "--dataset", "d", "--epsilon", "-1"]) == 2
    assert "--epsilon of a cap must be" in capsys.readouterr().err
    assert cli.main(["budget"]) == 2  # --store is required
    assert cli.main(["budget", "set-accountant", "--store", url, "--accountant", "x"]) == 2


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
