"""Generators: statistics (mean arity, empty fraction, degree skew, singletons), determinism,
and Spark frames equal to the numpy generators whatever the partitioning."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from spark_dp.errors import ParameterError
from spark_dp.generators import (
    heavy_light_user_items,
    regular_hypergraph,
    skewed_hypergraph,
    skewed_hypergraph_exact,
    zipf_user_items,
)
from spark_dp.generators.hypergraphs import n_users_for
from spark_dp.generators.spark_frames import hypergraph_frame, pairs_frame


def test_number_of_users_follows_m_equals_E_mu_over_du():
    # docs/design/bounding.md#generators
    assert n_users_for(125_000, 2, 2) == 125_000
    assert n_users_for(1_000_000, 2, 4) == 500_000
    assert n_users_for(8_000_000, 2, 8) == 2_000_000


def test_regular_graph_statistics():
    # docs/design/bounding.md#generators: mean size within ±1% of μ with empties included; empty
    # fraction within ±0.5 pp of e^-2; users in 0..m-1.
    g = regular_hypergraph(200_000, records_per_user=4, seed=3)
    sizes = g.sizes()
    assert abs((sizes.sum() / g.n_records) - 2.0) < 0.02
    assert abs(g.empty_records / g.n_records - math.exp(-2)) < 0.005
    assert len(sizes) + g.empty_records == g.n_records
    assert g.user_id.min() >= 0 and g.user_id.max() < g.n_users == 100_000
    assert abs(sizes.mean() - 2 / (1 - math.exp(-2))) < 0.02  # kept mean ≈ 2.313
    df = g.to_pandas()
    assert not df.duplicated().any()  # users within a record are distinct
    assert g.degrees().max() <= 25  # Poisson(4) tail: no hubs


def test_skewed_graph_is_skewed_and_keeps_mean_size():
    reg = regular_hypergraph(50_000, records_per_user=4, seed=1)
    sk = skewed_hypergraph(50_000, records_per_user=4, seed=1)
    assert sk.generator == "skewed_approx"
    assert abs(sk.sizes().sum() / sk.n_records - 2.0) < 0.03
    assert sk.degrees().max() > 20 * reg.degrees().max()
    assert not sk.to_pandas().duplicated().any()
    # A heavy tail: the top 1% of users hold a large share of the incidences.
    d = np.sort(sk.degrees())[::-1]
    assert d[: len(d) // 100].sum() > 0.3 * d.sum()


def test_skewed_exact_model_agrees_with_the_approximation_in_shape():
    ex = skewed_hypergraph_exact(3_000, records_per_user=8, seed=2)
    ap = skewed_hypergraph(3_000, records_per_user=8, seed=2)
    assert ex.generator == "skewed_exact"
    assert abs(ex.sizes().sum() / ex.n_records - 2.0) < 0.15  # capped p lowers it slightly
    # docs/design/bounding.md#skewed: a dominant hub and ~40% users of degree 0 in both models
    for g in (ex, ap):
        assert 0.25 < (g.degrees() == 0).mean() < 0.6
        assert g.degrees().max() > 0.2 * g.sizes().sum() / 2
    with pytest.raises(ParameterError, match="costs"):
        skewed_hypergraph_exact(100_000, records_per_user=1)


@pytest.mark.parametrize("gen", [regular_hypergraph, skewed_hypergraph])
def test_hypergraphs_are_deterministic(gen):
    a, b, c = gen(20_000, seed=5), gen(20_000, seed=5), gen(20_000, seed=6)
    np.testing.assert_array_equal(a.user_id, b.user_id)
    assert not np.array_equal(a.user_id[:1000], c.user_id[:1000])


def test_zipf_vocabulary_is_text_like():
    df = zipf_user_items(20_000, mean_items=36, exponent=1.3, seed=2)
    assert not df.duplicated().any()
    counts = df["item"].value_counts()
    assert (counts == 1).mean() > 0.5  # heavy tail of singletons, like text
    assert counts.iloc[0] > 0.8 * 20_000  # the most common word is in almost every set
    sizes = df.groupby("user_id").size()
    assert sizes.max() > 5 * sizes.median()  # heavy-tailed set sizes
    pd.testing.assert_frame_equal(df, zipf_user_items(20_000, mean_items=36, seed=2))
    with pytest.raises(ParameterError, match="exponent must be > 1"):
        zipf_user_items(10, exponent=1.0)


def test_heavy_light_example():
    df = heavy_light_user_items(1_000, n_light=50, seed=1)
    per_user = df.groupby("user_id")["item"].apply(set)
    assert len(per_user) == 1_000
    assert all(len(s) == 3 and "heavy" in s for s in per_user)
    assert not df.duplicated().any()


def test_spark_frames_equal_numpy_whatever_the_partitioning(spark):
    df, desc = hypergraph_frame(spark, "regular", n_records=30_000, records_per_user=2, seed=4)
    got = df.repartition(3).toPandas().sort_values(["record_id", "user_id"])
    want = regular_hypergraph(30_000, records_per_user=2, seed=4).to_pandas()
    want = want.sort_values(["record_id", "user_id"])
    np.testing.assert_array_equal(got.to_numpy(), want.to_numpy())
    assert desc["n_users"] == 30_000

    z, _ = pairs_frame(spark, "zipf", n_users=3_000, mean_items=20, seed=8)
    got = z.toPandas().sort_values(["user_id", "item"]).reset_index(drop=True)
    want = zipf_user_items(3_000, mean_items=20, seed=8).sort_values(["user_id", "item"])
    pd.testing.assert_frame_equal(got, want.reset_index(drop=True), check_dtype=False)

    h, _ = pairs_frame(spark, "heavy-light", n_users=500, n_light=20, seed=8)
    want = heavy_light_user_items(500, n_light=20, seed=8)
    assert sorted(map(tuple, h.toPandas().to_numpy())) == sorted(map(tuple, want.to_numpy()))
