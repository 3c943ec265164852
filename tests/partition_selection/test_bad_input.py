"""Bad and unusual input: each gives a sensible result or a clear error (issue 3)."""

from __future__ import annotations

import math

import pytest
from pyspark.sql import functions as F

from spark_dp.errors import InputContractError, ParameterError
from spark_dp.partition_selection import (
    PartitionSelectionParams,
    plan_selection,
    select_partitions,
)
from spark_dp.partition_selection.capping import cap_user_items
from spark_dp.randomness import Randomness
from tests.partition_selection.helpers import item_set
from tests.partition_selection.helpers import select as select_valid


def select(pairs, seed=1, **params):
    """A run that validates its input first (the library's default)."""
    return select_valid(pairs, seed, validate=True, **params)


@pytest.mark.parametrize("algorithm", ["basic", "mad", "mad2r", "dp-sips", "basic-laplace"])
def test_an_empty_input_releases_nothing(spark, algorithm):
    """docs/privacy/caveats.md#bad-rows: an empty input, or one of null ids only, is an empty
    release, not an error whose presence would depend on the rows."""
    empty = spark.createDataFrame([], "user_id string, item string")
    nulls = spark.createDataFrame([("u1", None), (None, "a")], "user_id string, item string")
    for pairs in (empty, nulls):
        with select(pairs, algorithm=algorithm) as selection:
            assert selection.items.count() == 0 and selection.items.columns == ["item"]


def test_rows_with_null_ids_are_dropped(spark):
    rows = [(f"u{u}", "a") for u in range(2000)]
    df = spark.createDataFrame([*rows, ("u2", None), (None, "b")], "user_id string, item string")
    clean = spark.createDataFrame(rows, "user_id string, item string")
    with select(df, algorithm="basic") as a, select(clean, algorithm="basic") as b:
        assert item_set(a.items) == item_set(b.items) == {"a"}


def test_other_column_names_are_mapped(spark):
    df = spark.createDataFrame([(f"p{u}", "w") for u in range(2000)], "person string, word string")
    params = PartitionSelectionParams(algorithm="basic")
    sel = select_partitions(df, params, Randomness.create(1), user_col="person", item_col="word")
    assert item_set(sel.items) == {"w"}
    with pytest.raises(InputContractError, match=r"no column 'user_id' \(columns: person, word\)"):
        select_partitions(df, params, Randomness.create(1))


def test_one_user_releases_nothing(pairs_df):
    sel = select(pairs_df({"only": [f"i{k}" for k in range(60)]}), algorithm="mad")
    assert sel.output_items == 0 and item_set(sel.items) == set()


def test_all_singletons_release_nothing(pairs_df):
    sets = {f"u{u}": [f"u{u}-{k}" for k in range(3)] for u in range(500)}
    assert item_set(select(pairs_df(sets), algorithm="dp-sips").items) == set()


def test_cap_of_one_item_per_user(pairs_df):
    sets = {f"u{u}": ["a", f"b{u % 3}"] for u in range(1500)}
    sel = select(pairs_df(sets), algorithm="mad", max_contributions=1)  # d_max 50 > Δ0 is fine
    assert item_set(sel.items) == {"a", "b0", "b1", "b2"}  # ~750 and ~250 users each
    assert sel.rounds[0].calibration["max_contributions"] == 1


def test_a_user_of_degree_1e5_is_capped(spark):
    huge = spark.range(100_000).select(
        F.lit("hub").alias("user_id"),
        F.concat(F.lit("x"), F.col("id").cast("string")).alias("item"),
    )
    crowd = spark.range(400).select(
        F.concat(F.lit("u"), F.col("id").cast("string")).alias("user_id"),
        F.lit("common").alias("item"),
    )
    pairs = huge.unionByName(crowd)
    capped = cap_user_items(pairs, 100, Randomness.create(1).bind("test"))
    hub = capped.where("user_id = 'hub'").agg(F.count("*").alias("n"), F.max("degree").alias("d"))
    assert tuple(hub.collect()[0]) == (100, 100)
    params = PartitionSelectionParams(algorithm="basic")
    sel = select_partitions(pairs, params, Randomness.create(1).bind("test"), validate=False)
    assert item_set(sel.items) == {"common"}


def test_unicode_items_come_back_unchanged(pairs_df):
    names = ["日本語", "naïve café", "🙂 emoji", "Ελληνικά", "a\tb"]
    sets = {f"u{u}": [*names, f"solo{u}"] for u in range(600)}
    sel = select(pairs_df(sets), algorithm="mad", max_contributions=10)
    assert item_set(sel.items) == set(names)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"epsilon": 0.0}, r"epsilon must be a finite number > 0"),
        ({"delta": 1.5}, r"delta must lie strictly between 0 and 1"),
        ({"max_contributions": 0}, r"max_contributions must be an integer >= 1"),
        ({"max_adaptive_degree": 3}, r"max_adaptive_degree must be an integer >= 4"),
        ({"b_min": 0.3}, r"b_min must lie in \[0.5, 1\]"),
        ({"b_max": math.inf}, r"b_max must be a finite number >= 1"),
        ({"c_ub": -1.0}, r"c_ub must be a finite number >= 0"),
        ({"split": (0.05, 0.15, 0.8)}, r"exactly two shares for mad2r"),
        ({"split": (0.5, 0.6)}, r"split must sum to at most 1"),
        ({"algorithm": "madd"}, r"did you mean 'mad'"),
    ],
)
def test_parameter_errors_name_the_parameter(params, message):
    # each parameter checks itself when built, the algorithm's plan what depends on it: both
    # before any data is read
    with pytest.raises(ParameterError, match=message):
        plan_selection(PartitionSelectionParams(**params))


def test_three_round_split_is_fine_for_dp_sips():
    p = PartitionSelectionParams(algorithm="dp-sips", split=[0.05, 0.15, 0.8])
    assert p.split == (0.05, 0.15, 0.8)
    assert len(plan_selection(p).steps) == 3
