"""Basic weight-and-threshold mechanisms: Gaussian (1/√d weights) and Laplace (1/d weights).

Basic: Korolova et al. 2009, Gopi et al. 2020; Chen et al. 2025, App. A, Alg. 3 (ICML) /
Alg. 5 (arXiv) with the meta-algorithm Alg. 1; docs/design/selection.md#meta.
Basic-Laplace: Gopi et al. 2020's ℓ1 variant; docs/design/selection.md#basic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_dp.caching import CacheScope
from spark_dp.dp.calibration import Budget
from spark_dp.logs import StageTimer
from spark_dp.partition_selection.calibration import LaplaceWeightAndThreshold, WeightAndThreshold
from spark_dp.partition_selection.result import RoundResult, Selection, SelectionPlan
from spark_dp.partition_selection.rounds import counted_round, gaussian_round, single_round
from spark_dp.partition_selection.thresholding import threshold_items
from spark_dp.partition_selection.weighting import basic_weights, laplace_weights
from spark_dp.randomness import Randomness
from spark_dp.report import Step

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_dp.partition_selection.params import PartitionSelectionParams

__all__ = ["plan", "plan_laplace", "run", "run_laplace"]


def plan(params: PartitionSelectionParams) -> SelectionPlan:
    """Basic: σ for (ε, δ/2) with Δ2 = 1, ρ for δ/2 with h(t) = 1/√t (Thm. 3.3)."""
    calibration = WeightAndThreshold.for_budget(
        Budget(params.epsilon, params.delta), params.fixed_max_contributions()
    )
    return SelectionPlan(
        "basic",
        (Step("round 1", calibration),),
        weighting="basic: w(i) = sum over users of 1/sqrt(d_u)",
        reference="Chen et al. 2025 Alg. 3 (ICML) / Alg. 5 (arXiv); docs/design/selection.md#basic",
    )


def run(
    pairs: DataFrame,
    plan: SelectionPlan,
    randomness: Randomness,
    *,
    timer: StageTimer | None = None,
    cache: CacheScope | None = None,
) -> Selection:
    """Basic: cap at Δ0, w(i) = Σ 1/√d_u, Gaussian noise, keep w̃ ≥ ρ.

    Args:
        pairs: (user_id, item); a repeated pair counts once (the cap drops it).
        plan: from :func:`plan`.
        randomness: the job's randomness (capping and noise use their own child streams).
        timer: stage logger.
        cache: where the run keeps what it reuses (handed to the :class:`Selection`).

    Returns:
        the :class:`Selection` (one round).
    """
    step = plan.steps[0]
    cache = cache if cache is not None else CacheScope()
    round_ = single_round(
        pairs,
        max_contributions=plan.max_contributions,
        randomness=randomness,
        timer=timer,
        cache=cache,
        run=lambda capped, noise: gaussian_round(step, basic_weights(capped), noise, cache),
    )
    return Selection(plan, round_.items, [round_], cache=cache)


def plan_laplace(params: PartitionSelectionParams) -> SelectionPlan:
    """Basic-Laplace: scale 1/ε (Δ1 = 1) and ρ_Lap with the whole δ
    (docs/design/selection.md#basic)."""
    calibration = LaplaceWeightAndThreshold.for_budget(
        Budget(params.epsilon, params.delta), params.fixed_max_contributions()
    )
    return SelectionPlan(
        "basic-laplace",
        (Step("round 1", calibration),),
        weighting="basic-laplace: w(i) = sum over users of 1/d_u",
        reference="Gopi et al. 2020; docs/design/selection.md#basic",
    )


def run_laplace(
    pairs: DataFrame,
    plan: SelectionPlan,
    randomness: Randomness,
    *,
    timer: StageTimer | None = None,
    cache: CacheScope | None = None,
) -> Selection:
    """Basic-Laplace: cap at Δ0, w(i) = Σ 1/d_u, Laplace(1/ε) noise, keep w̃ ≥ ρ_Lap.

    Δ1 = 1 (pure ε-DP noise), h(t) = 1/t, and the whole δ goes to the threshold
    ρ_Lap = max_t [1/t + (1/ε)·ln(1/(2(1 − (1−δ)^{1/t})))] (docs/design/selection.md#basic).
    """
    step = plan.steps[0]
    calibration = plan.calibration(0, LaplaceWeightAndThreshold)
    cache = cache if cache is not None else CacheScope()

    def one_round(capped: DataFrame, noise: Randomness) -> RoundResult:
        items = threshold_items(
            laplace_weights(capped),
            distribution="laplace",
            scale=calibration.scale,
            threshold=calibration.rho,
            randomness=noise,
        )
        return counted_round(step, items, cache)

    round_ = single_round(
        pairs,
        max_contributions=plan.max_contributions,
        randomness=randomness,
        timer=timer,
        cache=cache,
        run=one_round,
    )
    return Selection(plan, round_.items, [round_], cache=cache)
