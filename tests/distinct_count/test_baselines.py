"""Baselines (docs/design/counting.md#baselines): contribution quantiles, max utility, fixed ℓ,
sampling counter, R2T."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pyspark.sql import SparkSession

from spark_dp.distinct_count.baselines import (
    contribution_quantiles,
    fixed_ell_release,
    max_utility_ell,
    r2t_release,
    sampling_curve,
)
from spark_dp.errors import ParameterError
from spark_dp.randomness import Randomness
from tests.distinct_count.helpers import FASHION, exact


def test_max_utility_ell_reproduces_table_4() -> None:
    # docs/design/counting.md#experiments: argmax DC(D; ℓ) − ℓ·ln(500) on the Fashion curve is ℓ =
    # 17 (DC = 1428).
    assert max_utility_ell(FASHION, epsilon=1.0, beta=0.001) == 17
    assert FASHION[16] == 1428


def test_fixed_ell_release_scale_and_shift() -> None:
    draws = np.array(
        [
            fixed_ell_release(
                1000, 5, epsilon=0.5, noise=Randomness.create(s).bind("test").driver()
            )
            for s in range(4000)
        ]
    )
    assert np.var(draws) == pytest.approx(2 * (5 / 0.5) ** 2, rel=0.1)  # Lap(ℓ/ε)
    shifted = fixed_ell_release(
        1000, 5, epsilon=0.5, noise=Randomness.create(1).bind("test").driver(), beta=0.05
    )
    plain = fixed_ell_release(
        1000, 5, epsilon=0.5, noise=Randomness.create(1).bind("test").driver()
    )
    assert plain - shifted == pytest.approx(10 * math.log(10))


def test_r2t_terms_and_lower_bound() -> None:
    curve = np.minimum(np.arange(1, 129) * 40, 3000)
    # With a huge ε the noise and shift vanish: the largest term c(τ_J) = c(128) wins.
    big = r2t_release(
        curve,
        epsilon=1e9,
        beta=0.05,
        max_contributions=100,
        noise=Randomness.create(3).bind("test").driver(),
    )
    assert big == pytest.approx(3000, abs=1e-3)
    below = [
        r2t_release(
            curve,
            epsilon=1.0,
            beta=0.1,
            max_contributions=100,
            noise=Randomness.create(s).bind("test").driver(),
        )
        <= 3000
        for s in range(500)
    ]
    assert np.mean(below) >= 0.9  # a 1 − β lower bound (by a union bound, usually far above)
    with pytest.raises(ParameterError, match="needs the curve up to"):
        r2t_release(
            curve[:100],
            epsilon=1.0,
            beta=0.1,
            max_contributions=100,
            noise=Randomness.create(1).bind("test").driver(),
        )


def test_contribution_quantiles_and_sampling_curve(spark: SparkSession) -> None:
    rng = np.random.default_rng(8)
    sets = [sorted(rng.choice(60, size=int(rng.integers(1, 20)), replace=False)) for _ in range(40)]
    rows = [(f"p{i}", f"x{x}") for i, u in enumerate(sets) for x in u]
    df = spark.createDataFrame(rows, "user_id string, item string")
    deg = np.array([len(u) for u in sets])
    q = contribution_quantiles(df, quantiles=(0.9, 0.5))
    assert q == {
        "max": deg.max(),
        "q0.9": int(np.quantile(deg, 0.9)),
        "q0.5": int(np.quantile(deg, 0.5)),
    }

    max_contributions = 22
    s1 = sampling_curve(df, max_contributions, Randomness.create(1).bind("test"))
    s2 = sampling_curve(df.repartition(3), max_contributions, Randomness.create(1).bind("test"))
    c = exact([[f"x{x}" for x in u] for u in sets], max_contributions)
    assert s1.tolist() == s2.tolist()  # a function of (seed, user, item) only
    assert np.all(np.diff(s1) >= 0) and np.all(s1 <= c)
    assert s1[0] >= 1 and s1[-1] == c[-1] == len({x for u in sets for x in u})  # ℓ ≥ max |u_i|
    assert (
        sampling_curve(df, max_contributions, Randomness.create(2).bind("test")).tolist()
        != s1.tolist()
    )
