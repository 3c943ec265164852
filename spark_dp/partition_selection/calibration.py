"""Calibration of the weight-and-threshold rounds: thresholds ρ, σ per round, MAD constants.

Driver-only numpy/scipy, no Spark. Built on the general Gaussian and Laplace mechanisms of
:mod:`spark_dp.calibration`; every object here states its own sensitivity and budget split and
describes itself with ``to_report()`` (the :class:`spark_dp.report.Calibration` protocol).

Contents
--------
* Weight-and-threshold thresholds ρ (Chen et al. 2025, Alg. 1 line 2 and proof of Thm. 3.3;
  spec partition_selection.md §3.2): :func:`gaussian_threshold`, and the Laplace variant
  :func:`laplace_weighted_threshold` (spec §2.3).
* :class:`WeightAndThreshold`: σ and ρ of one Gaussian round for a budget (ε, δ), with δ split
  δ/2 for the Gaussian noise and δ/2 for the novel-item threshold (spec §3.4);
  :class:`LaplaceWeightAndThreshold`, the Laplace round.
* :class:`MadConstants` (τ, α, adaptive degrees) and :class:`MadRound`, a Gaussian round whose
  weighting is MAD (spec §2.5, §3.3).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import special

from spark_dp.calibration import (
    check_sampler_delta,
    gaussian_sigma,
    laplace_scale,
    sampler_delta_floor,
)
from spark_dp.checks import (
    check_delta,
    check_epsilon,
    check_int_at_least,
    check_nonnegative,
    check_positive,
)
from spark_dp.errors import ParameterError

__all__ = [
    "LaplaceWeightAndThreshold",
    "MadConstants",
    "MadRound",
    "Threshold",
    "WeightAndThreshold",
    "check_bias_bounds",
    "gaussian_threshold",
    "laplace_weighted_threshold",
    "min_adaptive_degree",
    "reroute_discount",
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
    Thm. 3.3; spec partition_selection.md §3.2). With the round budget (ε, δ) the threshold
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
    values = h_scale / np.sqrt(t) - sigma * special.ndtri(q)
    i = int(np.argmax(values))
    return Threshold(rho=float(values[i]), argmax_t=i + 1)


def laplace_weighted_threshold(epsilon: float, delta: float, max_items: int) -> Threshold:
    """Threshold of the Laplace weight-and-threshold variant (ℓ1 weighting 1/d per item).

    ρ_Lap = max_{t=1..Δ0} [ 1/t + (1/ε)·ln(1 / (2·(1 − (1−δ)^{1/t}))) ], noise Laplace(1/ε).
    The whole δ goes to the threshold because the Laplace mechanism is pure ε-DP
    (spec partition_selection.md §2.3, from Gopi et al. 2020). Stable form:
    1 − (1−δ)^{1/t} = −expm1(log1p(−δ)/t).
    """
    check_epsilon(epsilon)
    check_delta(delta)
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
    1, and δ/2 on the event that a novel item crosses ρ (spec partition_selection.md §3.4).
    Build it with :meth:`for_budget`; its :meth:`to_report` fills the privacy report.
    """

    epsilon: float
    delta: float
    max_items: int
    h_scale: float
    sigma: float
    rho: float
    argmax_t: int

    @property
    def delta_noise(self) -> float:
        """δ share of the Gaussian mechanism (δ/2)."""
        return self.delta / 2.0

    @property
    def delta_threshold(self) -> float:
        """δ share of the novel-item threshold (δ/2)."""
        return self.delta / 2.0

    @classmethod
    def for_budget(
        cls, epsilon: float, delta: float, max_items: int, h_scale: float = 1.0
    ) -> WeightAndThreshold:
        """σ for (ε, δ/2) with Δ2 = 1, and ρ for (σ, δ/2, Δ0, h(t) = h_scale/√t)."""
        check_epsilon(epsilon)
        check_delta(delta)
        check_sampler_delta(delta, epsilon, "gaussian")
        sigma = gaussian_sigma(epsilon, delta / 2.0, sensitivity=1.0)
        thr = gaussian_threshold(sigma, delta / 2.0, max_items, h_scale)
        return cls(
            epsilon=float(epsilon),
            delta=float(delta),
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
            l2_sensitivity=1.0,
            delta_noise=self.delta_noise,
            delta_threshold=self.delta_threshold,
            sampler_delta_floor=sampler_delta_floor(self.epsilon, "gaussian"),
        )
        return out


@dataclass(frozen=True)
class LaplaceWeightAndThreshold:
    """Calibration of the Laplace weight-and-threshold round (Basic-Laplace, spec §2.3).

    ℓ1 weighting 1/d_u (Δ1 = 1), Laplace noise of scale 1/ε (pure ε-DP), and the whole δ on
    the novel-item threshold ρ_Lap (:func:`laplace_weighted_threshold`).
    """

    epsilon: float
    delta: float
    max_items: int
    scale: float
    rho: float
    argmax_t: int

    @classmethod
    def for_budget(cls, epsilon: float, delta: float, max_items: int) -> LaplaceWeightAndThreshold:
        """Scale 1/ε and ρ_Lap for (ε, δ, Δ0)."""
        thr = laplace_weighted_threshold(epsilon, delta, max_items)
        check_sampler_delta(delta, epsilon, "laplace")
        return cls(
            float(epsilon),
            float(delta),
            int(max_items),
            laplace_scale(epsilon),
            thr.rho,
            thr.argmax_t,
        )

    def to_report(self) -> dict[str, Any]:
        """JSON-ready description (public constants)."""
        return {
            "mechanism": "laplace weight-and-threshold",
            "l1_sensitivity": 1.0,
            "max_items": self.max_items,
            "scale": self.scale,
            "rho": self.rho,
            "argmax_t": self.argmax_t,
            "delta_threshold": self.delta,
            "sampler_delta_floor": sampler_delta_floor(self.epsilon, "laplace"),
        }

    @property
    def delta_threshold(self) -> float:
        """δ share of the novel-item threshold: all of δ (the Laplace noise is pure ε-DP)."""
        return self.delta


# --------------------------------------------------------------------------- MAD constants


def reroute_discount(b_min: float, max_adaptive_degree: int) -> float:
    """α = b_min − 1/(2·√d_max), the discount on the excess an adaptive user re-sends in MAD.

    Lemma B.8 (Chen et al. 2025, ICML App. B; arXiv Sec. 5) shows this is the infimum over the
    new user's excess γ ∈ (0, 1] of the admissible α in the ℓ2 bound
    α·γ/√d_max + sqrt(1 − 2·b_min·γ/√d_max + γ/d_max) ≤ 1 (spec partition_selection.md §3.3).
    """
    _check_b_min(b_min)
    check_int_at_least("max_adaptive_degree", max_adaptive_degree, 4)
    return b_min - 1.0 / (2.0 * math.sqrt(max_adaptive_degree))


def min_adaptive_degree(b_min: float) -> int:
    """⌈1/b_min²⌉: the smallest degree of an adaptive user (1 when b_min = 1, 4 when 0.5).

    The ℓ2 proof (Lemma B.6) needs d_v ≥ 1/b_min²; rounding up is the conservative side.
    """
    _check_b_min(b_min)
    return math.ceil(1.0 / (b_min * b_min))


def check_bias_bounds(b_min: float, b_max: float) -> None:
    """MAD's bias multipliers: b_min ∈ [0.5, 1] and a finite b_max ≥ 1 (spec §2.5, A5).

    Raises:
        ParameterError: naming the bad multiplier and its allowed range.
    """
    _check_b_min(b_min)
    if (
        isinstance(b_max, bool)
        or not isinstance(b_max, (int, float))
        or not math.isfinite(b_max)
        or b_max < 1.0
    ):
        raise ParameterError(
            f"b_max must be a finite number >= 1 (an infinite b_max makes the threshold "
            f"infinite), got {b_max!r}"
        )


def _check_b_min(b_min: float) -> None:
    if isinstance(b_min, bool) or not isinstance(b_min, (int, float)) or not 0.5 <= b_min <= 1.0:
        raise ParameterError(
            f"b_min must lie in [0.5, 1] (the MAD privacy proof needs it), got {b_min!r}"
        )


@dataclass(frozen=True)
class MadConstants:
    """Constants of one MAD weighting round (Chen et al. 2025, Alg. 2 ICML / Alg. 3 arXiv).

    τ = ρ + β·σ is the truncation level, α = b_min − 1/(2√d_max) the reroute discount, and
    users with ⌈1/b_min²⌉ ≤ d_u ≤ d_max are adaptive (spec partition_selection.md §2.5, §3.3).
    MAD's novel ℓ∞ sensitivity is b_max/√t (Lemma 4.1/B.3), so the round's threshold must have
    been calibrated with h(t) = b_max/√t or larger: :meth:`for_round` checks this, and MAD's
    ℓ2 sensitivity is 1 (Lemma 4.2/B.6), as :class:`WeightAndThreshold` assumes.

    Attributes:
        tau: truncation level τ (≥ 1, a precondition of Lemma B.3).
        alpha: reroute discount α.
        beta: β, noise standard deviations between ρ and τ.
        max_adaptive_degree: d_max (≥ 4, spec A4).
        min_adaptive_degree: ⌈1/b_min²⌉.
        b_min: minimum bias multiplier (1 when unbiased).
        b_max: maximum bias multiplier (1 when unbiased).
    """

    tau: float
    alpha: float
    beta: float
    max_adaptive_degree: int
    min_adaptive_degree: int
    b_min: float
    b_max: float

    @classmethod
    def for_round(
        cls,
        round_calibration: WeightAndThreshold,
        *,
        beta: float,
        max_adaptive_degree: int,
        b_min: float = 1.0,
        b_max: float = 1.0,
    ) -> MadConstants:
        """Constants for a round calibrated by ``round_calibration`` (σ, ρ, h_scale).

        Raises:
            ParameterError: β < 0, d_max < 4, b_min outside [0.5, 1], b_max < 1 or infinite,
                or b_max larger than the h_scale the round's ρ was calibrated for (that would
                break the novel-item bound).
        """
        check_nonnegative("beta", beta)
        check_bias_bounds(b_min, b_max)
        if b_max > round_calibration.h_scale:
            raise ParameterError(
                f"b_max={b_max} exceeds the h_scale={round_calibration.h_scale} the threshold "
                "was calibrated for; calibrate the round with h_scale=b_max"
            )
        tau = round_calibration.rho + beta * round_calibration.sigma
        if tau < 1.0:  # cannot happen: τ ≥ ρ ≥ h(1) ≥ 1; kept as the proof's precondition
            raise ParameterError(f"MAD needs tau >= 1, got {tau}")
        return cls(
            tau=float(tau),
            alpha=reroute_discount(b_min, max_adaptive_degree),
            beta=float(beta),
            max_adaptive_degree=int(max_adaptive_degree),
            min_adaptive_degree=min_adaptive_degree(b_min),
            b_min=float(b_min),
            b_max=float(b_max),
        )

    def to_report(self) -> dict[str, Any]:
        """JSON-ready description (public constants)."""
        return asdict(self)


@dataclass(frozen=True)
class MadRound:
    """A Gaussian weight-and-threshold round whose weighting is MAD (spec §2.5, §3.3).

    MAD's ℓ2 sensitivity is 1 (Lemma 4.2 ICML / B.6) and its novel-item ℓ∞ bound is
    b_max/√t (Lemma 4.1 / B.3), so the round spends exactly what its
    :class:`WeightAndThreshold` (calibrated with h_scale = b_max) says; τ and α follow from it
    (:meth:`MadConstants.for_round`). MAD2R's second round also carries the rule (C_lb, C_ub)
    that turns round 1's noisy weights into its biases (spec §2.6).
    """

    gaussian: WeightAndThreshold
    constants: MadConstants
    c_lb: float | None = None
    c_ub: float | None = None

    @classmethod
    def for_budget(
        cls,
        epsilon: float,
        delta: float,
        max_items: int,
        *,
        beta: float,
        d_max: int,
        b_min: float = 1.0,
        b_max: float = 1.0,
        c_lb: float | None = None,
        c_ub: float | None = None,
    ) -> MadRound:
        """σ and ρ for (ε, δ) with h(t) = b_max/√t, then τ = ρ + β·σ and α."""
        gaussian = WeightAndThreshold.for_budget(epsilon, delta, max_items, h_scale=b_max)
        constants = MadConstants.for_round(
            gaussian, beta=beta, max_adaptive_degree=d_max, b_min=b_min, b_max=b_max
        )
        if c_lb is not None:
            check_nonnegative("c_lb", c_lb)
        if c_ub is not None:
            check_nonnegative("c_ub", c_ub)
        return cls(
            gaussian,
            constants,
            None if c_lb is None else float(c_lb),
            None if c_ub is None else float(c_ub),
        )

    @property
    def epsilon(self) -> float:
        """ε of the round."""
        return self.gaussian.epsilon

    @property
    def delta(self) -> float:
        """δ of the round."""
        return self.gaussian.delta

    @property
    def sigma(self) -> float:
        """σ of the round's Gaussian noise."""
        return self.gaussian.sigma

    @property
    def rho(self) -> float:
        """The round's threshold ρ."""
        return self.gaussian.rho

    @property
    def delta_threshold(self) -> float:
        """δ share of the novel-item threshold (δ/2)."""
        return self.gaussian.delta_threshold

    def to_report(self) -> dict[str, Any]:
        """The Gaussian round's description, MAD's constants and the bias rule if any."""
        out = {**self.gaussian.to_report(), **self.constants.to_report()}
        if self.c_lb is not None:
            out.update(c_lb=self.c_lb, c_ub=self.c_ub)
        return out
