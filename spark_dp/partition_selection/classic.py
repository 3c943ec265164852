"""Classic count thresholding, as Google's DP library and PipelineDP offer it.

Every user keeps at most k items (the same uniform cap as the other mechanisms, k = Δ0), the
number of users n(i) holding each item is counted, and the item is kept by one of three
strategies, each calibrated here:

* ``truncated-geometric``: keep with probability p(n), the optimal keep probabilities of
  Desfontaines et al. 2022 (:class:`TruncatedGeometric`);
* ``laplace-thresholding``: keep iff n + Laplace(k/ε) ≥ T (:class:`LaplaceThresholding`);
* ``gaussian-thresholding``: keep iff n + N(0, σ²) ≥ T with σ for (ε, δ/2) and Δ2 = √k
  (:class:`GaussianThresholding`).

Semantics match those libraries (Google's differential-privacy library,
``cc/algorithms/partition-selection.h``, which PipelineDP uses through PyDP), so their users can
switch without changing meaning.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from scipy import special

from spark_dp.caching import CacheScope
from spark_dp.calibration import (
    check_sampler_delta,
    gaussian_sigma,
    laplace_scale,
    sampler_delta_floor,
)
from spark_dp.checks import check_delta, check_epsilon, check_int_at_least, check_positive
from spark_dp.logs import StageTimer
from spark_dp.partition_selection.columns import ITEM, USER_COUNT, WEIGHT
from spark_dp.partition_selection.result import RoundResult, Selection, SelectionPlan
from spark_dp.partition_selection.rounds import counted_round, single_round
from spark_dp.partition_selection.thresholding import threshold_items
from spark_dp.randomness import Randomness
from spark_dp.report import Step

if TYPE_CHECKING:
    from spark_dp.partition_selection.params import PartitionSelectionParams

__all__ = [
    "GaussianThresholding",
    "LaplaceThresholding",
    "TruncatedGeometric",
    "adjusted_delta",
    "gaussian_thresholding_threshold",
    "keep_probability_column",
    "laplace_thresholding_threshold",
    "planner",
    "run",
]


# --------------------------------------------------------------------------- calibration
# Count thresholding as the mainstream DP libraries offer it (Google's differential-privacy
# library, cc/algorithms/partition-selection.h, which PipelineDP uses through PyDP): every user
# contributes to at most k partitions (items), and the item's user count n is thresholded.


def adjusted_delta(delta: float, max_partitions: int) -> float:
    """δ_k = 1 − (1 − δ)^{1/k}: the per-item δ such that a user's k items, each kept with
    probability ≤ δ_k independently, are all dropped with probability ≥ 1 − δ.

    Stable form −expm1(log1p(−δ)/k).
    """
    check_delta(delta)
    check_int_at_least("max_partitions", max_partitions, 1)
    return -math.expm1(math.log1p(-delta) / max_partitions)


@dataclass(frozen=True)
class TruncatedGeometric:
    """Truncated-geometric ("magic") partition selection: keep an item with n users with
    probability p(n), the optimal (ε, δ)-DP keep probabilities (Desfontaines, Voss, Gipson,
    Mandayam 2022, "Differentially private partition selection", Thm. 1).

    With ε' = ε/k and δ' = 1 − (1 − δ)^{1/k} (k = partitions per user):

    * p(n) = δ'·(e^{nε'} − 1)/(e^{ε'} − 1)                                   for n ≤ n1
    * p(n) = p(n1) − (1 − p(n1) + δ'/(e^{ε'} − 1))·(e^{−(n−n1)ε'} − 1)        for n1 < n ≤ n2
    * p(n) = 1                                                                for n > n2

    with the crossovers n1 = 1 + ⌊ln(1 + tanh(ε'/2)·(1/δ' − 1))/ε'⌋ and
    n2 = n1 + ⌊ln(1 + (e^{ε'} − 1)/δ'·(1 − p(n1)))/ε'⌋, as in Google's library
    (``PreaggPartitionSelection``). p(1) = δ', p(0) = 0.
    """

    epsilon: float
    delta: float
    max_partitions: int
    adjusted_epsilon: float
    adjusted_delta: float
    crossover_1: int
    crossover_2: int

    @property
    def delta_threshold(self) -> float:
        """δ bound of releasing one of a new user's k novel items: all of δ."""
        return self.delta

    @classmethod
    def for_budget(cls, epsilon: float, delta: float, max_partitions: int) -> TruncatedGeometric:
        """The strategy for (ε, δ) and k = ``max_partitions`` items per user."""
        check_epsilon(epsilon)
        d = adjusted_delta(delta, max_partitions)
        check_sampler_delta(delta, epsilon, "laplace")
        e = epsilon / max_partitions
        n1 = 1 + math.floor(math.log1p(math.tanh(e / 2.0) * (1.0 / d - 1.0)) / e)
        p1 = _tg_low(n1, e, d)
        n2 = n1 + math.floor(math.log1p(math.expm1(e) / d * (1.0 - p1)) / e)
        return cls(float(epsilon), float(delta), int(max_partitions), e, d, n1, n2)

    def keep_probability(self, counts: ArrayLike) -> np.ndarray:
        """p(n) for user counts ``n`` (array-like of integers ≥ 0)."""
        n = np.asarray(counts, dtype=float)
        e, d, n1 = self.adjusted_epsilon, self.adjusted_delta, self.crossover_1
        p1 = _tg_low(n1, e, d)
        with np.errstate(over="ignore", invalid="ignore"):
            low = _tg_low(n, e, d)
            mid = p1 - (1.0 - p1 + d / math.expm1(e)) * np.expm1(-(n - n1) * e)
        out = np.where(n <= n1, low, np.where(n <= self.crossover_2, mid, 1.0))
        return np.where(n <= 0, 0.0, np.minimum(out, 1.0))

    def to_report(self) -> dict[str, Any]:
        """JSON-ready description (public constants)."""
        out = asdict(self)
        out["mechanism"] = "truncated geometric partition selection"
        out["sampler_delta_floor"] = sampler_delta_floor(self.epsilon, "laplace")
        return out


def _tg_low(n: ArrayLike, adjusted_epsilon: float, adjusted_delta: float) -> np.ndarray:
    """δ'·(e^{nε'} − 1)/(e^{ε'} − 1), the first branch of the truncated-geometric p(n)."""
    ratio = np.expm1(np.multiply(n, adjusted_epsilon)) / math.expm1(adjusted_epsilon)
    return np.asarray(ratio * adjusted_delta)


def laplace_thresholding_threshold(epsilon: float, delta: float, max_partitions: int) -> float:
    """Threshold T of Laplace count thresholding: keep an item iff n + Laplace(k/ε) ≥ T.

    A user changes k counts by 1 each (ℓ1 sensitivity k, so scale b = k/ε, pure ε-DP). The
    whole δ bounds the chance that one of the new user's k novel items (count 1) crosses T:
    P(1 + L ≥ T) = δ' = 1 − (1 − δ)^{1/k}, i.e. T = 1 − b·ln(2δ') for δ' ≤ 1/2 and
    T = 1 + b·ln(2(1 − δ')) otherwise. Google's library branches on δ instead of δ'; the two
    agree for every δ ≤ 1/2.
    """
    b = laplace_scale(epsilon, sensitivity=float(max_partitions))
    d = adjusted_delta(delta, max_partitions)
    if d <= 0.5:
        return 1.0 - b * math.log(2.0 * d)
    return 1.0 + b * math.log(2.0 * (1.0 - d))


@dataclass(frozen=True)
class LaplaceThresholding:
    """Laplace count thresholding: keep iff n + Laplace(scale) ≥ threshold
    (see :func:`laplace_thresholding_threshold`)."""

    epsilon: float
    delta: float
    max_partitions: int
    scale: float
    threshold: float

    distribution: ClassVar[str] = "laplace"

    @property
    def noise_scale(self) -> float:
        """Scale b = k/ε of the Laplace noise on the counts."""
        return self.scale

    @property
    def delta_threshold(self) -> float:
        """δ share of the novel-item threshold: all of δ (the noise is pure ε-DP)."""
        return self.delta

    @classmethod
    def for_budget(cls, epsilon: float, delta: float, max_partitions: int) -> LaplaceThresholding:
        """Scale k/ε and the threshold for (ε, δ, k)."""
        check_sampler_delta(delta, epsilon, "laplace")
        return cls(
            float(epsilon),
            float(delta),
            int(max_partitions),
            laplace_scale(epsilon, sensitivity=float(max_partitions)),
            laplace_thresholding_threshold(epsilon, delta, max_partitions),
        )

    def to_report(self) -> dict[str, Any]:
        """JSON-ready description (public constants)."""
        out = asdict(self)
        out.update(
            mechanism="laplace count thresholding",
            l1_sensitivity=self.max_partitions,
            sampler_delta_floor=sampler_delta_floor(self.epsilon, "laplace"),
        )
        return out


def gaussian_thresholding_threshold(
    sigma: float, delta_threshold: float, max_partitions: int
) -> float:
    """Threshold T of Gaussian count thresholding for a given noise σ.

    T = 1 + σ·Φ̄⁻¹(δ'), δ' = 1 − (1 − δ_thr)^{1/k}: a novel item has count 1, so each of the
    new user's ≤ k novel items crosses T with probability δ' and some item with probability
    δ_thr. Here ``delta_threshold`` is the threshold's own share of δ.
    """
    check_positive("sigma", sigma)
    d = adjusted_delta(delta_threshold, max_partitions)
    return 1.0 - sigma * float(special.ndtri(d))


@dataclass(frozen=True)
class GaussianThresholding:
    """Gaussian count thresholding: keep iff n + N(0, σ²) ≥ threshold.

    The budget (ε, δ) is split as in Google's library: δ/2 for the Gaussian mechanism on the
    counts (ℓ2 sensitivity √k: a user changes k counts by 1) and δ/2 for the threshold.
    """

    epsilon: float
    delta: float
    max_partitions: int
    sigma: float
    threshold: float
    delta_noise: float
    delta_threshold: float

    distribution: ClassVar[str] = "gaussian"

    @property
    def noise_scale(self) -> float:
        """σ of the Gaussian noise on the counts."""
        return self.sigma

    @classmethod
    def for_budget(cls, epsilon: float, delta: float, max_partitions: int) -> GaussianThresholding:
        """σ for (ε, δ/2) with Δ2 = √k, and the threshold for δ/2."""
        check_epsilon(epsilon)
        check_delta(delta)
        check_int_at_least("max_partitions", max_partitions, 1)
        check_sampler_delta(delta, epsilon, "gaussian")
        sigma = gaussian_sigma(epsilon, delta / 2.0, sensitivity=math.sqrt(max_partitions))
        threshold = gaussian_thresholding_threshold(sigma, delta / 2.0, max_partitions)
        return cls(
            float(epsilon),
            float(delta),
            int(max_partitions),
            sigma,
            threshold,
            delta / 2.0,
            delta / 2.0,
        )

    def to_report(self) -> dict[str, Any]:
        """JSON-ready description (public constants)."""
        out = asdict(self)
        out.update(
            mechanism="gaussian count thresholding",
            l2_sensitivity=math.sqrt(self.max_partitions),
            sampler_delta_floor=sampler_delta_floor(self.epsilon, "gaussian"),
        )
        return out


# --------------------------------------------------------------------------- mechanism


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
        k = params.max_items_per_user
        calibration = strategy.for_budget(params.epsilon, params.delta, k)
        return SelectionPlan(
            name,
            k,
            (Step("round 1", calibration),),
            weighting="classic count thresholding: number of users per item, each user "
            "contributing to at most k items",
            reference="Google differential-privacy partition-selection.h; PipelineDP",
            options={"strategy": name},
        )

    return plan


def run(
    pairs: DataFrame,
    plan: SelectionPlan,
    randomness: Randomness,
    *,
    timer: StageTimer | None = None,
    cache: CacheScope | None = None,
) -> Selection:
    """Cap at k items per user, count users per item, keep items by the plan's strategy.

    Args:
        pairs: (user_id, item); a repeated pair counts once (the cap drops it).
        plan: from :func:`planner` (one step whose calibration is the strategy).
        randomness: the job's randomness.
        timer: stage logger.
        cache: where the run keeps what it reuses (handed to the :class:`Selection`).

    Returns:
        the :class:`Selection` (one step).
    """
    step = plan.steps[0]
    calibration = step.calibration
    cache = cache if cache is not None else CacheScope()

    def one_round(capped: DataFrame, noise: Randomness) -> RoundResult:
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
        elif isinstance(calibration, GaussianThresholding | LaplaceThresholding):
            items = threshold_items(
                counts.select(ITEM, F.col(USER_COUNT).alias(WEIGHT)),
                distribution=calibration.distribution,
                scale=calibration.noise_scale,
                threshold=calibration.threshold,
                randomness=noise,
            )
        else:
            raise TypeError(f"not a count-thresholding strategy: {type(calibration).__name__}")
        return counted_round(step, items, cache)

    round_ = single_round(
        pairs,
        max_items=plan.max_items,
        randomness=randomness,
        timer=timer,
        cache=cache,
        run=one_round,
    )
    return Selection(plan, round_.items, [round_], cache=cache)
