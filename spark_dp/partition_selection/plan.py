"""The public constants a partition-selection run will use, computed without reading data.

Every constant of a run (σ, ρ, τ, α per round, thresholds of the classic strategies) depends
only on public parameters (ε, δ, Δ0, split, β, d_max, b_min, b_max), never on the data: that is
what lets an operator check a configuration before running it (``spark-dp calibrate``). The
multi-round mechanisms take their calibrations from the builders here (:func:`mad_round`,
:func:`mad2r_rounds`, :func:`dp_sips_rounds`), and ``tests/partition_selection/test_plan.py``
checks for every algorithm that :func:`round_plan` equals the rounds a real run reports.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from spark_dp.calibration import (
    GaussianThresholding,
    LaplaceThresholding,
    LaplaceWeightAndThreshold,
    MadConstants,
    TruncatedGeometric,
    WeightAndThreshold,
)
from spark_dp.partition_selection.params import ALGORITHMS, PartitionSelectionParams

__all__ = [
    "calibration_table",
    "dp_sips_rounds",
    "mad2r_rounds",
    "mad_round",
    "round_plan",
]

_CLASSIC = {
    "truncated-geometric": TruncatedGeometric,
    "laplace-thresholding": LaplaceThresholding,
    "gaussian-thresholding": GaussianThresholding,
}


def mad_round(
    epsilon: float, delta: float, max_items: int, *, beta: float, d_max: int
) -> tuple[WeightAndThreshold, MadConstants]:
    """Single-round MAD: the Basic calibration (Corollary B.2) and τ = ρ + β·σ, α."""
    cal = WeightAndThreshold.for_budget(epsilon, delta, max_items)
    return cal, MadConstants.for_round(cal, beta=beta, max_adaptive_degree=d_max)


def mad2r_rounds(
    epsilon: float,
    delta: float,
    max_items: int,
    *,
    split: tuple[float, float],
    beta: float,
    d_max: int,
    b_min: float,
    b_max: float,
) -> tuple[WeightAndThreshold, MadConstants, WeightAndThreshold, MadConstants]:
    """MAD2R: round r spends (f_r·ε, f_r·δ); round 2's ρ uses h(t) = b_max/√t (spec §2.6)."""
    f1, f2 = split
    cal1, mad1 = mad_round(f1 * epsilon, f1 * delta, max_items, beta=beta, d_max=d_max)
    cal2 = WeightAndThreshold.for_budget(f2 * epsilon, f2 * delta, max_items, h_scale=b_max)
    mad2 = MadConstants.for_round(
        cal2, beta=beta, max_adaptive_degree=d_max, b_min=b_min, b_max=b_max
    )
    return cal1, mad1, cal2, mad2


def dp_sips_rounds(epsilon: float, delta: float, max_items: int, split) -> list[WeightAndThreshold]:
    """DP-SIPS: one Basic calibration per budget share f_r of ``split``."""
    return [WeightAndThreshold.for_budget(f * epsilon, f * delta, max_items) for f in split]


def _round(label: str, epsilon: float, delta: float, calibration: dict) -> dict[str, Any]:
    return {"label": label, "epsilon": float(epsilon), "delta": float(delta), **calibration}


def round_plan(params: PartitionSelectionParams) -> list[dict[str, Any]]:
    """Per-round public constants of ``params.algorithm``: label, ε, δ and its calibration.

    Gaussian rounds spend (f·ε, f·δ) of the split share f: σ for (f·ε, f·δ/2) and Δ2 = 1, ρ for
    f·δ/2 and h(t) = h_scale/√t (Chen et al. 2025 Thm. 3.3; spec partition_selection.md §3).
    MAD rounds add τ = ρ + β·σ and α = b_min − 1/(2√d_max) (spec §3.3); MAD2R's second round
    is calibrated with h_scale = b_max. Basic-Laplace uses scale 1/ε and ρ_Lap (spec §2.3).
    """
    p = params
    eps, delta, cap = p.epsilon, p.delta, p.max_items_per_user
    if p.algorithm == "basic":
        cal = WeightAndThreshold.for_budget(eps, delta, cap)
        return [_round("round 1", eps, delta, cal.to_report())]
    if p.algorithm == "mad":
        cal, mad = mad_round(eps, delta, cap, beta=p.beta, d_max=p.max_adaptive_degree)
        return [_round("round 1", eps, delta, {**cal.to_report(), **mad.to_report()})]
    if p.algorithm == "basic-laplace":
        cal = LaplaceWeightAndThreshold.for_budget(eps, delta, cap)
        return [_round("round 1", eps, delta, cal.to_report())]
    if p.algorithm == "dp-sips":
        return [
            _round(f"round {r}", cal.epsilon, cal.delta, cal.to_report())
            for r, cal in enumerate(dp_sips_rounds(eps, delta, cap, p.split), start=1)
        ]
    if p.algorithm == "mad2r":
        cal1, mad1, cal2, mad2 = mad2r_rounds(
            eps,
            delta,
            cap,
            split=p.split,
            beta=p.beta,
            d_max=p.max_adaptive_degree,
            b_min=p.b_min,
            b_max=p.b_max,
        )
        return [
            _round("round 1", cal1.epsilon, cal1.delta, {**cal1.to_report(), **mad1.to_report()}),
            _round(
                "round 2",
                cal2.epsilon,
                cal2.delta,
                {
                    **cal2.to_report(),
                    **mad2.to_report(),
                    "c_lb": float(p.c_lb),
                    "c_ub": float(p.c_ub),
                },
            ),
        ]
    if p.algorithm in _CLASSIC:
        cal = _CLASSIC[p.algorithm].for_budget(eps, delta, cap)
        return [_round("round 1", eps, delta, cal.to_report())]
    raise ValueError(f"unknown algorithm {p.algorithm!r}")  # params validate the name


def calibration_table(
    epsilon: float, delta: float, max_items: int, **overrides: Any
) -> list[dict[str, Any]]:
    """One row per (algorithm, round) with the constants an operator checks before a run.

    Args:
        epsilon: total ε.
        delta: total δ.
        max_items: Δ0 (k of the classic strategies).
        overrides: other :class:`PartitionSelectionParams` fields (split, beta, b_max, ...).

    Raises:
        ParameterError: invalid ε, δ, Δ0 or overrides (the message names the parameter).
    """
    base = PartitionSelectionParams(
        **{"algorithm": "basic", **overrides},
        epsilon=epsilon,
        delta=delta,
        max_items_per_user=max_items,
    )
    keys = ("epsilon", "delta", "sigma", "scale", "rho", "threshold", "tau", "alpha")
    keys += ("crossover_1", "crossover_2")
    rows = []
    for algorithm in ALGORITHMS:
        split = base.split
        if algorithm == "mad2r" and len(split) != 2:
            split = (0.1, 0.9)
        params = replace(base, algorithm=algorithm, split=split)
        for rnd in round_plan(params):
            row = {"algorithm": algorithm, "round": rnd["label"]}
            row.update({k: rnd[k] for k in keys if k in rnd})
            rows.append(row)
    return rows
