"""The preview's wall time against one Basic release on the same cached pairs, alternating.

    python -m bench.preview_timing [--rounds 3] [--out FILE] DATASET ...

For each dataset (``bench/data/DATASET``): the pairs read and cached once, one warm-up of
each, then ``rounds`` × (a preview at ε_p = 0.5, a Basic release at the preview's recommended
Basic Δ0), alternating, each timed alone; medians. Issue 36's goal: the preview costs at most
one Basic run (docs/design/tuning.md#measured). Run on an idle machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench.cases.tuning import DELTA, EPSILON
from bench.harness import DATA_DIR, _session, emit_json


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(spark, dataset: str, rounds: int) -> dict:
    from spark_dp.io import load_pairs
    from spark_dp.partition_selection import (
        PartitionSelectionParams,
        PreviewParams,
        preview_partitions,
        select_partitions,
    )
    from spark_dp.randomness import Randomness

    pairs, _ = load_pairs(spark, str(DATA_DIR / dataset))
    keys = iter(range(1000))

    def preview() -> int:
        r = Randomness.create(next(keys)).bind(f"bench-preview-timing-{dataset}")
        result = preview_partitions(
            pairs, PreviewParams(epsilon=0.5, release_epsilon=EPSILON), r, validate=False
        )
        return max(
            (p for p in result.predictions if p.algorithm == "basic"), key=lambda p: p.items
        ).max_contributions

    best = preview()  # warm-up, and the Δ0 the Basic runs use

    def basic() -> None:
        params = PartitionSelectionParams(
            algorithm="basic", epsilon=EPSILON, delta=DELTA, max_contributions=best
        )
        r = Randomness.create(next(keys)).bind(f"bench-basic-timing-{dataset}")
        with select_partitions(pairs, params, r, validate=False) as sel:
            sel.output_items  # noqa: B018 - the release is computed

    basic()  # warm-up
    previews, basics = [], []
    for _ in range(rounds):
        previews.append(_time(preview))
        basics.append(_time(basic))
    pairs.unpersist()
    p, b = statistics.median(previews), statistics.median(basics)
    return {
        "dataset": dataset,
        "basic_max_contributions": best,
        "preview_seconds": previews,
        "basic_seconds": basics,
        "median_ratio": p / b,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.preview_timing")
    ap.add_argument("datasets", nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    spark = _session()
    return emit_json([measure(spark, d, args.rounds) for d in args.datasets], args.out)


if __name__ == "__main__":
    raise SystemExit(main())
