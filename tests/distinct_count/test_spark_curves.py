"""Spark curves equal the local references, whatever the partitioning, order or strategy.

docs/design/counting.md#tests items 1–3. Few, representative Spark runs (each costs seconds).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_dp.distinct_count import exact_curve, exact_curve_local, greedy_curve
from spark_dp.distinct_count.greedy_curve import person_order_key
from tests.reference.distinct_count import dc_matching, greedy_from_scratch

ELL_MAX = 14
Data = tuple[DataFrame, NDArray[np.int64], "pd.Series[Any]"]


def _dataset() -> list[tuple[str, str]]:
    """Zipf-like text persons (one big component with a non-trivial core), small separate
    components, dense blocks whose core survives peeling, and a non-ASCII item."""
    rng = np.random.default_rng(20)
    rows = set()
    for u in range(70):
        for w in np.minimum(rng.zipf(1.4, size=int(rng.integers(1, 30))), 400):
            rows.add((f"u{u:03d}", f"w{w}"))
    for c in range(4):  # 4 small components: 5 persons sharing 4 items (cores at ℓ = 1)
        for p in range(5):
            for k in range(3):
                rows.add((f"c{c}p{p}", f"c{c}x{(p + k) % 4}"))
    for p in range(6):  # a dense block: 6 persons × 8 of 10 items
        for k in range(8):
            rows.add((f"d{p}", f"dx{(p + k) % 10}"))
    rows.add(("u000", "wörd"))
    return sorted(rows)


@pytest.fixture(scope="module")
def data(spark: SparkSession) -> Data:
    rows = _dataset()
    df = spark.createDataFrame(rows, "user_id string, item string").cache()
    pdf = pd.DataFrame(rows, columns=["user_id", "item"])
    person, _ = pd.factorize(pdf["user_id"])
    item, _ = pd.factorize(pdf["item"])
    local = exact_curve_local(person, item, ELL_MAX)
    sets = pdf.groupby("user_id")["item"].apply(list)
    return df, local, sets


def test_local_curve_matches_the_independent_reference(data: Data) -> None:
    _, local, sets = data
    for ell in (1, 2, 3, 7, ELL_MAX):
        assert local[ell - 1] == dc_matching(sets.tolist(), ell)
    assert local[0] < local[-1]  # the test data is not saturated at ℓ = 1


def test_spark_exact_curve_default_strategy(data: Data) -> None:
    df, local, _ = data
    result = exact_curve(df, ELL_MAX)
    assert result.curve.tolist() == local.tolist()
    assert result.stats["spark_rounds"] == 0 and result.stats["components"] == "not split"
    assert 0 < result.stats["core_rows"] < df.count()  # the first round removed edges


def test_spark_exact_curve_rounds_components_blocks_and_reordering(
    spark: SparkSession, data: Data
) -> None:
    df, local, _ = data
    shuffled = df.orderBy(F.rand(7)).repartition(5)
    old = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "7")
    try:
        result = exact_curve(
            shuffled,
            ELL_MAX,
            components="dataframe",
            spark_rounds=3,
            spark_rounds_min_rows=0,
            components_min_rows=0,
            ell_blocks=3,
        )
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", old)
    assert result.curve.tolist() == local.tolist()
    assert result.stats["spark_rounds"] >= 2
    assert result.stats["components"] >= 5  # the separate pieces were found


def test_spark_exact_curve_one_partition_one_round_long_range(
    spark: SparkSession, data: Data
) -> None:
    # ℓ_max far beyond the largest contribution: the tail is the first round's closed form.
    df, local, _ = data
    rows = df.toPandas()
    person, _ = pd.factorize(rows["user_id"])
    item, _ = pd.factorize(rows["item"])
    want = exact_curve_local(person, item, 300)
    assert want[:ELL_MAX].tolist() == local.tolist()
    old = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    try:
        result = exact_curve(
            df.coalesce(1), 300, spark_rounds=1, spark_rounds_min_rows=0, ell_blocks=2
        )
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", old)
    assert result.curve.tolist() == want.tolist()
    assert result.stats["spark_rounds"] == 1


def test_spark_greedy_curve_equals_the_reference_with_the_same_orders(
    spark: SparkSession, data: Data
) -> None:
    df, local, sets = data
    keys = df.select("user_id").distinct().withColumn("pkey", person_order_key()).toPandas()
    order = keys.sort_values(["pkey", "user_id"])["user_id"]
    ordered = [sets[u] for u in order]  # item order: Python string order = Spark's
    want = [greedy_from_scratch(ordered, ell) for ell in range(1, ELL_MAX + 1)]
    got = greedy_curve(df, ELL_MAX)
    assert got.tolist() == want
    assert np.all(2 * got >= local) and np.all(got <= local)
    again = greedy_curve(df.orderBy(F.rand(3)).repartition(4), ELL_MAX)
    assert again.tolist() == want
    repeated = df.unionByName(df.sample(fraction=0.5, seed=4)).unionByName(df.limit(7))
    assert repeated.count() > df.count()  # a repeated pair counts once
    assert greedy_curve(repeated, ELL_MAX).tolist() == want


def test_counts_past_the_int_range_become_an_ell_past_max_contributions(
    spark: SparkSession,
) -> None:
    """Crafted degrees at the boundary (2^31 − 1 to 2^63 − 1, in ANSI mode, where a plain int
    cast fails): the first round's ℓ of a count is the count up to ℓ_max + 1, then ℓ_max + 1,
    which the curve ignores as it ignored any ℓ past ℓ_max."""
    from spark_dp.distinct_count.peeling import count_as_ell

    counts = [1, 100, 101, 2**31 - 1, 2**31, 2**40, 2**63 - 1]
    frame = spark.createDataFrame([(c,) for c in counts], "n bigint")
    previous = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    try:
        got = [r[0] for r in frame.select(count_as_ell(F.col("n"), 100)).collect()]
        with pytest.raises(Exception, match=r"(?i)overflow|cast"):
            frame.select(F.col("n").cast("int")).collect()  # what the cast alone did
    finally:
        spark.conf.set("spark.sql.ansi.enabled", previous)
    assert got == [1, 100, 101, 101, 101, 101, 101]
