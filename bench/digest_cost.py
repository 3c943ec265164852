"""What the content digest costs inside validation (issue 34): the wall time of
``validate_edges``' one aggregation over a Parquet input, with and without the two digest sums,
alternating, after a warm-up.

    .venv/bin/python bench/digest_cost.py [--rows 5000000] [--pairs 3] [--out bench/results/...]

Prints one JSON document (seconds per run, medians, the ratio). Timings depend on the machine
and its load: say so with any number quoted from it.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import emit_json
from spark_dp.io import ITEM, USER_ID, ReadGate, validate_edges
from spark_dp.randomness import Randomness
from spark_dp.session import get_session


def write_pairs(spark: Any, path: Path, rows: int) -> None:
    """``rows`` (user_id, item) pairs at ``path``: 20 pairs per user over 250,000 items."""
    from pyspark.sql import functions as F

    users = max(1, rows // 20)
    df = spark.range(rows).select(
        F.concat(F.lit("user-"), (F.col("id") % users).cast("string")).alias(USER_ID),
        F.concat(F.lit("item-"), ((F.col("id") * 7919) % 250_000).cast("string")).alias(ITEM),
    )
    df.write.mode("overwrite").parquet(str(path))


def bench_arguments(doc: str, name: str, runs: str, runs_help: str) -> tuple[Any, Any]:
    """The parsed ``--rows``, ``--<runs>`` and ``--out`` of a bench of validation-sized work,
    and a session without UI for it."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument(f"--{runs}", type=int, default=3, help=runs_help)
    ap.add_argument("--out", help="also write the JSON here")
    ns = ap.parse_args()
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}
    return ns, get_session(name, conf)


def main() -> None:
    ns, spark = bench_arguments(__doc__, "digest-cost", "pairs", "alternating (plain, digest)")
    gate = ReadGate.keyed_by(Randomness.create())
    columns = {USER_ID: USER_ID, ITEM: ITEM}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pairs"
        write_pairs(spark, path, ns.rows)

        def once(g: ReadGate | None) -> float:
            start = time.perf_counter()
            validate_edges(spark.read.parquet(str(path)), columns, dedupe=False, persist=False,
                           gate=g)  # fmt: skip
            return time.perf_counter() - start

        once(None), once(gate)  # warm-up: JIT, file cache
        plain, digest = [], []
        for _ in range(ns.pairs):
            plain.append(once(None))
            digest.append(once(gate))
    doc = {
        "rows": ns.rows,
        "spark": spark.version,
        "plain_seconds": [round(x, 3) for x in plain],
        "digest_seconds": [round(x, 3) for x in digest],
        "median_plain": round(statistics.median(plain), 3),
        "median_digest": round(statistics.median(digest), 3),
        "ratio": round(statistics.median(digest) / statistics.median(plain), 3),
    }
    emit_json(doc, Path(ns.out) if ns.out else None)


if __name__ == "__main__":
    main()
