"""The private choice of Δ0 on the driver: the score's sensitivity, its exact sums, GEM's draw
(docs/design/tuning.md). The Spark pass and the release are in test_auto.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from spark_dp.budget import noise_steps
from spark_dp.dp.calibration import Budget
from spark_dp.errors import ParameterError
from spark_dp.partition_selection import PartitionSelectionParams, plan_selection
from spark_dp.partition_selection.auto.calibration import (
    TERM_SCALE,
    TERM_SLACK,
    WEIGHT_CAP,
    DeltaChoice,
    fixed_point_weight,
    quantized_terms,
    score_sensitivity,
)
from spark_dp.partition_selection.auto.plan import AutoPlan
from spark_dp.randomness import Randomness
from tests.reference import partition_selection as ref

SIGMA = 4.278258674541638  # Basic's σ at (0.9, 1e-5): docs/design/tuning.md#exact-sums


# docs/design/tuning.md#exact-sums: Δ(c) = min(c, √c/(σ√(2π))) + c·2^−30
@pytest.mark.parametrize(
    ("candidate", "sigma", "expected"),
    [
        (1, SIGMA, 0.0932487525),
        (100, SIGMA, 0.9324876091),
        (1000, SIGMA, 2.9487853714),
        (4, 0.1, 4.0 + 4 * 2.0**-30),  # a small σ: every kept item can move by a whole term
    ],
)
def test_score_sensitivity_vectors(candidate, sigma, expected):
    assert score_sensitivity(candidate, sigma) == pytest.approx(expected, rel=1e-9)


def test_the_choice_is_calibrated_at_the_selection_budget():
    choice = DeltaChoice.for_budget(0.1, Budget(0.9, 1e-5), (1, 100, 1000))
    assert choice.candidates == (1, 100, 1000)
    assert choice.scores[0].sigma == pytest.approx(SIGMA, rel=1e-9)
    assert [s.rho for s in choice.scores] == pytest.approx([19.8978105, 22.8891007, 24.5491615])
    assert choice.margin == pytest.approx(2 / 0.1 * math.log(3 / 0.05))
    assert (choice.delta, choice.delta_noise) == (0.0, 0.0)


def test_fixed_point_weights_and_terms():
    assert fixed_point_weight(1) == 2**32 and fixed_point_weight(4) == 2**31
    assert fixed_point_weight(2) == math.floor(2**32 / math.sqrt(2))
    w = np.array([0, 2**32, 20 * 2**32, 10**4 * 2**32], dtype=np.int64)
    terms = quantized_terms(w, SIGMA, 19.9)
    expected = [
        math.floor(
            min(1.0, max(0.0, ref.phi((x / 2**32 - 19.9) / SIGMA) - ref.phi(-19.9 / SIGMA))) * 2**32
        )
        for x in w.tolist()
    ]
    assert terms[0] == 0  # an item of weight 0 scores as an absent one
    assert np.abs(terms - np.array(expected)).max() <= 1  # erfc against ndtr: one unit at most
    assert terms[-1] == math.floor((1.0 - ref.phi(-19.9 / SIGMA)) * 2**32)


def _ranked(rng, n_users: int, max_degree: int) -> dict:
    pool = [f"i{k}" for k in range(12)] + [f"r{k}" for k in range(30)]
    out = {}
    for u in range(n_users):
        d = int(rng.integers(1, max_degree + 1))
        out[f"u{u}"] = [str(x) for x in rng.choice(pool, size=min(d, len(pool)), replace=False)]
    return out


def _totals(ranked: dict, candidates, sigma: float, rhos) -> list[int]:
    """The package's terms (the pandas UDF's function) over the reference's exact weights."""
    out = []
    for c, rho in zip(candidates, rhos, strict=True):
        weights: dict = {}
        for items in ranked.values():
            share = int(fixed_point_weight(min(len(items), c)))
            for i in items[:c]:
                weights[i] = weights.get(i, 0) + share
        w = np.fromiter(weights.values(), dtype=np.int64, count=len(weights))
        out.append(int(quantized_terms(w, sigma, rho).sum()))
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.floats(0.2, 6.0),
    st.lists(st.sampled_from([1, 2, 3, 5, 8, 13, 40]), min_size=1, max_size=4, unique=True),
)
def test_score_moves_by_at_most_its_sensitivity_on_random_neighbours(seed, sigma, candidates):
    # add (or, read backwards, remove) one user v with all its items, some only v holds; the
    # thresholds sit where v's items are, so the terms move most (docs/design/tuning.md#sensitivity)
    rng = np.random.default_rng(seed)
    ranked = _ranked(rng, int(rng.integers(0, 20)), 15)
    d = int(rng.integers(1, 50))
    novel = [f"new{k}" for k in range(int(rng.integers(0, d + 1)))]
    old = [f"i{k}" for k in rng.permutation(12)[: d - len(novel)]]
    bigger = {**ranked, "v": [str(x) for x in rng.permutation(novel + old)]}
    rhos = []
    for c in candidates:  # ρ(c) at the weight of one of v's kept items, give or take σ
        item = bigger["v"][int(rng.integers(min(len(bigger["v"]), c)))]
        w = sum(1 / math.sqrt(min(len(s), c)) for s in ranked.values() if item in s[:c])
        rhos.append(max(0.05, w + float(rng.uniform(-sigma, sigma))))
    a = _totals(ranked, candidates, sigma, rhos)
    b = _totals(bigger, candidates, sigma, rhos)
    for c, x, y in zip(candidates, a, b, strict=True):
        assert y >= x  # adding a user never lowers a weight, and g is increasing
        assert (y - x) / TERM_SCALE <= score_sensitivity(c, sigma)


def test_the_sensitivity_is_tight():
    # k items each exactly 1/(2√k) below ρ: v's 1/√k moves each term by ≈ φ(0)/(σ√k)
    k, sigma, rho = 25, 3.0, 10.0
    ranked = {f"u{j}": [f"i{j}"] for j in range(k)}  # weight 1 each
    gap = rho - 1.0 - 1.0 / (2.0 * math.sqrt(k))
    lift = {f"w{j}": [f"i{j}" for j in range(k)] for j in range(int(gap * math.sqrt(k) + 0.5))}
    base = {**ranked, **lift}
    bigger = {**base, "v": [f"i{j}" for j in range(k)]}
    a, b = _totals(base, [k], sigma, [rho]), _totals(bigger, [k], sigma, [rho])
    change = (b[0] - a[0]) / TERM_SCALE
    assert 0.98 * score_sensitivity(k, sigma) <= change <= score_sensitivity(k, sigma)


def test_items_only_the_new_user_holds_stay_within_the_bound():
    # the uncentred score Σ Φ((w − ρ)/σ) would move by k·Φ(−ρ/σ) more than the Lipschitz bound
    # allows when v's items are novel; the centred one does not
    k, sigma, rho = 1000, 5.0, 1.0
    bigger = {"v": [f"n{j}" for j in range(k)]}
    (b,) = _totals(bigger, [k], sigma, [rho])
    assert b / TERM_SCALE <= score_sensitivity(k, sigma)
    uncentred = k * ref.phi((1 / math.sqrt(k) - rho) / sigma)
    assert uncentred > min(k, math.sqrt(k) / (sigma * math.sqrt(2 * math.pi))) + k * TERM_SLACK


def test_the_package_terms_match_the_reference_totals():
    rng = np.random.default_rng(7)
    ranked = _ranked(rng, 200, 14)
    candidates, rhos = [1, 3, 10], [2.0, 3.5, 6.0]
    mine = _totals(ranked, candidates, 1.3, rhos)
    theirs = ref.tuning_totals(ranked, candidates, 1.3, rhos)
    n_items = len({i for s in ranked.values() for i in s})
    assert all(abs(x - y) <= n_items for x, y in zip(mine, theirs, strict=True))
    assert all(x > 0 for x in mine)


def test_gem_draws_come_from_the_keyed_stream_with_the_right_frequencies():
    choice = DeltaChoice.for_budget(0.4, Budget(0.9, 1e-5), (1, 3, 10, 30, 100))
    totals = [int(s * TERM_SCALE) for s in (10.0, 12.0, 16.0, 22.0, 32.0)]
    p = choice.probabilities(totals)
    assert p.argmax() == 4 and p.min() > 0.1  # a spread distribution: the test has power
    root = Randomness.create(99).bind("test-tuning")
    same = [choice.choose(totals, root.child("tuning", k).driver()) for k in range(50)]
    again = [choice.choose(totals, root.child("tuning", k).driver()) for k in range(50)]
    assert same == again  # the same stream, the same choice
    n = 6000
    draws = [choice.choose(totals, root.child("draw", k).driver()) for k in range(n)]
    observed = np.array([draws.count(c) for c in choice.candidates], dtype=float)
    assert chisquare(observed, p * n).pvalue > 1e-4
    # a choice at 2·ε_t is told apart: its distribution fails the same test
    doubled = DeltaChoice(2 * choice.epsilon, choice.scores).probabilities(totals)
    assert chisquare(observed, doubled * n).pvalue < 1e-6


def test_auto_plans_reserve_the_release_total_and_one_event_per_round():
    plan = plan_selection(PartitionSelectionParams(algorithm="mad2r", max_contributions="auto"))
    assert isinstance(plan, AutoPlan)
    assert plan.epsilon == pytest.approx(1.0, rel=1e-12) and plan.delta == pytest.approx(1e-5)
    labels = [s.label for s in plan.steps]
    assert labels == ["private choice of Δ0", "round 1", "round 2"]
    noise = noise_steps(plan.steps)
    assert [n.kind for n in noise] == ["discrete_laplace", "gaussian", "gaussian"]
    assert noise[0].epsilon == pytest.approx(0.05)
    # every candidate's round has the same σ: the round's event is that σ's
    sigmas = {p.steps[1].calibration.sigma for p in plan.plans}
    assert len(sigmas) == 1 and noise[2].event.noise_multiplier == pytest.approx(sigmas.pop())
    # MAD2R's two Gaussian rounds compose with room for the choice: the PLD certificate
    # leaves them the whole ε (docs/design/tuning.md#composition)
    assert plan.composition is not None and plan.composition.selection_epsilon == 1.0
    assert plan.plan_for(30).max_contributions == 30 and plan.plans[0].epsilon == pytest.approx(1.0)


def test_a_candidate_whose_event_differs_is_left_to_basic_composition():
    plan = plan_selection(
        PartitionSelectionParams(algorithm="truncated-geometric", max_contributions="auto")
    )
    # truncated geometric has no accountant event at any Δ0: basic composition for its round
    assert [n.kind for n in noise_steps(plan.steps)] == ["discrete_laplace"]


@pytest.mark.parametrize(
    ("values", "match"),
    [
        (
            {"max_contributions": "automatic"},
            r"--max-contributions\) must be an integer >= 1 or 'auto'",
        ),
        ({"max_contributions": "auto", "tuning_share": 1.0}, "tuning_share"),
        ({"max_contributions": "auto", "tuning_share": 0.0}, "tuning_share"),
        ({"max_contributions": "auto", "tuning_candidates": ()}, "tuning_candidates"),
        ({"max_contributions": "auto", "tuning_candidates": (0, 5)}, "tuning_candidates"),
        ({"max_contributions": "auto", "tuning_candidates": (5, 10**7)}, "tuning_candidates"),
    ],
)
def test_bad_auto_parameters_name_the_problem(values, match):
    with pytest.raises(ParameterError, match=match):
        PartitionSelectionParams(**values)


def test_the_candidates_are_sorted_and_a_fixed_plan_refuses_auto():
    p = PartitionSelectionParams(max_contributions="auto", tuning_candidates=(100, 3, 3, 10))
    assert p.tuning_candidates == (3, 10, 100) and p.auto
    with pytest.raises(ParameterError, match="plan_selection"):
        _ = p.fixed_max_contributions()


# --------------------------------------------------------------------------- exact sums


@pytest.mark.parametrize("ansi", ["false", "true"])
def test_the_exact_sums_hold_past_the_range_of_a_long(spark, ansi):
    """Crafted rows at the boundary: four terms of 2^63 − 1 and one of 2^62 + 5 (a sum past
    2^65, what 2^33 items' terms of 2^32 add up to). The exact sum is exact in either ANSI mode;
    the ``long`` sum the choice used before wraps (Spark 3.5's default) or fails (Spark 4's)."""
    from decimal import Decimal

    from pyspark.sql import functions as F

    from spark_dp.partition_selection.auto.scores import exact_sum

    values = [2**63 - 1] * 4 + [2**62 + 5]
    frame = spark.createDataFrame([(v,) for v in values], "v bigint")
    previous = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        total = frame.agg(exact_sum(F.col("v"))).first()[0]
        assert isinstance(total, Decimal) and int(total) == sum(values)
        try:
            as_long = frame.agg(F.sum("v")).first()[0]
        except Exception as exc:  # Spark 4 / ANSI: ARITHMETIC_OVERFLOW
            assert "overflow" in str(exc).lower() and ansi == "true"
        else:
            assert as_long != sum(values) and ansi == "false"  # wrapped silently
    finally:
        spark.conf.set("spark.sql.ansi.enabled", previous)


def test_weights_are_clipped_to_an_exact_double_and_summed_exactly(spark):
    from decimal import Decimal

    from pyspark.sql import functions as F

    from spark_dp.partition_selection.auto.scores import candidate_weights, clipped_weight

    totals = [Decimal(2**53 - 1), Decimal(2**53), Decimal(2**70), None]
    frame = spark.createDataFrame([(t,) for t in totals], "t decimal(38,0)")
    clipped = [r[0] for r in frame.select(clipped_weight(F.col("t"))).collect()]
    assert clipped == [2**53 - 1, 2**53, 2**53, 0] == [min(int(t or 0), WEIGHT_CAP) for t in totals]
    # the package's terms see the same clip: a weight past the cap scores as the cap
    big = np.array([WEIGHT_CAP, 2**60, 2**63 - 1], dtype=np.int64)
    assert len(set(quantized_terms(big, SIGMA, 19.9).tolist())) == 1
    ranked = spark.createDataFrame(
        [("u", "a", 1, 1), ("v", "a", 2, 3), ("v", "b", 1, 3)],
        "user_id string, item string, cap_rank int, degree long",
    )
    weights = candidate_weights(ranked, (1, 2))
    plan = weights._jdf.queryExecution().optimizedPlan().toString()
    assert plan.count("as decimal(38,0)") == 2  # each candidate's sum, in decimal(38,0)
    got = {r["item"]: (r["_w1_private"], r["_w2_private"]) for r in weights.collect()}
    # u keeps 1 item; v keeps min(3, c): ⌊2^32/√1⌋ at c = 1 (its rank-1 item b), ⌊2^32/√2⌋ at 2
    one, half = int(fixed_point_weight(1)), int(fixed_point_weight(2))
    assert got == {"a": (one, one + half), "b": (one, half)}
