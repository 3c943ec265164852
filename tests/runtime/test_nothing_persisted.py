"""Library calls leave nothing persisted in the caller's session (issue 16.6).

The contract (spark_dp.caching): a call releases everything it persisted or checkpointed before
it returns, except the tables of the result it hands back; a result that holds tables (a
partition-selection ``Selection``, a contribution-bounding ``BoundingResult``) is a context
manager that releases them. The storage is read from the session's SparkContext (every persisted
RDD: DataFrame caches and local checkpoints alike) and from its cache manager.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from chispa import assert_df_equality

from spark_dp.caching import CacheScope
from spark_dp.contribution_bounding.api import SPARK_SQL_DEFAULTS, bound_contributions
from spark_dp.contribution_bounding.params import BoundingParams
from spark_dp.distinct_count.params import DistinctCountParams
from spark_dp.distinct_count.registry import REGISTRY as DC_REGISTRY
from spark_dp.errors import SparkDPUserError
from spark_dp.generators.spark_frames import hypergraph_frame, pairs_frame
from spark_dp.partition_selection.params import PartitionSelectionParams
from spark_dp.partition_selection.select import select_partitions
from spark_dp.randomness import Randomness
from spark_dp.session import sql_defaults

ADVISORY = "spark.sql.adaptive.advisoryPartitionSizeInBytes"


def persisted(spark) -> int:
    """How many RDDs the session keeps (persisted DataFrames and local checkpoints)."""
    return int(spark.sparkContext._jsc.getPersistentRDDs().size())


def cached_plans(spark) -> bool:
    """True when the session's cache manager holds a cached query."""
    return not spark._jsparkSession.sharedState().cacheManager().isEmpty()


def assert_clean(spark) -> None:
    assert persisted(spark) == 0, "a library call left persisted data in the session"
    assert not cached_plans(spark), "a library call left a cached query in the session"


@pytest.fixture
def clean(spark):
    """The session, checked clean before the test (so a failure names the right call)."""
    spark.catalog.clearCache()
    for rdd in list(spark.sparkContext._jsc.getPersistentRDDs().values()):
        rdd.unpersist(True)
    assert_clean(spark)
    return spark


@pytest.fixture(scope="module")
def words(spark):
    pairs, _ = pairs_frame(spark, "zipf", n_users=300, mean_items=5, max_items=40, seed=3)
    return pairs


@pytest.fixture(scope="module")
def graph(spark):
    incidences, _ = hypergraph_frame(spark, "skewed", n_records=400, seed=3)
    return incidences


@pytest.mark.parametrize("algorithm", ["mad2r", "dp-sips", "laplace-thresholding"])
def test_selection_keeps_only_its_items_until_released(clean, words, algorithm):
    spark = clean
    params = PartitionSelectionParams(algorithm=algorithm, epsilon=1.0, delta=1e-5)
    with select_partitions(words, params, Randomness.create(5)) as selection:
        # only the rounds' selected items stay cached for the caller
        assert persisted(spark) == len(selection.rounds)
        items = sorted(r["item"] for r in selection.items.collect())
    assert_clean(spark)
    # the items recompute to the same values after the release (the noise is keyed)
    assert sorted(r["item"] for r in selection.items.collect()) == items
    assert_clean(spark)


@pytest.mark.parametrize(
    ("algorithm", "driver_threshold_rows"),
    [("proposal", 0), ("greedy", 5_000_000), ("greedy-dup", 0), ("ilp", 0)],
)
def test_bounding_keeps_only_its_outputs_until_released(
    clean, graph, algorithm, driver_threshold_rows
):
    spark = clean
    params = BoundingParams(
        algorithm=algorithm, max_contributions=2, driver_threshold_rows=driver_threshold_rows
    )
    with bound_contributions(graph, params, randomness=Randomness.create(5)) as result:
        tables = [result.selected, result.user_state, result.selected_by_round]
        assert persisted(spark) == sum(t is not None for t in tables)
        assert result.selected.count() == result.summary["distinct_selected"]
    assert_clean(spark)


def test_bounding_with_a_work_directory_leaves_nothing(clean, graph, tmp_path):
    params = BoundingParams(algorithm="proposal", max_contributions=2, driver_threshold_rows=0)
    with bound_contributions(
        graph, params, randomness=Randomness.create(5), work_dir=str(tmp_path / "work")
    ) as result:
        result.selected.count()
    assert_clean(clean)


def test_a_failed_bounding_call_releases_what_it_persisted(clean, graph):
    bad_weights = clean.createDataFrame([("r1", "x")], "record_id string, weight string")
    with pytest.raises(SparkDPUserError):
        bound_contributions(
            graph,
            BoundingParams(algorithm="proposal", max_contributions=2, order="weighted-global"),
            record_weights=bad_weights,
            randomness=Randomness.create(5),
        )
    assert_clean(clean)


def test_caches_are_deserialized_and_released(clean):
    """PySpark's MEMORY_AND_DISK is serialized: a spilled block comes back in one heap
    allocation, which failed at 100M rows in a 1 GiB driver (spark_dp.caching.storage_level)."""
    with CacheScope() as cache:
        df = cache.persist(clean.range(5))
        assert df.count() == 5
        level = df.storageLevel
        assert (level.useMemory, level.useDisk, level.deserialized) == (True, True, True)
    assert_clean(clean)


def test_per_pair_tables_are_kept_on_disk_unless_the_scope_sets_a_level(clean):
    """layout.keep's tables (one row per pair) go to disk only (spark_dp.caching.
    pairs_storage_level: at 104M pairs the memory level built every block in the heap first);
    a scope built with a level uses it for them too."""
    from pyspark import StorageLevel

    from spark_dp.partition_selection.layout import keep

    with CacheScope() as cache:
        kept = keep(clean.range(5), cache)
        level = kept.storageLevel
        assert (level.useMemory, level.useDisk) == (False, True)
        assert cache.persist(clean.range(3)).storageLevel.useMemory  # other tables: memory
    with CacheScope(StorageLevel.MEMORY_ONLY) as cache:
        level = keep(clean.range(5), cache).storageLevel
        assert (level.useMemory, level.useDisk) == (True, False)
    assert_clean(clean)


def test_fill_builds_a_cache_in_one_job_without_reading_it_back(clean):
    """caching.fill: one Spark job builds the cache, where count() runs more (adaptive
    execution builds the cache as a job of its own, then the count reads it back); later
    queries read the cache, with the same rows."""
    from spark_dp.caching import _cache_builder, fill

    sc = clean.sparkContext
    df = clean.range(0, 1000, 1, 8).selectExpr("id", "id % 7 AS r")  # no shuffle
    with CacheScope() as cache:
        kept = cache.persist(df)
        assert not _cache_builder(kept).isCachedColumnBuffersLoaded()
        assert _jobs(sc, "spark_dp-fill-test", partial(fill, kept))[0] == 1
        assert _cache_builder(kept).isCachedColumnBuffersLoaded()
        counted = cache.persist(df.selectExpr("id", "r", "1 AS one"))
        assert _jobs(sc, "spark_dp-count-test", counted.count)[0] > 1
        assert_df_equality(kept, df, ignore_row_order=True)
        assert _cache_builder(df.limit(3)) is None  # not persisted: fill falls back to count()
        fill(df.limit(3))
    assert_clean(clean)


def _jobs(sc, group: str, action) -> tuple[int, Any]:
    """How many Spark jobs ``action()`` ran (under a job group of its own), and its result."""
    sc.setJobGroup(group, group)
    try:
        result = action()
    finally:
        for key in ("spark.jobGroup.id", "spark.job.description"):
            sc.setLocalProperty(key, None)
    return len(sc.statusTracker().getJobIdsForGroup(group)), result


def _hinted(df) -> bool:
    return "strategy=broadcast" in df._jdf.queryExecution().analyzed().toString()


def test_counted_tables_and_subsets_of_materialized_tables_run_no_job_of_their_own(clean):
    """CacheScope.counted reads the count its materialization ran (a released table's size);
    small_subset broadcasts a subset of a small materialized table without a job, and falls
    back to small_side (cached and counted) when the table's size is unknown, too large or
    forgotten (dropped); small_side with a public row count runs nothing. Every way gives the
    same join (issue 18: 16 of MAD2R's 50 small jobs)."""
    sc = clean.sparkContext
    items = clean.range(0, 40, 1, 4).selectExpr("CAST(id AS STRING) AS item", "id % 5 AS w")
    pairs = clean.range(0, 400, 1, 4).selectExpr("CAST(id % 50 AS STRING) AS item", "id")
    with CacheScope() as cache:
        plain, _ = _jobs(sc, "spark_dp-plain", partial(cache.materialize, items.where("w > 0")))
        ran, (table, rows) = _jobs(sc, "spark_dp-counted", lambda: cache.counted(items))
        assert (ran, rows) == (plain, 40)
        subset = table.where("w = 3").select("item")
        expected = pairs.join(subset, "item", "left_anti")
        cases = [("small", table, 40, 0), ("large", table, 39, None), ("unknown", items, 40, None)]
        for label, of, limit, jobs in cases:
            subset_of = partial(cache.small_subset, of, subset, limit)
            ran, side = _jobs(sc, f"spark_dp-{label}", subset_of)
            assert ran == jobs if jobs is not None else ran > 0, label  # > 0: small_side's count
            assert _hinted(side), label
            joined = pairs.join(side, "item", "left_anti")
            assert_df_equality(joined, expected, ignore_row_order=True)
        cache.drop(table)
        ran, _ = _jobs(sc, "spark_dp-dropped", partial(cache.small_subset, table, subset))
        assert ran > 0
        public = [cache.small_side(subset, rows=8), cache.small_side(subset, 7, rows=8)]
        assert [_hinted(side) for side in public] == [True, False]
    assert_clean(clean)


def test_sql_defaults_fill_only_unset_keys_and_leave_the_session_as_found(spark):
    spark.conf.unset(ADVISORY)
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    defaults = {ADVISORY: "16m", "spark.sql.shuffle.partitions": "7"}
    with sql_defaults(spark, defaults):
        assert spark.conf.get(ADVISORY) == "16m"
        assert spark.conf.get("spark.sql.shuffle.partitions") == "2"  # the user's value wins
    assert spark.conf.get(ADVISORY, None) is None
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    with pytest.raises(RuntimeError), sql_defaults(spark, defaults):
        raise RuntimeError("boom")
    assert spark.conf.get(ADVISORY, None) is None


@pytest.mark.parametrize("preset", [None, "32m"])
def test_bounding_runs_with_its_sql_defaults_and_restores_the_session(clean, graph, preset):
    spark = clean
    assert SPARK_SQL_DEFAULTS[ADVISORY] == "16m"
    if preset is not None:
        spark.conf.set(ADVISORY, preset)
    seen: list[str] = []
    params = BoundingParams(algorithm="proposal", max_contributions=2, driver_threshold_rows=0)
    try:
        with bound_contributions(
            graph,
            params,
            randomness=Randomness.create(5),
            on_round=lambda _: seen.append(spark.conf.get(ADVISORY)),
        ) as result:
            result.selected.count()
        assert seen and set(seen) == {preset or "16m"}
        assert spark.conf.get(ADVISORY, None) == preset
    finally:
        spark.conf.unset(ADVISORY)


@pytest.mark.parametrize("method", ["exact", "greedy"])
def test_distinct_count_leaves_nothing(clean, words, method):
    entry = DC_REGISTRY[method]
    plan = entry.plan(DistinctCountParams(epsilon=1.0, max_contributions=8, method=method))
    result = entry.run(words, plan, Randomness.create(5))
    assert result.release.ell >= 1
    assert_clean(clean)


def test_generators_leave_nothing(clean):
    pairs, _ = pairs_frame(clean, "heavy-light", n_users=200, n_light=20, seed=1)
    incidences, _ = hypergraph_frame(clean, "regular", n_records=300, seed=1)
    assert pairs.count() > 0 and incidences.count() > 0
    assert_clean(clean)
