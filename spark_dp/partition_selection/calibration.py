"""Calibration of the weight-and-threshold rounds: thresholds ρ, σ per round, MAD constants.

Driver-only numpy/scipy, no Spark. Built on the general Gaussian and Laplace mechanisms of
:mod:`spark_dp.dp.calibration`; every object here states its own sensitivity and budget split and
describes itself (the :class:`~spark_dp.dp.protocol.RoundCalibration` protocol).

Contents
--------
* Weight-and-threshold thresholds ρ (Chen et al. 2025, Alg. 1 line 2 and proof of Thm. 3.3;
  docs/design/selection.md#rho): :func:`gaussian_threshold`, and the Laplace variant
  :func:`laplace_weighted_threshold` (docs/design/selection.md#basic).
* :class:`WeightAndThreshold`: σ and ρ of one Gaussian round for a budget (ε, δ), with δ split
  δ/2 for the Gaussian noise and δ/2 for the novel-item threshold
  (docs/design/selection.md#budget-split); :class:`LaplaceWeightAndThreshold`, the Laplace round.

MAD's constants (τ, α, adaptive degrees) and its rounds are in :mod:`.mad_constants`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from spark_dp.checks import check_delta, check_int_at_least, check_positive
from spark_dp.dp.calibration import (
    Budget,
    check_sampler_delta,
    gaussian_sigma,
    laplace_scale,
    noise_exceeds,
    sampler_delta_floor,
)
from spark_dp.dp.protocol import gaussian_event, laplace_event

if TYPE_CHECKING:
    from dp_accounting import DpEvent

__all__ = [
    "LaplaceWeightAndThreshold",
    "Threshold",
    "WeightAndThreshold",
    "gaussian_threshold",
    "laplace_weighted_threshold",
]


# --------------------------------------------------------------------------- thresholds


@dataclass(frozen=True)
class Threshold:
    """A calibrated output threshold ρ and the number of novel items t that attains it."""

    rho: float
    argmax_t: int


def gaussian_threshold(
    sigma: float, delta_threshold: float, max_items: int, h_scale: float = 1.0
) -> Threshold:
    """ρ = max_{t=1..Δ0} [ h_scale/√t + σ·Φ⁻¹((1 − δ_thr)^{1/t}) ].

    A new user adds at most t ≤ Δ0 novel items, each with weight ≤ h(t) = h_scale/√t. The
    probability that any of t i.i.d. N(0, σ²) draws exceeds σ·Φ⁻¹((1 − δ_thr)^{1/t}) is exactly
    δ_thr, so no novel item crosses ρ except with probability δ_thr (Chen et al. 2025, proof of
    Thm. 3.3; docs/design/selection.md#rho). With the round budget (ε, δ) the threshold
    share is δ_thr = δ/2.

    Stable form: Φ⁻¹((1 − δ_thr)^{1/t}) = Φ̄⁻¹(q_t) with q_t = −expm1(log1p(−δ_thr)/t).
    The maximum is taken over every t (it is not always at t = Δ0; at ε = 8 it is t = 1).

    Args:
        sigma: noise standard deviation σ.
        delta_threshold: the δ share of the threshold (δ/2 of the round).
        max_items: the degree cap Δ0.
        h_scale: b_max for biased rounds (MAD2R round 2), 1 otherwise.
    """
    check_positive("sigma", sigma)
    check_delta(delta_threshold, "delta_threshold")
    check_int_at_least("max_items", max_items, 1)
    check_positive("h_scale", h_scale)
    t = np.arange(1, max_items + 1, dtype=float)
    q = -np.expm1(np.log1p(-delta_threshold) / t)
    # Φ⁻¹(1 − q) = −Φ⁻¹(q): evaluating in the lower tail keeps full precision for tiny q.
    from scipy import special  # loads on first use: a job's `--help` needs no scipy

    values = h_scale / np.sqrt(t) - sigma * special.ndtri(q)
    i = int(np.argmax(values))
    return Threshold(rho=float(values[i]), argmax_t=i + 1)


def laplace_weighted_threshold(budget: Budget, max_items: int) -> Threshold:
    """Threshold of the Laplace weight-and-threshold variant (ℓ1 weighting 1/d per item).

    ρ_Lap = max_{t=1..Δ0} [ 1/t + (1/ε)·ln(1 / (2·(1 − (1−δ)^{1/t}))) ], noise Laplace(1/ε).
    The whole δ goes to the threshold because the Laplace mechanism is pure ε-DP
    (docs/design/selection.md#basic, from Gopi et al. 2020). Stable form:
    1 − (1−δ)^{1/t} = −expm1(log1p(−δ)/t). Needs δ > 0.
    """
    epsilon, delta = budget.epsilon, check_delta(budget.delta)
    check_int_at_least("max_items", max_items, 1)
    t = np.arange(1, max_items + 1, dtype=float)
    p = -np.expm1(np.log1p(-delta) / t)
    values = 1.0 / t - np.log(2.0 * p) / epsilon
    i = int(np.argmax(values))
    return Threshold(rho=float(values[i]), argmax_t=i + 1)


# --------------------------------------------------------------------------- one round


@dataclass(frozen=True)
class WeightAndThreshold:
    """Calibration of one Gaussian weight-and-threshold round (Chen et al. 2025, Alg. 1).

    The round spends (ε, δ): δ/2 on the Gaussian mechanism for a weighting with ℓ2 sensitivity
    1, and δ/2 on the event that a novel item crosses ρ (docs/design/selection.md#budget-split).
    Build it with :meth:`for_budget`; its :meth:`to_report` fills the privacy report.
    """

    epsilon: float
    delta: float
    max_items: int
    h_scale: float
    sigma: float
    rho: float
    argmax_t: int

    l2_sensitivity: ClassVar[float] = 1.0
    """Δ2 of the weightings a round is calibrated for (Basic, MAD: Lemma 4.2 / B.6)."""

    @property
    def delta_noise(self) -> float:
        """δ share of the Gaussian mechanism (δ/2)."""
        return self.delta / 2.0

    @property
    def delta_threshold(self) -> float:
        """δ share of the novel-item threshold (δ/2)."""
        return self.delta / 2.0

    @classmethod
    def for_budget(cls, budget: Budget, max_items: int, h_scale: float = 1.0) -> WeightAndThreshold:
        """σ for (ε, δ/2) with Δ2 = 1, and ρ for (σ, δ/2, Δ0, h(t) = h_scale/√t)."""
        check_sampler_delta(budget, "gaussian")
        half = budget.delta / 2.0
        sigma = gaussian_sigma(Budget(budget.epsilon, half), sensitivity=cls.l2_sensitivity)
        thr = gaussian_threshold(sigma, half, max_items, h_scale)
        return cls(
            epsilon=budget.epsilon,
            delta=budget.delta,
            max_items=int(max_items),
            h_scale=float(h_scale),
            sigma=sigma,
            rho=thr.rho,
            argmax_t=thr.argmax_t,
        )

    def to_report(self) -> dict[str, Any]:
        """JSON-ready description (all values are public constants)."""
        out = asdict(self)
        out.update(
            mechanism="gaussian weight-and-threshold",
            l2_sensitivity=self.l2_sensitivity,
            delta_noise=self.delta_noise,
            delta_threshold=self.delta_threshold,
            sampler_delta_floor=sampler_delta_floor(self.epsilon, "gaussian"),
        )
        return out

    def dp_event(self) -> DpEvent:
        """N(0, σ²) on weights of ℓ2 sensitivity 1: ``GaussianDpEvent(σ)``."""
        return gaussian_event(self.sigma, self.l2_sensitivity)

    def release_probability(self, weight: float) -> float:
        """P[w + N(0, σ²) ≥ ρ] for an item of weight w."""
        return noise_exceeds("gaussian", self.sigma, self.rho - weight)


@dataclass(frozen=True)
class LaplaceWeightAndThreshold:
    """Calibration of the Laplace weight-and-threshold round (Basic-Laplace,
    docs/design/selection.md#basic).

    ℓ1 weighting 1/d_u (Δ1 = 1), Laplace noise of scale 1/ε (pure ε-DP), and the whole δ on
    the novel-item threshold ρ_Lap (:func:`laplace_weighted_threshold`).
    """

    epsilon: float
    delta: float
    max_items: int
    scale: float
    rho: float
    argmax_t: int

    l1_sensitivity: ClassVar[float] = 1.0
    """Δ1 of the weighting 1/d_u."""

    @classmethod
    def for_budget(cls, budget: Budget, max_items: int) -> LaplaceWeightAndThreshold:
        """Scale 1/ε and ρ_Lap for (ε, δ, Δ0)."""
        check_sampler_delta(budget, "laplace")
        thr = laplace_weighted_threshold(budget, max_items)
        return cls(
            budget.epsilon,
            budget.delta,
            int(max_items),
            laplace_scale(budget, cls.l1_sensitivity),
            thr.rho,
            thr.argmax_t,
        )

    def to_report(self) -> dict[str, Any]:
        """JSON-ready description (public constants)."""
        return {
            "mechanism": "laplace weight-and-threshold",
            "l1_sensitivity": self.l1_sensitivity,
            "max_items": self.max_items,
            "scale": self.scale,
            "rho": self.rho,
            "argmax_t": self.argmax_t,
            "delta_threshold": self.delta,
            "sampler_delta_floor": sampler_delta_floor(self.epsilon, "laplace"),
        }

    @property
    def delta_noise(self) -> float:
        """0: the Laplace noise is pure ε-DP."""
        return 0.0

    @property
    def delta_threshold(self) -> float:
        """δ share of the novel-item threshold: all of δ (the Laplace noise is pure ε-DP)."""
        return self.delta

    def dp_event(self) -> DpEvent:
        """Laplace(1/ε) on weights of ℓ1 sensitivity 1: ``LaplaceDpEvent(1/ε)``."""
        return laplace_event(self.scale, self.l1_sensitivity)

    def release_probability(self, weight: float) -> float:
        """P[w + Laplace(1/ε) ≥ ρ_Lap] for an item of weight w."""
        return noise_exceeds("laplace", self.scale, self.rho - weight)
