"""Basic weight-and-threshold mechanisms: Gaussian (1/√d weights) and Laplace (1/d weights).

Basic: Korolova et al. 2009, Gopi et al. 2020; Chen et al. 2025, App. A, Alg. 3 (ICML) /
Alg. 5 (arXiv) with the meta-algorithm Alg. 1; spec partition_selection.md §2.2-2.3.
Basic-Laplace: Gopi et al. 2020's ℓ1 variant; spec §2.3.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from spark_dp.calibration import LaplaceWeightAndThreshold, WeightAndThreshold
from spark_dp.logs import StageTimer
from spark_dp.partition_selection.result import RoundResult, Selection
from spark_dp.partition_selection.rounds import gaussian_round, single_round
from spark_dp.partition_selection.thresholding import threshold_items
from spark_dp.partition_selection.weighting import basic_weights, laplace_weights
from spark_dp.randomness import Randomness

__all__ = ["basic", "basic_laplace"]


def basic(
    pairs: DataFrame,
    *,
    epsilon: float,
    delta: float,
    max_items: int,
    randomness: Randomness,
    timer: StageTimer | None = None,
) -> Selection:
    """Basic: cap at Δ0, w(i) = Σ 1/√d_u, Gaussian noise, keep w̃ ≥ ρ.

    σ is calibrated for (ε, δ/2) with Δ2 = 1, ρ for δ/2 with h(t) = 1/√t (Thm. 3.3).

    Args:
        pairs: (user_id, item); a repeated pair counts once (the cap drops it).
        epsilon: ε.
        delta: δ.
        max_items: Δ0.
        randomness: the job's randomness (capping and noise use their own child streams).
        timer: stage logger.

    Returns:
        the :class:`Selection` (one round).
    """
    calibration = WeightAndThreshold.for_budget(epsilon, delta, max_items)
    round_ = single_round(
        pairs,
        max_items=max_items,
        randomness=randomness,
        timer=timer,
        run=lambda capped, noise: gaussian_round(
            "round 1", basic_weights(capped), calibration, noise
        ),
    )
    return Selection(
        "basic",
        round_.items,
        [round_],
        mechanism={
            "weighting": "basic: w(i) = sum over users of 1/sqrt(d_u)",
            "l2_sensitivity": 1.0,
            "novel_item_bound": "h(t) = 1/sqrt(t)",
            "noise": "gaussian",
            "reference": "Chen et al. 2025 Alg. 3 (ICML) / Alg. 5 (arXiv); spec §2.3",
        },
    )


def basic_laplace(
    pairs: DataFrame,
    *,
    epsilon: float,
    delta: float,
    max_items: int,
    randomness: Randomness,
    timer: StageTimer | None = None,
) -> Selection:
    """Basic-Laplace: cap at Δ0, w(i) = Σ 1/d_u, Laplace(1/ε) noise, keep w̃ ≥ ρ_Lap.

    Δ1 = 1 (pure ε-DP noise), h(t) = 1/t, and the whole δ goes to the threshold
    ρ_Lap = max_t [1/t + (1/ε)·ln(1/(2(1 − (1−δ)^{1/t})))] (spec §2.3).
    """
    calibration = LaplaceWeightAndThreshold.for_budget(epsilon, delta, max_items)

    def run(capped: DataFrame, noise: Randomness) -> RoundResult:
        items = threshold_items(
            laplace_weights(capped),
            distribution="laplace",
            scale=calibration.scale,
            threshold=calibration.rho,
            randomness=noise,
        )
        return RoundResult.counted("round 1", epsilon, delta, calibration.to_report(), items)

    round_ = single_round(pairs, max_items=max_items, randomness=randomness, timer=timer, run=run)
    return Selection(
        "basic-laplace",
        round_.items,
        [round_],
        mechanism={
            "weighting": "basic-laplace: w(i) = sum over users of 1/d_u",
            "l1_sensitivity": 1.0,
            "novel_item_bound": "h(t) = 1/t",
            "noise": "laplace",
            "reference": "Gopi et al. 2020; spec §2.3",
        },
    )
