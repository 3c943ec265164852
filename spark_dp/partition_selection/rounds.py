"""Steps shared by the mechanisms: the capped input of a run and one Gaussian round.

Each step logs one line through :class:`~spark_dp.logs.StageTimer` (round label, released item
count, seconds). Only public or operator-facing numbers are logged: never weights, per-item
counts, or the size of the item union.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark import StorageLevel
from pyspark.sql import DataFrame

from spark_dp.logs import StageTimer, get_logger
from spark_dp.partition_selection.calibration import MadRound, WeightAndThreshold
from spark_dp.partition_selection.capping import cap_user_items
from spark_dp.partition_selection.result import RoundResult
from spark_dp.partition_selection.thresholding import threshold_items
from spark_dp.randomness import Randomness
from spark_dp.report import Step

__all__ = ["capped_input", "default_timer", "gaussian_round", "single_round"]


def default_timer(timer: StageTimer | None) -> StageTimer:
    """``timer``, or a new one logging to ``spark_dp.partition_selection``."""
    return timer if timer is not None else StageTimer(get_logger("spark_dp.partition_selection"))


def capped_input(
    pairs: DataFrame,
    max_items: int,
    randomness: Randomness,
    timer: StageTimer,
    *,
    stage: str = "cap",
    reuse: bool = True,
) -> DataFrame:
    """Cap ``pairs`` at Δ0 items per user (:func:`~.capping.cap_user_items`).

    Args:
        pairs: (user_id, item); a repeated pair counts once (the cap drops it).
        max_items: Δ0.
        randomness: the capping stream.
        timer: stage logger.
        stage: stage name in the log.
        reuse: persist the result (and log its size) because several queries read it; the
            caller then unpersists it. A single reader gets the lazy plan instead, which saves
            building the cache.

    Returns:
        (user_id, item, degree).
    """
    capped = cap_user_items(pairs, max_items, randomness)
    if not reuse:
        return capped
    with timer.stage(stage, max_items_per_user=max_items) as info:
        capped = capped.persist(StorageLevel.MEMORY_AND_DISK)
        info["pairs_kept"] = capped.count()  # operator-facing row count, never reported
    return capped


def gaussian_round(step: Step, weights: DataFrame, randomness: Randomness) -> RoundResult:
    """Noise N(0, σ²) on every item weight, keep w̃ ≥ ρ (Chen et al. 2025, Alg. 1).

    Args:
        step: the round's label and calibration (a :class:`WeightAndThreshold` or a
            :class:`MadRound`): σ and ρ, and the (ε, δ) it spends.
        weights: (item, weight_private) of a weighting with Δ2 ≤ 1 and novel Δ∞(t) ≤ h(t),
            where h is the one the calibration was built for.
        randomness: the round's noise stream.

    Returns:
        the round, with its selected items materialized and counted.
    """
    calibration = step.calibration
    if not isinstance(calibration, WeightAndThreshold | MadRound):
        raise TypeError(f"a Gaussian round needs σ and ρ, got {type(calibration).__name__}")
    items = threshold_items(
        weights,
        distribution="gaussian",
        scale=calibration.sigma,
        threshold=calibration.rho,
        randomness=randomness,
    )
    return RoundResult.counted(step, items)


def single_round(
    pairs: DataFrame,
    *,
    max_items: int,
    randomness: Randomness,
    timer: StageTimer | None,
    run: Callable[[DataFrame, Randomness], RoundResult],
    reuse: bool = False,
) -> RoundResult:
    """Cap the pairs once and run one mechanism on them.

    Args:
        pairs: (user_id, item); a repeated pair counts once (the cap drops it).
        max_items: Δ0 (k of the classic strategies).
        randomness: the job's randomness; capping uses child("capping", 1).
        timer: stage logger.
        run: ``run(capped, noise_stream) -> RoundResult`` with capped = (user_id, item,
            degree) and noise_stream = child("noise", 1).
        reuse: ``run`` reads the capped pairs in more than one query (persist them).
    """
    timer = default_timer(timer)
    capped = capped_input(pairs, max_items, randomness.child("capping", 1), timer, reuse=reuse)
    with timer.stage("round 1") as info:
        round_ = run(capped, randomness.child("noise", 1))
        info["output_items"] = round_.output_items
    if reuse:
        capped.unpersist()
    return round_
