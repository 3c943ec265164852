"""Steps shared by the mechanisms: the capped input of a run and one noise-and-threshold round.

Each step logs one line through :class:`~spark_dp.logs.StageTimer` (stage name, seconds, and the
number of items a round released, which is public). Never weights, per-item counts, the size of
the item union or of any intermediate table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from spark_dp.caching import CacheScope
from spark_dp.logs import StageTimer, get_logger, log_private, unsafe_debug_enabled
from spark_dp.partition_selection.capping import cap_user_items
from spark_dp.partition_selection.layout import keep
from spark_dp.partition_selection.result import RoundResult
from spark_dp.partition_selection.thresholding import threshold_items
from spark_dp.randomness import Randomness
from spark_dp.report import Step

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "GaussianThreshold",
    "capped_input",
    "counted_round",
    "default_timer",
    "gaussian_round",
    "single_round",
]


@runtime_checkable
class GaussianThreshold(Protocol):
    """σ and ρ of a Gaussian weight-and-threshold round (a ``WeightAndThreshold`` or a
    ``MadRound``)."""

    @property
    def sigma(self) -> float: ...

    @property
    def rho(self) -> float: ...


def default_timer(timer: StageTimer | None) -> StageTimer:
    """``timer``, or a new one logging to ``spark_dp.partition_selection``."""
    return timer if timer is not None else StageTimer(get_logger("spark_dp.partition_selection"))


def capped_input(
    pairs: DataFrame,
    max_contributions: int,
    randomness: Randomness,
    timer: StageTimer,
    cache: CacheScope,
    *,
    stage: str = "cap",
    reuse: bool = True,
    shuffle: bool = True,
) -> DataFrame:
    """Cap ``pairs`` at Δ0 items per user (:func:`~.capping.cap_user_items`).

    Args:
        pairs: (user_id, item); a repeated pair counts once (the cap drops it).
        max_contributions: Δ0.
        randomness: the capping stream.
        timer: stage logger.
        cache: where the capped pairs are kept when ``reuse``.
        stage: stage name in the log.
        reuse: cache the result now, because several queries read it; it stays partitioned
            and sorted by user (:func:`~.layout.keep`), so later per-user steps need no
            shuffle. A single reader gets the lazy plan instead, which saves building the cache.
        shuffle: ``pairs`` are not yet partitioned by user (see :func:`~.capping.cap_user_items`).

    Returns:
        (user_id, item, degree).
    """
    capped = cap_user_items(pairs, max_contributions, randomness, shuffle=shuffle)
    if unsafe_debug_enabled():  # an extra Spark action, for debugging only
        log_private(timer.logger, "%s: %d pairs kept after the cap", stage, capped.count())
    if not reuse:
        return capped
    with timer.stage(stage, max_contributions=max_contributions):
        return keep(capped, cache)


def counted_round(step: Step, items: DataFrame, cache: CacheScope) -> RoundResult:
    """A round's selected items, cached (the job writes them from the cache) and counted (the
    count of released items is public) by the job that caches them."""
    kept, count = cache.counted(items)
    return RoundResult(step, kept, count)


def gaussian_round(
    step: Step, weights: DataFrame, randomness: Randomness, cache: CacheScope
) -> RoundResult:
    """Noise N(0, σ²) on every item weight, keep w̃ ≥ ρ (Chen et al. 2025, Alg. 1).

    Args:
        step: the round's label and calibration (a :class:`GaussianThreshold`): σ and ρ, and
            the (ε, δ) it spends.
        weights: (item, weight_private) of a weighting with Δ2 ≤ 1 and novel Δ∞(t) ≤ h(t),
            where h is the one the calibration was built for.
        randomness: the round's noise stream.
        cache: where the selected items are kept.

    Returns:
        the round, with its selected items cached and counted.
    """
    calibration = step.calibration
    if not isinstance(calibration, GaussianThreshold):
        raise TypeError(f"a Gaussian round needs σ and ρ, got {type(calibration).__name__}")
    items = threshold_items(
        weights,
        distribution="gaussian",
        scale=calibration.sigma,
        threshold=calibration.rho,
        randomness=randomness,
    )
    return counted_round(step, items, cache)


def single_round(
    pairs: DataFrame,
    *,
    max_contributions: int,
    randomness: Randomness,
    timer: StageTimer | None,
    cache: CacheScope,
    run: Callable[[DataFrame, Randomness], RoundResult],
    reuse: bool = False,
) -> RoundResult:
    """Cap the pairs once and run one mechanism on them.

    Args:
        pairs: (user_id, item); a repeated pair counts once (the cap drops it).
        max_contributions: Δ0 (k of the classic strategies).
        randomness: the job's randomness; capping uses child("capping", 1).
        timer: stage logger.
        cache: where the run keeps what it reuses.
        run: ``run(capped, noise_stream) -> RoundResult`` with capped = (user_id, item,
            degree) and noise_stream = child("noise", 1).
        reuse: ``run`` reads the capped pairs in more than one query (cache them).
    """
    timer = default_timer(timer)
    capped = capped_input(
        pairs, max_contributions, randomness.child("capping", 1), timer, cache, reuse=reuse
    )
    with timer.stage("round 1") as info:
        round_ = run(capped, randomness.child("noise", 1))
        info.public(output_items=round_.output_items)
    if reuse:
        cache.drop(capped)
    return round_
