"""Connected components: the DataFrame fallback vs scipy, GraphFrames detection and adapter."""

from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_dp.caching import CacheScope
from spark_dp.distinct_count import components as comp
from spark_dp.errors import ParameterError
from spark_dp.session import graphframes_available
from tests.distinct_count.helpers import partition, scipy_partition


def _random_graph(seed: int) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """Edges over sparse, signed 64-bit vertex ids (like hashed names), with several components,
    a long path (many star rounds), duplicates, reversed duplicates and a self loop."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(-(2**62), 2**62, size=120)
    edges: list[tuple[int, ...]] = [
        (int(ids[a]), int(ids[b])) for a, b in rng.integers(0, 60, size=(45, 2))
    ]
    edges += [(int(ids[i]), int(ids[i + 1])) for i in range(60, 80)]  # a path of 21 vertices
    edges += [(int(ids[101]), int(ids[100])), (int(ids[100]), int(ids[101])), (int(ids[102]),) * 2]
    return ids, edges


def test_dataframe_fallback_agrees_with_scipy(spark: SparkSession, cache: CacheScope) -> None:
    _, edges = _random_graph(1)
    df = spark.createDataFrame(edges, "src long, dst long")
    out = comp.connected_components(df, cache, method="dataframe").collect()
    got = [(r["vertex"], r["component"]) for r in out]
    assert len(got) == len({v for v, _ in got})  # one label per vertex
    assert partition(got) == scipy_partition(edges)
    # DataFrame labels are the smallest vertex id of each component.
    for group in partition(got):
        assert {c for v, c in got if v in group} == {min(group)}


def test_rounds_run_a_few_shuffle_partitions_per_core_unless_the_session_sets_them(
    spark: SparkSession, cache: CacheScope, monkeypatch: pytest.MonkeyPatch
) -> None:
    per_core = comp.TASKS_PER_CORE * spark.sparkContext.defaultParallelism
    assert comp.round_settings(spark) == {"spark.sql.shuffle.partitions": str(per_core)}
    _, edges = _random_graph(2)
    df = spark.createDataFrame(edges, "src long, dst long")
    key, chosen = "spark.sql.shuffle.partitions", spark.conf.get("spark.sql.shuffle.partitions")
    seen: list[str | None] = []
    star = comp._min_star_forest

    def spy(*args: Any) -> DataFrame:
        seen.append(spark.conf.get(key, None))
        return star(*args)

    monkeypatch.setattr(comp, "_min_star_forest", spy)
    try:
        spark.conf.unset(key)
        unset = comp.connected_components(df, cache, method="dataframe").collect()
        assert spark.conf.get(key, None) in (None, "200")  # left as found (Spark's default)
        spark.conf.set(key, "7")
        kept = comp.connected_components(df, cache, method="dataframe").collect()
    finally:
        spark.conf.set(key, chosen)
    assert seen == [str(per_core), "7"]  # the session's own setting wins
    for out in (unset, kept):
        assert partition([(r["vertex"], r["component"]) for r in out]) == scipy_partition(edges)


def test_detection_and_dispatch(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch, cache: CacheScope
) -> None:
    if graphframes_available(spark):  # a session with the jar: both paths must agree
        _, edges = _random_graph(2)
        df = spark.createDataFrame(edges, "src long, dst long")
        via_gf = comp.connected_components(df, cache, method="graphframes").collect()
        via_df = comp.connected_components(df, cache, method="dataframe").collect()
        assert partition(map(tuple, via_gf)) == partition(map(tuple, via_df))
        assert comp.resolve_method(spark, "auto") == comp.AUTO_METHOD
    else:  # the main suite's session has no jar (tests/graphframes has): auto falls back
        assert comp.resolve_method(spark, "auto") == "dataframe"
        with pytest.raises(ParameterError, match="cannot run: "):
            comp.resolve_method(spark, "graphframes")
        called: list[int] = []

        def fake_star(edges: DataFrame, max_rounds: int, cache: CacheScope) -> str:
            called.append(max_rounds)
            return "fallback"

        monkeypatch.setattr(comp, "_star_components", fake_star)
        assert (
            comp.connected_components(
                spark.range(1).select(F.col("id").alias("src"), F.col("id").alias("dst")), cache
            )
            == "fallback"
        )
        assert called == [200]
    with pytest.raises(ParameterError, match="components must be one of"):
        comp.resolve_method(spark, "networkx")


def test_graphframes_adapter_contract_with_a_fake_module(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch, cache: CacheScope
) -> None:
    """An adapter test, not GraphFrames: a stand-in ``graphframes`` module checks what the
    adapter hands to ``GraphFrame``, the options it asks for, and how it reads
    ``connectedComponents``' answer, on a session without a checkpoint directory. GraphFrames
    itself runs in tests/graphframes (``make test-graphframes``, with its jar)."""
    seen: dict[str, Any] = {}

    class FakeGraphFrame:
        def __init__(self, vertices: DataFrame, edges: DataFrame) -> None:
            seen["vertex_columns"] = vertices.columns
            seen["vertex_types"] = [f.dataType.simpleString() for f in vertices.schema]
            seen["edge_columns"] = edges.columns
            seen["vertex_ids"] = sorted(r["id"] for r in vertices.collect())
            self.vertices = vertices

        def connectedComponents(self, **options: Any) -> DataFrame:
            seen["options"] = options
            # GraphFrames returns the vertex columns plus "component".
            return self.vertices.withColumn("extra", F.lit("x")).withColumn(
                "component", (F.col("id") / 10).cast("long")
            )

    fake = types.ModuleType("graphframes")
    fake.GraphFrame = FakeGraphFrame  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "graphframes", fake)
    monkeypatch.setattr("spark_dp.session.graphframes_missing", lambda s: None)
    checkpoint_dirs: list[str] = []
    monkeypatch.setattr(spark.sparkContext, "getCheckpointDir", lambda: None)
    monkeypatch.setattr(spark.sparkContext, "setCheckpointDir", checkpoint_dirs.append)

    edges = spark.createDataFrame([(1, 2), (2, 3), (15, 14), (15, 14)], "src int, dst int")
    assert comp.resolve_method(spark, "graphframes") == "graphframes"
    out = comp.connected_components(edges, cache, method="graphframes")
    assert out.columns == ["vertex", "component"]
    assert [f.dataType.simpleString() for f in out.schema] == ["bigint", "bigint"]
    assert sorted(map(tuple, out.collect())) == [(1, 0), (2, 0), (3, 0), (14, 1), (15, 1)]
    assert seen["vertex_columns"] == ["id"] and seen["vertex_types"] == ["bigint"]
    assert seen["edge_columns"] == ["src", "dst"]
    assert seen["vertex_ids"] == [1, 2, 3, 14, 15]  # each vertex once
    assert seen["options"] == {
        "algorithm": comp.GRAPHFRAMES_ALGORITHM,
        "broadcastThreshold": -1,  # AQE's skew joins; no session setting changed meanwhile
        "use_local_checkpoints": True,  # no checkpoint directory: local checkpoints
        "max_iter": 2**31 - 1,  # not graphframes-py's default of 31 (graphx would stop early)
    }
    assert checkpoint_dirs == []  # the session's checkpoint directory is left alone


def test_graphframes_checkpoints_follow_the_launch_setting_on_either_spark_line() -> None:
    """``spark.checkpoint.dir`` given at launch: Spark 4 sets it on the context itself, Spark 3.5
    ignores it, so it is applied before GraphFrames runs; without it, no directory is chosen
    (GraphFrames then takes local checkpoints)."""

    class Context:
        def __init__(self, directory: str | None) -> None:
            self.directory = directory

        def getCheckpointDir(self) -> str | None:
            return self.directory

        def setCheckpointDir(self, directory: str) -> None:
            self.directory = directory

    def session(launch: str | None, context: str | None) -> Any:
        conf = types.SimpleNamespace(get=lambda key, default: launch if key else default)
        return types.SimpleNamespace(conf=conf, sparkContext=Context(context))

    spark35 = session("hdfs:///ckpt", None)
    assert comp._reliable_checkpoints(spark35)
    assert spark35.sparkContext.directory == "hdfs:///ckpt"
    spark4 = session("hdfs:///ckpt", "hdfs:///ckpt/5f0e")  # Spark 4: a directory under it
    assert comp._reliable_checkpoints(spark4)
    assert spark4.sparkContext.directory == "hdfs:///ckpt/5f0e"
    unset = session(None, None)
    assert not comp._reliable_checkpoints(unset)
    assert unset.sparkContext.directory is None
