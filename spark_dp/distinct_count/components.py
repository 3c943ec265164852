"""Connected components of an edge DataFrame: GraphFrames when usable, plain DataFrames otherwise.

Used to split the peeled person–item core into independent pieces: DC(D; ℓ) is a sum over the
connected components of the graph (docs/design/counting.md#curve, end of "E3"), so each piece can
be solved exactly on its own executor task.

* **GraphFrames** ``connectedComponents`` runs when both its Python package and its JVM jar are
  present (:func:`spark_dp.session.graphframes_missing`); ``graphframes`` without them is a
  :class:`ParameterError` (the job checks it once the session exists, before any data is read).
  It runs :data:`GRAPHFRAMES_ALGORITHM` with an explicit iteration cap (graphframes-py's default
  ``max_iter`` is 31, which would stop ``graphx`` before a long path is labelled) and AQE's skew
  joins (GraphFrames' other path turns AQE off session-wide while it runs). Its checkpoints go
  to the context's checkpoint directory when one is set (``spark.checkpoint.dir``: reliable
  storage, e.g. HDFS on a cluster), else they are local checkpoints: nothing is written under a
  directory the job picked. The measurements and the cluster commands:
  docs/operations/cluster.md#graphframes.
* ``auto`` runs :data:`AUTO_METHOD` when GraphFrames is usable, and the DataFrame path otherwise
  (see :func:`resolve_method`).
* **DataFrame fallback**: the alternating large-star / small-star algorithm (Kiveris et al.,
  "Connected Components in MapReduce and Beyond", SoCC 2014), which needs O(log² n) rounds.
  Every round's edges are materialized (:meth:`spark_dp.caching.CacheScope.materialize`) to
  cut the query plan, which would otherwise grow with every round. It stops when the graph is a
  union of stars centred at their minimum vertex — an exact test, so the labels are exact,
  never a heuristic "nothing changed in one round".

Both methods' rounds run with :func:`round_settings` where the session leaves them unset: a few
shuffle partitions per core rather than Spark's 200 (Spark 3.5 does not merge them in cached
plans).

Vertex ids are longs. Callers that hash names to longs may merge two vertices on a collision;
that can only merge components, which keeps any per-component computation that is exact on a
union of components exact.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from spark_dp.caching import CacheScope
from spark_dp.errors import ParameterError
from spark_dp.logs import log_private
from spark_dp.session import sql_defaults

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "AUTO_METHOD",
    "GRAPHFRAMES_ALGORITHM",
    "GRAPHFRAMES_PACKAGES",
    "METHODS",
    "connected_components",
    "graphframes_components",
    "resolve_method",
    "round_settings",
]

METHODS = ("auto", "graphframes", "dataframe")

GRAPHFRAMES_ALGORITHM = "two_phase"
"""The GraphFrames algorithm ``graphframes`` runs: ``two_phase`` (large-star / small-star rounds,
O(log² n) of them). ``graphx`` was faster on short-diameter cores but runs one superstep per hop
(on a long path it did not finish, or overflowed the stack on Spark 3.5), and a core's shape is
the data's;
``randomized_contraction`` is wrong in GraphFrames 0.11. Measured by ``bench.components``
(docs/operations/cluster.md#measured)."""

AUTO_METHOD = "dataframe"
"""What ``auto`` runs where GraphFrames is usable too: the DataFrame path, as fast as
``two_phase`` on the measured cores (within the machine's noise, no crossover), faster on the
whole job, and needing no jar (docs/operations/cluster.md#measured). A constant, so the choice
never depends on the data."""

GRAPHFRAMES_PACKAGES = {
    "4": "io.graphframes:graphframes-spark4_2.13:0.11.0",
    "3": "io.graphframes:graphframes-spark3_2.12:0.11.0",
}
"""The ``spark-submit --packages`` coordinate of the GraphFrames jar for each Spark major
version (the JVM code graphframes-py 0.11.0 calls)."""

_MAX_ITER = 2**31 - 1  # the JVM's Int.MaxValue: no cap (graphframes-py's default is 31)

log = logging.getLogger(__name__)


def resolve_method(spark: SparkSession, method: str = "auto") -> str:
    """``graphframes`` or ``dataframe``: what :func:`connected_components` will run.

    ``auto`` runs :data:`AUTO_METHOD` when :func:`spark_dp.session.graphframes_missing` finds
    nothing missing, else ``dataframe``. Depends on the session only (a public fact), never
    on the data.

    Raises:
        ParameterError: an unknown method, or ``graphframes`` without its package and jar.
    """
    from spark_dp.session import graphframes_missing

    if method not in METHODS:
        raise ParameterError(f"components must be one of {list(METHODS)}, got {method!r}")
    if method == "dataframe":
        return "dataframe"
    missing = graphframes_missing(spark)
    if method == "graphframes" and missing is not None:
        raise ParameterError(
            f"components='graphframes' cannot run: {missing}; add it (spark-submit --packages "
            f"{GRAPHFRAMES_PACKAGES['4']} for Spark 4, {GRAPHFRAMES_PACKAGES['3']} for Spark "
            "3.5, or --jars with that jar), or use components='auto' or 'dataframe'"
        )
    if method == "graphframes":
        return "graphframes"
    return AUTO_METHOD if missing is None else "dataframe"


def connected_components(
    edges: DataFrame, cache: CacheScope, *, method: str = "auto", max_rounds: int = 200
) -> DataFrame:
    """Component label of every vertex of an undirected graph.

    Args:
        edges: DataFrame (src long, dst long); direction, duplicates and self loops are ignored.
        cache: where the rounds of the DataFrame algorithm keep their edges, and where
            GraphFrames' persisted answer is released.
        method: ``auto``, ``graphframes`` or ``dataframe`` (see :func:`resolve_method`).
        max_rounds: round cap of the DataFrame algorithm (it raises rather than return
            labels that are not final).

    Returns:
        (vertex long, component long): one row per vertex that has an edge; the label is the
        smallest vertex id of the component (DataFrame path) or GraphFrames' label.
    """
    spark = edges.sparkSession
    chosen = resolve_method(spark, method)
    # Whether components run at all follows the data (the core's size): debug gate only.
    if chosen == "graphframes":
        log_private(log, "connected components: graphframes (%s)", GRAPHFRAMES_ALGORITHM)
        return graphframes_components(edges, cache, GRAPHFRAMES_ALGORITHM)
    log_private(log, "connected components: dataframe")
    return _star_components(edges, max_rounds, cache)


TASKS_PER_CORE = 2
"""Shuffle partitions of the components' rounds per core of the session, where it leaves
``spark.sql.shuffle.partitions`` unset (:func:`round_settings`)."""


def round_settings(spark: SparkSession) -> dict[str, str]:
    """SQL settings both methods' rounds run with where the session leaves them unset
    (:func:`spark_dp.session.sql_defaults`): :data:`TASKS_PER_CORE` shuffle partitions per core
    of the session (its default parallelism), instead of Spark's 200.

    Each round is a few small shuffles over the core's edges. On Spark 3.5 adaptive execution
    does not merge the partitions of a cached table's plan, so every shuffle of a round there
    ran Spark's 200 tasks, most of them nearly empty (docs/operations/cluster.md#measured). A
    function of the session only, never of the data: the count is a literal of the plans
    (docs/privacy/boundary.md#plans)."""
    from spark_dp.session import default_parallelism

    return {"spark.sql.shuffle.partitions": str(TASKS_PER_CORE * default_parallelism(spark))}


_NO_SIZE_BASED_JOINS = {
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1",
}
"""Settings while GraphFrames runs: no join turns into a broadcast join by the data's size."""


def graphframes_components(edges: DataFrame, cache: CacheScope, algorithm: str) -> DataFrame:
    """GraphFrames adapter: edges (src, dst) -> GraphFrame -> (vertex, component), by
    ``algorithm`` (``two_phase`` or ``graphx``; ``bench.components`` times each)."""
    from graphframes import GraphFrame
    from pyspark.sql import functions as F

    if algorithm not in ("two_phase", "graphx"):
        raise ParameterError(
            f"GraphFrames algorithm must be two_phase or graphx, got {algorithm!r}"
        )
    reliable = _reliable_checkpoints(edges.sparkSession)
    e = edges.select(F.col("src").cast("long").alias("src"), F.col("dst").cast("long").alias("dst"))
    vertices = (
        e.select(F.col("src").alias("id"))
        .unionByName(e.select(F.col("dst").alias("id")))
        .distinct()
    )  # -> (id)
    spark = edges.sparkSession
    # No join strategy chosen from the size of the data while GraphFrames iterates: a broadcast
    # join on a small graph and a sort-merge join on a larger one would show in the executed
    # plans, which depend on nothing but public settings (docs/privacy/boundary.md#plans).
    saved = {k: spark.conf.get(k, None) for k in _NO_SIZE_BASED_JOINS}
    for key, value in _NO_SIZE_BASED_JOINS.items():
        spark.conf.set(key, value)
    try:
        with sql_defaults(spark, round_settings(spark)):
            labelled = cache.adopt(  # GraphFrames returns its answer persisted
                GraphFrame(vertices, e).connectedComponents(
                    algorithm=algorithm,
                    broadcastThreshold=-1,  # AQE's skew joins; its other path turns AQE off
                    use_local_checkpoints=not reliable,
                    max_iter=_MAX_ITER,
                )
            )  # -> (id, component)
    finally:
        for key, old in saved.items():
            spark.conf.unset(key) if old is None else spark.conf.set(key, old)
    # -> (vertex, component)
    return labelled.select(
        F.col("id").cast("long").alias("vertex"), F.col("component").cast("long").alias("component")
    )


def _reliable_checkpoints(spark: SparkSession) -> bool:
    """Whether the context has a checkpoint directory (then GraphFrames checkpoints there, else
    locally). ``spark.checkpoint.dir`` given at launch counts: Spark 4 applies it itself, and on
    Spark 3.5, which ignores it, it is applied here. No other directory is ever chosen."""
    sc = spark.sparkContext
    configured = spark.conf.get("spark.checkpoint.dir", None)
    if sc.getCheckpointDir() is None and configured:
        sc.setCheckpointDir(configured)
    return sc.getCheckpointDir() is not None


def _star_components(edges: DataFrame, max_rounds: int, cache: CacheScope) -> DataFrame:
    """Alternating large-star / small-star (Kiveris et al. 2014, Alg. 1–3) on DataFrames."""
    from pyspark.sql import functions as F

    a, b = F.col("a"), F.col("b")
    vertices = edges.select(F.col("src").alias("vertex")).unionByName(
        edges.select(F.col("dst").alias("vertex"))
    )  # -> (vertex), with repeats
    with sql_defaults(edges.sparkSession, round_settings(edges.sparkSession)):
        forest = _min_star_forest(edges, max_rounds, cache)
    labels = forest.select(b.alias("vertex"), a.alias("component"))  # leaves -> centre
    # -> (vertex, component); a centre (or a vertex with only a self loop) is its own
    return (
        vertices.distinct()
        .join(labels, "vertex", "left")
        .select("vertex", F.coalesce("component", "vertex").alias("component"))
    )


def _min_star_forest(edges: DataFrame, max_rounds: int, cache: CacheScope) -> DataFrame:
    """The rounds: (a, b) edges, a < b, until they form stars centred at their minimum vertex
    (a materialized table of the scope)."""
    from pyspark.sql import functions as F

    a, b = F.col("a"), F.col("b")
    cur = cache.materialize(
        edges.select(F.least("src", "dst").alias("a"), F.greatest("src", "dst").alias("b"))
        .where(a != b)
        .distinct()
    )  # -> (a, b) with a < b, undirected
    for round_ in range(1, max_rounds + 1):
        previous, cur = cur, cache.materialize(_small_star(_large_star(cur)))
        cache.drop(previous)
        if _is_min_star_forest(cur):
            log_private(log, "connected components: converged after %d rounds", round_)
            return cur
    raise RuntimeError(
        f"connected components did not converge in {max_rounds} rounds; raise max_rounds"
    )


def _large_star(cur: DataFrame) -> DataFrame:
    """Connect every larger neighbour v of u to m(u) = min of u and its neighbours."""
    from pyspark.sql import functions as F

    sym = cur.select(F.col("a").alias("u"), F.col("b").alias("v")).unionByName(
        cur.select(F.col("b").alias("u"), F.col("a").alias("v"))
    )  # -> (u, v) both directions
    m = sym.groupBy("u").agg(F.least(F.min("v"), F.col("u")).alias("m"))  # -> (u, m)
    # -> (a, b), a < b
    return (
        sym.where(F.col("v") > F.col("u"))
        .join(m, "u")
        .select(F.col("m").alias("a"), F.col("v").alias("b"))  # m ≤ u < v
        .distinct()
    )


def _small_star(cur: DataFrame) -> DataFrame:
    """Connect u and every smaller neighbour of u to m = min of u's smaller neighbours."""
    from pyspark.sql import functions as F

    m = cur.groupBy(F.col("b").alias("u")).agg(F.min("a").alias("m"))  # -> (u, m), m < u
    to_min = (
        cur.join(m, cur["b"] == m["u"])
        .select(F.col("m").alias("a"), F.col("a").alias("b"))
        .where(F.col("a") != F.col("b"))
    )  # smaller neighbours -> m
    own = m.select(F.col("m").alias("a"), F.col("u").alias("b"))  # u -> m
    # -> (a, b), a < b
    return to_min.unionByName(own).distinct()


def _is_min_star_forest(cur: DataFrame) -> bool:
    """True iff every vertex b has one neighbour a < b and no a is itself some b (exact test)."""
    from pyspark.sql import functions as F

    roles = cur.select(F.col("a").alias("v"), F.lit(0).alias("leaf")).unionByName(
        cur.select(F.col("b").alias("v"), F.lit(1).alias("leaf"))
    )  # -> (v, leaf)
    bad = (
        roles.groupBy("v")
        .agg(F.sum("leaf").alias("as_leaf"), F.min("leaf").alias("min_role"))
        .where((F.col("as_leaf") > 1) | ((F.col("as_leaf") >= 1) & (F.col("min_role") == 0)))
    )  # a vertex with two parents, or a centre that is also a leaf
    return bad.limit(1).count() == 0
