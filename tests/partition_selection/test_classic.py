"""Classic count thresholding in Spark: the keep probability and the three strategies."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from spark_dp.dp.calibration import Budget, gaussian_sigma
from spark_dp.partition_selection import calibration as cl
from spark_dp.partition_selection.calibration import (
    GaussianThresholding,
    LaplaceThresholding,
    TruncatedGeometric,
)
from spark_dp.partition_selection.classic import keep_probability_column
from tests.partition_selection.helpers import item_set, select


def rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


@pytest.mark.parametrize(("eps", "delta", "k"), [(0.5, 0.02, 1), (1.0, 1e-5, 10)])
def test_spark_keep_probability_equals_the_calibration(spark, eps, delta, k):
    tg = TruncatedGeometric.for_budget(Budget(eps, delta), k)
    n = np.arange(1, tg.crossover_2 + 6)
    df = spark.createDataFrame([(float(x),) for x in n], "n double")
    got = [r["p"] for r in df.select(keep_probability_column(df["n"], tg).alias("p")).collect()]
    np.testing.assert_allclose(got, tg.keep_probability(n), rtol=1e-12, atol=1e-300)


def graded(spark, mid: int = 6):
    """Items held by 1, ``mid`` (×3000), 40 and 400 users; each user holds one item (k = 1)."""
    rows = [(f"one{k}", f"single{k}") for k in range(200)]
    rows += [(f"mid{k}-{j}", f"mid{k}") for k in range(3000) for j in range(mid)]
    rows += [(f"forty{j}", "forty") for j in range(40)]
    rows += [(f"big{j}", "big") for j in range(400)]
    return spark.createDataFrame(rows, "user_id string, item string")


def mid_rate(items: set) -> float:
    return sum(1 for i in items if i.startswith("mid")) / 3000


def test_truncated_geometric_keeps_with_the_published_probability(spark):
    # ε = 0.5, δ = 0.02, k = 1: P(keep | 6 users) = 0.58840484458 (issue 3).
    sel = select(
        graded(spark), 31, algorithm="truncated-geometric", epsilon=0.5, delta=0.02,
        max_contributions=1,
    )  # fmt: skip
    items = item_set(sel.items)
    p = 0.58840484458
    assert abs(mid_rate(items) - p) < 4 * math.sqrt(p * (1 - p) / 3000)
    assert {"forty", "big"} <= items  # p = 1 beyond the second crossover (n2 = 11)
    singles = sum(1 for i in items if i.startswith("single"))
    assert singles <= 15  # p(1) = δ = 0.02: expect 4 of 200


@pytest.mark.parametrize(
    ("strategy", "cal"),
    [
        ("laplace-thresholding", LaplaceThresholding.for_budget(Budget(1.0, 1e-5), 1)),
        ("gaussian-thresholding", GaussianThresholding.for_budget(Budget(1.0, 1e-5), 1)),
    ],
)
def test_threshold_strategies_keep_with_the_calibrated_probability(spark, strategy, cal):
    # Items whose user count sits next to the threshold T are kept with probability
    # P(n + noise ≥ T); single-user items essentially never.
    mid = round(cal.threshold)
    sel = select(graded(spark, mid), 32, algorithm=strategy, max_contributions=1)
    items = item_set(sel.items)
    if strategy == "laplace-thresholding":
        p = stats.laplace.sf(cal.threshold - mid, scale=cal.scale)
    else:
        p = stats.norm.sf(cal.threshold - mid, scale=cal.sigma)
    assert abs(mid_rate(items) - p) < 4 * math.sqrt(p * (1 - p) / 3000)
    assert {"big", "forty"} <= items
    assert not any(i.startswith("single") for i in items)
    assert sel.rounds[0].calibration["threshold"] == cal.threshold


@pytest.mark.parametrize(
    ("users", "expected"),
    [(6, 0.58840484458), (8, 0.86807080625), (15, 1.0), (1, 0.02)],
)
def test_truncated_geometric_published_vector(users, expected):
    # issue 3: truncated geometric with ε = 0.5, δ = 0.02, k = 1.
    tg = cl.TruncatedGeometric.for_budget(Budget(0.5, 0.02), 1)
    assert rel(float(tg.keep_probability(users)), expected) < 1e-6


def test_laplace_thresholding_published_threshold():
    assert rel(cl.laplace_thresholding_threshold(Budget(0.5, 0.02), 1), 7.43775164974) < 1e-6
    lt = cl.LaplaceThresholding.for_budget(Budget(0.5, 0.02), 1)
    assert lt.scale == 2.0
    assert lt.threshold == cl.laplace_thresholding_threshold(Budget(0.5, 0.02), 1)


def test_gaussian_thresholding_published_threshold_from_stddev():
    # issue 3: σ = 10, δ = 1e-5 (the threshold's own share), k = 10.
    t = cl.gaussian_thresholding_threshold(10.0, 1e-5, 10)
    assert rel(t, 48.53423399421888) < 1e-6


@pytest.mark.parametrize(
    ("eps", "delta", "k"), [(0.5, 0.02, 1), (1.0, 1e-5, 1), (1.0, 1e-5, 100), (3.0, 1e-9, 7)]
)
def test_truncated_geometric_satisfies_the_dp_inequalities(eps, delta, k):
    # For one item and one partition-level ε', δ': p(n) ≤ e^ε' p(n−1) + δ' and
    # 1 − p(n−1) ≤ e^ε' (1 − p(n)) + δ' for every n ≥ 1 (keep and drop events), p(1) = δ'.
    tg = cl.TruncatedGeometric.for_budget(Budget(eps, delta), k)
    n = np.arange(0, tg.crossover_2 + 5)
    p = tg.keep_probability(n)
    e, d = tg.adjusted_epsilon, tg.adjusted_delta
    assert p[0] == 0.0
    assert rel(p[1], d) < 1e-9
    assert np.all(np.diff(p) >= 0)
    assert np.all(p[1:] <= math.exp(e) * p[:-1] + d + 1e-12)
    assert np.all(1 - p[:-1] <= math.exp(e) * (1 - p[1:]) + d + 1e-12)
    assert p[tg.crossover_2 + 1] == 1.0
    assert p[tg.crossover_2] < 1.0


def test_adjusted_delta_is_the_inverse_of_the_union_bound():
    for delta, k in [(1e-5, 1), (1e-5, 100), (0.3, 7), (1e-15, 1000)]:
        d = cl.adjusted_delta(delta, k)
        assert rel(-math.expm1(k * math.log1p(-d)), delta) < 1e-9


@pytest.mark.parametrize(("eps", "delta", "k"), [(0.5, 0.02, 1), (1.0, 1e-5, 10), (1.0, 0.9, 1)])
def test_laplace_thresholding_keeps_a_novel_item_with_probability_adjusted_delta(eps, delta, k):
    # P(1 + Laplace(k/ε) ≥ T) = δ' on both branches of the formula.
    t = cl.laplace_thresholding_threshold(Budget(eps, delta), k)
    p = stats.laplace.sf(t - 1.0, scale=k / eps)
    assert rel(p, cl.adjusted_delta(delta, k)) < 1e-9


def test_gaussian_thresholding_splits_delta_and_uses_sqrt_k():
    g = cl.GaussianThresholding.for_budget(Budget(1.0, 1e-5), 10)
    assert g.delta_noise == g.delta_threshold == 5e-6
    assert g.sigma == gaussian_sigma(Budget(1.0, 5e-6), sensitivity=math.sqrt(10))
    p = stats.norm.sf(g.threshold - 1.0, scale=g.sigma)
    assert rel(p, cl.adjusted_delta(5e-6, 10)) < 1e-9
    assert g.to_report()["l2_sensitivity"] == math.sqrt(10)
