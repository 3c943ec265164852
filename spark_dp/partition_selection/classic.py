"""Classic count thresholding, as Google's DP library and PipelineDP offer it.

Every user keeps at most k items (the same uniform cap as the other mechanisms, k = Δ0), the
number of users n(i) holding each item is counted, and the item is kept by one of three
strategies:

* ``truncated-geometric``: keep with probability p(n), the optimal keep probabilities of
  Desfontaines et al. 2022;
* ``laplace-thresholding``: keep iff n + Laplace(k/ε) ≥ T;
* ``gaussian-thresholding``: keep iff n + N(0, σ²) ≥ T with σ for (ε, δ/2) and Δ2 = √k,

each calibrated in :mod:`.calibration`.

Semantics match those libraries (Google's differential-privacy library,
``cc/algorithms/partition-selection.h``, which PipelineDP uses through PyDP), so their users can
switch without changing meaning.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from spark_dp.caching import CacheScope
from spark_dp.dp.calibration import Budget
from spark_dp.logs import StageTimer
from spark_dp.partition_selection.calibration import (
    GaussianThresholding,
    LaplaceThresholding,
    TruncatedGeometric,
)
from spark_dp.partition_selection.columns import ITEM, USER_COUNT, WEIGHT
from spark_dp.partition_selection.result import RoundResult, Selection, SelectionPlan
from spark_dp.partition_selection.rounds import counted_round, single_round
from spark_dp.partition_selection.thresholding import threshold_items
from spark_dp.randomness import Randomness
from spark_dp.report import Step

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from spark_dp.partition_selection.params import PartitionSelectionParams

__all__ = ["keep_probability_column", "noisy_count_runner", "planner", "run_keep_probability"]


# --------------------------------------------------------------------------- mechanism


def keep_probability_column(n: Column, strategy: TruncatedGeometric) -> Column:
    """p(n) of :meth:`TruncatedGeometric.keep_probability` as a Spark column (same formula).

    Args:
        n: user count column (≥ 1).
        strategy: the calibrated strategy (ε', δ', crossovers).
    """
    from pyspark.sql import functions as F

    e, d = strategy.adjusted_epsilon, strategy.adjusted_delta
    n1, n2 = strategy.crossover_1, strategy.crossover_2
    p1 = float(strategy.keep_probability(n1))
    low = F.expm1(n * e) / math.expm1(e) * d
    mid = F.lit(p1) - (1.0 - p1 + d / math.expm1(e)) * F.expm1(-(n - n1) * e)
    return F.when(n <= n1, low).when(n <= n2, mid).otherwise(F.lit(1.0))


def _laplace_quantile(p: Column) -> Column:
    """F⁻¹(p) of the standard Laplace distribution (+∞ at p = 1, −∞ at p = 0)."""
    from pyspark.sql import functions as F

    return (
        F.when(p >= 1.0, F.lit(math.inf))
        .when(p <= 0.0, F.lit(-math.inf))
        .when(p <= 0.5, F.log(2.0 * p))
        .otherwise(-F.log(2.0 * (1.0 - p)))
    )


_NAMES = {
    TruncatedGeometric: "truncated-geometric",
    LaplaceThresholding: "laplace-thresholding",
    GaussianThresholding: "gaussian-thresholding",
}


def planner(
    strategy: type[TruncatedGeometric | LaplaceThresholding | GaussianThresholding],
) -> Callable[[PartitionSelectionParams], SelectionPlan]:
    """The ``plan`` function of one strategy: its calibration for (ε, δ, k = Δ0)."""
    name = _NAMES[strategy]

    def plan(params: PartitionSelectionParams) -> SelectionPlan:
        calibration = strategy.for_budget(
            Budget(params.epsilon, params.delta), params.fixed_max_contributions()
        )
        return SelectionPlan(
            name,
            (Step("round 1", calibration),),
            weighting="classic count thresholding: number of users per item, each user "
            "contributing to at most k items",
            reference="Google differential-privacy partition-selection.h; PipelineDP",
            options={"strategy": name},
        )

    return plan


def run_keep_probability(
    pairs: DataFrame,
    plan: SelectionPlan,
    randomness: Randomness,
    *,
    timer: StageTimer | None = None,
    cache: CacheScope | None = None,
) -> Selection:
    """``truncated-geometric``: keep an item held by n users with probability p(n).

    With L ~ Laplace(1), P(L ≤ F⁻¹(p)) = p, and L is symmetric, so "F⁻¹(p(n)) + L ≥ 0" keeps
    the item with probability p(n): the same noise-and-threshold step as the other strategies.
    Arguments and result as the runs of :func:`noisy_count_runner`.
    """
    from pyspark.sql import functions as F

    strategy = plan.calibration(0, TruncatedGeometric)

    def keep(counts: DataFrame, noise: Randomness) -> DataFrame:
        probability = keep_probability_column(F.col(USER_COUNT), strategy)
        return threshold_items(
            counts.select(ITEM, _laplace_quantile(probability).alias(WEIGHT)),
            distribution="laplace",
            scale=1.0,
            threshold=0.0,
            randomness=noise,
        )

    return _counted_selection(pairs, plan, randomness, keep, timer=timer, cache=cache)


def noisy_count_runner(
    strategy: type[LaplaceThresholding | GaussianThresholding],
) -> Callable[..., Selection]:
    """The ``run`` of ``laplace-thresholding`` or ``gaussian-thresholding``: keep an item iff
    n + noise ≥ T, with the noise and T of the plan's ``strategy``."""

    def run(
        pairs: DataFrame,
        plan: SelectionPlan,
        randomness: Randomness,
        *,
        timer: StageTimer | None = None,
        cache: CacheScope | None = None,
    ) -> Selection:
        """Cap at k items per user, count users per item, keep iff n + noise ≥ T.

        Args:
            pairs: (user_id, item); a repeated pair counts once (the cap drops it).
            plan: from :func:`planner` (one step whose calibration is the strategy).
            randomness: the job's randomness.
            timer: stage logger.
            cache: where the run keeps what it reuses (handed to the :class:`Selection`).

        Returns:
            the :class:`Selection` (one step).
        """
        calibration = plan.calibration(0, strategy)

        def keep(counts: DataFrame, noise: Randomness) -> DataFrame:
            from pyspark.sql import functions as F

            return threshold_items(
                counts.select(ITEM, F.col(USER_COUNT).alias(WEIGHT)),
                distribution=calibration.distribution,
                scale=calibration.noise_scale,
                threshold=calibration.threshold,
                randomness=noise,
            )

        return _counted_selection(pairs, plan, randomness, keep, timer=timer, cache=cache)

    return run


def _counted_selection(
    pairs: DataFrame,
    plan: SelectionPlan,
    randomness: Randomness,
    keep: Callable[[DataFrame, Randomness], DataFrame],
    *,
    timer: StageTimer | None,
    cache: CacheScope | None,
) -> Selection:
    """Cap at k items per user, count users per item, keep the items ``keep`` selects."""
    from pyspark.sql import functions as F

    step = plan.steps[0]
    cache = cache if cache is not None else CacheScope()

    def one_round(capped: DataFrame, noise: Randomness) -> RoundResult:
        counts = capped.groupBy(ITEM).agg(F.count(F.lit(1)).cast("double").alias(USER_COUNT))
        # -> (item, user_count_private)
        return counted_round(step, keep(counts, noise), cache)

    round_ = single_round(
        pairs,
        max_contributions=plan.max_contributions,
        randomness=randomness,
        timer=timer,
        cache=cache,
        run=one_round,
    )
    return Selection(plan, round_.items, [round_], cache=cache)
