"""The data-free calibration plan (``spark-dp calibrate``) is what the mechanisms really use."""

from __future__ import annotations

import json

import pytest

from spark_dp import cli
from spark_dp.errors import ParameterError
from spark_dp.partition_selection import PartitionSelectionParams, run_selection
from spark_dp.partition_selection.params import ALGORITHMS
from spark_dp.partition_selection.plan import calibration_table, round_plan
from spark_dp.randomness import Randomness


@pytest.fixture(scope="module")
def pairs(spark):
    rows = [(f"u{u}", f"w{(u * 7 + k) % 23}") for u in range(60) for k in range(1 + u % 5)]
    return spark.createDataFrame(rows, "user_id string, item string").dropDuplicates()


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_plan_equals_the_rounds_a_run_reports(pairs, algorithm):
    split = (0.05, 0.15, 0.8) if algorithm == "dp-sips" else (0.3, 0.7)
    params = PartitionSelectionParams(
        algorithm=algorithm, epsilon=2.0, delta=1e-4, max_items_per_user=4, split=split
    )
    selection = run_selection(pairs, params, Randomness.create(seed=3))
    reported = [
        {k: v for k, v in r.to_report().items() if k != "output_items"} for r in selection.rounds
    ]
    assert reported == round_plan(params)


def test_table_has_a_row_per_round_and_the_spec_vector():
    table = calibration_table(1.0, 1e-5, 100)
    assert [r["algorithm"] for r in table].count("mad2r") == 2
    assert {r["algorithm"] for r in table} == set(ALGORITHMS)
    basic = next(r for r in table if r["algorithm"] == "basic")
    # spec partition_selection.md test vector: ε = 1, δ = 1e-5, Δ0 = 100
    assert basic["sigma"] == pytest.approx(3.884141, abs=1e-6)
    assert basic["rho"] == pytest.approx(20.789744, abs=1e-6)
    assert all(r["epsilon"] > 0 and 0 < r["delta"] < 1 for r in table)


def test_table_rejects_bad_budgets():
    with pytest.raises(ParameterError, match="epsilon"):
        calibration_table(0.0, 1e-5, 100)
    with pytest.raises(ParameterError, match="max_items_per_user"):
        calibration_table(1.0, 1e-5, 0)


def test_calibrate_command(capsys):
    assert cli.main(["calibrate", "--epsilon", "1", "--delta", "1e-5", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == calibration_table(1.0, 1e-5, 100, split=(0.1, 0.9))
    assert cli.main(["calibrate", "--split", "0.05,0.15,0.8"]) == 0
    assert capsys.readouterr().out.count("dp-sips") == 3
    assert cli.main(["calibrate", "--delta", "2"]) == 2
    assert "delta must lie strictly between 0 and 1" in capsys.readouterr().err
