"""More keys of one ``--max-contributions auto`` release: its choices and items only.

    python -m bench.tuning_keys DATASET ALGORITHM FIRST LAST [--out FILE]

Keys FIRST..LAST continue the tuning case's auto runs (``bench/cases/tuning.py``: the same key
and binding scheme, so keys 1-5 are the case's own); the data comes from ``bench/data/DATASET``.
Used where five keys leave the mean within the noise of the goal (docs/design/tuning.md#measured).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.cases.tuning import DELTA, EPSILON
from bench.harness import DATA_DIR, _session, emit_json


def main(argv: list[str] | None = None) -> int:
    from spark_dp.io import load_pairs
    from spark_dp.partition_selection import PartitionSelectionParams, select_partitions
    from spark_dp.randomness import Randomness

    ap = argparse.ArgumentParser(prog="python -m bench.tuning_keys")
    ap.add_argument("dataset")
    ap.add_argument("algorithm")
    ap.add_argument("first", type=int)
    ap.add_argument("last", type=int)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    pairs, _ = load_pairs(_session(), str(DATA_DIR / args.dataset))
    out: dict[str, list[int]] = {"keys": [], "chosen": [], "items": []}
    for key in range(args.first, args.last + 1):
        params = PartitionSelectionParams(
            algorithm=args.algorithm, epsilon=EPSILON, delta=DELTA, max_contributions="auto"
        )
        label = f"bench-auto-{args.dataset}-{args.algorithm}-{key}"
        randomness = Randomness.create(100 + key).bind(label)
        with select_partitions(pairs, params, randomness, validate=False) as sel:
            out["keys"].append(key)
            out["chosen"].append(sel.max_contributions)
            out["items"].append(sel.output_items)
        print(key, sel.max_contributions, sel.output_items, file=sys.stderr, flush=True)
    return emit_json(out, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
