"""Calibration of classic count thresholding: keep probabilities, thresholds, noise scales.

Driver-only maths (no Spark) for the three strategies of :mod:`.classic`, as Google's
differential-privacy library (``cc/algorithms/partition-selection.h``, which PipelineDP uses
through PyDP) calibrates them: every user contributes to at most k items, and the number n of
users holding an item is thresholded.

* :class:`TruncatedGeometric`: the optimal keep probabilities p(n) of Desfontaines et al. 2022;
* :class:`LaplaceThresholding`: n + Laplace(k/ε) ≥ T;
* :class:`GaussianThresholding`: n + N(0, σ²) ≥ T, σ for (ε, δ/2) and Δ2 = √k.

Each is a round of the :class:`~spark_dp.dp.protocol.RoundCalibration` protocol.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from spark_dp.checks import check_delta, check_int_at_least, check_positive
from spark_dp.dp.calibration import (
    Budget,
    check_sampler_delta,
    gaussian_sigma,
    laplace_scale,
    noise_exceeds,
    sampler_delta_floor,
)
from spark_dp.dp.protocol import basic_only_event, gaussian_event, laplace_event

if TYPE_CHECKING:
    from dp_accounting import DpEvent

__all__ = [
    "GaussianThresholding",
    "LaplaceThresholding",
    "TruncatedGeometric",
    "adjusted_delta",
    "gaussian_thresholding_threshold",
    "laplace_thresholding_threshold",
]


def adjusted_delta(delta: float, max_items: int) -> float:
    """δ_k = 1 − (1 − δ)^{1/k}: the per-item δ such that a user's k items, each kept with
    probability ≤ δ_k independently, are all dropped with probability ≥ 1 − δ.

    Stable form −expm1(log1p(−δ)/k).
    """
    check_delta(delta)
    check_int_at_least("max_items", max_items, 1)
    return -math.expm1(math.log1p(-delta) / max_items)


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
    max_items: int
    adjusted_epsilon: float
    adjusted_delta: float
    crossover_1: int
    crossover_2: int

    @property
    def delta_threshold(self) -> float:
        """δ bound of releasing one of a new user's k novel items: all of δ."""
        return self.delta

    @property
    def delta_noise(self) -> float:
        """δ' of one item that other users also hold: p(n + 1) ≤ e^(ε')·p(n) + δ' (Thm. 1)."""
        return self.adjusted_delta

    @property
    def argmax_t(self) -> None:
        """None: the keep probabilities are not a maximum over t."""
        return None

    def dp_event(self) -> DpEvent:
        """Basic composition only: the keep probabilities are not a noise mechanism that an
        accountant composes (they are (ε, δ)-DP as a whole)."""
        return basic_only_event()

    def release_probability(self, weight: float) -> float:
        """p(n) for an item held by n = ``weight`` users."""
        return float(self.keep_probability(weight))

    @classmethod
    def for_budget(cls, budget: Budget, max_items: int) -> TruncatedGeometric:
        """The strategy for (ε, δ) and k = ``max_items`` items per user."""
        check_sampler_delta(budget, "laplace")
        epsilon, delta = budget.epsilon, budget.delta
        d = adjusted_delta(delta, max_items)
        e = epsilon / max_items
        n1 = 1 + math.floor(math.log1p(math.tanh(e / 2.0) * (1.0 / d - 1.0)) / e)
        p1 = _tg_low(n1, e, d)
        n2 = n1 + math.floor(math.log1p(math.expm1(e) / d * (1.0 - p1)) / e)
        return cls(float(epsilon), float(delta), int(max_items), e, d, n1, n2)

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


def laplace_thresholding_threshold(budget: Budget, max_items: int) -> float:
    """Threshold T of Laplace count thresholding: keep an item iff n + Laplace(k/ε) ≥ T.

    A user changes k counts by 1 each (ℓ1 sensitivity k, so scale b = k/ε, pure ε-DP). The
    whole δ bounds the chance that one of the new user's k novel items (count 1) crosses T:
    P(1 + L ≥ T) = δ' = 1 − (1 − δ)^{1/k}, i.e. T = 1 − b·ln(2δ') for δ' ≤ 1/2 and
    T = 1 + b·ln(2(1 − δ')) otherwise. Google's library branches on δ instead of δ'; the two
    agree for every δ ≤ 1/2.
    """
    b = laplace_scale(budget, sensitivity=float(max_items))
    d = adjusted_delta(budget.delta, max_items)
    if d <= 0.5:
        return 1.0 - b * math.log(2.0 * d)
    return 1.0 + b * math.log(2.0 * (1.0 - d))


class _NoisyCount(ABC):
    """What Laplace and Gaussian count thresholding share: keep an item held by n users iff
    n + noise ≥ T, the noise of scale ``noise_scale`` from ``distribution``."""

    distribution: ClassVar[str]
    max_items: int
    threshold: float

    @property
    @abstractmethod
    def noise_scale(self) -> float:
        """The scale of the noise on the counts (σ, or the Laplace scale b)."""

    @property
    def argmax_t(self) -> None:
        """None: the threshold is not a maximum over t."""
        return None

    def release_probability(self, weight: float) -> float:
        """P[n + noise ≥ T] for an item held by n = ``weight`` users."""
        return noise_exceeds(self.distribution, self.noise_scale, self.threshold - weight)


@dataclass(frozen=True)
class LaplaceThresholding(_NoisyCount):
    """Laplace count thresholding: keep iff n + Laplace(scale) ≥ threshold
    (see :func:`laplace_thresholding_threshold`)."""

    epsilon: float
    delta: float
    max_items: int
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

    @property
    def delta_noise(self) -> float:
        """0: the Laplace noise is pure ε-DP."""
        return 0.0

    def dp_event(self) -> DpEvent:
        """Laplace(k/ε) on counts of ℓ1 sensitivity k: ``LaplaceDpEvent(1/ε)``."""
        return laplace_event(self.scale, self.max_items)

    @classmethod
    def for_budget(cls, budget: Budget, max_items: int) -> LaplaceThresholding:
        """Scale k/ε and the threshold for (ε, δ, k)."""
        check_sampler_delta(budget, "laplace")
        return cls(
            budget.epsilon,
            budget.delta,
            int(max_items),
            laplace_scale(budget, sensitivity=float(max_items)),
            laplace_thresholding_threshold(budget, max_items),
        )

    def to_report(self) -> dict[str, Any]:
        """JSON-ready description (public constants)."""
        out = asdict(self)
        out.update(
            mechanism="laplace count thresholding",
            l1_sensitivity=self.max_items,
            sampler_delta_floor=sampler_delta_floor(self.epsilon, "laplace"),
        )
        return out


def gaussian_thresholding_threshold(sigma: float, delta_threshold: float, max_items: int) -> float:
    """Threshold T of Gaussian count thresholding for a given noise σ.

    T = 1 + σ·Φ̄⁻¹(δ'), δ' = 1 − (1 − δ_thr)^{1/k}: a novel item has count 1, so each of the
    new user's ≤ k novel items crosses T with probability δ' and some item with probability
    δ_thr. Here ``delta_threshold`` is the threshold's own share of δ.
    """
    check_positive("sigma", sigma)
    from scipy import special  # loads on first use: a job's `--help` needs no scipy

    d = adjusted_delta(delta_threshold, max_items)
    return 1.0 - sigma * float(special.ndtri(d))


@dataclass(frozen=True)
class GaussianThresholding(_NoisyCount):
    """Gaussian count thresholding: keep iff n + N(0, σ²) ≥ threshold.

    The budget (ε, δ) is split as in Google's library: δ/2 for the Gaussian mechanism on the
    counts (ℓ2 sensitivity √k: a user changes k counts by 1) and δ/2 for the threshold.
    """

    epsilon: float
    delta: float
    max_items: int
    sigma: float
    threshold: float
    delta_noise: float
    delta_threshold: float

    distribution: ClassVar[str] = "gaussian"

    @property
    def noise_scale(self) -> float:
        """σ of the Gaussian noise on the counts."""
        return self.sigma

    def dp_event(self) -> DpEvent:
        """N(0, σ²) on counts of ℓ2 sensitivity √k: ``GaussianDpEvent(σ/√k)``."""
        return gaussian_event(self.sigma, math.sqrt(self.max_items))

    @classmethod
    def for_budget(cls, budget: Budget, max_items: int) -> GaussianThresholding:
        """σ for (ε, δ/2) with Δ2 = √k, and the threshold for δ/2."""
        check_int_at_least("max_items", max_items, 1)
        check_sampler_delta(budget, "gaussian")
        half = budget.delta / 2.0
        noise = Budget(budget.epsilon, half)
        sigma = gaussian_sigma(noise, sensitivity=math.sqrt(max_items))
        threshold = gaussian_thresholding_threshold(sigma, half, max_items)
        return cls(
            budget.epsilon,
            budget.delta,
            int(max_items),
            sigma,
            threshold,
            half,
            half,
        )

    def to_report(self) -> dict[str, Any]:
        """JSON-ready description (public constants)."""
        out = asdict(self)
        out.update(
            mechanism="gaussian count thresholding",
            l2_sensitivity=math.sqrt(self.max_items),
            sampler_delta_floor=sampler_delta_floor(self.epsilon, "gaussian"),
        )
        return out
