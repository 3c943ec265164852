"""The ``contribution_bounding`` job: outputs, report, work directory, bad input (exit 2)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_dp.io import load_incidences
from spark_dp.jobs.contribution_bounding import main
from tests.contribution_bounding.helpers import (
    FIG1,
    TOY52,
    as_records,
    batch,
    incidence_rows,
    key_seed,
)
from tests.reference import contribution_bounding as ref

pytestmark = pytest.mark.usefixtures("aqe_off")


def _write_incidences(
    spark: SparkSession, path: Path | str, records: ref.Records, *, content: bool = True
) -> str:
    rows = incidence_rows(records, random.Random(0))
    df = spark.createDataFrame(rows, "record_id string, user_id string")
    # a content column the job must never read (fixed-graph DP,
    # docs/design/bounding.md#fixed-graph-dp)
    if content:
        df = df.selectExpr("record_id", "user_id", "concat('secret ', record_id) AS content")
    df.write.parquet(str(path))
    return str(path)


def test_job_writes_selection_user_state_and_report(spark: SparkSession, tmp_path: Path) -> None:
    """The job under the hash order stopped after 2 rounds (finish none): selection and
    report equal the reference's first two rounds, OPEN users are exactly those with
    eligible records left (docs/design/bounding.md#outputs). The order's seed comes from the release
    key (here the test key of ``--seed 0``); App. T's Fig. 1 vectors are checked in
    test_greedy.py."""
    records, caps, _ = batch(seed=11, n=8)
    records.update(as_records(FIG1, "F"))
    caps = dict.fromkeys(
        {u for us in records.values() for u in us}, 2
    )  # uniform --max-contributions
    inp = _write_incidences(spark, tmp_path / "inc", records)
    out = str(tmp_path / "out" / "records")
    argv = [
        "--input", inp, "--output", out, "--max-contributions", "2",
        "--seed", "0", "--order", "hash", "--finish", "none", "--max-rounds", "2",
    ]  # fmt: skip
    assert main(argv) == 0
    report = json.loads(open(out + ".report.confidential.json").read())
    seed = key_seed(0, report["release"]["id"])  # the test key, bound to the job's release
    key = ref.shared_key("hash", records, seed)
    chosen, history, d, _ = ref.proposal_rounds(records, caps, lambda u, h: key(h), max_rounds=2)
    selected = spark.read.parquet(out)
    assert selected.columns == ["record_id"]
    assert {r["record_id"] for r in selected.collect()} == chosen
    state = spark.read.parquet(out + "_user_state")
    assert state.columns == ["user_id", "cap", "d", "status"]
    rows = {r["user_id"]: r for r in state.collect()}
    assert {u: r["d"] for u, r in rows.items()} == {
        u: d[u] for u in caps if any(u in us for us in records.values())
    }
    open_users = {u for h in history[-1][1] for u in records[h]}
    assert {u for u, r in rows.items() if r["status"] == "OPEN"} == open_users
    assert report["selected"] == len(chosen)
    assert report["rounds"] == len(history)
    assert report["max_degree"] == max(d.values())
    assert report["privacy"]["epsilon_spent"] == 0
    assert report["privacy"]["mechanism"]["contribution_bound_k"] == max(d.values())
    cb = report["contribution_bounding"]
    assert [e["accepted"] for e in cb["round_log"]] == [len(a) for a, _ in history]
    assert cb["order"] == {"order": "hash"}  # no seed in the report: it comes from the key
    assert str(seed) not in json.dumps(report)
    assert cb["open"] == len(open_users)
    assert any("CONFIDENTIAL" in n for n in report["notes"])
    assert report["outputs"]["user_state"]["rows"] == len(rows)
    assert not (tmp_path / "out" / "records_work").exists()  # removed after success
    # a rerun without --overwrite refuses to touch the outputs
    assert main(argv) == 2


def test_job_with_duplicates_writes_multiplicities(spark: SparkSession, tmp_path: Path) -> None:
    """The duplicate ILP on the Sec. 5.2 toy: optimum 6 (the solver picks which records)."""
    records = as_records(TOY52)
    inp = _write_incidences(spark, tmp_path / "inc", records, content=False)
    out = str(tmp_path / "dup")
    assert (
        main(
            ["--input", inp, "--output", out, "--max-contributions", "3", "--algorithm", "ilp-dup"]
        )
        == 0
    )
    selected = spark.read.parquet(out)
    assert selected.columns == ["record_id", "multiplicity"]
    mult = {r["record_id"]: r["multiplicity"] for r in selected.collect()}
    assert sum(mult.values()) == 6 and ref.feasible(records, dict.fromkeys("ABCD", 3), mult)
    report = json.loads(open(out + ".report.confidential.json").read())
    assert report["selected"] == 6 and report["max_degree"] == 3
    assert report["contribution_bounding"]["ilp"]["optimal"] is True


def test_only_id_columns_are_read(spark: SparkSession, tmp_path: Path) -> None:
    """T19: the Parquet scan of the job's reader asks for the id columns only."""
    inp = _write_incidences(spark, tmp_path / "inc", as_records(FIG1))
    df, _ = load_incidences(spark, inp)
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "ReadSchema: struct<record_id:string,user_id:string>" in plan
    assert "content" not in plan


@pytest.mark.parametrize(
    ("make", "args", "message"),
    [
        (
            "good",
            ["--max-contributions", "-1"],
            "max_contributions must be an integer >= 0, got -1",
        ),
        ("good", [], "pass the contribution bound"),
        (
            "good",
            ["--max-contributions", "2", "--order", "per-user", "--algorithm", "greedy"],
            "per-user",
        ),
        ("renamed", ["--max-contributions", "2"], "has no column 'record_id'"),
        ("empty", ["--max-contributions", "2", "--strict-input"], "is empty"),
        ("float", ["--max-contributions", "2"], "floating-point"),
        (
            "good",
            ["--capacities", "CAPS_NEG", "--max-contributions", "1", "--strict-input"],
            "negative capacities",
        ),
        (
            "good",
            ["--capacities", "CAPS_PART", "--strict-input"],
            "missing from the capacities table",
        ),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    spark: SparkSession,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: str,
    args: list[str],
    message: str,
) -> None:
    inp = str(tmp_path / "inc")
    if make == "good":
        _write_incidences(spark, inp, as_records(FIG1), content=False)
    elif make == "renamed":
        spark.createDataFrame([("e1", "A")], "rid string, uid string").write.parquet(inp)
    elif make == "empty":
        spark.createDataFrame([], "record_id string, user_id string").write.parquet(inp)
    else:
        spark.createDataFrame([(1.5, "A")], "record_id double, user_id string").write.parquet(inp)
    caps = {"CAPS_NEG": [("A", -1)], "CAPS_PART": [("A", 1)]}
    for name, rows in caps.items():
        if name in args:
            path = str(tmp_path / name)
            spark.createDataFrame(rows, "user_id string, cap long").write.parquet(path)
            args = [path if a == name else a for a in args]
    rc = main(["--input", inp, "--output", str(tmp_path / "out"), *args])
    assert rc == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_user_missing_from_the_capacities_gets_capacity_0(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Without a default b, an unlisted user reads as capacity 0 (no row decides the exit
    code): on TOY52 with only A listed (b = 1), the one record A owns alone is selected."""
    inp = str(tmp_path / "inc")
    _write_incidences(spark, inp, as_records(TOY52), content=False)
    caps = str(tmp_path / "caps")
    spark.createDataFrame([("A", 1)], "user_id string, cap long").write.parquet(caps)
    out = tmp_path / "out"
    assert main(["--input", inp, "--output", str(out), "--capacities", caps]) == 0
    assert {r["record_id"] for r in spark.read.parquet(str(out)).collect()} == {"r1"}


def test_invalid_record_weights_read_as_0_unless_strict(spark: SparkSession) -> None:
    """A null, NaN or infinite weight reads as 0, a key listed twice keeps its smallest
    weight, a null key is dropped; ``strict`` refuses each (docs/privacy/caveats.md#bad-rows)."""
    from spark_dp.contribution_bounding.record_weights import check_weights
    from spark_dp.errors import InputContractError

    rows = [("a", 2.0), ("b", None), ("c", float("nan")), ("d", float("inf")), ("e", 3.0)]
    rows += [("e", 1.0), (None, 5.0)]
    w = spark.createDataFrame(rows, "record_id string, weight double")
    read, _ = check_weights(w, per_user=False)
    got = {r["record_id"]: r["weight"] for r in read.collect()}
    assert got == {"a": 2.0, "b": 0.0, "c": 0.0, "d": 0.0, "e": 1.0}
    with pytest.raises(InputContractError, match="null, NaN or infinite"):
        check_weights(w, per_user=False, strict=True)
    twice = spark.createDataFrame([("e", 3.0), ("e", 1.0)], "record_id string, weight double")
    with pytest.raises(InputContractError, match="repeat a key"):
        check_weights(twice, per_user=False, strict=True)
