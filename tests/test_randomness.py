"""Randomness: modes, stream independence, partition-independent seeded noise, distributions."""

from __future__ import annotations

import numpy as np
import pytest
from pyspark.sql import functions as F
from scipy import stats

from spark_dp.errors import ParameterError
from spark_dp.randomness import (
    Randomness,
    add_noise_column,
    gaussian_from_uniforms,
    laplace_from_uniforms,
    materialize,
)


def test_modes_and_report():
    assert not Randomness.create().seeded
    r = Randomness.create(5)
    assert r.seeded and r.to_report()["production_safe"] is False
    assert "NOT FOR PRODUCTION" in r.to_report()["warning"]
    assert Randomness.create().to_report() == {
        "mode": "entropy",
        "source": "os.urandom",
        "production_safe": True,
    }
    with pytest.raises(ParameterError, match="seed must be an integer"):
        Randomness.create("7")


def test_streams_are_reproducible_and_distinct():
    a = Randomness.create(1).child("noise", 1).driver().gaussian(1.0, 5)
    b = Randomness.create(1).child("noise", 1).driver().gaussian(1.0, 5)
    c = Randomness.create(1).child("noise", 2).driver().gaussian(1.0, 5)
    d = Randomness.create(2).child("noise", 1).driver().gaussian(1.0, 5)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c) and not np.allclose(a, d)


def test_entropy_mode_never_repeats():
    r = Randomness.create()
    assert not np.allclose(r.driver().uniform(4), r.driver().uniform(4))
    assert r.key64("x") != r.key64("x")


@pytest.mark.parametrize("mode", ["seeded", "entropy"])
def test_driver_samplers_have_the_right_distribution(mode):
    r = Randomness.create(3 if mode == "seeded" else None).driver()
    n = 20_000
    assert stats.kstest(r.uniform(n), "uniform").pvalue > 1e-4
    assert stats.kstest(r.gaussian(2.5, n) / 2.5, "norm").pvalue > 1e-4
    assert stats.kstest(r.laplace(0.7, n) / 0.7, "laplace").pvalue > 1e-4


def test_uniforms_stay_in_the_open_interval():
    from spark_dp.randomness import _uniform_from_bits

    u = _uniform_from_bits(np.array([0, 2**64 - 1], dtype=np.uint64))
    assert 0.0 < u[0] < 1e-15 and 1.0 - 1e-15 < u[1] < 1.0
    assert u[0] == 2.0**-53 and u[1] == 1.0 - 2.0**-53
    assert np.isfinite(gaussian_from_uniforms(u, u)).all()
    assert np.isfinite(laplace_from_uniforms(u, u[::-1])).all()


def test_categorical_follows_weights():
    r = Randomness.create(11).driver()
    lw = np.log(np.array([0.5, 0.3, 0.2]))
    draws = np.array([r.categorical(lw + 1000.0) for _ in range(6000)])  # shift: no overflow
    counts = np.bincount(draws, minlength=3)
    assert stats.chisquare(counts, 6000 * np.array([0.5, 0.3, 0.2])).pvalue > 1e-4


def _noise(spark, seed, partitions, distribution="gaussian", shuffle=False):
    df = spark.range(2000).select(F.concat(F.lit("item"), F.col("id")).alias("item"))
    if shuffle:
        df = df.orderBy(F.rand(1))
    df = df.repartition(partitions)
    r = Randomness.create(seed).child("noise", 1)
    out = add_noise_column(
        df, ["item"], "noise_private", distribution=distribution, scale=2.0, randomness=r
    )
    return {row["item"]: row["noise_private"] for row in out.collect()}


def test_seeded_noise_depends_on_key_not_partitioning(spark):
    a = _noise(spark, 9, 1)
    b = _noise(spark, 9, 5, shuffle=True)
    assert a == b
    c = _noise(spark, 10, 1)
    assert a != c


@pytest.mark.parametrize("distribution", ["gaussian", "laplace"])
def test_dataframe_noise_distribution(spark, distribution):
    vals = np.array(list(_noise(spark, 4, 3, distribution).values())) / 2.0
    ref = "norm" if distribution == "gaussian" else "laplace"
    assert stats.kstest(vals, ref).pvalue > 1e-4


def test_entropy_noise_is_materialized_once(spark):
    df = spark.range(500).select(F.col("id").cast("string").alias("item"))
    noisy = add_noise_column(
        df, ["item"], "n", distribution="gaussian", scale=1.0, randomness=Randomness.create()
    )
    first = materialize(noisy)
    a = sorted(r["n"] for r in first.collect())
    b = sorted(r["n"] for r in first.collect())
    assert a == b  # the same draws on every read after materialize
    c = sorted(r["n"] for r in materialize(noisy).collect())
    assert a != c  # a new materialization is a new draw: entropy mode is not replayable


def test_bad_distribution_name(spark):
    with pytest.raises(ValueError, match="distribution must be"):
        add_noise_column(
            spark.range(1),
            ["id"],
            "n",
            distribution="cauchy",
            scale=1.0,
            randomness=Randomness.create(1),
        )
