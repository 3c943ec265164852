"""The ``distinct_count`` job: contract, accounting, no leaks, the labelled debug report."""

from __future__ import annotations

import json
import logging
import runpy
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_dp.jobs import distinct_count as job

ROOT = Path(__file__).resolve().parents[2]
TRUE_COUNT = 1357  # planted: a number that no row count or parameter of the run equals


@pytest.fixture(scope="module")
def input_path(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    """1357 distinct items: 40 persons share 40 common words, each holds private words."""
    rows = []
    private = iter(range(TRUE_COUNT - 40))
    for p in range(40):
        rows += [(f"p{p}", f"common{(p + k) % 40}") for k in range(6)]
        n_private = 2 + (p * 7) % 60
        rows += [(f"p{p}", f"only{next(private, None)}") for _ in range(n_private)]
    rows = [(u, i) for u, i in rows if not i.endswith("None")]
    rest = list(private)
    rows += [("p_last", f"only{k}") for k in rest]
    path = tmp_path_factory.mktemp("dc_job") / "pairs"
    spark.createDataFrame(rows, "user_id string, item string").write.parquet(str(path))
    assert spark.read.parquet(str(path)).select("item").distinct().count() == TRUE_COUNT
    return str(path)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.mark.parametrize("method", ["exact", "greedy"])
def test_job_writes_the_release_and_nothing_private(
    input_path: str, tmp_path: Path, method: str
) -> None:
    report_path = tmp_path / "count.json"
    debug = tmp_path / "debug.json"
    records = _Records()
    logging.getLogger("spark_dp").addHandler(records)
    try:
        code = job.main(
            [
                "--input", input_path, "--epsilon", "1", "--failure-probability", "0.05",
                "--method", method, "--max-contributions", "50", "--seed", "11",
                "--report", str(report_path), "--debug-report", str(debug),
                "--allow-unsafe-debug", "--config", str(ROOT / "conf/distinct_count.yaml"),
            ]
        )  # fmt: skip
    finally:
        logging.getLogger("spark_dp").removeHandler(records)
    assert code == 0
    report = json.loads(report_path.read_text())
    for key in ("estimate", "ell", "lower_bound", "lower_bound_clamped", "epsilon", "beta"):
        assert key in report
    assert report["max_contributions"] == 50 and report["method"] == method
    assert 1 <= report["ell"] <= 50
    assert report["estimate"] == pytest.approx(
        report["lower_bound"] + report["privacy"]["mechanism"]["lower_bound_shift"]
    )
    # ε/2 + ε/2 accounting.
    steps = report["privacy"]["steps"]
    assert [s["epsilon"] for s in steps] == [0.5, 0.5]
    assert report["privacy"]["epsilon_spent"] == 1.0 and report["privacy"]["delta_spent"] == 0
    assert steps[1]["scale"] == pytest.approx(2 * report["ell"] / 1.0)
    assert report["randomness"]["production_safe"] is False
    # Nothing private in the report or the logs: no true count, no curve.
    text = report_path.read_text()
    assert str(TRUE_COUNT) not in text
    assert '"curve"' not in text and '"true_count"' not in text
    assert not any(str(TRUE_COUNT) in m for m in records.messages)
    # The debug report is labelled as non-private in its name and content.
    written = tmp_path / "debug.NONPRIVATE.json"
    assert not debug.exists() and written.exists()
    dbg = json.loads(written.read_text())
    assert dbg["NONPRIVATE"] is True and dbg["true_count"] == TRUE_COUNT
    assert len(dbg["curve"]) == 50 and dbg["curve"][-1] <= TRUE_COUNT
    assert dbg["release"]["ell"] == report["ell"]
    assert report["outputs"]["debug_report_NONPRIVATE"] == str(written)
    # A run with the debug curve is marked as not a normal release.
    assert report["release"]["kind"].startswith("debug: NOT a normal release")
    assert "--debug-report" in report["release"]["unsafe_debug"][0]


def test_debug_report_needs_confirmation_and_the_command_line(
    input_path: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    debug = tmp_path / "d.json"
    args = ["--input", input_path, "--epsilon", "1", "--report", str(tmp_path / "r.json")]
    assert job.main([*args, "--debug-report", str(debug)]) == 2
    assert "--allow-unsafe-debug" in capsys.readouterr().err
    conf = tmp_path / "c.yaml"
    conf.write_text(f"debug_report: {debug}\n")
    assert job.main([*args, "--config", str(conf), "--allow-unsafe-debug"]) == 2
    assert "unknown parameter 'debug_report'" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]


def test_same_seed_same_release(input_path: str, tmp_path: Path) -> None:
    out = []
    for k in range(2):
        path = tmp_path / f"r{k}.json"
        args = ["--input", input_path, "--epsilon", "2", "--method", "greedy", "--seed", "5"]
        assert job.main([*args, "--report", str(path)]) == 0
        out.append(json.loads(path.read_text()))
    assert out[0]["lower_bound"] == out[1]["lower_bound"] and out[0]["ell"] == out[1]["ell"]


@pytest.mark.parametrize("method", ["exact", "greedy"])
def test_repeated_pairs_count_once(
    spark: SparkSession, input_path: str, tmp_path: Path, method: str
) -> None:
    """Each pair written twice (one copy reordered): the same curve and true count. Greedy
    skips the read's dedupe (its per-person sets drop repeats), exact relies on it. (The
    releases differ: the doubled input is other rows, so the key is bound to another release
    and draws independent noise.)"""
    pairs = spark.read.parquet(input_path)
    doubled = tmp_path / "doubled"
    pairs.unionByName(pairs.orderBy("item")).write.parquet(str(doubled))
    out = []
    for k, path in enumerate([input_path, str(doubled)]):
        report, debug = tmp_path / f"r{k}.json", tmp_path / f"d{k}.json"
        args = ["--input", path, "--epsilon", "1", "--method", method, "--seed", "5"]
        args += ["--max-contributions", "30", "--report", str(report)]
        assert job.main([*args, "--debug-report", str(debug), "--allow-unsafe-debug"]) == 0
        dbg = json.loads((tmp_path / f"d{k}.NONPRIVATE.json").read_text())
        out.append((dbg["curve"], dbg["true_count"]))
    assert out[0][1] == TRUE_COUNT and out[0] == out[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "epsilon is required"),
        (["--epsilon", "0"], "epsilon must be a finite number > 0"),
        (["--epsilon", "1", "--failure-probability", "0.5"], "--failure-probability (beta) must"),
        (
            ["--epsilon", "1", "--max-contributions", "0"],
            "max_contributions must be an integer >= 1",
        ),
        (["--epsilon", "1", "--ell-blocks", "0"], "ell_blocks must be an integer >= 1"),
    ],
)
def test_bad_parameters_exit_2_with_a_clear_message(
    input_path: str, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert job.main(["--input", input_path, *args]) == 2
    assert message in capsys.readouterr().err


def test_unknown_method_is_a_usage_error(
    input_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert job.main(["--input", input_path, "--epsilon", "1", "--method", "sampling"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_debug_report_suffix() -> None:
    assert job.debug_report_path("out/dbg.json") == "out/dbg.NONPRIVATE.json"
    assert job.debug_report_path("out/dbg") == "out/dbg.NONPRIVATE.json"
    assert job.debug_report_path("x.NONPRIVATE.json") == "x.NONPRIVATE.json"


def test_spark_submit_shim_runs_the_job_main() -> None:
    shim = runpy.run_path(str(ROOT / "jobs" / "distinct_count.py"), run_name="not_main")
    assert shim["main"] is job.main


def test_the_report_names_the_components_method_that_ran(
    spark: SparkSession, input_path: str, tmp_path: Path
) -> None:
    """``auto`` reports what it resolved to on this session (GraphFrames only with its jar),
    ``dataframe`` reports itself, and greedy (which splits nothing) reports no method."""
    from spark_dp.session import graphframes_available

    expected = "graphframes" if graphframes_available(spark) else "dataframe"
    ran = {}
    for method, components in [("exact", "auto"), ("exact", "dataframe"), ("greedy", "auto")]:
        path = tmp_path / f"{method}-{components}.json"
        args = ["--input", input_path, "--epsilon", "1", "--method", method, "--seed", "3"]
        args += ["--components", components, "--components-min-rows", "0"]
        assert job.main([*args, "--report", str(path)]) == 0
        ran[method, components] = json.loads(path.read_text())["privacy"]["mechanism"]
    assert ran["exact", "auto"]["components"] == expected
    assert ran["exact", "dataframe"]["components"] == "dataframe"
    assert "components" not in ran["greedy", "auto"]


def test_graphframes_without_its_jar_is_refused_before_any_read(
    spark: SparkSession, input_path: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--components graphframes`` on a session without the GraphFrames classes: exit 2, one
    line naming what is missing, and the budget reservation freed (no row was read), however
    small the core (it used to pass whenever the core stayed below ``components_min_rows``)."""
    from spark_dp.budget import BudgetStore
    from spark_dp.session import graphframes_missing

    missing = graphframes_missing(spark)
    if missing is None:
        pytest.skip("GraphFrames is on this session's classpath: nothing to refuse")
    store = f"sqlite:///{tmp_path / 'budget.db'}"
    with BudgetStore.open(store) as s:
        s.set_cap("dc", 5.0, 0.0)
    args = ["--input", input_path, "--epsilon", "1", "--components", "graphframes"]
    args += ["--budget-store", store, "--dataset-id", "dc", "--report", str(tmp_path / "r.json")]
    assert job.main([*args, "--log-level", "ERROR"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and missing in err[0] and "--packages" in err[0]
    with BudgetStore.open(store) as s:
        (budget,) = [b.to_dict() for b in s.summary() if b.dataset == "dc"]
        assert [r.shown_state for r in s.runs("dc")] == ["released"]
    assert budget["spent_epsilon"] == 0 and budget["reserved_epsilon"] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["budget.db"]
