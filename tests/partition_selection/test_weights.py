"""Spark weightings (Basic, Laplace, MAD, biased MAD) against hand values and the reference.

Hand values: docs/design/selection.md#fixtures fixtures F1 (unbiased MAD) and F2 (biased MAD).
Random inputs: several datasets are put side by side under disjoint names (a weighting acts on each
part alone), so one Spark run checks many cases: equality with the in-memory reference to 1e-9
(docs/design/selection.md#property-tests item 6) and the neighbour bounds (ℓ2 change ≤ 1 + 1e-9,
novel weight ≤ h(t)) on Spark's own output. Pre-capped inputs keep capping randomness out of the
picture.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from chispa import assert_approx_df_equality

from spark_dp.partition_selection.calibration import MadConstants
from spark_dp.partition_selection.columns import BIAS, ITEM, USER_ID, WEIGHT
from spark_dp.partition_selection.mad import max_adaptive_degree
from spark_dp.partition_selection.user_weights import user_weights
from spark_dp.partition_selection.weighting import (
    basic_weights,
    laplace_weights,
    unbiased_user_weights,
)
from tests.partition_selection.helpers import (
    as_dict,
    part,
    prefixed,
    random_biases,
    random_neighbour,
    random_sets,
)
from tests.reference import partition_selection as ref

F1 = {"u1": "AB", "u2": "AC", "u3": "ABCD", "u4": "A", "u5": "AEFGHI"}
F1_MAD = {"A": 2.713087, "B": 1.253982, "C": 1.253982, "D": 0.515625}
F1_MAD.update({i: 0.408248 for i in "EFGHI"})
F1_BASIC = {"A": 3.322462, "B": 1.207107, "C": 1.207107, "D": 0.5}
F1_BASIC.update({i: 0.408248 for i in "EFGHI"})

F2 = {
    "u1": "ABCD", "u2": "ABCE", "u3": "ABDE", "u4": "ACDE",
    "u5": "ABCF", "u6": "AB", "u7": "ABCDEF",
}  # fmt: skip
F2_BIAS = {"A": 0.4}
F2_MAD = {"A": 1.573303, "B": 3.621780, "C": 2.686365, "D": 2.124224, "E": 2.124224}
F2_MAD["F"] = 0.999940


def constants(tau, d_max, b_min=1.0, b_max=1.0) -> MadConstants:
    """MAD constants for a given τ (the fixtures fix τ instead of (ε, δ))."""
    return MadConstants(
        tau=tau,
        alpha=b_min - 1 / (2 * math.sqrt(d_max)),
        beta=0.0,
        max_adaptive_degree=d_max,
        min_adaptive_degree=math.ceil(1 / b_min**2),
        b_min=b_min,
        b_max=b_max,
    )


def biased_pairs(spark, sets: dict, bias: dict):
    rows = [(u, i, bias.get(i, 1.0)) for u, s in sets.items() for i in set(s)]
    return spark.createDataFrame(rows, f"{USER_ID} string, {ITEM} string, {BIAS} double")


def expected_df(spark, weights: dict):
    return spark.createDataFrame(
        sorted((i, float(w)) for i, w in weights.items()), f"{ITEM} string, {WEIGHT} double"
    )


def test_fixture_f1_basic_and_mad(spark, capped_df, cache):
    capped = capped_df(F1)
    sets = {u: set(s) for u, s in F1.items()}
    mad = cache.materialize(
        max_adaptive_degree(unbiased_user_weights(capped), constants(1.5, 4), cache)
    )
    basic = basic_weights(capped).localCheckpoint()
    # hand values (docs/design/selection.md#fixtures, 6 decimals)
    assert_approx_df_equality(
        mad, expected_df(spark, F1_MAD), precision=5e-7, ignore_row_order=True
    )
    assert_approx_df_equality(
        basic, expected_df(spark, F1_BASIC), precision=5e-7, ignore_row_order=True
    )
    # the reference, to 1e-9
    assert_approx_df_equality(
        mad,
        expected_df(spark, ref.mad_weights(sets, 1.5, 4)),
        precision=1e-9,
        ignore_row_order=True,
    )
    got = as_dict(mad)
    assert got["A"] >= 1.5  # a truncated item ends at ≥ τ
    assert all(got[i] >= as_dict(basic)[i] for i in "BCDEFGHI")  # untruncated: ≥ Basic


def test_fixture_f2_biased_mad(spark, cache):
    sets = {u: set(s) for u, s in F2.items()}
    pairs = biased_pairs(spark, sets, F2_BIAS)
    got = max_adaptive_degree(
        user_weights(pairs, 0.5, 2.0, cache), constants(1.0, 4, 0.5, 2.0), cache
    )
    got = got.localCheckpoint()
    assert_approx_df_equality(
        got, expected_df(spark, F2_MAD), precision=5e-7, ignore_row_order=True
    )
    expected = ref.mad_weights(sets, 1.0, 4, F2_BIAS, 0.5, 2.0)
    assert_approx_df_equality(
        got, expected_df(spark, expected), precision=1e-9, ignore_row_order=True
    )


def test_laplace_weights(spark, capped_df):
    sets = {u: set(s) for u, s in F1.items()}
    assert as_dict(laplace_weights(capped_df(F1))) == pytest.approx(ref.laplace_weights(sets))


def neighbour_parts(seed: int, n: int):
    """n random neighbouring pairs, laid out as parts 2k (S) and 2k + 1 (S plus v)."""
    rng = np.random.default_rng(seed)
    datasets, novel = [], []
    for _ in range(n):
        sets = random_sets(rng, int(rng.integers(1, 14)))
        bigger, new = random_neighbour(rng, sets)
        datasets += [sets, bigger]
        novel.append(new)
    return rng, datasets, novel


def check_neighbours(weights: dict, datasets: list, novel: list, h_scale: float) -> None:
    """ℓ2 change ≤ 1 + 1e-9 and novel weight ≤ h_scale/√t for each pair of parts."""
    for k, new in enumerate(novel):
        w, w2 = part(weights, 2 * k), part(weights, 2 * k + 1)
        assert ref.l2_change(w, w2) <= 1.0 + 1e-9
        if new:
            assert max(w2[i] for i in new) <= h_scale / math.sqrt(len(new)) + 1e-12


def test_spark_basic_on_random_neighbours(capped_df):
    _, datasets, novel = neighbour_parts(11, 12)
    got = as_dict(basic_weights(capped_df(prefixed(datasets))))
    expected = ref.basic_weights(prefixed(datasets))
    assert set(got) == set(expected)
    for i, w in expected.items():
        assert got[i] == pytest.approx(w, rel=1e-9)
    check_neighbours(got, datasets, novel, 1.0)


def test_spark_mad_on_random_neighbours(capped_df, cache):
    _, datasets, novel = neighbour_parts(12, 12)
    c = constants(1.7, 5)
    union = prefixed(datasets)
    got = as_dict(max_adaptive_degree(unbiased_user_weights(capped_df(union)), c, cache))
    expected = ref.mad_weights(union, c.tau, c.max_adaptive_degree)
    assert set(got) == set(expected)
    for i, w in expected.items():
        assert got[i] == pytest.approx(w, rel=1e-9, abs=1e-12)
    check_neighbours(got, datasets, novel, 1.0)


def test_spark_biased_mad_on_random_neighbours(spark, cache):
    # MAD2R round-2 style: b_min = 0.5, b_max = 2, biases on old and novel items.
    rng, datasets, novel = neighbour_parts(13, 12)
    union = prefixed(datasets)
    bias = random_biases(rng, {i for s in union.values() for i in s})
    for k in range(0, len(datasets), 2):  # the same bias on an item in S and in S plus v
        for i in {i for s in datasets[k + 1].values() for i in s}:
            b = bias.get(f"{k + 1}:{i}")
            if b is None:
                bias.pop(f"{k}:{i}", None)
            else:
                bias[f"{k}:{i}"] = b
    c = constants(1.3, 4, 0.5, 2.0)
    got = as_dict(
        max_adaptive_degree(
            user_weights(biased_pairs(spark, union, bias), 0.5, 2.0, cache), c, cache
        )
    )
    expected = ref.mad_weights(union, c.tau, 4, bias, 0.5, 2.0)
    assert set(got) == set(expected)
    for i, w in expected.items():
        assert got[i] == pytest.approx(w, rel=1e-9, abs=1e-12)
    check_neighbours(got, datasets, novel, 2.0)
