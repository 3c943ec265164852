"""No sequence of interruption, input rewrite and retry yields two releases for one charge
(docs/privacy/budget.md#adoption), and an output and its report are replaced
together or not at all.

Jobs run in this process, held at each moment of their run by the runner's moment callback
(``RunHooks(moments=...)``), where the callback plays the adversary of the budget docs: it
reads what the run has staged, then interrupts it (the run ends ``failed``, as after a kill and
``spark-dp budget settle``; tests/budget/test_kills.py kills real processes). The CSV input is
then rewritten to D' with the same name, size and modification time (the same request), and
the run is retried. Every release id a run computes (the key it binds) is recorded on the side:
each must be in the store under a charge of its own, and the total charged must cover them.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import spark_dp.release_ids
from spark_dp.budget import BudgetStore
from spark_dp.jobs import partition_selection
from spark_dp.jobs.runner import RunHooks, run_job
from spark_dp.randomness.key_file import write_key_file
from tests.support.log_capture import warnings_logged

EPSILON, CAP = 1.0, 1.5


def _csv(path: Path, shift: int) -> None:
    """600 users with 3 of 20 items each; ``shift`` moves every item (same length: same size)."""
    rows = [f"u{u:03d},w{(u * shift + k) % 20:02d}" for u in range(600) for k in range(3)]
    path.write_text("user_id,item\n" + "\n".join(rows) + "\n", encoding="utf-8")


def _rewrite_keeping_listing(path: Path) -> None:
    """D': other rows under the same name, size and modification time."""
    st = path.stat()
    _csv(path, 11)
    assert path.stat().st_size == st.st_size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.fixture
def work(spark, tmp_path: Path, monkeypatch) -> Path:
    _csv(tmp_path / "words.csv", 7)
    key = tmp_path / "key"
    write_key_file(key)
    with BudgetStore.open(f"sqlite:///{tmp_path / 'budget.db'}") as store:
        store.set_cap("words", CAP, 1e-3)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _argv(out: str = "out", *extra: str) -> list[str]:
    return [
        *("--input", "words.csv", "--output", out, "--epsilon", str(EPSILON)),
        *("--algorithm", "basic", "--noise-key-file", "key", "--dataset-id", "words"),
        *("--budget-store", "sqlite:///budget.db", "--log-level", "WARNING", *extra),
    ]


@pytest.fixture
def bound(monkeypatch) -> list[str]:
    """Every release id a run computes (its key is bound to it), recorded on the side."""
    seen: list[str] = []
    real = spark_dp.release_ids.release_id

    def recorded(**kw):
        seen.append(real(**kw))
        return seen[-1]

    monkeypatch.setattr(spark_dp.release_ids, "release_id", recorded)
    return seen


def _held(at: str, staged: list[int]):
    """The adversary at moment ``at``: reads what is staged, then interrupts the run."""

    def moment(name: str) -> None:
        if name != at:
            return
        for tmp in Path(".").glob(".out.tmp-*"):
            staged.append(pq.read_table(tmp).num_rows)  # a complete release, read early
        raise KeyboardInterrupt

    return moment


@pytest.mark.parametrize(
    ("moment", "retry"),
    [
        ("charged", 0),  # nothing recorded, nothing drawn: its retry takes its charge over
        ("bound", 3),  # the release id recorded: the retry is a new charge, over the cap
        ("staged", 3),  # a complete release staged (and read): the same
        ("booked", 2),  # committed in the store: the request is done, nothing runs again
        ("commit 5", 2),  # half-way through the moves (rolled back): the same
    ],
)
def test_no_retry_after_a_rewrite_gives_a_second_release_for_one_charge(
    work, bound, capsys, moment, retry
):
    staged: list[int] = []
    job = partition_selection.SPEC
    assert run_job(job, _argv(), hooks=RunHooks(moments=_held(moment, staged))) == 130
    if moment == "staged":
        assert staged and staged[0] > 0  # what the adversary saw of the first release
    _rewrite_keeping_listing(work / "words.csv")
    capsys.readouterr()
    assert run_job(job, _argv()) == retry
    err = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    with BudgetStore.open(f"sqlite:///{work / 'budget.db'}") as store:
        (row,) = store.summary()
        runs = store.runs()
    charged = [r for r in runs if r.state in ("charged", "failed", "committed")]
    for release in set(bound):  # every release computed is on the books, each its own charge
        assert [r.release for r in charged].count(release) == 1, (release, runs)
    assert row.spent_epsilon + row.reserved_epsilon >= EPSILON * len(set(bound))
    assert row.spent_epsilon + row.reserved_epsilon <= CAP
    if retry == 0:  # adopted: one charge, one release, in place
        assert len(runs) == 1 and len(set(bound)) == 1 and runs[0].state == "committed"
        assert json.loads((work / "out.report.json").read_text())["budget"]["adopted"]
    else:
        assert len(err) == 1 and not (work / "out").exists()
        assert ("budget refused" if retry == 3 else "was committed by run") in err[0]
        assert len(runs) == 1 and len(set(bound)) == 1  # the retry read nothing


def test_the_same_request_to_another_output_is_refused_and_costs_nothing(work, capsys):
    """A committed request asked again with the same --report, another
    --output and --overwrite: exit 2, one line, nothing read, written or charged (before, exit 0
    and the new output absent)."""
    job = partition_selection.SPEC
    assert run_job(job, _argv("a", "--report", "r.json")) == 0
    capsys.readouterr()
    again = _argv("b", "--report", "r.json", "--overwrite")
    assert run_job(job, again) == 2
    (line,) = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert "was committed by run" in line
    assert f"--output {work / 'b'} (it wrote {work / 'a'})" in line
    assert not (work / "b").exists()
    assert run_job(job, _argv("a", "--report", "r.json", "--overwrite")) == 0  # a retry: as is
    with BudgetStore.open(f"sqlite:///{work / 'budget.db'}") as store:
        (row,) = store.summary()
        assert (row.releases, row.spent_epsilon, len(store.runs())) == (1, EPSILON, 1)


def test_a_report_named_for_another_output_is_refused_before_anything_is_read(work, capsys):
    job = partition_selection.SPEC
    assert run_job(job, _argv("out")) == 0
    capsys.readouterr()
    write_key_file(work / "key2")
    argv = [*_argv("out2", "--report", "out.report.json", "--overwrite")]
    argv[argv.index("key")] = "key2"  # a new release
    assert run_job(job, argv) == 2
    (line,) = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert "is the report of" in line and "out.report.json" in line
    assert not (work / "out2").exists()
    with BudgetStore.open(f"sqlite:///{work / 'budget.db'}") as store:
        assert len(store.runs()) == 1  # nothing reserved, read or charged


def test_an_output_and_its_report_are_replaced_together(work, capsys):
    """A release to ``out`` with ``--report other.json --overwrite`` takes the
    old ``out.report.json`` (which described the replaced output) away in the same commit, and
    says in one line what it replaced and what the input has now spent in all."""
    job = partition_selection.SPEC
    assert run_job(job, _argv("out")) == 0
    first = json.loads((work / "out.report.json").read_text())
    write_key_file(work / "key2")
    argv = _argv("out", "--report", "other.json", "--overwrite")
    argv[argv.index("key")] = "key2"
    with BudgetStore.open(f"sqlite:///{work / 'budget.db'}") as store:
        store.set_cap("words", 2.0, 1e-3)
    with warnings_logged() as lines:
        assert run_job(job, argv) == 0
    assert not (work / "out.report.json").exists()
    doc = json.loads((work / "other.json").read_text())
    assert pq.read_table(work / "out").num_rows == doc["outputs"]["output_items"]
    (line,) = [x for x in lines if "--overwrite replaced the release at" in x]
    assert f"run {first['budget']['run']}, ε=1, δ=1e-05" in line
    assert "dataset words has now spent ε=2, δ=2e-05 in all" in line
    assert [p.name for p in work.iterdir() if p.name.startswith(".")] == []
    # a report left beside a path this run writes is not kept beside a new output it does
    # not describe: refused without --overwrite (exit 2, nothing read)
    shutil.rmtree(work / "out")
    (work / "out.report.json").write_text("{}")
    argv[argv.index("other.json")] = "third.json"
    capsys.readouterr()
    assert run_job(job, [a for a in argv if a != "--overwrite"]) == 2
    assert "the report of an earlier release at out" in capsys.readouterr().err
    assert not (work / "out").exists() and not (work / "third.json").exists()
