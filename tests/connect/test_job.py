"""A spark_dp job over Spark Connect (issue 16.4): ``partition_selection`` run in-process while
the Connect session is active (what a notebook or an orchestrator on a Connect client does).

It reads Parquet, selects with MAD2R, writes the items atomically and writes its report naming
the Connect application: the job runner and spark_dp.io use no JVM on a Connect session.
"""

from __future__ import annotations

import json

import pytest

from spark_dp.jobs.partition_selection import main
from spark_dp.randomness.key_file import write_key_file


def test_partition_selection_job_over_connect(spark, server, tmp_path):
    rows = [(f"u{u}", "common") for u in range(300)] + [(f"u{u}", f"solo{u}") for u in range(300)]
    spark.createDataFrame(rows, "user_id string, item string").write.parquet(
        str(tmp_path / "pairs")
    )
    out = tmp_path / "items"
    code = main(
        [
            "--input", str(tmp_path / "pairs"),
            "--output", str(out),
            "--algorithm", "mad2r",
            "--epsilon", "1",
            "--delta", "1e-5",
            "--seed", "3",
        ]
    )  # fmt: skip
    assert code == 0
    assert [r["item"] for r in spark.read.parquet(str(out)).collect()] == ["common"]
    report = json.loads((tmp_path / "items.report.json").read_text())
    assert report["spark"]["application_id"] == server.applicationId


def test_the_budget_rules_hold_over_connect(spark, tmp_path):
    """Over Spark Connect (the runner's path for a Connect session, as in its direct mode): the
    charge becomes durable before the read, a data-dependent error afterwards stays charged, a
    retry of a committed request costs nothing more, and the same request to another output is
    refused without reading or charging (docs/privacy/budget.md)."""

    from spark_dp.budget import BudgetStore

    store = f"sqlite:///{tmp_path / 'budget.db'}"
    with BudgetStore.open(store) as s:
        s.set_cap("words", 1.0, 1e-3)
    key = tmp_path / "key"
    write_key_file(key)
    rows = [(f"u{u}", f"w{u % 7}") for u in range(200)]
    spark.createDataFrame(rows, "user_id string, item string").write.parquet(str(tmp_path / "ok"))
    spark.createDataFrame([*rows, (None, "w1")], "user_id string, item string").write.parquet(
        str(tmp_path / "nulls")
    )
    common = ["--epsilon", "0.4", "--noise-key-file", str(key), "--budget-store", store]
    common += ["--dataset-id", "words", "--log-level", "WARNING"]
    nulls = ["--input", str(tmp_path / "nulls"), "--strict-input"]
    assert main([*nulls, "--output", str(tmp_path / "n"), *common]) == 2  # found in the rows
    ok = ["--input", str(tmp_path / "ok"), *common]
    assert main([*ok, "--output", str(tmp_path / "a")]) == 0
    assert main([*ok, "--output", str(tmp_path / "a"), "--overwrite"]) == 0  # a retry: left as is
    assert main([*ok, "--output", str(tmp_path / "b")]) == 2  # the same request elsewhere
    assert not (tmp_path / "b").exists()
    with BudgetStore.open(store) as s:
        (row,) = s.summary()
        states = [r.shown_state for r in s.runs()]
    assert states == ["failed (charged)", "committed"]
    assert row.spent_epsilon == pytest.approx(0.8) and row.reserved_epsilon == 0
