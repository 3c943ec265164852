"""Classic count thresholding in Spark: the keep probability and the three strategies."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from spark_dp.calibration import GaussianThresholding, LaplaceThresholding, TruncatedGeometric
from spark_dp.partition_selection import count_thresholding
from spark_dp.partition_selection.classic import keep_probability_column
from spark_dp.randomness import Randomness
from tests.partition_selection.conftest import item_set


@pytest.mark.parametrize(("eps", "delta", "k"), [(0.5, 0.02, 1), (1.0, 1e-5, 10)])
def test_spark_keep_probability_equals_the_calibration(spark, eps, delta, k):
    tg = TruncatedGeometric.for_budget(eps, delta, k)
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
    sel = count_thresholding(
        graded(spark), strategy="truncated-geometric", epsilon=0.5, delta=0.02,
        max_partitions=1, randomness=Randomness.create(31),
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
        ("laplace-thresholding", LaplaceThresholding.for_budget(1.0, 1e-5, 1)),
        ("gaussian-thresholding", GaussianThresholding.for_budget(1.0, 1e-5, 1)),
    ],
)
def test_threshold_strategies_keep_with_the_calibrated_probability(spark, strategy, cal):
    # Items whose user count sits next to the threshold T are kept with probability
    # P(n + noise ≥ T); single-user items essentially never.
    mid = round(cal.threshold)
    sel = count_thresholding(
        graded(spark, mid), strategy=strategy, epsilon=1.0, delta=1e-5, max_partitions=1,
        randomness=Randomness.create(32),
    )  # fmt: skip
    items = item_set(sel.items)
    if strategy == "laplace-thresholding":
        p = stats.laplace.sf(cal.threshold - mid, scale=cal.scale)
    else:
        p = stats.norm.sf(cal.threshold - mid, scale=cal.sigma)
    assert abs(mid_rate(items) - p) < 4 * math.sqrt(p * (1 - p) / 3000)
    assert {"big", "forty"} <= items
    assert not any(i.startswith("single") for i in items)
    assert sel.rounds[0].calibration["threshold"] == cal.threshold
