"""``--max-contributions auto`` on Spark: nested caps, the scores' one pass against the
reference, neighbours, and the release at the chosen Δ0 (docs/design/tuning.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from chispa import assert_df_equality

from spark_dp.caching import CacheScope
from spark_dp.dp.calibration import Budget
from spark_dp.logs import StageTimer, get_logger
from spark_dp.partition_selection import PartitionSelectionParams, plan_selection, select_partitions
from spark_dp.partition_selection.auto.calibration import (
    TERM_SCALE,
    DeltaChoice,
    score_sensitivity,
)
from spark_dp.partition_selection.auto.plan import AutoPlan
from spark_dp.partition_selection.auto.scores import (
    candidate_weights,
    choose_max_contributions,
    score_totals,
)
from spark_dp.partition_selection.capping import cap_user_items, nested_cap, ranked_cap
from spark_dp.partition_selection.columns import CAP_RANK, ITEM, USER_ID
from spark_dp.randomness import Randomness
from spark_dp.report import PrivacyReport
from tests.partition_selection.helpers import item_set
from tests.reference import partition_selection as ref


def _pairs(spark, sets: dict):
    rows = [(u, i) for u, items in sets.items() for i in items]
    return spark.createDataFrame(rows, f"{USER_ID} string, {ITEM} string")


def _sets(seed: int, n_users: int, max_degree: int) -> dict:
    rng = np.random.default_rng(seed)
    pool = [f"p{k}" for k in range(15)] + [f"r{k}" for k in range(200)]
    out = {}
    for u in range(n_users):
        d = int(rng.integers(1, max_degree + 1))
        out[f"u{u}"] = [str(x) for x in rng.choice(pool, size=d, replace=False)]
    return out


def _ranked_lists(ranked) -> dict:
    out: dict = {}
    for r in sorted(ranked.collect(), key=lambda r: (r[USER_ID], r[CAP_RANK])):
        out.setdefault(r[USER_ID], []).append(r[ITEM])
    return out


def _choice(candidates, epsilon: float = 8.0, delta: float = 0.01) -> DeltaChoice:
    # a large budget: small σ and ρ, so the terms of this small data are far from 0 and 1
    return DeltaChoice.for_budget(0.5, Budget(epsilon, delta), tuple(candidates))


def test_the_nested_cap_is_the_cap(spark):
    pairs = _pairs(spark, _sets(1, 60, 30))
    stream = Randomness.create(5).bind("test").child("capping", 1)
    ranked = ranked_cap(pairs, 30, stream)
    for c in (1, 3, 7, 30):
        assert_df_equality(
            nested_cap(ranked, c),
            cap_user_items(pairs, c, stream),
            ignore_row_order=True,
            ignore_nullable=True,
        )


def test_the_one_pass_scores_are_the_reference_scores(spark):
    pairs = _pairs(spark, _sets(2, 400, 25))
    candidates = (1, 3, 10, 30)
    stream = Randomness.create(6).bind("test").child("capping", 1)
    ranked = ranked_cap(pairs, max(candidates), stream)
    choice = _choice(candidates)
    totals = score_totals(candidate_weights(ranked, candidates), choice.scores)
    sigma, rhos = choice.scores[0].sigma, [s.rho for s in choice.scores]
    expected = ref.tuning_totals(_ranked_lists(ranked), candidates, sigma, rhos)
    n_items = ranked.select(ITEM).distinct().count()
    for got, want in zip(totals, expected, strict=True):
        assert abs(got - want) <= n_items  # erfc against ndtr: one unit per term at most
        assert got > TERM_SCALE  # the case has terms far from 0: the comparison means something


def test_an_exact_small_case(spark):
    # every user holds at most two items: at c = 2 and 3 no ranking matters
    sets = {"u1": ["a", "b"], "u2": ["a"], "u3": ["a", "c"], "u4": ["c"]}
    choice = _choice((2, 3), epsilon=20.0, delta=0.1)
    ranked = ranked_cap(_pairs(spark, sets), 3, Randomness.create(1).bind("t").child("x"))
    totals = score_totals(candidate_weights(ranked, (2, 3)), choice.scores)
    half = math.floor(2**32 / math.sqrt(2))
    weights = {"a": 2 * half + 2**32, "b": half, "c": half + 2**32}
    for got, calibration in zip(totals, choice.scores, strict=True):
        sigma, rho = calibration.sigma, calibration.rho
        base = ref.phi(-rho / sigma)
        want = sum(
            math.floor((ref.phi((w / 2**32 - rho) / sigma) - base) * 2**32)
            for w in weights.values()
        )
        assert abs(got - want) <= 3 and want > 2**30


def test_adding_a_user_moves_the_spark_scores_within_their_sensitivity(spark):
    candidates = (1, 3, 10, 40)
    choice = _choice(candidates)
    stream = Randomness.create(8).bind("test").child("capping", 1)
    sets = _sets(3, 300, 20)
    bigger = {**sets, "v": [f"p{k}" for k in range(15)] + [f"novel{k}" for k in range(25)]}
    scores = []
    for data in (sets, bigger):
        ranked = ranked_cap(_pairs(spark, data), max(candidates), stream)
        scores.append(score_totals(candidate_weights(ranked, candidates), choice.scores))
    for c, sigma, a, b in zip(candidates, [choice.scores[0].sigma] * 4, *scores, strict=True):
        assert 0 <= (b - a) / TERM_SCALE <= score_sensitivity(c, sigma)


@pytest.mark.parametrize("algorithm", ["basic", "mad2r", "dp-sips"])
def test_an_auto_release_is_the_algorithm_at_the_chosen_bound(spark, algorithm):
    pairs = _pairs(spark, _sets(4, 600, 30))
    params = PartitionSelectionParams(
        algorithm=algorithm, epsilon=8.0, delta=1e-3, max_contributions="auto"
    )
    plan = plan_selection(params)
    assert isinstance(plan, AutoPlan)
    randomness = Randomness.create(11).bind("test-auto")
    with select_partitions(pairs, plan, randomness, validate=False) as auto:
        chosen = auto.max_contributions
        assert chosen in plan.candidates and auto.tuning is not None
        with select_partitions(pairs, plan.plan_for(chosen), randomness, validate=False) as fixed:
            assert item_set(auto.items) == item_set(fixed.items)
            assert auto.output_items == fixed.output_items > 0
        report = PrivacyReport("partition_selection")
        auto.fill_report(report)
    assert report.epsilon_spent == pytest.approx(8.0) and report.delta_spent == pytest.approx(1e-3)
    privacy = report.to_dict()["privacy"]
    first = privacy["steps"][0]
    assert first["label"] == "private choice of Δ0" and first["chosen_max_contributions"] == chosen
    assert first["epsilon"] == pytest.approx(8.0 * params.tuning_share) and first["delta"] == 0.0
    # the PLD certificate: the rounds get more than ε − ε_t, the steps add up to more than ε
    assert plan.composition is not None and auto.tuning.composition == plan.composition
    assert privacy["certificate"]["selection_epsilon"] == plan.composition.selection_epsilon
    assert sum(s["epsilon"] for s in privacy["steps"]) > 8.0 >= plan.plans[0].epsilon > 7.6
    assert first["sensitivities"] == list(plan.choice.sensitivities)
    assert report.parameters["max_contributions_chosen"] == chosen
    assert str(chosen) in report.mechanism["max_contributions"]


@pytest.mark.slow
def test_auto_lands_within_one_grid_step_of_the_known_best_bound(spark):
    # 2,800 users with exactly 10 of 400 items each: at Δ0 ≥ 10 every item keeps its whole
    # weight (≈ 70/√10 ≈ 22, at the threshold), below it weights shrink, above it ρ grows, so the
    # best fixed Δ0 of the grid is 10 (checked below from the exact expected counts at the whole
    # ε). A choice that picked at random among the 7 candidates would land in {3, 10, 30} with
    # probability 3/7, and fail this test with probability above 0.99.
    rng = np.random.default_rng(1)
    sets = {f"u{u}": [f"i{x}" for x in rng.choice(400, 10, replace=False)] for u in range(2800)}
    grid = (1, 3, 10, 30, 100, 300, 1000)
    full = DeltaChoice.for_budget(0.1, Budget(1.0, 1e-5), grid)  # Basic at the whole ε
    expected = ref.tuning_totals(sets, grid, full.scores[0].sigma, [s.rho for s in full.scores])
    best = grid[int(np.argmax(expected))]
    assert best == 10
    pairs = _pairs(spark, sets).cache()
    plan = plan_selection(PartitionSelectionParams(algorithm="basic", max_contributions="auto"))
    assert isinstance(plan, AutoPlan)
    near = {grid[grid.index(best) + k] for k in (-1, 0, 1)}
    chosen = []
    for key in range(20):
        randomness = Randomness.create(100 + key).bind(f"utility-{key}")
        with CacheScope() as cache:
            tuning, _ = choose_max_contributions(
                pairs, plan.choice, randomness, timer=StageTimer(get_logger("test")), cache=cache
            )
        chosen.append(tuning.max_contributions)
    pairs.unpersist()
    assert sum(c in near for c in chosen) >= 16, chosen  # ≥ 80% of the keys
