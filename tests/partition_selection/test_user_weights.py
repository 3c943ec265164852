"""UserWeights (Alg. 4 ICML / Alg. 2 arXiv; docs/design/selection.md#user-weights): vectors F3,
properties, Spark path."""

from __future__ import annotations

import math

import numpy as np
import pytest
from chispa import assert_approx_df_equality
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_dp.partition_selection.columns import BIAS, DEGREE, ITEM, USER_ID, USER_WEIGHT
from spark_dp.partition_selection.layout import by_user, keep
from spark_dp.partition_selection.user_weights import (
    user_weights,
    user_weights_arrays,
    weights_from_sums,
    with_user_sums,
)
from tests.reference import partition_selection as ref


def one_user(bias: list[float], b_min: float, b_max: float) -> np.ndarray:
    return user_weights_arrays(np.array(bias), np.array([len(bias)]), b_min, b_max)


# docs/design/selection.md#fixtures, F3 (values to 6 decimals)
F3 = [
    ([0.3, 0.8, 1.0, 1.0], 0.5, 2.0, [0.25, 0.4, 0.623498, 0.623498]),  # no loop
    ([0.5, 0.5, 0.5, 1.0], 0.5, 1.2, [0.461880, 0.461880, 0.461880, 0.6]),  # loop once
    ([0.2, 0.6, 0.9], 0.5, 2.0, [0.419591, 0.503509, 0.755263]),  # all biased
]


@pytest.mark.parametrize(("bias", "b_min", "b_max", "expected"), F3)
def test_fixture_f3(bias, b_min, b_max, expected):
    w = one_user(bias, b_min, b_max)
    np.testing.assert_allclose(w, expected, atol=5e-7)
    assert abs(float(np.sum(w * w)) - 1.0) < 1e-9


def test_unbiased_or_b_min_one_gives_one_over_sqrt_d():
    np.testing.assert_allclose(one_user([1.0] * 7, 0.5, 2.0), [1 / math.sqrt(7)] * 7, rtol=1e-15)
    np.testing.assert_allclose(one_user([0.2, 0.9, 1.0], 1.0, 1.0), [1 / math.sqrt(3)] * 3)


def test_many_users_at_once_equal_each_user_alone():
    users = [[0.3, 0.8, 1.0, 1.0], [1.0], [0.2, 0.6, 0.9], [0.5, 0.5, 0.5, 1.0], [0.7] * 12]
    flat = np.concatenate([np.array(u) for u in users])
    w = user_weights_arrays(flat, np.array([len(u) for u in users]), 0.5, 1.2)
    parts = np.split(w, np.cumsum([len(u) for u in users])[:-1])
    for u, part in zip(users, parts, strict=True):
        np.testing.assert_allclose(part, one_user(u, 0.5, 1.2), rtol=1e-14)


user_sets = st.lists(
    st.lists(st.one_of(st.just(1.0), st.floats(0.01, 0.999)), min_size=1, max_size=60),
    min_size=1,
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(user_sets, st.floats(0.5, 1.0), st.floats(1.0, 4.0))
def test_vectorized_equals_reference_and_keeps_lemma_b4(users, b_min, b_max):
    flat = np.concatenate([np.array(u) for u in users])
    lengths = np.array([len(u) for u in users])
    w = user_weights_arrays(flat, lengths, b_min, b_max)
    parts = np.split(w, np.cumsum(lengths)[:-1])
    for u, part in zip(users, parts, strict=True):
        d = len(u)
        expected = ref.user_weights(range(d), dict(enumerate(u)), b_min, b_max)
        np.testing.assert_allclose(part, [expected[i] for i in range(d)], rtol=1e-9)
        # Lemma B.4 / 5.4: norm 1 and every weight in [b_min/√d, b_max/√d].
        assert abs(float(np.sum(part * part)) - 1.0) < 1e-9
        assert np.all(part >= b_min / math.sqrt(d) * (1 - 1e-9))
        assert np.all(part <= b_max / math.sqrt(d) * (1 + 1e-9))


@pytest.mark.parametrize("kept", [False, True], ids=["lazy", "kept-sums"])
def test_spark_user_weights_match_the_reference(spark, cache, kept):
    # docs/design/selection.md#fixtures, F2 (b(A) = 0.4, b_min = 0.5, b_max = 2): users without a
    # loop, computed in SQL; plus users whose loop runs (all items biased; unbiased item capped at
    # b_max/√d), which go through the pandas UDF.
    sets = {
        "u1": "ABCD", "u2": "ABCE", "u3": "ABDE", "u4": "ACDE",
        "u5": "ABCF", "u6": "AB", "u7": "ABCDEF", "u8": "XY",
        "all-biased": ["c1", "c2", "c3"], "capped": ["b1", "b2", "b3", "b4", "b5", "Z"],
        "one-biased": ["c1"],
    }  # fmt: skip
    bias = {"A": 0.4, "c1": 0.2, "c2": 0.6, "c3": 0.9}
    bias.update({f"b{k}": 0.5 for k in range(1, 6)})
    rows = [(u, i, bias.get(i, 1.0)) for u, s in sets.items() for i in s]
    pairs = spark.createDataFrame(rows, f"{USER_ID} string, {ITEM} string, {BIAS} double")
    if kept:  # as MAD2R's round 2: sums kept with the pairs, partitioned by user, read twice
        sums = keep(with_user_sums(by_user(pairs), 0.5, 2.0), cache)
        got = cache.materialize(weights_from_sums(sums, 0.5, 2.0, cache))
    else:
        got = cache.materialize(user_weights(pairs, 0.5, 2.0, cache))
    expected_rows = []
    for u, s in sets.items():
        wb = ref.user_weights(s, bias, 0.5, 2.0)
        expected_rows += [(u, i, len(s), wb[i]) for i in s]
    expected = spark.createDataFrame(expected_rows, got.schema)
    assert_approx_df_equality(
        got, expected, precision=1e-12, ignore_row_order=True, ignore_nullable=True
    )
    w = {(r[USER_ID], r[ITEM]): r[USER_WEIGHT] for r in got.collect()}
    # hand values of F2 and F3 (docs/design/selection.md#fixtures)
    assert w[("u1", "A")] == pytest.approx(0.25)
    assert w[("u1", "B")] == pytest.approx(0.559017, abs=1e-6)
    assert w[("u6", "A")] == pytest.approx(0.353553, abs=1e-6)
    assert w[("u6", "B")] == pytest.approx(0.935414, abs=1e-6)
    assert w[("u7", "A")] == pytest.approx(0.204124, abs=1e-6)
    assert w[("u7", "F")] == pytest.approx(0.437798, abs=1e-6)
    assert w[("u8", "X")] == pytest.approx(1 / math.sqrt(2))
    assert [w[("all-biased", c)] for c in ("c1", "c2", "c3")] == pytest.approx(
        [0.419591, 0.503509, 0.755263], abs=1e-6
    )
    assert w[("capped", "Z")] == pytest.approx(2 / math.sqrt(6))  # b_max/√d
    assert w[("one-biased", "c1")] == pytest.approx(1.0)
    assert {r[DEGREE] for r in got.where(f"{USER_ID} = 'u7'").collect()} == {6}
