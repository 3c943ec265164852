"""GraphFrames' connected components, for real: the same partition, curve, ℓ̂ and release as the
DataFrame path (``make test-graphframes``: each Spark line's GraphFrames jar, on pyspark 4 and on
pyspark 3.5; docs/operations/cluster.md#graphframes).

Graphs of several shapes: one giant component, many small ones, stars around a hub, long paths
(more hops than graphframes-py's default iteration cap of 31), isolated vertices (self loops
only), repeated and reversed edges, extreme ids, and person–item datasets whose hashed vertex
ids collide (a weak hash put in for the real one: a collision merges two vertices, which may
only merge components, so the values must stay exact).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_dp.caching import CacheScope
from spark_dp.distinct_count import components as comp
from spark_dp.distinct_count import dc_curve, distinct_count, exact_curve_local
from spark_dp.distinct_count.params import DistinctCountParams
from spark_dp.distinct_count.result import DistinctCountResult
from spark_dp.jobs import distinct_count as job
from spark_dp.randomness import Randomness
from spark_dp.session import graphframes_missing
from tests.distinct_count.helpers import partition, scipy_partition
from tests.support.spark_session import GRAPHFRAMES_JAR_ENV

if not os.path.isfile(os.environ.get(GRAPHFRAMES_JAR_ENV, "")):
    pytest.skip(
        f"no GraphFrames jar ({GRAPHFRAMES_JAR_ENV} unset): make test-graphframes had none to copy",
        allow_module_level=True,
    )

ELL_MAX = 12
Edges = list[tuple[int, int]]
Rows = list[tuple[str, str]]


def _graph_shapes() -> dict[str, Edges]:
    """Edge lists over disjoint, shuffled signed 64-bit ids (so labels cannot follow the ids)."""
    rng = np.random.default_rng(47)
    ids = iter(rng.choice(2**62, size=5_000, replace=False) * rng.choice([-1, 1], size=5_000))

    def take(n: int) -> list[int]:
        return [int(next(ids)) for _ in range(n)]

    giant = take(300)
    small = [take(int(rng.integers(2, 5))) for _ in range(120)]
    hubs = [take(1 + 150) for _ in range(3)]
    path = take(45)
    lonely = take(40)
    shapes = {
        "giant": [(giant[i], giant[int(rng.integers(0, i))]) for i in range(1, 300)]
        + [(giant[a], giant[b]) for a, b in rng.integers(0, 300, size=(150, 2))],
        "small": [(c[i], c[i + 1]) for c in small for i in range(len(c) - 1)],
        "stars": [(h[0], leaf) for h in hubs for leaf in h[1:]] + [(hubs[0][5], hubs[0][0])],
        "path": [(path[i], path[i + 1]) for i in range(44)],  # 44 hops: more than 31
        "isolated": [(v, v) for v in lonely],  # vertices with a self loop only
        "repeats": [(path[3], path[2]), (path[2], path[3]), (small[0][0], small[0][1])] * 2
        + [(-(2**63), 2**63 - 1), (0, -(2**63))],  # extreme ids
    }
    return shapes


SHAPES = _graph_shapes()
ALL_EDGES = [e for edges in SHAPES.values() for e in edges]


@pytest.fixture(scope="module")
def graph(spark: SparkSession) -> DataFrame:
    edges = spark.createDataFrame(ALL_EDGES, "src long, dst long").cache()
    edges.count()  # cached before any test looks at what is persisted
    return edges


def test_the_session_runs_graphframes_0_11(spark: SparkSession) -> None:
    import graphframes

    assert graphframes_missing(spark) is None
    assert graphframes.__version__.startswith("0.11."), graphframes.__version__
    assert comp.resolve_method(spark, "graphframes") == "graphframes"
    assert comp.resolve_method(spark, "auto") == comp.AUTO_METHOD


@pytest.mark.parametrize("algorithm", ["two_phase", "graphx"])
def test_each_algorithm_finds_the_components_of_every_shape(
    spark: SparkSession,
    graph: DataFrame,
    algorithm: str,
) -> None:
    """scipy's partition (the DataFrame path's is checked against scipy in the main suite, and
    against GraphFrames through the curves below). GraphFrames hands back its answer
    persisted: the scope that ran it unpersists it (what stays is the blocks of two_phase's
    local checkpoints, which Spark's cleaner drops once the JVM has collected their RDDs)."""
    jsc = spark.sparkContext._jsc
    before = set(jsc.getPersistentRDDs().keySet())
    checkpoints = spark.sparkContext.getCheckpointDir()
    with CacheScope() as scope:
        got = [tuple(r) for r in comp.graphframes_components(graph, scope, algorithm).collect()]
    assert len(got) == len({v for v, _ in got})  # one label per vertex
    found = partition(got)
    assert found == scipy_partition(ALL_EDGES)
    assert frozenset(x for e in SHAPES["path"] for x in e) in found  # all 44 hops labelled
    assert spark.sparkContext.getCheckpointDir() == checkpoints  # no directory set by the run
    rdds = jsc.getPersistentRDDs()
    left = [rdds[k].rdd() for k in set(rdds.keySet()) - before]
    assert [r.toDebugString() for r in left if not r.isLocallyCheckpointed()] == []


# ----------------------------------------------------------------- person-item datasets


def _blocks(prefix: str, persons: int, items: int, per_person: int) -> Rows:
    """A dense block whose core survives peeling: each person holds ``per_person`` of the
    block's items (consecutive, cyclic)."""
    return [
        (f"{prefix}p{p}", f"{prefix}x{(p + k) % items}")
        for p in range(persons)
        for k in range(per_person)
    ]


def _datasets() -> dict[str, Rows]:
    rng = np.random.default_rng(7)
    zipf = {
        (f"z{u:03d}", f"w{w}")
        for u in range(80)
        for w in np.minimum(rng.zipf(1.4, size=int(rng.integers(1, 25))), 300)
    }
    giant = sorted(zipf) + _blocks("g", 6, 10, 8) + [("gp0", "w1"), ("z000", "gx3")]
    mixed: Rows = []
    for c in range(25):  # many small components, each with a core at ℓ = 1
        mixed += _blocks(f"s{c}", 5, 4, 3)
    for b in range(6):  # a star of dense blocks around one hub item
        mixed += _blocks(f"h{b}", 4, 6, 4) + [(f"h{b}p{p}", "hub") for p in range(4)]
    for b in range(20):  # a path of blocks, each sharing an item with the next
        mixed += [*_blocks(f"q{b}", 3, 4, 3), (f"q{b}p0", f"q{b + 1}x0")]
    mixed += [(f"alone{k}", f"own{k}") for k in range(30)]  # isolated persons
    for k in range(40):  # a star around a hub person, each item shared with one other person
        mixed += [("hubperson", f"hx{k}"), (f"hp{k}", f"hx{k}")]
    shapes = sorted(set(giant + mixed))  # the giant component beside all the others
    return {"shapes": shapes, "collisions": shapes}


DATASETS = _datasets()


def _weak_vertex_ids() -> tuple[Column, Column]:
    """Vertex ids from 11 hash values: persons and items collide everywhere."""
    return (
        F.pmod(F.xxhash64(F.lit("person"), F.col("user_id")), F.lit(11)),
        F.pmod(F.xxhash64(F.lit("item"), F.col("item")), F.lit(11)),
    )


def _reference(rows: Rows) -> list[int]:
    frame = pd.DataFrame(rows, columns=["user_id", "item"])
    person, _ = pd.factorize(frame["user_id"])
    item, _ = pd.factorize(frame["item"])
    return exact_curve_local(person, item, ELL_MAX).tolist()


@pytest.fixture
def graphframes_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The GraphFrames algorithms run meanwhile (so a test knows the GraphFrames path ran)."""
    calls: list[str] = []
    real = comp.graphframes_components

    def spy(edges: DataFrame, cache: CacheScope, algorithm: str) -> DataFrame:
        calls.append(algorithm)
        return real(edges, cache, algorithm)

    monkeypatch.setattr(comp, "graphframes_components", spy)
    yield calls


def _release(spark: SparkSession, rows: Rows, components: str) -> DistinctCountResult:
    pairs = spark.createDataFrame(rows, "user_id string, item string")
    params = DistinctCountParams(
        epsilon=1.0, max_contributions=ELL_MAX, components=components, components_min_rows=0
    )
    return distinct_count(pairs, params, Randomness.create(47))  # one key for both methods


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_graphframes_gives_the_curve_ell_and_release_of_the_dataframe_path(
    spark: SparkSession,
    monkeypatch: pytest.MonkeyPatch,
    graphframes_calls: list[str],
    name: str,
) -> None:
    rows = DATASETS[name]
    if name == "collisions":
        monkeypatch.setattr(dc_curve, "_vertex_ids", _weak_vertex_ids)
    via_gf = _release(spark, rows, "graphframes")
    assert graphframes_calls == [comp.GRAPHFRAMES_ALGORITHM]  # the core was split by GraphFrames
    via_df = _release(spark, rows, "dataframe")
    assert via_gf.curve.tolist() == via_df.curve.tolist() == _reference(rows)
    assert via_gf.release == via_df.release  # ℓ̂, ν̂, the estimate: all of it, under one key
    assert (via_gf.components, via_df.components) == ("graphframes", "dataframe")


def test_the_job_report_names_the_method_that_ran(
    spark: SparkSession, tmp_path: Path, graphframes_calls: list[str]
) -> None:
    data = tmp_path / "pairs"
    rows = _blocks("a", 4, 6, 4) + _blocks("b", 5, 4, 3)  # two components with a core
    spark.createDataFrame(rows, "user_id string, item string").write.parquet(str(data))
    report = tmp_path / "report.json"
    args = ["--input", str(data), "--epsilon", "1", "--max-contributions", str(ELL_MAX)]
    args += ["--components", "graphframes", "--components-min-rows", "0", "--seed", "3"]
    assert job.main([*args, "--report", str(report), "--log-level", "ERROR"]) == 0
    mechanism = json.loads(report.read_text())["privacy"]["mechanism"]
    assert mechanism["components"] == "graphframes"
    assert graphframes_calls == [comp.GRAPHFRAMES_ALGORITHM]


def test_a_configured_checkpoint_directory_takes_the_checkpoints(
    spark: SparkSession, cache: CacheScope, tmp_path: Path
) -> None:
    """Last in the file: a context's checkpoint directory cannot be unset. With one set (as on
    a cluster, where it is reliable storage), two_phase checkpoints there, not locally."""
    spark.sparkContext.setCheckpointDir(str(tmp_path / "checkpoints"))
    path = spark.createDataFrame(SHAPES["path"], "src long, dst long")  # rounds to checkpoint
    got = comp.graphframes_components(path, cache, "two_phase").collect()
    assert partition(map(tuple, got)) == scipy_partition(SHAPES["path"])
    written = [p for p in (tmp_path / "checkpoints").rglob("*") if p.is_file()]
    assert written, "two_phase wrote no checkpoint into the configured directory"
