"""Basic's expected items under ``--max-contributions auto``, exactly, for any tuning share and β.

docs/design/tuning.md#share. Given one keyed ranking of each user's items, everything in Basic's
release under ``auto`` is a known distribution: the scores s(c) are deterministic, GEM's
probabilities P[ĉ = c] are exact, and Basic at Δ0 = c releases Σ_i Φ((w_i(c) − ρ(c))/σ) items
in expectation. So

    E[auto items] = Σ_c P[ĉ = c]·E_{(1−f)ε}[items at c],   best = max_c E_ε[items at c],

with no Spark and no sampling noise: what the tuning share f (and GEM's β) cost on a dataset,
separated into the share's floor (the best Δ0 at (1 − f)·ε over the best at ε) and the choice.
The Spark benchmark (``bench/cases/tuning.py``) measures the same on real runs, for MAD2R too.

    python -m bench.tuning_exact [--dataset NAME ...] [--out bench/results/tuning/exact.md]

Datasets: the tuning benchmark's, read from ``bench/data/`` (``--generate`` writes the missing
ones with the harness's generators).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special

from spark_dp.dp.calibration import Budget
from spark_dp.dp.gem import gem_probabilities
from spark_dp.partition_selection.auto.calibration import DeltaChoice
from spark_dp.partition_selection.auto.composition import selection_budget
from spark_dp.partition_selection.calibration import WeightAndThreshold
from spark_dp.partition_selection.params import PartitionSelectionParams
from spark_dp.partition_selection.registry import REGISTRY

GRID = (1, 3, 10, 30, 100, 300, 1000)
EPSILON, DELTA = 1.0, 1e-5
SHARES = (0.02, 0.03, 0.05, 0.07, 0.1, 0.2)
COMPOSITIONS = ("basic", "pld")
DATA = Path(os.environ.get("SPARK_DP_BENCH_DATA", Path(__file__).resolve().parent / "data"))
RESULTS = Path(__file__).resolve().parent / "results" / "tuning"
DATASETS = (
    "heavy-light-15k",
    "zipf-1m",
    "lines-1.6m",
    "degree-2-5",
    "degree-1000",
    "degree-1000-5k",
)


def load(name: str) -> pd.DataFrame:
    """(user_id, item) pairs of a bench dataset, distinct."""
    if not (DATA / name).exists():
        raise SystemExit(f"bench/data/{name} is missing: run with --generate first")
    pairs = pd.read_parquet(DATA / name, columns=["user_id", "item"])
    return pairs.drop_duplicates()


def generate(names: list[str]) -> None:
    """Write the datasets under bench/data with the harness's generators (local Spark)."""
    from bench.cases.tuning import DATASETS as BENCH_DATASETS
    from bench.cases.tuning import DEGREE_1000_5K
    from bench.harness import _session, ensure_dataset

    spark = _session()
    for ds in (*BENCH_DATASETS, DEGREE_1000_5K):
        if ds.name in names:
            ensure_dataset(spark, ds)


def capped_counts(pairs: pd.DataFrame, seed: int = 1) -> dict[int, np.ndarray]:
    """Per candidate c, the Basic weights w_i(c) of the items (one random ranking per user)."""
    rng = np.random.default_rng(seed)
    users = pairs["user_id"].to_numpy()
    items, codes = np.unique(pairs["item"].astype(str).to_numpy(), return_inverse=True)
    order = np.lexsort((rng.random(len(users)), users))
    users_sorted = users[order]
    starts = np.r_[0, np.flatnonzero(users_sorted[1:] != users_sorted[:-1]) + 1]
    rank = np.arange(len(users)) - np.repeat(starts, np.diff(np.r_[starts, len(users)]))
    degree = np.repeat(np.diff(np.r_[starts, len(users)]), np.diff(np.r_[starts, len(users)]))
    item_sorted = codes[order]
    out = {}
    for c in GRID:
        kept = rank < c
        k = np.minimum(degree[kept], c)
        out[c] = np.bincount(item_sorted[kept], weights=1.0 / np.sqrt(k), minlength=len(items))
    return out


def expected_items(weights: np.ndarray, epsilon: float, c: int) -> float:
    """Basic's expected released items at Δ0 = c and (ε, δ) (items of weight 0 release with
    probability Φ(−ρ/σ) ≈ 5e-6 each: counted among the union only)."""
    w = weights[weights > 0]
    cal = WeightAndThreshold.for_budget(Budget(epsilon, DELTA), c)
    return float(special.ndtr((w - cal.rho) / cal.sigma).sum())


def certified_selection(algorithm: str, share: float) -> float:
    """ε_s of ``algorithm`` after a choice at share·ε, as ``auto`` plans it (the PLD
    certificate's, or ε − ε_t without one)."""
    params = PartitionSelectionParams(
        algorithm=algorithm, epsilon=EPSILON, delta=DELTA, max_contributions="auto",
        tuning_share=share,
    )  # fmt: skip
    return selection_budget(params, REGISTRY[algorithm].plan)[0].epsilon


def selection_epsilon(share: float, composition: str) -> float:
    """ε_s of Basic after a choice at share·ε: ε − ε_t, or the PLD certificate's."""
    return EPSILON * (1 - share) if composition == "basic" else certified_selection("basic", share)


def choice_probabilities(scores: np.ndarray, selection: float, share: float) -> np.ndarray:
    """P[ĉ = c] of the release's own choice (:class:`DeltaChoice` at ε_t = share·ε, scored at
    the selection's budget) for real-valued scores."""
    choice = DeltaChoice.for_budget(EPSILON * share, Budget(selection, DELTA), GRID)
    return gem_probabilities(scores, choice.sensitivities, choice.epsilon, choice.beta)


def study(name: str, weights: dict[int, np.ndarray]) -> list[dict]:
    """One row per (composition, share): the floor, the choice's probability of the best Δ0
    and E[auto]/best."""
    full = {c: expected_items(weights[c], EPSILON, c) for c in GRID}
    best_c = max(full, key=full.get)
    rows = []
    for composition in COMPOSITIONS:
        for f in SHARES:
            selection = selection_epsilon(f, composition)
            at = {c: expected_items(weights[c], selection, c) for c in GRID}
            scores = np.array([at[c] for c in GRID])
            p = choice_probabilities(scores, selection, f)
            auto = float(np.dot(p, scores))
            rows.append(
                {
                    "dataset": name,
                    "composition": composition,
                    "share": f,
                    "selection ε": selection,
                    "best": f"{full[best_c]:.0f} at {best_c}",
                    "default 100 / best": full[100] / full[best_c],
                    "floor": at[best_c] / full[best_c],
                    "P[best]": float(p[GRID.index(best_c)]),
                    "auto / best": auto / full[best_c],
                    "auto / 100": auto / full[100] if full[100] else float("nan"),
                }
            )
    return rows


def mad2r_row(name: str, weights: dict[int, np.ndarray], share: float) -> dict | None:
    """MAD2R under ``auto`` at ``share``: where the certificate leaves its rounds the whole ε,
    a release at ĉ is the fixed release at ĉ, so E[auto] = Σ_c P[ĉ = c]·(the fixed sweep's mean
    at c, from the Spark benchmark's detail file), with P exact from Basic's scores."""
    detail = RESULTS / f"{name}.json"
    if not detail.exists():
        return None
    fixed = {
        int(c): float(np.mean(v))
        for c, v in json.loads(detail.read_text())["fixed"]["mad2r"].items()
    }
    selection = certified_selection("mad2r", share)
    if selection < EPSILON:
        return None
    scores = np.array([expected_items(weights[c], selection, c) for c in GRID])
    p = choice_probabilities(scores, selection, share)
    best = max(fixed, key=fixed.get)
    auto = float(np.dot(p, [fixed[c] for c in GRID]))
    return {
        "dataset": name,
        "share": share,
        "selection ε": selection,
        "best fixed (Spark)": f"{fixed[best]:.0f} at {best}",
        "P[best]": float(p[GRID.index(best)]),
        "E[auto] / best": auto / fixed[best],
        "E[auto] / 100": auto / fixed[100] if fixed[100] else float("nan"),
    }


def to_markdown(rows: list[dict]) -> str:
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append(
            "| "
            + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in r.values())
            + " |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.tuning_exact")
    ap.add_argument("--dataset", action="append", choices=DATASETS)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--generate", action="store_true", help="write missing datasets first")
    args = ap.parse_args(argv)
    if args.generate:
        generate(args.dataset or list(DATASETS))
    rows, mad2r = [], []
    for name in args.dataset or DATASETS:
        pairs = load(name)
        digest = hashlib.sha256(pd.util.hash_pandas_object(pairs).values.tobytes()).hexdigest()
        print(f"[exact] {name}: {len(pairs)} pairs, sha256 {digest[:12]}", file=sys.stderr)
        weights = capped_counts(pairs)
        rows += study(name, weights)
        row = mad2r_row(name, weights, PartitionSelectionParams().tuning_share)
        mad2r += [row] if row else []
    text = "## Basic, exactly\n\n" + to_markdown(rows)
    if mad2r:
        text += "\n## MAD2R at the default share (fixed sweeps from the Spark benchmark)\n\n"
        text += to_markdown(mad2r)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
