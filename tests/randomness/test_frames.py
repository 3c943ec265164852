"""Keyed noise in DataFrames: a function of (key, stream, row key) only, recomputable."""

from __future__ import annotations

import numpy as np
import pytest
from pyspark.sql import functions as F
from scipy import stats

from spark_dp.randomness import Randomness, add_noise_column
from spark_dp.randomness import continuous as C
from spark_dp.randomness.prf import prf_words, row_digest


def items(spark, n=2000, partitions=2, shuffle=False):
    df = spark.range(n).select(F.concat(F.lit("item"), F.col("id")).alias("item"))
    if shuffle:
        df = df.orderBy(F.rand(1))
    return df.repartition(partitions)


def noise(df, randomness, distribution="gaussian", scale=2.0):
    out = add_noise_column(
        df, ["item"], "noise_private", distribution=distribution, scale=scale, randomness=randomness
    )
    return {r["item"]: r["noise_private"] for r in out.collect()}


@pytest.mark.parametrize("distribution", ["gaussian", "laplace"])
def test_spark_noise_is_the_prf_at_the_row_key(spark, distribution):
    r = Randomness.create(4).bind("test").child("noise", 1)
    got = noise(items(spark, 300), r, distribution)
    names = sorted(got)
    blocks = b"".join(row_digest([name]) for name in names)
    words = prf_words(r.stream_key, [0, 1], blocks)[:, : C.WORDS[distribution]]
    sampler = C.gaussian if distribution == "gaussian" else C.laplace
    expected = 2.0 * sampler(words)
    assert [got[n] for n in names] == expected.tolist()  # bit for bit


def test_noise_depends_on_the_key_not_on_partitioning_or_order(spark):
    r = Randomness.create(9).bind("test").child("noise", 1)
    a = noise(items(spark, partitions=1), r)
    assert a == noise(items(spark, partitions=5, shuffle=True), r)
    assert a != noise(items(spark), Randomness.create(10).bind("test").child("noise", 1))
    assert a != noise(items(spark), Randomness.create(9).bind("test").child("noise", 2))


def test_entropy_keys_give_new_noise_and_each_key_recomputes_its_own(spark):
    r = Randomness.create().bind("test")
    df = add_noise_column(
        items(spark, 500), ["item"], "n", distribution="gaussian", scale=1.0, randomness=r
    )
    first = sorted(x["n"] for x in df.collect())
    assert first == sorted(x["n"] for x in df.collect())  # a second action: the same noise
    cached = df.cache()
    assert first == sorted(x["n"] for x in cached.collect())
    cached.unpersist()
    assert first != sorted(
        noise(items(spark, 500), Randomness.create().bind("test"), scale=1.0).values()
    )


@pytest.mark.parametrize("mode", ["keyed", "entropy"])
@pytest.mark.parametrize("distribution", ["gaussian", "laplace"])
def test_dataframe_noise_distribution(spark, distribution, mode):
    randomness = (
        Randomness.create(4).bind("test") if mode == "keyed" else Randomness.create().bind("test")
    )
    vals = np.array(list(noise(items(spark, 30_000, 3), randomness, distribution).values()))
    ref = "norm" if distribution == "gaussian" else "laplace"
    assert stats.kstest(vals / 2.0, ref).pvalue > 1e-4


def test_bad_distribution_name(spark):
    with pytest.raises(ValueError, match="distribution must be"):
        add_noise_column(
            spark.range(1), ["id"], "n", distribution="cauchy", scale=1.0,
            randomness=Randomness.create(1).bind("test"),
        )  # fmt: skip
