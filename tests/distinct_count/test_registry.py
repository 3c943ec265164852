"""The distinct-count registry: the one list of methods, plan(params) and run(pairs, plan, ...)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_dp.distinct_count import (
    DistinctCountParams,
    DistinctCountPlan,
    DistinctCountResult,
    dp_distinct_count,
    exact_curve,
    greedy_curve,
)
from spark_dp.distinct_count.registry import (
    METHODS,
    REGISTRY,
    CurveMethod,
    contribution_curve,
    curve_method,
)
from spark_dp.errors import ParameterError
from spark_dp.jobs.cli_args import build_parser
from spark_dp.jobs.distinct_count import SPEC
from spark_dp.logs import StageTimer, get_logger
from spark_dp.randomness import Randomness

SETS = {
    "ann": ["a", "b", "c", "d"],
    "bob": ["c", "d"],
    "cy": ["e"],
    "dee": ["a", "f", "g", "h", "i"],
    "eve": ["i", "j"],
}  # 10 distinct items


@pytest.fixture(scope="module")
def pairs(spark: SparkSession) -> DataFrame:
    rows = [(u, i) for u, items in SETS.items() for i in items]
    return spark.createDataFrame(rows, "user_id string, item string").cache()


def test_the_registry_is_the_one_list_of_methods() -> None:
    assert REGISTRY.names == METHODS == ("exact", "greedy")
    assert len(REGISTRY) == 2 and "greedy" in REGISTRY and "sampling" not in REGISTRY
    (action,) = [a for a in build_parser(SPEC)._actions if a.dest == "method"]
    assert tuple(action.choices or ()) == METHODS  # --method choices
    assert [a.name for a in REGISTRY] == list(METHODS)
    assert "Algorithm 1" in REGISTRY["exact"].summary
    assert "Algorithm 2" in REGISTRY["greedy"].summary
    for algorithm in REGISTRY:
        assert isinstance(algorithm.run, CurveMethod) and algorithm.run.name == algorithm.name


def test_unknown_method_names_the_known_ones() -> None:
    with pytest.raises(ParameterError, match="did you mean 'greedy'") as err:
        REGISTRY["gready"]
    assert "exact, greedy" in str(err.value)
    with pytest.raises(ParameterError, match="unknown distinct-count algorithm 'sampling'"):
        curve_method("sampling")


@pytest.mark.parametrize("method", METHODS)
def test_plan_is_data_free_and_follows_the_parameters(method: str) -> None:
    params = DistinctCountParams(epsilon=2.0, beta=0.1, method=method, max_contributions=40)
    plan = REGISTRY[method].plan(params)
    assert isinstance(plan, DistinctCountPlan)
    assert (plan.method, plan.epsilon, plan.beta, plan.max_contributions) == (method, 2.0, 0.1, 40)
    assert sum(step.epsilon for step in plan.steps) == 2.0
    assert plan.select.max_contributions == 40


@pytest.mark.parametrize(
    ("method", "reference"),
    [
        ("exact", lambda df, max_contributions: exact_curve(df, max_contributions).curve),
        ("greedy", greedy_curve),
    ],
)
def test_contribution_curve_dispatches_through_the_registry(
    pairs: DataFrame, method: str, reference: Callable[[DataFrame, int], np.ndarray]
) -> None:
    curve = contribution_curve(pairs, method, 6)
    np.testing.assert_array_equal(curve, reference(pairs, 6))
    np.testing.assert_array_equal(curve, curve_method(method).curve(pairs, 6))
    assert curve[-1] == 10  # every item is covered once ℓ ≥ the largest contribution


@pytest.mark.parametrize("method", METHODS)
def test_run_is_the_curve_then_the_release(pairs: DataFrame, method: str) -> None:
    algorithm = REGISTRY[method]
    plan = algorithm.plan(DistinctCountParams(epsilon=1.0, method=method, max_contributions=6))
    timer = StageTimer(get_logger("test"))
    result = algorithm.run(pairs, plan, Randomness.create(8), timer=timer, ell_blocks=1)
    assert isinstance(result, DistinctCountResult)
    assert result.plan is plan and result.count_function == curve_method(method).count_function
    curve = contribution_curve(pairs, method, 6)
    np.testing.assert_array_equal(result.curve, curve)
    # The same seeded release as the plain mechanism on the same curve.
    expected = dp_distinct_count(
        curve, epsilon=1.0, beta=0.05, randomness=Randomness.create(8), method=method
    )
    assert result.release == expected
    assert {f"{method} curve", "release"} <= set(timer.seconds)


def test_run_refuses_a_plan_of_another_method(pairs: DataFrame) -> None:
    plan = REGISTRY["exact"].plan(DistinctCountParams(epsilon=1.0, max_contributions=6))
    with pytest.raises(ParameterError, match="the plan is for method 'exact', not 'greedy'"):
        REGISTRY["greedy"].run(pairs, plan, Randomness.create(1))
