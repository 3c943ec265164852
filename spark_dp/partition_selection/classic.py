"""Classic count thresholding, as Google's DP library and PipelineDP offer it.

Every user keeps at most k items (the same uniform cap as the other mechanisms, k = Δ0), the
number of users n(i) holding each item is counted, and the item is kept by one of three
strategies (calibration in :mod:`spark_dp.calibration`):

* ``truncated-geometric``: keep with probability p(n), the optimal keep probabilities of
  Desfontaines et al. 2022 (:class:`~spark_dp.calibration.TruncatedGeometric`);
* ``laplace-thresholding``: keep iff n + Laplace(k/ε) ≥ T
  (:class:`~spark_dp.calibration.LaplaceThresholding`);
* ``gaussian-thresholding``: keep iff n + N(0, σ²) ≥ T with σ for (ε, δ/2) and Δ2 = √k
  (:class:`~spark_dp.calibration.GaussianThresholding`).

Semantics match those libraries, so their users can switch without changing meaning.
"""

from __future__ import annotations

import math

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_dp.calibration import GaussianThresholding, LaplaceThresholding, TruncatedGeometric
from spark_dp.logs import StageTimer
from spark_dp.partition_selection.columns import ITEM, USER_COUNT, WEIGHT
from spark_dp.partition_selection.result import RoundResult, Selection
from spark_dp.partition_selection.rounds import single_round
from spark_dp.partition_selection.thresholding import threshold_items
from spark_dp.randomness import Randomness

__all__ = ["STRATEGIES", "count_thresholding", "keep_probability_column"]

STRATEGIES = ("truncated-geometric", "laplace-thresholding", "gaussian-thresholding")


def keep_probability_column(n: Column, strategy: TruncatedGeometric) -> Column:
    """p(n) of :meth:`TruncatedGeometric.keep_probability` as a Spark column (same formula).

    Args:
        n: user count column (≥ 1).
        strategy: the calibrated strategy (ε', δ', crossovers).
    """
    e, d = strategy.adjusted_epsilon, strategy.adjusted_delta
    n1, n2 = strategy.crossover_1, strategy.crossover_2
    p1 = float(strategy.keep_probability(n1))
    low = F.expm1(n * e) / math.expm1(e) * d
    mid = F.lit(p1) - (1.0 - p1 + d / math.expm1(e)) * F.expm1(-(n - n1) * e)
    return F.when(n <= n1, low).when(n <= n2, mid).otherwise(F.lit(1.0))


def _laplace_quantile(p: Column) -> Column:
    """F⁻¹(p) of the standard Laplace distribution (+∞ at p = 1, −∞ at p = 0)."""
    return (
        F.when(p >= 1.0, F.lit(math.inf))
        .when(p <= 0.0, F.lit(-math.inf))
        .when(p <= 0.5, F.log(2.0 * p))
        .otherwise(-F.log(2.0 * (1.0 - p)))
    )


def count_thresholding(
    pairs: DataFrame,
    *,
    strategy: str,
    epsilon: float,
    delta: float,
    max_partitions: int,
    randomness: Randomness,
    timer: StageTimer | None = None,
) -> Selection:
    """Cap at k items per user, count users per item, keep items by ``strategy``.

    Args:
        pairs: (user_id, item); a repeated pair counts once (the cap drops it).
        strategy: one of :data:`STRATEGIES`.
        epsilon: ε.
        delta: δ.
        max_partitions: k, items per user (Δ0).
        randomness: the job's randomness.
        timer: stage logger.

    Returns:
        the :class:`Selection` (one step).
    """
    if strategy == "truncated-geometric":
        calibration = TruncatedGeometric.for_budget(epsilon, delta, max_partitions)
    elif strategy == "laplace-thresholding":
        calibration = LaplaceThresholding.for_budget(epsilon, delta, max_partitions)
    elif strategy == "gaussian-thresholding":
        calibration = GaussianThresholding.for_budget(epsilon, delta, max_partitions)
    else:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")

    def run(capped: DataFrame, noise: Randomness) -> RoundResult:
        counts = capped.groupBy(ITEM).agg(F.count(F.lit(1)).cast("double").alias(USER_COUNT))
        # -> (item, user_count_private)
        if isinstance(calibration, TruncatedGeometric):
            # Keep with probability p(n): with L ~ Laplace(1), P(L ≤ F⁻¹(p)) = p, and L is
            # symmetric, so "F⁻¹(p(n)) + L ≥ 0" is the same noise-and-threshold step.
            keep = keep_probability_column(F.col(USER_COUNT), calibration)
            items = threshold_items(
                counts.select(ITEM, _laplace_quantile(keep).alias(WEIGHT)),
                distribution="laplace",
                scale=1.0,
                threshold=0.0,
                randomness=noise,
            )
        else:
            gaussian = isinstance(calibration, GaussianThresholding)
            items = threshold_items(
                counts.select(ITEM, F.col(USER_COUNT).alias(WEIGHT)),
                distribution="gaussian" if gaussian else "laplace",
                scale=calibration.sigma if gaussian else calibration.scale,
                threshold=calibration.threshold,
                randomness=noise,
            )
        return RoundResult.counted("round 1", epsilon, delta, calibration.to_report(), items)

    round_ = single_round(
        pairs, max_items=max_partitions, randomness=randomness, timer=timer, run=run
    )
    return Selection(
        strategy,
        round_.items,
        [round_],
        mechanism={
            "weighting": "classic count thresholding: number of users per item, each user "
            "contributing to at most k items",
            "max_partitions_per_user": max_partitions,
            "strategy": strategy,
            "reference": "Google differential-privacy partition-selection.h; PipelineDP",
        },
    )
