"""Jobs against a budget store (issue 14): reserve before any data is read, refuse with exit 3,
charge a retry with the same key once, free the reservation of a run that wrote nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spark_dp.budget import BudgetStore
from spark_dp.dp.registry import Algorithm
from spark_dp.jobs import distinct_count, partition_selection
from spark_dp.partition_selection.registry import REGISTRY
from spark_dp.randomness.key_file import write_key_file
from spark_dp.release_ids import default_dataset_id


@pytest.fixture(scope="module")
def words(spark, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("budget_jobs")
    rows = [(f"u{u}", f"w{(u * 7 + k) % 40}") for u in range(300) for k in range(3)]
    spark.createDataFrame(rows, "user_id string, item string").write.parquet(str(root / "words"))
    return root / "words"


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'budget.db'}"


def _budget(url: str, dataset: str) -> dict:
    with BudgetStore.open(url) as s:
        return next(b.to_dict() for b in s.summary() if b.dataset == dataset)


def _set_cap(url: str, dataset: str, epsilon: float, delta: float = 1e-3) -> None:
    with BudgetStore.open(url) as s:
        s.set_cap(dataset, epsilon, delta)


def _key(tmp_path: Path, name: str = "key") -> str:
    path = tmp_path / name
    write_key_file(path)
    return str(path)


def _selection(words: Path, out: Path, url: str | None, *extra: str) -> list[str]:
    store = ("--budget-store", url) if url is not None else ()
    return [
        *("--input", str(words), "--output", str(out), *store),
        *("--algorithm", "basic", "--epsilon", "0.6", "--delta", "1e-5"),
        *("--log-level", "WARNING", *extra),
    ]


def _without_a_jvm(argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """``spark-dp partition-selection argv`` where no JVM can start: exit 3 (not 1) proves the
    run was refused before Spark started, let alone read data."""
    return subprocess.run(
        [sys.executable, "-m", "spark_dp", "partition-selection", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, JAVA_HOME=str(tmp_path / "no-java")),
    )


def test_second_release_over_the_cap_is_refused_before_spark_starts(words, store, tmp_path):
    dataset = default_dataset_id(str(words))
    _set_cap(store, dataset, 1.0)
    key = _key(tmp_path)
    assert (
        partition_selection.main(_selection(words, tmp_path / "a", store, "--noise-key-file", key))
        == 0
    )
    report = json.loads((tmp_path / "a.report.json").read_text())
    run_id = report["budget"].pop("run")
    with BudgetStore.open(store) as s:
        (run,) = s.runs(dataset)
    assert run.run == run_id and run.release == report["release"]["id"] and not run.test_seed
    assert report["budget"] == {
        "enforced": True,
        "recorded": True,
        "store": store,
        "dataset": dataset,
        "charged": True,
        "epsilon": 0.6,
        "delta": 1e-5,
        "accountant": "basic",
    }
    spent = _budget(store, dataset)
    assert spent["spent_epsilon"] == pytest.approx(0.6) and spent["releases"] == 1

    # A fresh key is a new release: 0.6 + 0.6 > 1. The run gets a JAVA_HOME where no JVM can
    # start, so exit 3 (not 1) proves it was refused before Spark started, let alone read data.
    done = _without_a_jvm(_selection(words, tmp_path / "b", store), tmp_path)
    assert done.returncode == 3, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "budget refused" in lines[0]
    for part in (dataset, "ε=0.6", "cap ε=1"):
        assert part in lines[0], part
    assert "Traceback" not in done.stderr and not (tmp_path / "b").exists()
    after = _budget(store, dataset)
    assert after["spent_epsilon"] == pytest.approx(0.6) and after["reserved_epsilon"] == 0


def test_a_retry_with_the_same_key_is_charged_once(spark, words, store, tmp_path):
    """An Airflow retry of a task that finished: the same request is not run again (exit 0,
    the committed release left as it is); asked for elsewhere, it is exit 2 (nothing read or
    written: a new release needs a fresh key). Charged once."""
    dataset = "words-users"
    _set_cap(store, dataset, 1.0)
    key = _key(tmp_path)
    argv = _selection(
        words, tmp_path / "o", store, "--noise-key-file", key, "--dataset-id", dataset
    )
    assert partition_selection.main(argv) == 0
    report_path = tmp_path / "o.report.json"
    first = (report_path.read_bytes(), report_path.stat().st_mtime_ns)
    assert partition_selection.main([*argv, "--overwrite"]) == 0  # an Airflow retry
    assert (report_path.read_bytes(), report_path.stat().st_mtime_ns) == first
    elsewhere = _selection(
        words, tmp_path / "p", store, "--noise-key-file", key, "--dataset-id", dataset
    )
    assert partition_selection.main(elsewhere) == 2
    assert not (tmp_path / "p").exists() and not (tmp_path / "p.report.json").exists()
    spent = _budget(store, dataset)
    assert spent["releases"] == 1 and spent["spent_epsilon"] == pytest.approx(0.6)


def test_the_plan_is_computed_once_reserved_and_run(monkeypatch, words, store, tmp_path):
    # every way to the plan goes through the registry entry's plan: count its calls
    entry, plans = REGISTRY["basic"], []

    def counted(params):
        plans.append(entry.plan(params))
        return plans[-1]

    monkeypatch.setitem(
        REGISTRY._by_name, "basic", Algorithm(entry.name, entry.summary, counted, entry.run)
    )
    _set_cap(store, "once", 1.0)
    argv = [*_selection(words, tmp_path / "o", store), "--dataset-id", "once"]
    assert partition_selection.main(argv) == 0
    assert len(plans) == 1  # not again for the reservation, the run or the report
    report = json.loads((tmp_path / "o.report.json").read_text())
    (round_,) = report["privacy"]["steps"]
    assert round_["sigma"] == plans[0].steps[0].calibration.sigma
    assert report["budget"]["epsilon"] == plans[0].epsilon
    plans.clear()
    dry = [*_selection(words, tmp_path / "d", store), "--dataset-id", "once", "--dry-run"]
    assert partition_selection.main(dry) == 0
    assert len(plans) == 1  # the dry run shows the same one plan


def test_a_failure_before_the_read_is_freed_and_one_after_it_stays_charged(spark, store, tmp_path):
    bad = tmp_path / "nulls"
    spark.createDataFrame([("u1", "a"), (None, "b")], "user_id string, item string").write.parquet(
        str(bad)
    )
    argv = [*_selection(bad, tmp_path / "o", store), "--dataset-id", "nulls"]
    assert partition_selection.main(argv) == 3  # no cap for the dataset: refused
    _set_cap(store, "nulls", 1.0)
    # a missing column is found from the schema (metadata) before the reservation: no row was
    # read, nothing reserved or charged, no run on the books
    assert partition_selection.main([*argv, "--item-col", "word"]) == 2
    budget = _budget(store, "nulls")
    assert budget["reserved_epsilon"] == 0 and budget["spent_epsilon"] == 0
    # null ids are found by reading the rows (--strict-input fails on them): the run stays
    # charged (failed), never refunded
    assert partition_selection.main([*argv, "--strict-input"]) == 2
    budget = _budget(store, "nulls")
    assert budget["spent_epsilon"] == pytest.approx(0.6) and budget["failed_releases"] == 1
    assert budget["releases"] == 0 and not (tmp_path / "o").exists()
    with BudgetStore.open(store) as s:
        assert [r.shown_state for r in s.runs("nulls")] == ["failed (charged)"]


def test_distinct_count_reserves_its_whole_plan_and_config_can_name_the_store(
    words, store, tmp_path
):
    _set_cap(store, "counts", 1.5)
    config = tmp_path / "dc.yaml"
    config.write_text(f"budget_store: {store}\ndataset_id: counts\nmax_contributions: 4\n")
    report = tmp_path / "count.json"
    argv = ["--input", str(words), "--epsilon", "1", "--config", str(config)]
    assert distinct_count.main([*argv, "--report", str(report), "--log-level", "WARNING"]) == 0
    doc = json.loads(report.read_text())
    assert doc["budget"]["dataset"] == "counts" and doc["budget"]["epsilon"] == 1.0
    assert doc["privacy"]["epsilon_spent"] == pytest.approx(1.0)
    assert _budget(store, "counts")["spent_epsilon"] == pytest.approx(1.0)
    again = [*argv, "--report", str(tmp_path / "count2.json"), "--log-level", "WARNING"]
    assert distinct_count.main(again) == 3  # a fresh key: 1 + 1 > 1.5


def test_without_a_store_or_ledger_the_report_says_nothing_was_recorded(words, tmp_path):
    argv = [*_selection(words, tmp_path / "o", None), "--no-ledger"]
    assert partition_selection.main(argv) == 0
    budget = json.loads((tmp_path / "o.report.json").read_text())["budget"]
    assert budget["enforced"] is False and budget["recorded"] is False
    assert "--budget-store" in budget["note"] and "--no-ledger" in budget["note"]


def test_an_auto_release_is_one_charge_and_is_refused_over_the_cap_before_any_read(
    words, store, tmp_path
):
    # the choice of Δ0 and the selection are one release: one run, the whole (ε, δ), reserved
    # before the data is read (docs/design/tuning.md#reservation)
    dataset = "auto-words"
    _set_cap(store, dataset, 1.5)
    auto = ("--max-contributions", "auto", "--dataset-id", dataset)
    argv = _selection(words, tmp_path / "a", store, *auto, "--noise-key-file", _key(tmp_path))
    assert partition_selection.main(argv) == 0
    report = json.loads((tmp_path / "a.report.json").read_text())
    assert report["budget"]["epsilon"] == pytest.approx(0.6) and report["budget"]["charged"]
    choice, round_ = report["privacy"]["steps"]
    assert choice["label"] == "private choice of Δ0" and choice["epsilon"] == pytest.approx(0.03)
    # the PLD bound of the choice and the round leaves the round more than 0.6 - 0.03: the
    # release's (ε, δ) is the certificate's, below the steps' sum (docs/design/tuning.md
    # #composition)
    certificate = report["privacy"]["certificate"]
    assert round_["epsilon"] == pytest.approx(certificate["selection_epsilon"])
    assert 0.57 < round_["epsilon"] <= 0.6 < choice["epsilon"] + round_["epsilon"]
    assert report["privacy"]["epsilon_spent"] == pytest.approx(0.6)
    assert certificate["certified_delta"] <= report["privacy"]["delta_spent"]
    assert report["parameters"]["max_contributions"] == "auto"
    assert report["parameters"]["max_contributions_chosen"] in choice["candidates"]
    with BudgetStore.open(store) as s:
        assert len(s.runs(dataset)) == 1
    spent = _budget(store, dataset)
    assert spent["releases"] == 1 and spent["spent_epsilon"] == pytest.approx(0.6)
    # 0.6 + 1.0 > 1.5: refused with exit 3 where no JVM can start, so before any read
    over = _selection(words, tmp_path / "b", store, *auto)
    over[over.index("--epsilon") + 1] = "1.0"
    done = _without_a_jvm(over, tmp_path)
    assert done.returncode == 3, done.stderr
    assert "budget refused" in done.stderr and "Traceback" not in done.stderr
    assert _budget(store, dataset)["spent_epsilon"] == pytest.approx(0.6)
