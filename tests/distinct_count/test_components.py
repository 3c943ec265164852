"""Connected components: the DataFrame fallback vs scipy, GraphFrames detection and adapter."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from scipy.sparse.csgraph import connected_components as scipy_components

from spark_dp.caching import CacheScope
from spark_dp.distinct_count import components as comp
from spark_dp.errors import ParameterError
from spark_dp.session import graphframes_available


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


def _partition(pairs: Iterable[tuple[Any, ...]]) -> set[frozenset[Any]]:
    groups: dict[Any, set[Any]] = {}
    for v, c in pairs:
        groups.setdefault(c, set()).add(v)
    return {frozenset(g) for g in groups.values()}


def _scipy_partition(edges: Sequence[tuple[int, ...]]) -> set[frozenset[Any]]:
    verts = sorted({v for e in edges for v in e})
    index = {v: k for k, v in enumerate(verts)}
    rows = [index[a] for a, _ in edges]
    cols = [index[b] for _, b in edges]
    g = sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=(len(verts), len(verts)))
    _, labels = scipy_components(g, directed=False)
    return _partition(zip(verts, labels, strict=True))


def test_dataframe_fallback_agrees_with_scipy(spark: SparkSession, cache: CacheScope) -> None:
    _, edges = _random_graph(1)
    df = spark.createDataFrame(edges, "src long, dst long")
    out = comp.connected_components(df, cache, method="dataframe").collect()
    got = [(r["vertex"], r["component"]) for r in out]
    assert len(got) == len({v for v, _ in got})  # one label per vertex
    assert _partition(got) == _scipy_partition(edges)
    # DataFrame labels are the smallest vertex id of each component.
    for group in _partition(got):
        assert {c for v, c in got if v in group} == {min(group)}


def test_detection_and_dispatch(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch, cache: CacheScope
) -> None:
    if graphframes_available(spark):  # a cluster with the jar: both paths must agree
        _, edges = _random_graph(2)
        df = spark.createDataFrame(edges, "src long, dst long")
        via_gf = comp.connected_components(df, cache, method="graphframes").collect()
        via_df = comp.connected_components(df, cache, method="dataframe").collect()
        assert _partition(map(tuple, via_gf)) == _partition(map(tuple, via_df))
        assert comp.resolve_method(spark, "auto") == "graphframes"
    else:  # here: no jar (Maven Central is unreachable), so auto must use the fallback
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
    adapter hands to ``GraphFrame`` and how it reads ``connectedComponents``' answer. The real
    jar is not obtainable where the suite runs (docs/operations/cluster.md#graphframes), so
    GraphFrames itself is exercised only by the first branch of
    ``test_detection_and_dispatch`` on a session that has it."""
    seen: dict[str, Any] = {}

    class FakeGraphFrame:
        def __init__(self, vertices: DataFrame, edges: DataFrame) -> None:
            seen["vertex_columns"] = vertices.columns
            seen["vertex_types"] = [f.dataType.simpleString() for f in vertices.schema]
            seen["edge_columns"] = edges.columns
            seen["vertex_ids"] = sorted(r["id"] for r in vertices.collect())
            self.vertices = vertices

        def connectedComponents(self) -> DataFrame:
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
    assert comp.resolve_method(spark, "auto") == "graphframes"
    out = comp.connected_components(edges, cache, method="auto")
    assert out.columns == ["vertex", "component"]
    assert [f.dataType.simpleString() for f in out.schema] == ["bigint", "bigint"]
    assert sorted(map(tuple, out.collect())) == [(1, 0), (2, 0), (3, 0), (14, 1), (15, 1)]
    assert seen["vertex_columns"] == ["id"] and seen["vertex_types"] == ["bigint"]
    assert seen["edge_columns"] == ["src", "dst"]
    assert seen["vertex_ids"] == [1, 2, 3, 14, 15]  # each vertex once
    assert len(checkpoint_dirs) == 1  # GraphFrames needs a checkpoint directory
