"""Ways to compute the uniform Δ0 cap, timed side by side in one session (issue 18).

``python -m bench.cap_alternatives DATA [--variants a,b,...] [--runs N] [--keep]``: each variant
caps the (user_id, item) pairs of the Parquet ``DATA`` at Δ0 = 100 and sums 1/√degree by item
(``--keep``: caches the capped pairs instead, as MAD2R does, then times one window pass over
them). Every variant returns the same rows, so the seconds compare only how the cap is computed:

* ``floor_b``: read, ``repartition(user_id)``, count by item (no cap, the bench's floor B);
* ``floor_d``: floor B with the repeated pairs dropped by a hash aggregation (no sort);
* ``floor_c``: the bench's floor C, the Δ0 first rows of each user by ``row_number()`` over the
  salted hash: a repeated pair takes two of them (exact only for input without repeats), and
  Spark limits each user's rows before the window (``WindowGroupLimit``);
* ``sortcap``: spark_dp's cap (:func:`spark_dp.partition_selection.capping.cap_user_items`);
* ``wholeset``: the same sort, with the degree as the largest rank over the user's whole set
  (spark_dp's cap until 2026-11-26) instead of a count over the user's kept pairs;
* ``rankcap``: ``sortcap`` with a repeat found as ``rank() != row_number()`` instead of by
  ``lag``: three rank-like functions of one frame, so that Spark limits each user's rows
  before the window, as in floor C;
* ``setcap``: ``collect_set(item)`` per user, then the Δ0 smallest (salted hash, item) by
  ``sort_array``, exploded (every user's set is one JVM object);
* ``hashcap``: dedupe by hash aggregation, degrees by a shuffled hash join, the window only
  over the users with more than Δ0 items;
* ``minbycap``: ``min_by(item, (salted hash, item), Δ0)`` per user (Spark ≥ 4.2), the sorted
  cap again for the users whose Δ0 smallest rows hold a repeated pair;
  ``minby_lower_bound`` the same without that second pass.

Not part of ``make bench``; results in ``bench/results/experiments/cap-alternatives.md``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from spark_dp.caching import storage_level
from spark_dp.partition_selection.capping import cap_user_items, with_degree
from spark_dp.partition_selection.columns import DEGREE, ITEM, USER_ID
from spark_dp.partition_selection.layout import by_user
from spark_dp.randomness import Randomness

CAP = 100
RANDOMNESS = Randomness.create(1).bind("test").child("capping", 1)


def _rank_key(user: Column, item: Column) -> Column:
    """The cap's salted hash; the salt of this test key a literal here, where the alternatives
    need it inside their expressions (the product joins it as data: ``with_hash_column``)."""
    return F.xxhash64(F.lit(RANDOMNESS.salt("capping")), user, item)


def floor_d(pairs: DataFrame) -> DataFrame:
    return by_user(pairs).dropDuplicates([USER_ID, ITEM])


def sortcap(pairs: DataFrame) -> DataFrame:
    return cap_user_items(pairs, CAP, RANDOMNESS)


def floor_c(pairs: DataFrame) -> DataFrame:
    by_hash = Window.partitionBy(USER_ID).orderBy(_rank_key(F.col(USER_ID), F.col(ITEM)))
    first = by_user(pairs).withColumn("_r", F.row_number().over(by_hash))
    return first.where(F.col("_r") <= CAP).drop("_r")


def rankcap(pairs: DataFrame) -> DataFrame:
    by_rank = Window.partitionBy(USER_ID).orderBy(F.col("_h"), F.col(ITEM))
    ranked = by_user(pairs).select(
        USER_ID, ITEM, _rank_key(F.col(USER_ID), F.col(ITEM)).alias("_h")
    )
    ranked = ranked.select(
        USER_ID,
        ITEM,
        F.dense_rank().over(by_rank).alias("_rank"),
        (F.rank().over(by_rank) == F.row_number().over(by_rank)).alias("_first"),
    )
    return with_degree(
        ranked.where(F.col("_first") & (F.col("_rank") <= CAP)).select(USER_ID, ITEM)
    )


def wholeset(pairs: DataFrame) -> DataFrame:
    by_rank = Window.partitionBy(USER_ID).orderBy(F.col("_h"), F.col(ITEM))
    whole = by_rank.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    rank = F.dense_rank().over(by_rank)
    ranked = by_user(pairs).select(
        USER_ID, ITEM, _rank_key(F.col(USER_ID), F.col(ITEM)).alias("_h")
    )
    ranked = ranked.select(
        USER_ID,
        ITEM,
        rank.alias("_rank"),
        F.coalesce(F.lag(ITEM).over(by_rank) == F.col(ITEM), F.lit(False)).alias("_repeat"),
        F.max(rank).over(whole).alias("_n"),
    )
    return ranked.where(~F.col("_repeat") & (F.col("_rank") <= CAP)).select(
        USER_ID, ITEM, F.least(F.col("_n"), F.lit(CAP)).cast("long").alias(DEGREE)
    )


def setcap(pairs: DataFrame) -> DataFrame:
    sets = by_user(pairs).groupBy(USER_ID).agg(F.collect_set(ITEM).alias("_s"))
    size = F.size("_s")
    ranked = F.transform(
        "_s", lambda x: F.struct(_rank_key(F.col(USER_ID), x).alias("h"), x.alias("i"))
    )
    smallest = F.transform(F.slice(F.sort_array(ranked), 1, CAP), lambda z: z["i"])
    kept = F.when(size <= CAP, F.col("_s")).otherwise(smallest)
    degree = F.least(size, F.lit(CAP)).cast("long")
    capped = sets.select(USER_ID, kept.alias("_k"), degree.alias(DEGREE))
    return capped.select(USER_ID, F.explode("_k").alias(ITEM), DEGREE).sortWithinPartitions(USER_ID)


def hashcap(pairs: DataFrame) -> DataFrame:
    distinct = floor_d(pairs)
    degrees = distinct.groupBy(USER_ID).agg(F.count(F.lit(1)).alias("_n"))
    joined = distinct.join(degrees.hint("shuffle_hash"), USER_ID)
    light = joined.where(F.col("_n") <= CAP).select(USER_ID, ITEM, F.col("_n").alias(DEGREE))
    by_rank = Window.partitionBy(USER_ID).orderBy(
        _rank_key(F.col(USER_ID), F.col(ITEM)), F.col(ITEM)
    )
    heavy = (
        joined.where(F.col("_n") > CAP)
        .withColumn("_r", F.row_number().over(by_rank))
        .where(F.col("_r") <= CAP)
        .select(USER_ID, ITEM, F.lit(CAP).cast("long").alias(DEGREE))
    )
    return light.unionByName(heavy)


def _smallest_rows(pairs: DataFrame) -> DataFrame:
    """(user_id, _k): the items of the user's Δ0 rows of smallest (salted hash, item)."""
    order = F.struct(_rank_key(F.col(USER_ID), F.col(ITEM)).alias("h"), F.col(ITEM).alias("i"))
    return pairs.groupBy(USER_ID).agg(F.min_by(ITEM, order, CAP).alias("_k"))


def _exploded(smallest: DataFrame) -> DataFrame:
    """(user_id, item, degree) from :func:`_smallest_rows`, degree = the rows kept."""
    return smallest.select(
        USER_ID, F.explode("_k").alias(ITEM), F.size("_k").cast("long").alias(DEGREE)
    )


def minby_lower_bound(pairs: DataFrame) -> DataFrame:
    """``minbycap`` without its second pass: the least that way costs (right only for pairs
    without repeats, as the bench's)."""
    return _exploded(_smallest_rows(pairs))


def minbycap(pairs: DataFrame) -> DataFrame:
    """The Δ0 rows of smallest (salted hash, item) per user by ``min_by(item, ord, k)`` (Spark
    ≥ 4.2: a bounded heap per user, aggregated partially before the shuffle). Repeated pairs
    are not dropped by it: a user whose Δ0 smallest rows hold a repeat is capped again by the
    sorted cap over that user's pairs (none in the bench's data, but the plan carries it)."""
    smallest = _smallest_rows(pairs)
    clean = F.size("_k") == F.size(F.array_distinct("_k"))
    kept = _exploded(smallest.where(clean))
    repeats = smallest.where(~clean).select(USER_ID)
    again = cap_user_items(pairs.join(F.broadcast(repeats), USER_ID, "left_semi"), CAP, RANDOMNESS)
    return kept.unionByName(again)


VARIANTS: dict[str, Callable[[DataFrame], DataFrame]] = {
    "floor_b": lambda pairs: pairs.repartition(USER_ID),
    "floor_d": floor_d,
    "floor_c": floor_c,
    "sortcap": sortcap,
    "rankcap": rankcap,
    "wholeset": wholeset,
    "setcap": setcap,
    "hashcap": hashcap,
    "minbycap": minbycap,
    "minby_lower_bound": minby_lower_bound,
}


def _summary(out: DataFrame) -> tuple[object, ...]:
    """(rows by item, sum of the weights): equal across the cap variants."""
    if DEGREE in out.columns:
        weights = out.groupBy(ITEM).agg(F.sum(1.0 / F.sqrt(F.col(DEGREE))).alias("_w"))
    else:
        weights = out.groupBy(ITEM).agg(F.count(F.lit(1)).alias("_w"))
    return tuple(weights.agg(F.count("*"), F.sum("_w")).collect()[0])


def _window_pass(capped: DataFrame) -> tuple[object, ...]:
    share = F.sum(1.0 / F.col(DEGREE)).over(Window.partitionBy(USER_ID))
    out = capped.withColumn("_e", share).groupBy(ITEM).agg(F.sum("_e").alias("_w"))
    return tuple(out.agg(F.count("*"), F.sum("_w")).collect()[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data")
    ap.add_argument("--variants", default="floor_b,floor_d,sortcap,setcap,hashcap")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="cache, then one window pass")
    args = ap.parse_args()
    unknown = sorted(set(args.variants.split(",")) - set(VARIANTS))
    if unknown:
        ap.error(f"--variants: unknown {unknown}; choose from {sorted(VARIANTS)}")
    if args.runs < 1:
        ap.error(f"--runs must be at least 1, got {args.runs}")
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    pairs = spark.read.parquet(args.data).select(USER_ID, ITEM)
    for run in range(args.runs):
        for name in args.variants.split(","):
            start = time.time()
            out = VARIANTS[name](pairs)
            if not args.keep:
                summary = _summary(out)
                print(run, name, round(time.time() - start, 1), summary, flush=True)
                continue
            kept = out.persist(storage_level())
            kept.count()
            cached = time.time()
            summary = _window_pass(kept)
            passed = time.time()
            kept.unpersist(blocking=True)
            print(run, name, "cap+cache", round(cached - start, 1), "window pass",
                  round(passed - cached, 1), summary, flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
