"""Where the pairs live between steps: partitioned by user for per-user steps, merged for item sums.

The cost of a run is set less by its arithmetic than by how its rows move (``make bench``;
measurements in ``bench/results/``):

* **Per-user steps** (the cap, MAD's excess e_u, UserWeights' sums) need each user's pairs in one
  task. :func:`by_user` shuffles them by user into the session's shuffle partitions
  (:func:`~spark_dp.session.shuffle_partitions`: ``spark.sql.shuffle.partitions``, else Spark's
  200), a count that depends on the settings only, as every literal of a plan must
  (docs/privacy/boundary.md#plans), and adaptive execution merges them at run time to the size
  of the input: up to :data:`ADVISORY_PARTITION_SIZE` of shuffle data each
  (:data:`SPARK_SQL_DEFAULTS`, where the session leaves it unset; Spark's own 64 MB is more than
  a 1 GiB JVM sorts without spilling). Which partitions it merges is Spark's own monitoring, on
  the trusted side (docs/privacy/spark-monitoring.md); merged partitions are still partitioned
  by user, so what reads them per user needs no shuffle.
* **Tables read again** are persisted as they are (:func:`keep`, on disk only: see
  :func:`~spark_dp.caching.pairs_storage_level`), not cut to a scan of their cache: Spark then
  still knows
  that they are hash-partitioned by user and sorted by user, so a window over a user's pairs
  (``partitionBy(user_id)``) and a later per-user step need neither a shuffle nor a sort, and a
  broadcast join onto them keeps that layout. (A join of a per-user
  table back onto the pairs would instead shuffle every pair once more as soon as the per-user
  table is too large to broadcast.)
* **Item sums** read the pairs through :func:`per_core`, which merges the user partitions
  into one task per core before the partial aggregation (``coalesce``, no shuffle; each user
  partition is still computed on its own). Every task's partial sums hold up to one row per item
  it saw, so summing 200 small partitions would shuffle 200 rows for every common item.
* **Never a coalesce over an aggregation**: a coalesced task runs the aggregation of every
  merged partition and keeps each one's hash map until the task ends, so with many shuffle
  partitions and a small driver it runs out of execution memory and never finishes;
  ``tests/partition_selection/test_layout.py`` checks every algorithm's plans for it. The
  aggregated tables that feed a pandas UDF (the item sums before their noise, UserWeights' loop
  users) go through :func:`aggregated_per_core`, a round-robin shuffle of their (few) rows, so
  that the UDF runs in one Python task per core.

None of this changes a value: it only decides which task computes what.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_dp.caching import CacheScope, fill, pairs_storage_level
from spark_dp.partition_selection.columns import USER_ID
from spark_dp.session import default_parallelism, shuffle_partitions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "ADVISORY_PARTITION_SIZE",
    "SPARK_SQL_DEFAULTS",
    "aggregated_per_core",
    "by_user",
    "item_tasks",
    "keep",
    "per_core",
]

ADVISORY_PARTITION_SIZE = "8m"
"""The shuffle data adaptive execution merges a run's partitions up to, for partitions of a
few hundred thousand pairs, the size the runs measured fastest when a row count set them
(``bench/results/lines/results-partitions.json``); before and after:
``bench/results/partition_sizing/``."""

SPARK_SQL_DEFAULTS: dict[str, str] = {
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": ADVISORY_PARTITION_SIZE,
}
"""Settings a selection or a preview runs with where the session leaves them unset
(:func:`spark_dp.session.sql_defaults`)."""


def item_tasks(spark: SparkSession) -> int:
    """How many tasks sum over items: the default parallelism (cores; on Spark Connect
    :func:`~spark_dp.session.default_parallelism`'s fallback), never more than the session's
    shuffle partitions."""
    return max(1, min(default_parallelism(spark), shuffle_partitions(spark)))


def by_user(pairs: DataFrame) -> DataFrame:
    """``pairs`` hash-partitioned by user into the session's shuffle partitions, which adaptive
    execution merges to the input's size at run time (module docstring)."""
    return pairs.repartition(USER_ID)


def per_core(pairs: DataFrame) -> DataFrame:
    """``pairs`` in :func:`item_tasks` partitions (a narrow ``coalesce``), for a sum by item.

    Only for tables whose plan since the last shuffle or cache holds no aggregation (see the
    module docstring); an aggregation's output goes through :func:`aggregated_per_core`."""
    return pairs.coalesce(item_tasks(pairs.sparkSession))


def aggregated_per_core(table: DataFrame) -> DataFrame:
    """``table``, the output of an aggregation, in :func:`item_tasks` partitions by a
    round-robin shuffle of its rows, for a pandas UDF in a projection. (A filter on the UDF's
    result would be pushed below the shuffle: Spark pushes deterministic filters through
    a repartition.)"""
    return table.repartition(item_tasks(table.sparkSession))


def keep(df: DataFrame, cache: CacheScope) -> DataFrame:
    """``df`` persisted and computed now, still known to Spark as partitioned and sorted the way
    it was computed (see the module docstring), at the level of per-pair tables
    (:func:`~spark_dp.caching.pairs_storage_level`, on disk); :meth:`CacheScope.drop` releases
    it. Its rows are not counted (:func:`~spark_dp.caching.fill`)."""
    kept = cache.persist(df, pairs_storage_level())
    fill(kept)
    return kept
