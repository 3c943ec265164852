"""``python -m bench.noise_cost``: what the keyed noise costs per item, against Spark's ``randn``.

Issue 13 asks whether the keyed PRF makes the jobs slower. A whole job mixes the noise with
everything else, so this measures the noise step alone: n items (a string key each, cached),
noise added and summed, once with :func:`spark_dp.randomness.add_noise_column` (AES-256 PRF of
the key, the stream and the item, Box-Muller in a pandas UDF) and once with Spark's own
``randn`` (neither keyed nor recomputable), alternating, best of ``--repeat``, in the
harness's session. The difference per item, times a round's item count, is what the PRF
adds to a round. Writes ``bench/results/compare/noise-cost.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.harness import RESULTS_DIR, _session

SIZES = (100_000, 1_000_000, 4_000_000)


def measure(sizes: tuple[int, ...], repeat: int) -> list[dict[str, Any]]:
    """Best-of-``repeat`` seconds of each noise source over each item count."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    from spark_dp.randomness import Randomness, add_noise_column

    spark = _session()
    stream = Randomness.create(1).bind("test").child("noise", 1)
    rows = []
    for n in sizes:
        items = (
            spark.range(n)
            .select(F.concat(F.lit("item-"), F.col("id").cast("string")).alias("item"))
            .repartition(2)
            .cache()
        )
        items.count()
        sources: dict[str, Callable[[DataFrame], DataFrame]] = {
            "spark_randn": lambda df: df.withColumn("_n", F.randn(1) * 3.0),
            "keyed_prf": lambda df: add_noise_column(
                df, ["item"], "_n", distribution="gaussian", scale=3.0, randomness=stream
            ),
        }
        best: dict[str, float] = {}
        for _ in range(repeat):
            for name, make in sources.items():
                start = time.perf_counter()
                make(items).agg(F.sum("_n")).collect()
                took = time.perf_counter() - start
                best[name] = min(best.get(name, took), took)
        items.unpersist()
        extra = best["keyed_prf"] - best["spark_randn"]
        rows.append({"items": n, **best, "extra_us_per_item": 1e6 * extra / n})
    spark.stop()
    return rows


def to_markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "# Keyed noise against Spark's randn (noise step alone)",
        "",
        f"2 cores, the harness's session, {datetime.now(timezone.utc):%Y-%m-%d}; best of the runs; "
        "n cached string items, noise added and summed.",
        "",
        "| items | Spark randn s | keyed PRF s | extra µs per item |",
        "|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['items']:,} | {r['spark_randn']:.2f} | {r['keyed_prf']:.2f} | "
            f"{r['extra_us_per_item']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.noise_cost", description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS_DIR / "compare"))
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    rows = measure(SIZES, args.repeat)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "noise-cost.json").write_text(json.dumps(rows, indent=2) + "\n")
    table = to_markdown(rows)
    (out / "noise-cost.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
