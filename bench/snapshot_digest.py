"""What a key-file release pays for its digest on Parquet and on a Delta table of the same pairs.

A Basic release (ε = 1, δ = 1e-5, Δ0 = 100) with a seeded key, which binds to a digest as a key
file does, on one input written both ways: on Parquet the digest is validation's aggregation
over the rows; on a Delta table read at a pinned version it is the keyed digest of the version's
snapshot, from the log (docs/privacy/keys.md#snapshot). Each run times the read (``load_pairs``
with the key's gate) and the whole release to its written items; the formats alternate after a
warm-up of each, in one session with Delta's jars.

    SPARK_DP_DELTA_JARS=a.jar,b.jar .venv-spark35/bin/python -m bench.snapshot_digest \\
        --input bench/data/zipf-rep-x8 [--runs 3] [--out bench/results/...]

Prints one JSON document (seconds per run, medians). Timings depend on the machine and its load:
say so with any number quoted from it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import emit_json
from spark_dp.io import ReadGate, load_pairs
from spark_dp.io.delta import DELTA_SESSION_CONF
from spark_dp.partition_selection.params import PartitionSelectionParams
from spark_dp.partition_selection.select import select_partitions
from spark_dp.randomness import Randomness
from spark_dp.session import get_session

PARAMS = PartitionSelectionParams(epsilon=1.0, delta=1e-5, max_contributions=100, algorithm="basic")


def release(spark: Any, path: str, fmt: str, out: str) -> tuple[float, float]:
    """(read seconds, whole release seconds) of one seeded Basic release of ``path``."""
    key = Randomness.create(seed=1)
    version = 0 if fmt == "delta" else None
    start = time.perf_counter()
    pairs, summary = load_pairs(
        spark, path, fmt=fmt, version=version, dedupe=False, persist=False,
        gate=ReadGate.keyed_by(key),
    )  # fmt: skip
    read = time.perf_counter() - start
    with select_partitions(pairs, PARAMS, key, validate=False, digest=summary) as selection:
        selection.items.write.mode("overwrite").parquet(out)
    return read, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True, help="a Parquet table of (user_id, item) pairs")
    ap.add_argument("--runs", type=int, default=3, help="alternating (parquet, delta) runs")
    ap.add_argument("--out", help="also write the JSON here")
    ns = ap.parse_args()
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}
    conf |= {**DELTA_SESSION_CONF, "spark.jars": os.environ["SPARK_DP_DELTA_JARS"]}
    spark = get_session("snapshot-digest", conf)
    seconds: dict[str, list[tuple[float, float]]] = {"parquet": [], "delta": []}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {"parquet": ns.input, "delta": f"{tmp}/delta"}
        spark.read.parquet(ns.input).write.format("delta").save(paths["delta"])
        for fmt in seconds:  # warm-up: JIT, file cache, Delta's log reader
            release(spark, paths[fmt], fmt, f"{tmp}/out")
        for run in range(ns.runs):
            for fmt in ("parquet", "delta") if run % 2 == 0 else ("delta", "parquet"):
                seconds[fmt].append(release(spark, paths[fmt], fmt, f"{tmp}/out"))
    doc: dict[str, Any] = {"input": ns.input, "spark": spark.version, "runs": ns.runs}
    for fmt, runs in seconds.items():
        doc[fmt] = {
            "read_seconds": [round(r, 2) for r, _ in runs],
            "release_seconds": [round(t, 2) for _, t in runs],
            "median_read": round(statistics.median(r for r, _ in runs), 2),
            "median_release": round(statistics.median(t for _, t in runs), 2),
        }
    emit_json(doc, Path(ns.out) if ns.out else None)


if __name__ == "__main__":
    main()
