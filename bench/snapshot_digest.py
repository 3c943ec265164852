"""What a key-file release pays for its digest: the rows', the files', a Delta version's.

A Basic release (ε = 1, δ = 1e-5, Δ0 = 100) with a seeded key, which binds to a digest as a key
file does, on one input read several ways: ``rows``, the Parquet table handed to validation as a
DataFrame under a filter, which no snapshot traces to its files (the digest is validation's
aggregation over the rows); ``files``, the same table read by path (the keyed digest of its
files' SHA-256, hashed on the driver: docs/privacy/keys.md#files); ``delta``, a Delta table of
the same pairs at a pinned version (the keyed digest of the version's snapshot, from the log:
docs/privacy/keys.md#snapshot); with ``--hdfs URL``, ``hdfs``, a copy of the table on that HDFS
read by path (the namenode's record and the HDFS checksum of each file:
docs/privacy/keys.md#hdfs). Each run times the read (with the key's gate) and the whole release
to its written items; the modes rotate after a warm-up of each, in one session with Delta's
jars.

    SPARK_DP_DELTA_JARS=a.jar,b.jar .venv-spark35/bin/python -m bench.snapshot_digest \\
        --input bench/data/zipf-rep-x8 [--hdfs hdfs://127.0.0.1:PORT] [--runs 3] [--read-only] \\
        [--out bench/results/...]

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

from pyspark.sql import functions as F

from bench.harness import emit_json
from spark_dp.io import ITEM, USER_ID, ReadGate, load_pairs, validate_edges
from spark_dp.io.delta import DELTA_SESSION_CONF
from spark_dp.partition_selection.params import PartitionSelectionParams
from spark_dp.partition_selection.select import select_partitions
from spark_dp.randomness import Randomness
from spark_dp.session import get_session

PARAMS = PartitionSelectionParams(epsilon=1.0, delta=1e-5, max_contributions=100, algorithm="basic")


MODES = ("rows", "files", "delta")


def release(
    spark: Any, path: str, mode: str, out: str, *, read_only: bool = False
) -> tuple[float, float]:
    """(read seconds, whole release seconds) of one seeded Basic release of ``path`` read the
    ``mode`` way; with ``read_only``, the read alone (both the same)."""
    key = Randomness.create(seed=1)
    gate = ReadGate.keyed_by(key)
    start = time.perf_counter()
    if mode == "rows":
        columns = {USER_ID: USER_ID, ITEM: ITEM}
        rows = spark.read.parquet(path).where(F.lit(True))  # not a plain read: its rows' digest
        pairs, summary = validate_edges(rows, columns, dedupe=False, persist=False, gate=gate)
    else:
        fmt, version = ("delta", 0) if mode == "delta" else ("parquet", None)
        pairs, summary = load_pairs(
            spark, path, fmt=fmt, version=version, dedupe=False, persist=False, gate=gate
        )
    read = time.perf_counter() - start
    if read_only:
        return read, read
    with select_partitions(pairs, PARAMS, key, validate=False, digest=summary) as selection:
        selection.items.write.mode("overwrite").parquet(out)
    return read, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True, help="a Parquet table of (user_id, item) pairs")
    ap.add_argument("--runs", type=int, default=3, help="rounds of the modes, rotated")
    ap.add_argument("--out", help="also write the JSON here")
    ap.add_argument("--read-only", action="store_true", help="time the reads alone")
    ap.add_argument("--hdfs", help="an HDFS URL (hdfs://host:port): time a copy there too")
    ns = ap.parse_args()
    modes = MODES + (("hdfs",) if ns.hdfs else ())
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}
    conf |= {**DELTA_SESSION_CONF, "spark.jars": os.environ["SPARK_DP_DELTA_JARS"]}
    spark = get_session("snapshot-digest", conf)
    seconds: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {"rows": ns.input, "files": ns.input, "delta": f"{tmp}/delta"}
        spark.read.parquet(ns.input).write.format("delta").save(paths["delta"])
        if ns.hdfs:
            paths["hdfs"] = f"{ns.hdfs.rstrip('/')}/snapshot-digest/{os.path.basename(tmp)}"
            spark.read.parquet(ns.input).write.parquet(paths["hdfs"])
        for mode in modes:  # warm-up: JIT, file cache, Delta's log reader
            release(spark, paths[mode], mode, f"{tmp}/out", read_only=ns.read_only)
        for run in range(ns.runs):
            k = run % len(modes)
            for mode in modes[k:] + modes[:k]:
                one = release(spark, paths[mode], mode, f"{tmp}/out", read_only=ns.read_only)
                seconds[mode].append(one)
    doc: dict[str, Any] = {"input": ns.input, "spark": spark.version, "runs": ns.runs}
    doc["read_only"] = ns.read_only
    for mode, runs in seconds.items():
        doc[mode] = {
            "read_seconds": [round(r, 2) for r, _ in runs],
            "release_seconds": [round(t, 2) for _, t in runs],
            "median_read": round(statistics.median(r for r, _ in runs), 2),
            "median_release": round(statistics.median(t for _, t in runs), 2),
        }
    emit_json(doc, Path(ns.out) if ns.out else None)


if __name__ == "__main__":
    main()
