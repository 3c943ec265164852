"""The registry is the one list of algorithms: plans without data, runs, calibrate, the job."""

from __future__ import annotations

import json

import pytest

from spark_dp import cli
from spark_dp.dp.calibration import Budget
from spark_dp.errors import ParameterError
from spark_dp.jobs.cli_args import build_parser
from spark_dp.jobs.partition_selection import SPEC
from spark_dp.partition_selection import (
    ALGORITHMS,
    REGISTRY,
    PartitionSelectionParams,
    SelectionPlan,
    calibration_table,
    plan_selection,
)
from spark_dp.partition_selection.calibration import MadRound, WeightAndThreshold
from spark_dp.report import Step
from tests.partition_selection.helpers import select


@pytest.fixture(scope="module")
def pairs(spark):
    rows = [(f"u{u}", f"w{(u * 7 + k) % 23}") for u in range(60) for k in range(1 + u % 5)]
    return spark.createDataFrame(rows, "user_id string, item string").dropDuplicates()


def test_the_registry_is_the_list_of_algorithms():
    assert ALGORITHMS == REGISTRY.names
    (action,) = [a for a in build_parser(SPEC)._actions if a.dest == "algorithm"]
    assert tuple(action.choices or ()) == REGISTRY.names  # --algorithm choices
    assert all(a.summary in str(action.help) for a in REGISTRY)
    with pytest.raises(ParameterError, match="did you mean 'mad2r'"):
        REGISTRY["mad2"]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_run_spends_exactly_its_plan(pairs, algorithm):
    split = (0.05, 0.15, 0.8) if algorithm == "dp-sips" else (0.3, 0.7)
    params = dict(algorithm=algorithm, epsilon=2.0, delta=1e-4, max_contributions=4, split=split)
    selection = select(pairs, 3, **params)
    reported = [
        {k: v for k, v in r.to_report().items() if k != "output_items"} for r in selection.rounds
    ]
    plan = plan_selection(PartitionSelectionParams(**params))
    assert reported == plan.to_report()
    assert plan.epsilon == pytest.approx(2.0) and plan.delta == pytest.approx(1e-4)
    assert selection.algorithm == algorithm


def test_mad2r_plans_two_mad_rounds_with_the_bias_rule():
    plan = plan_selection(PartitionSelectionParams(algorithm="mad2r"))
    one, two = plan.calibration(0, MadRound), plan.calibration(1, MadRound)
    assert one.gaussian == WeightAndThreshold.for_budget(Budget(0.1 * 1.0, 0.1 * 1e-5), 100)
    assert two.gaussian == WeightAndThreshold.for_budget(
        Budget(0.9 * 1.0, 0.9 * 1e-5), 100, h_scale=2.0
    )
    assert (two.c_lb, two.c_ub) == (1.0, 3.0) and one.c_lb is None
    with pytest.raises(TypeError, match="not WeightAndThreshold"):
        plan.calibration(0, WeightAndThreshold)


def test_table_has_a_row_per_round_and_the_spec_vector():
    table = calibration_table(PartitionSelectionParams(algorithm="basic"))
    assert [r["algorithm"] for r in table].count("mad2r") == 2
    assert {r["algorithm"] for r in table} == set(ALGORITHMS)
    basic = next(r for r in table if r["algorithm"] == "basic")
    # docs/design/selection.md test vector: ε = 1, δ = 1e-5, Δ0 = 100
    assert basic["sigma"] == pytest.approx(3.884141, abs=1e-6)
    assert basic["rho"] == pytest.approx(20.789744, abs=1e-6)
    assert all(r["epsilon"] > 0 and 0 < r["delta"] < 1 for r in table)
    three = PartitionSelectionParams(algorithm="dp-sips", split=(0.05, 0.15, 0.8))
    assert [r["round"] for r in calibration_table(three, ["dp-sips", "mad2r"])] == [
        "round 1", "round 2", "round 3", "round 1", "round 2",
    ]  # fmt: skip


def test_bad_budgets_fail_when_the_parameters_are_built_or_planned():
    with pytest.raises(ParameterError, match="epsilon"):
        PartitionSelectionParams(epsilon=0.0)
    with pytest.raises(ParameterError, match="max_contributions"):
        PartitionSelectionParams(max_contributions=0)
    mad2r_with_three = PartitionSelectionParams(algorithm="mad2r", split=(0.2, 0.3, 0.5))
    with pytest.raises(ParameterError, match="exactly two shares for mad2r"):
        plan_selection(mad2r_with_three)  # the algorithm's check: its plan, before any data


def test_calibrate_command_reads_the_parameter_flags(capsys):
    assert cli.main(["calibrate", "--epsilon", "1", "--delta", "1e-5", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == calibration_table(PartitionSelectionParams(algorithm="basic"))
    assert cli.main(["calibrate", "--epsilon", "1", "--split", "0.05,0.15,0.8"]) == 0
    assert capsys.readouterr().out.count("dp-sips") == 3
    argv = ["calibrate", "--epsilon", "1", "--algorithm", "mad", "--truncation-beta", "3"]
    assert cli.main([*argv, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["tau"] == pytest.approx(row["rho"] + 3 * row["sigma"])
    assert cli.main(["calibrate", "--epsilon", "1", "--delta", "2"]) == 2
    assert "delta must lie strictly between 0 and 1" in capsys.readouterr().err


def test_a_plan_stores_its_cap_once_in_its_rounds():
    plan = plan_selection(PartitionSelectionParams(algorithm="mad2r", max_contributions=7))
    assert plan.max_contributions == 7 == plan.steps[1].calibration.max_contributions
    other = WeightAndThreshold.for_budget(Budget(0.5, 1e-6), 8)
    steps = (plan.steps[0], Step("round 2", other))
    with pytest.raises(ValueError, match="one cap"):
        SelectionPlan("mad2r", steps, weighting="w", reference="r")
