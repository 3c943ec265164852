"""Noise calibration on the driver: σ, Laplace scales and output thresholds.

Pure numpy/scipy, no Spark. Every mechanism states its sensitivity once, in the function that
calibrates it; callers pass the resulting σ or scale on and never pass a sensitivity again
(the lesson of STYLE.md §1). Tiny probabilities are handled in log space throughout.

Contents
--------
* Analytic Gaussian mechanism (Balle & Wang 2018, Thm. 8; Chen et al. 2025, Prop. 2.4):
  :func:`gaussian_delta`, :func:`gaussian_sigma`, :func:`gaussian_epsilon`.
* Weight-and-threshold thresholds ρ (Chen et al. 2025, Alg. 1 line 2 and proof of Thm. 3.3;
  spec partition_selection.md §3.2): :func:`gaussian_threshold`, and the Laplace variant
  :func:`laplace_weighted_threshold` (spec §2.3).
* :class:`WeightAndThreshold`: σ and ρ of one weight-and-threshold round for a budget (ε, δ),
  with δ split δ/2 for the Gaussian noise and δ/2 for the novel-item threshold (spec §3.4).
* :func:`laplace_scale`: scale b = Δ1/ε of the Laplace mechanism.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import optimize, special

from spark_dp.config import check_delta, check_epsilon, check_int_at_least, check_positive
from spark_dp.errors import ParameterError

__all__ = [
    "Threshold",
    "WeightAndThreshold",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_sigma",
    "gaussian_threshold",
    "laplace_scale",
    "laplace_weighted_threshold",
]


# --------------------------------------------------------------------------- Gaussian


def _log_gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """ln δ(σ) of the analytic Gaussian mechanism, computed without cancellation.

    δ(σ) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)
         = Φ(a) · (1 − exp(ε + ln Φ(b) − ln Φ(a))),  a = Δ/(2σ) − εσ/Δ,  b = a − Δ/σ.
    """
    a = sensitivity / (2.0 * sigma) - epsilon * sigma / sensitivity
    b = -sensitivity / (2.0 * sigma) - epsilon * sigma / sensitivity
    log_pa = special.log_ndtr(a)
    x = epsilon + special.log_ndtr(b) - log_pa  # < 0 for every finite σ > 0
    if x >= 0.0:  # only reachable through rounding when δ(σ) underflows to 0
        return -math.inf
    return float(log_pa + math.log(-math.expm1(x)))


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """δ at which N(0, σ²) noise on an ℓ2-sensitivity-Δ query is (ε, δ)-DP (tight).

    Balle & Wang 2018, Thm. 8: δ(σ) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ).
    """
    check_positive("sigma", sigma)
    check_positive("sensitivity", sensitivity)
    if not (epsilon >= 0 and math.isfinite(epsilon)):
        raise ParameterError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    return math.exp(_log_gaussian_delta(sigma, epsilon, sensitivity))


def gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest σ such that N(0, σ²) noise is (ε, δ)-DP for ℓ2 sensitivity Δ.

    Solves ln δ(σ) = ln δ_target by Brent's method on ln σ (a relative tolerance, so tiny δ
    such as 1e-15 are as accurate as large ones; spec partition_selection.md §3.1 pitfall),
    then rounds σ up until δ(σ) ≤ δ_target holds exactly in floating point.

    Args:
        epsilon: ε > 0.
        delta: the δ share spent on the Gaussian noise (for weight-and-threshold this is
            δ/2 of the round; see :class:`WeightAndThreshold`).
        sensitivity: ℓ2 sensitivity Δ2 of the query.

    Returns:
        σ (absolute standard deviation, already multiplied by Δ2).
    """
    check_epsilon(epsilon)
    check_delta(delta)
    check_positive("sensitivity", sensitivity)
    log_target = math.log(delta)
    f = lambda log_s: _log_gaussian_delta(math.exp(log_s), epsilon, 1.0) - log_target
    lo, hi = -1.0, 1.0
    while f(lo) <= 0:  # δ(σ) already small enough at σ = e^lo: move left
        lo -= 2.0
        if lo < -60:
            raise ParameterError(f"cannot calibrate sigma for epsilon={epsilon}, delta={delta}")
    while f(hi) > 0:
        hi += 2.0
        if hi > 60:
            raise ParameterError(f"cannot calibrate sigma for epsilon={epsilon}, delta={delta}")
    log_s = optimize.brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    sigma = math.exp(log_s)
    while _log_gaussian_delta(sigma, epsilon, 1.0) > log_target:  # round up (conservative)
        sigma = math.nextafter(sigma, math.inf) * (1.0 + 1e-15)
    return sigma * sensitivity


def gaussian_epsilon(sigma: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest ε such that N(0, σ²) noise is (ε, δ)-DP for ℓ2 sensitivity Δ.

    The inverse of :func:`gaussian_sigma` (δ(σ; ε) decreases in ε). Returns 0 when σ is so
    large that δ(σ; 0) ≤ δ already.
    """
    check_positive("sigma", sigma)
    check_delta(delta)
    check_positive("sensitivity", sensitivity)
    log_target = math.log(delta)
    s = sigma / sensitivity
    f = lambda eps: _log_gaussian_delta(s, eps, 1.0) - log_target
    if f(0.0) <= 0:
        return 0.0
    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
        if hi > 1e6:
            raise ParameterError(f"sigma={sigma} is too small for delta={delta}")
    eps = optimize.brentq(f, 0.0, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    while f(eps) > 0:
        eps = math.nextafter(eps, math.inf)
    return eps


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


def laplace_scale(epsilon: float, sensitivity: float = 1.0) -> float:
    """Scale b = Δ1/ε of the Laplace mechanism (pure ε-DP for ℓ1 sensitivity Δ1)."""
    check_epsilon(epsilon)
    check_positive("sensitivity", sensitivity)
    return sensitivity / epsilon


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

    def to_report(self) -> dict:
        """JSON-ready description (all values are public constants)."""
        out = asdict(self)
        out.update(
            mechanism="gaussian weight-and-threshold",
            l2_sensitivity=1.0,
            delta_noise=self.delta_noise,
            delta_threshold=self.delta_threshold,
        )
        return out
