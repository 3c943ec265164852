"""Connected components of an edge DataFrame: GraphFrames when usable, plain DataFrames otherwise.

Used to split the peeled person–item core into independent pieces: DC(D; ℓ) is a sum over the
connected components of the graph (docs/design/counting.md#curve, end of "E3"), so each piece can
be solved exactly on its own executor task.

* **GraphFrames** ``connectedComponents`` runs when both its Python package and its JVM jar are
  present (:func:`spark_dp.session.graphframes_missing`); ``auto`` falls back to the DataFrame
  path otherwise, and ``graphframes`` without them is a :class:`ParameterError` (the job checks
  it once the session exists, before any data is read). The command that adds the jar on a
  cluster is in docs/operations/cluster.md#graphframes (not run by the test suite: its jars are
  not obtainable where it runs). GraphFrames needs a checkpoint directory; when the context has
  none, one is set under ``spark.local.dir``.
* **DataFrame fallback**: the alternating large-star / small-star algorithm (Kiveris et al.,
  "Connected Components in MapReduce and Beyond", SoCC 2014), which needs O(log² n) rounds.
  Every round's edges are materialized (:meth:`spark_dp.caching.CacheScope.materialize`) to
  cut the query plan, which would otherwise grow with every round. It stops when the graph is a
  union of stars centred at their minimum vertex — an exact test, so the labels are exact,
  never a heuristic "nothing changed in one round".

Vertex ids are longs. Callers that hash names to longs may merge two vertices on a collision;
that can only merge components, which keeps any per-component computation that is exact on a
union of components exact.
"""

from __future__ import annotations

import logging
import os
import tempfile
from typing import TYPE_CHECKING

from spark_dp.caching import CacheScope
from spark_dp.errors import ParameterError
from spark_dp.logs import log_private

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["METHODS", "connected_components", "resolve_method"]

METHODS = ("auto", "graphframes", "dataframe")

log = logging.getLogger(__name__)


def resolve_method(spark: SparkSession, method: str = "auto") -> str:
    """``graphframes`` or ``dataframe``: what :func:`connected_components` will run.

    ``auto`` picks GraphFrames exactly when :func:`spark_dp.session.graphframes_missing` finds
    nothing missing. Depends on the session only (a public fact), never on the data.

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
            "io.graphframes:graphframes-spark4_2.13:<version> for Spark 4, "
            "graphframes-spark3_2.12 for Spark 3.5), or use components='auto' or 'dataframe'"
        )
    return "dataframe" if missing is not None else "graphframes"


def connected_components(
    edges: DataFrame, cache: CacheScope, *, method: str = "auto", max_rounds: int = 200
) -> DataFrame:
    """Component label of every vertex of an undirected graph.

    Args:
        edges: DataFrame (src long, dst long); direction, duplicates and self loops are ignored.
        cache: where the rounds of the DataFrame algorithm keep their edges.
        method: ``auto``, ``graphframes`` or ``dataframe`` (see :func:`resolve_method`).
        max_rounds: round cap of the DataFrame algorithm (it raises rather than return
            labels that are not final).

    Returns:
        (vertex long, component long): one row per vertex that has an edge; the label is the
        smallest vertex id of the component (DataFrame path) or GraphFrames' label.
    """
    spark = edges.sparkSession
    chosen = resolve_method(spark, method)
    log_private(log, "connected components: %s", chosen)  # whether they run follows the data
    if chosen == "graphframes":
        return _graphframes_components(spark, edges)
    return _star_components(edges, max_rounds, cache)


def _graphframes_components(spark: SparkSession, edges: DataFrame) -> DataFrame:
    """GraphFrames adapter: edges (src, dst) -> GraphFrame -> (vertex, component)."""
    from graphframes import GraphFrame
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    if sc.getCheckpointDir() is None:
        base = spark.conf.get("spark.local.dir", None) or tempfile.gettempdir()
        sc.setCheckpointDir(os.path.join(base.split(",")[0], "spark_dp-graphframes-checkpoints"))
    e = edges.select(F.col("src").cast("long").alias("src"), F.col("dst").cast("long").alias("dst"))
    vertices = (
        e.select(F.col("src").alias("id"))
        .unionByName(e.select(F.col("dst").alias("id")))
        .distinct()
    )  # -> (id)
    labelled = GraphFrame(vertices, e).connectedComponents()  # -> (id, component)
    # -> (vertex, component)
    return labelled.select(
        F.col("id").cast("long").alias("vertex"), F.col("component").cast("long").alias("component")
    )


def _star_components(edges: DataFrame, max_rounds: int, cache: CacheScope) -> DataFrame:
    """Alternating large-star / small-star (Kiveris et al. 2014, Alg. 1–3) on DataFrames."""
    from pyspark.sql import functions as F

    a, b = F.col("a"), F.col("b")
    vertices = edges.select(F.col("src").alias("vertex")).unionByName(
        edges.select(F.col("dst").alias("vertex"))
    )  # -> (vertex), with repeats
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
            labels = cur.select(b.alias("vertex"), a.alias("component"))  # leaves -> centre
            # -> (vertex, component); a centre (or a vertex with only a self loop) is its own
            return (
                vertices.distinct()
                .join(labels, "vertex", "left")
                .select("vertex", F.coalesce("component", "vertex").alias("component"))
            )
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
