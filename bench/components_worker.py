"""One step of ``bench.components`` in a process of its own (a fresh JVM per measurement).

``python -m bench.components_worker core --users N --out DIR``: Zipf pairs of N users (the
``zipf-1m`` family of ``bench/cases/baseline.py``: 36 items on average, exponent 1.3), their
first-round peeled core (:func:`spark_dp.distinct_count.peeling.first_round`, ℓ_max = 100) and
that core's person–item graph, built as the exact curve builds it
(:func:`spark_dp.distinct_count.dc_curve.core_graph`), written to ``DIR/pairs`` and
``DIR/graph`` with their sizes in ``DIR/meta.json``. Bench data is synthetic: its sizes are
printed.

``python -m bench.components_worker path --vertices N --out DIR``: a path of N vertices (hashed
ids) in ``DIR/graph``, the worst case of label propagation (``graphx``: one superstep per hop).

``python -m bench.components_worker cc --graph DIR/graph --method M --jar JAR``: the connected
components of that graph by ``M`` (``dataframe``: large-star / small-star; ``two_phase`` or
``graphx``: GraphFrames), timed from the cached graph to the persisted, counted labels (what
the exact curve does with them), then, untimed, a fingerprint of the partition (components
and a hash of every vertex with its component's smallest vertex) so that the methods can be
checked against each other. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["main"]

ELL_MAX = 100
ZIPF: dict[str, Any] = {"mean_items": 36.0, "exponent": 1.3}


def _session(jar: str | None, driver_memory: str) -> Any:
    from spark_dp.session import get_session

    conf = {"spark.ui.enabled": "false", "spark.driver.memory": driver_memory}
    if jar:
        conf["spark.jars"] = jar
    return get_session("bench-components", conf, master="local[2]", log_level="ERROR")


def make_core(users: int, out: Path, driver_memory: str, seed: int = 1) -> dict[str, Any]:
    """Write the pairs, the peeled core's graph and their sizes under ``out``."""
    from pyspark.sql import functions as F

    from spark_dp.caching import CacheScope
    from spark_dp.distinct_count.dc_curve import core_graph
    from spark_dp.distinct_count.peeling import first_round
    from spark_dp.generators.spark_frames import pairs_frame

    spark = _session(None, driver_memory)
    pairs, _ = pairs_frame(spark, "zipf", n_users=users, seed=seed, **ZIPF)
    pairs.select(F.col("user_id").cast("string").alias("user_id"), "item").distinct().write.mode(
        "overwrite"
    ).parquet(str(out / "pairs"))
    pairs = spark.read.parquet(str(out / "pairs"))
    with CacheScope() as cache:
        rows = first_round(pairs, ELL_MAX, cache).rows
        core_graph(rows).write.mode("overwrite").parquet(str(out / "graph"))
    meta = {
        "users": users,
        "pairs": spark.read.parquet(str(out / "pairs")).count(),
        "core_edges": spark.read.parquet(str(out / "graph")).count(),
        "ell_max": ELL_MAX,
        "zipf": ZIPF,
        "seed": seed,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def make_path(vertices: int, out: Path, driver_memory: str) -> dict[str, Any]:
    """Write a path of ``vertices`` vertices with hashed ids (labels cannot follow the ids): the
    worst shape for label propagation, one superstep per hop."""
    from pyspark.sql import functions as F

    spark = _session(None, driver_memory)
    hop = F.col("id")
    spark.range(vertices - 1).select(
        F.xxhash64(F.lit("path"), hop).alias("src"), F.xxhash64(F.lit("path"), hop + 1).alias("dst")
    ).write.mode("overwrite").parquet(str(out / "graph"))
    meta = {"path_vertices": vertices, "core_edges": vertices - 1}
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def time_components(graph: str, method: str, jar: str | None, driver_memory: str) -> dict[str, Any]:
    """Seconds of ``method`` on the graph at ``graph`` and the partition's fingerprint."""
    from pyspark.sql import functions as F

    from spark_dp.caching import CacheScope
    from spark_dp.distinct_count.components import connected_components, graphframes_components

    spark = _session(jar if method != "dataframe" else None, driver_memory)
    with CacheScope() as cache:
        edges = cache.persist(spark.read.parquet(graph))
        n_edges = edges.count()  # the graph cached before the clock starts
        start = time.perf_counter()
        if method == "dataframe":
            labels = connected_components(edges, cache, method="dataframe")
        else:
            labels = graphframes_components(edges, cache, method)
        labels = cache.persist(labels)
        labels.count()
        seconds = time.perf_counter() - start
        smallest = labels.groupBy("component").agg(F.min("vertex").alias("smallest"))
        fingerprint = (
            labels.join(smallest, "component")
            .agg(
                F.countDistinct("smallest").alias("components"),
                F.count("*").alias("vertices"),
                F.sum(F.xxhash64("vertex", "smallest").cast("decimal(38,0)")).alias("hash"),
            )
            .first()
        )
    assert fingerprint is not None
    return {
        "method": method,
        "seconds": round(seconds, 2),
        "edges": n_edges,
        "components": fingerprint["components"],
        "vertices": fingerprint["vertices"],
        "fingerprint": str(fingerprint["hash"]),
        "spark": spark.version,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.components_worker")
    sub = ap.add_subparsers(dest="step", required=True)
    core = sub.add_parser("core", help="generate pairs and their peeled core's graph")
    core.add_argument("--users", type=int, required=True)
    core.add_argument("--out", type=Path, required=True)
    path = sub.add_parser("path", help="write a path graph")
    path.add_argument("--vertices", type=int, required=True)
    path.add_argument("--out", type=Path, required=True)
    cc = sub.add_parser("cc", help="time one connected-components method")
    cc.add_argument("--graph", required=True)
    cc.add_argument("--method", choices=["dataframe", "two_phase", "graphx"], required=True)
    cc.add_argument("--jar")
    for p in (core, path, cc):
        p.add_argument("--driver-memory", default="6g")
    args = ap.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if args.step == "core":
        out = make_core(args.users, args.out, args.driver_memory)
    elif args.step == "path":
        out = make_path(args.vertices, args.out, args.driver_memory)
    else:
        out = time_components(args.graph, args.method, args.jar, args.driver_memory)
    print("RESULT " + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
