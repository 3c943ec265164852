"""Per-user degree cap Δ0: a uniform random subset of each user's items.

Chen et al. 2025, Alg. 1 lines 3-5 (both versions); spec partition_selection.md §2.1 and A9.
A user with more than Δ0 items keeps a uniformly random subset of exactly Δ0 of them, drawn
without replacement: the Δ0 items with the smallest salted hash of (user, item). The kept
subset depends only on the user's own set and the secret salt, never on other users' data,
which is what the privacy proof needs (spec §5.1 invariant 4). The cap bounds the number of
novel items t ≤ Δ0 that the threshold ρ is calibrated for.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_dp.partition_selection.columns import DEGREE, ITEM, USER_ID
from spark_dp.partition_selection.joins import small_side
from spark_dp.randomness import Randomness, hash_column

__all__ = ["cap_user_items", "with_degree"]


def cap_user_items(pairs: DataFrame, max_items: int, randomness: Randomness) -> DataFrame:
    """Cap every user's set to at most Δ0 = ``max_items`` items, uniformly at random.

    Degrees come from a ``groupBy(user)`` (partial aggregation: only per-user counts cross the
    network) joined back onto the pairs, broadcast when the per-user table is small
    (:func:`~spark_dp.partition_selection.joins.small_side`). Only the pairs of users above Δ0
    are ranked, with a window over their own pairs, to find each such user's Δ0-th smallest
    (hash, item); one filter then keeps every pair of a small user and the pairs of a big user
    up to that key. The pairs keep their partitioning (no union, no full shuffle).

    Args:
        pairs: (user_id, item), deduplicated.
        max_items: the degree cap Δ0 ≥ 1.
        randomness: the capping stream (its salt ranks the items; secret in entropy mode).

    Returns:
        (user_id, item, degree) with degree = min(|S_u|, Δ0) after capping.
    """
    rank_key = hash_column(randomness, F.col(USER_ID), F.col(ITEM), purpose="capping")
    counted = _count_per_user(pairs.select(USER_ID, ITEM)).withColumn("_h", rank_key)
    # -> (user_id, item, _n, _h)
    by_rank = Window.partitionBy(USER_ID).orderBy(F.col("_h"), F.col(ITEM))  # item breaks ties
    last_kept = small_side(
        counted.where(F.col("_n") > max_items)
        .select(USER_ID, ITEM, "_h", F.row_number().over(by_rank).alias("_rank"))
        .where(F.col("_rank") == max_items)
        .select(USER_ID, F.col("_h").alias("_h_last"), F.col(ITEM).alias("_item_last"))
    )
    # -> (user_id, _h_last, _item_last): the Δ0-th smallest (hash, item) of each big user
    kept = (F.col("_h") < F.col("_h_last")) | (
        (F.col("_h") == F.col("_h_last")) & (F.col(ITEM) <= F.col("_item_last"))
    )
    return (
        counted.join(last_kept, USER_ID, "left")
        .where((F.col("_n") <= max_items) | kept)
        .select(USER_ID, ITEM, F.least(F.col("_n"), F.lit(max_items)).alias(DEGREE))
    )
    # -> (user_id, item, degree)


def with_degree(pairs: DataFrame) -> DataFrame:
    """Recompute degrees after items were removed from users' sets (no new subsampling).

    Args:
        pairs: (user_id, item, ...), already capped.

    Returns:
        the same rows with ``degree`` = the user's current number of items.
    """
    counted = _count_per_user(pairs.drop(DEGREE))
    return counted.withColumnRenamed("_n", DEGREE)
    # -> (user_id, item, ..., degree)


def _count_per_user(pairs: DataFrame) -> DataFrame:
    """``pairs`` with ``_n``, the user's number of rows (per-user counts joined back)."""
    counts = small_side(pairs.groupBy(USER_ID).agg(F.count(F.lit(1)).alias("_n")))
    # -> (user_id, _n)
    return pairs.join(counts, USER_ID)
