"""Benchmarks of ``--max-contributions auto`` and ``spark-dp preview`` (issue 36;
docs/design/tuning.md).

On each dataset, at ε = 1, δ = 1e-5 and the grid {1, 3, 10, 30, 100, 300, 1000}, for keys
1..K (each a fresh release key):

* **fixed sweep**: Basic (K keys) and MAD2R (K_MAD2R keys) at every Δ0 of the grid with the
  whole ε; one ranking per key serves every Δ0 (the nested caps of
  :func:`spark_dp.partition_selection.capping.ranked_input`), which gives each fixed run exactly
  the cap it would compute itself;
* **auto**: Basic and MAD2R with ``--max-contributions auto`` (the default tuning share), the
  chosen Δ0 and the items released, and each auto run's wall seconds beside a plain fixed run
  of the same algorithm at the chosen Δ0 (own shuffle, same data): what the choice adds;
* **preview** at ε_p = 0.2 and 0.5: predicted items per (algorithm, Δ0) against the mean of the
  fixed runs of the same algorithm and Δ0.

Goals (issue 36): auto ≥ 0.9 × the best fixed Δ0 in hindsight (mean over keys) for Basic and
MAD2R, and more than the default Δ0 = 100 wherever 100 is not within 10% of the best; the
preview within ±20% of the mean actual release; auto adds at most one pass. Each case writes
its detail to ``bench/results/tuning/<dataset>.json`` (quick scale:
``bench/results/tuning-quick/``). The pairs are validated once per
dataset and cached; seeds are fixed so runs repeat (not production keys).
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

from bench.cases.baseline import ZIPF_1M, ZIPF_SMALL
from bench.cases.partition_selection import HEAVY_LIGHT
from bench.datasets import REPLICATED_BASE
from bench.harness import RESULTS_DIR, Dataset, register

GRID = (1, 3, 10, 30, 100, 300, 1000)
EPSILON, DELTA = 1.0, 1e-5
PREVIEW_EPSILONS = (0.2, 0.5)
ALGORITHMS = ("basic", "mad2r")

LINES_1M6 = Dataset("lines-1.6m", "zipf-replicated", {**REPLICATED_BASE, "copies": 1})
DEGREE_2_5 = Dataset("degree-2-5", "degree-range", {"n_users": 300_000, "min_items": 2,
                                                     "max_items": 5})  # fmt: skip
DEGREE_1000 = Dataset("degree-1000", "degree-range", {"n_users": 1_500, "min_items": 1_000,
                                                      "max_items": 1_400})  # fmt: skip
# The same users' kind, 3.3 × as many: where GEM's margin at Δ0 = 1000 is below the best
# release (bench/tuning_exact.py only: docs/design/tuning.md#share).
DEGREE_1000_5K = Dataset("degree-1000-5k", "degree-range", {"n_users": 5_000, "min_items": 1_000,
                                                            "max_items": 1_400})  # fmt: skip
# Quick scale (about 0.05-0.16M pairs each, 2 keys, 1 for MAD2R's sweep): the same kinds of
# data, small enough for a loaded machine; results in bench/results/tuning-quick/.
LINES_160K = Dataset("lines-160k", "zipf-replicated", {**REPLICATED_BASE, "n_users": 3_600,
                                                       "copies": 1})  # fmt: skip
DEGREE_2_5_SMALL = Dataset(
    "degree-2-5-small", "degree-range", {"n_users": 30_000, "min_items": 2, "max_items": 5}
)
DEGREE_1000_SMALL = Dataset(
    "degree-1000-small", "degree-range", {"n_users": 100, "min_items": 1_000, "max_items": 1_400}
)


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def _fixed_sweep(pairs, algorithm: str, keys: int, label: str) -> dict[int, list[int]]:
    """Released items of ``algorithm`` at every Δ0 with the whole ε, ``keys`` keys."""
    from spark_dp.caching import CacheScope
    from spark_dp.partition_selection import PartitionSelectionParams, select_partitions
    from spark_dp.partition_selection.capping import ranked_cap, ranked_input
    from spark_dp.partition_selection.layout import keep
    from spark_dp.randomness import Randomness

    out: dict[int, list[int]] = {c: [] for c in GRID}
    for key in range(1, keys + 1):
        randomness = Randomness.create(key).bind(f"bench-tuning-{label}-{algorithm}-{key}")
        capping = randomness.child("capping", 1)
        with CacheScope() as cache:
            ranked = keep(ranked_cap(pairs, max(GRID), capping), cache)
            with ranked_input(pairs, ranked, max(GRID), capping):
                for c in GRID:
                    params = PartitionSelectionParams(
                        algorithm=algorithm, epsilon=EPSILON, delta=DELTA, max_contributions=c
                    )
                    with select_partitions(pairs, params, randomness, validate=False) as sel:
                        out[c].append(sel.output_items)
    return out


def _timed_release(pairs, params, randomness) -> tuple[Any, float, dict[str, float]]:
    from spark_dp.logs import StageTimer, get_logger
    from spark_dp.partition_selection import select_partitions

    timer = StageTimer(get_logger("bench.tuning"))
    t0 = time.perf_counter()
    with select_partitions(pairs, params, randomness, validate=False, timer=timer) as sel:
        result = (sel.max_contributions, sel.output_items)
    return result, time.perf_counter() - t0, dict(timer.seconds)


def _auto_runs(pairs, algorithm: str, keys: int, label: str) -> dict[str, Any]:
    """auto's choices and items, and its seconds beside a fixed run at the chosen Δ0."""
    from spark_dp.partition_selection import PartitionSelectionParams
    from spark_dp.randomness import Randomness

    chosen, items, auto_s, fixed_s, choice_s = [], [], [], [], []
    for key in range(1, keys + 1):
        params = PartitionSelectionParams(
            algorithm=algorithm, epsilon=EPSILON, delta=DELTA, max_contributions="auto"
        )
        randomness = Randomness.create(100 + key).bind(f"bench-auto-{label}-{algorithm}-{key}")
        (c, n), seconds, stages = _timed_release(pairs, params, randomness)
        chosen.append(c)
        items.append(n)
        auto_s.append(seconds)
        choice_s.append(stages.get("private choice of Δ0", 0.0))
        fixed = PartitionSelectionParams(
            algorithm=algorithm, epsilon=EPSILON, delta=DELTA, max_contributions=c
        )
        again = Randomness.create(200 + key).bind(f"bench-fixed-{label}-{algorithm}-{key}")
        _, seconds, _ = _timed_release(pairs, fixed, again)
        fixed_s.append(seconds)
    from spark_dp.partition_selection import plan_selection

    plan = plan_selection(params)
    composition = getattr(plan, "composition", None)
    return {
        "tuning_share": params.tuning_share,
        "selection_epsilon": (
            EPSILON * (1 - params.tuning_share)
            if composition is None
            else composition.selection_epsilon
        ),
        "chosen": chosen,
        "items": items,
        "auto_seconds": auto_s,
        "fixed_seconds_at_chosen": fixed_s,
        "choice_stage_seconds": choice_s,
    }


def _previews(pairs, label: str) -> dict[str, Any]:
    from spark_dp.partition_selection import PreviewParams, preview_partitions
    from spark_dp.randomness import Randomness

    out = {}
    for eps in PREVIEW_EPSILONS:
        randomness = Randomness.create(300).bind(f"bench-preview-{label}-{eps}")
        t0 = time.perf_counter()
        result = preview_partitions(
            pairs, PreviewParams(epsilon=eps, release_epsilon=EPSILON), randomness, validate=False
        )
        out[str(eps)] = {**result.to_dict(), "seconds": time.perf_counter() - t0}
    return out


def _summary(detail: dict[str, Any]) -> dict[str, Any]:
    """The goals of issue 36 on one dataset, from the detail."""
    figures: dict[str, Any] = {}
    for algorithm in ALGORITHMS:
        fixed = {c: _mean(v) for c, v in detail["fixed"][algorithm].items()}
        best_c = max(fixed, key=lambda c: fixed[c])
        auto = _mean(detail["auto"][algorithm]["items"])
        figures[f"{algorithm}_best_fixed"] = f"{fixed[best_c]:.1f}@{best_c}"
        figures[f"{algorithm}_default_100"] = round(fixed[100], 1)
        figures[f"{algorithm}_auto"] = round(auto, 1)
        figures[f"{algorithm}_auto_vs_best"] = (
            round(auto / fixed[best_c], 3) if fixed[best_c] else None
        )
        figures[f"{algorithm}_auto_chosen"] = ",".join(
            map(str, detail["auto"][algorithm]["chosen"])
        )
        figures[f"{algorithm}_auto_vs_default"] = (
            round(auto / fixed[100], 3) if fixed[100] else None
        )
        runs = detail["auto"][algorithm]
        figures[f"{algorithm}_auto_extra_s"] = round(
            _mean(runs["auto_seconds"]) - _mean(runs["fixed_seconds_at_chosen"]), 2
        )
        figures[f"{algorithm}_choice_stage_s"] = round(_mean(runs["choice_stage_seconds"]), 2)
        for eps, preview in detail["preview"].items():
            errors = []
            for p in preview["predictions"]:
                if p["algorithm"] != algorithm:
                    continue
                actual = fixed[p["max_contributions"]]
                if actual >= 20:  # relative errors of tiny counts say nothing
                    errors.append(p["predicted_items"] / actual - 1.0)
            worst = max(errors, key=abs) if errors else None
            figures[f"{algorithm}_preview{eps}_worst_rel_err"] = (
                None if worst is None else round(worst, 3)
            )
    figures["preview_seconds"] = round(detail["preview"]["0.2"]["seconds"], 2)
    return figures


def _tuning_case(label: str, keys: int, keys_mad2r: int, folder: str):
    def run(spark, data_path: str, work_dir: str) -> dict:
        from spark_dp.io import load_pairs

        pairs, _ = load_pairs(spark, data_path)  # validated once and cached
        detail: dict[str, Any] = {"dataset": label, "grid": list(GRID), "keys": keys}
        detail["fixed"] = {
            "basic": _fixed_sweep(pairs, "basic", keys, label),
            "mad2r": _fixed_sweep(pairs, "mad2r", keys_mad2r, label),
        }
        detail["auto"] = {a: _auto_runs(pairs, a, keys, label) for a in ALGORITHMS}
        detail["preview"] = _previews(pairs, label)
        pairs.unpersist()
        out = RESULTS_DIR / folder
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{label}.json").write_text(json.dumps(detail, indent=2, default=str) + "\n")
        Path(work_dir).mkdir(parents=True, exist_ok=True)
        return _summary(detail)

    return run


DATASETS = (ZIPF_1M, LINES_1M6, HEAVY_LIGHT, DEGREE_2_5, DEGREE_1000)
for _ds in DATASETS:
    register(f"tuning/{_ds.name}", "partition_selection", _ds)(
        _tuning_case(_ds.name, 5, 3, "tuning")
    )
for _ds in (ZIPF_SMALL, LINES_160K, HEAVY_LIGHT, DEGREE_2_5_SMALL, DEGREE_1000_SMALL):
    register(f"tuning-quick/{_ds.name}", "partition_selection", _ds, ("quick",))(
        _tuning_case(_ds.name, 2, 1, "tuning-quick")
    )
