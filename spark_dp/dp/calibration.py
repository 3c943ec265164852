"""General noise calibration on the driver: the Gaussian and Laplace mechanisms.

Pure Python (:mod:`.numerics` for Φ, ln Φ and the root finder), no Spark and no scipy: the
calibration runs before any data is read, and ``--dry-run`` answers without loading scipy. Every
mechanism states its sensitivity once, in the function that calibrates it; callers pass the
resulting σ or scale on and never pass a sensitivity again (a sensitivity two functions take as
an argument is owned by neither). Tiny probabilities are handled in log space throughout.

The families calibrate their own mechanisms beside them, on top of these:
:mod:`spark_dp.partition_selection.calibration` (weight-and-threshold rounds, MAD constants),
:mod:`spark_dp.partition_selection.classic` (count thresholding) and
:mod:`spark_dp.distinct_count` (GEM and the final release).

Contents
--------
* :class:`Budget`: an (ε, δ) checked once where it is built; the functions and calibrations
  that take one do not check it again.
* Analytic Gaussian mechanism (Balle & Wang 2018, Thm. 8; Chen et al. 2025, Prop. 2.4):
  :func:`gaussian_delta`, :func:`gaussian_sigma`, :func:`gaussian_epsilon`.
* :func:`laplace_scale`: scale b = Δ1/ε of the Laplace mechanism.
* :func:`noise_exceeds`: P[noise ≥ margin] for Gaussian or Laplace noise (a threshold's
  release probability).
* :func:`sampler_delta_floor`, :func:`check_sampler_delta`: the δ the floating-point noise
  samplers may add, and the smallest δ a release using them may claim
  (:func:`sampler_divergence`, :func:`divergence_delta`: the same for a composition).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from spark_dp.checks import check_delta, check_epsilon, check_positive, is_real
from spark_dp.dp.numerics import brentq, log_ndtr, ndtr
from spark_dp.errors import ParameterError

__all__ = [
    "NOISED_VALUES_BOUND",
    "SAMPLER_DELTA_MARGIN",
    "Budget",
    "check_sampler_delta",
    "divergence_delta",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_sigma",
    "laplace_scale",
    "noise_exceeds",
    "sampler_delta_floor",
    "sampler_divergence",
]


# --------------------------------------------------------------------------- budget


@dataclass(frozen=True)
class Budget:
    """A privacy budget (ε, δ): ε a finite number > 0, δ in [0, 1), checked here once.

    A plan builds one from its public parameters and splits it (:meth:`scaled`); the
    calibrations and functions that take a ``Budget`` rely on these bounds and never check ε
    or δ again. A mechanism that needs δ > 0 (a threshold, the Gaussian noise) says so itself.
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if not is_real(self.delta) or not 0.0 <= self.delta < 1.0:
            raise ParameterError(
                f"delta must lie in [0, 1), got {self.delta!r}; choose it well below "
                "1/(number of users), e.g. 1e-5 to 1e-11"
            )
        object.__setattr__(self, "delta", float(self.delta))

    def scaled(self, share: float) -> Budget:
        """(f·ε, f·δ): the share ``f`` in (0, 1] of a budget split over rounds (basic
        composition adds the shares back up)."""
        return Budget(share * self.epsilon, share * self.delta)


# --------------------------------------------------------------------------- Gaussian

_SIGMA_MARGIN = 1e-10


def _log_gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """ln δ(σ) of the analytic Gaussian mechanism, computed without cancellation.

    δ(σ) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)
         = Φ(a) · (1 − exp(ε + ln Φ(b) − ln Φ(a))),  a = Δ/(2σ) − εσ/Δ,  b = a − Δ/σ.
    """
    a = sensitivity / (2.0 * sigma) - epsilon * sigma / sensitivity
    b = -sensitivity / (2.0 * sigma) - epsilon * sigma / sensitivity
    log_pa = log_ndtr(a)
    x = epsilon + log_ndtr(b) - log_pa  # < 0 for every finite σ > 0
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


def gaussian_sigma(noise: Budget, sensitivity: float = 1.0) -> float:
    """Smallest σ such that N(0, σ²) noise is (ε, δ)-DP for ℓ2 sensitivity Δ.

    Solves ln δ(σ) = ln δ_target by Brent's method on ln σ (a relative tolerance, so tiny δ
    such as 1e-15 are as accurate as large ones; docs/design/selection.md#sigma-tolerance),
    then rounds σ up until δ(σ) ≤ δ_target holds exactly in floating point.

    Args:
        noise: the (ε, δ) spent on the Gaussian noise, δ > 0 (for weight-and-threshold δ is
            δ/2 of the round; see :class:`WeightAndThreshold`).
        sensitivity: ℓ2 sensitivity Δ2 of the query.

    Returns:
        σ (absolute standard deviation, already multiplied by Δ2).
    """
    epsilon, delta = noise.epsilon, noise.delta
    if delta <= 0.0:
        raise ParameterError(
            f"delta must lie strictly between 0 and 1 for the Gaussian mechanism, got {delta!r}"
        )
    check_positive("sensitivity", sensitivity)
    log_target = math.log(delta)

    def f(log_s: float) -> float:
        return _log_gaussian_delta(math.exp(log_s), epsilon, 1.0) - log_target

    lo, hi = -1.0, 1.0
    while f(lo) <= 0:  # δ(σ) already small enough at σ = e^lo: move left
        lo -= 2.0
        if lo < -60:
            raise ParameterError(f"cannot calibrate sigma for epsilon={epsilon}, delta={delta}")
    while f(hi) > 0:
        hi += 2.0
        if hi > 60:
            raise ParameterError(f"cannot calibrate sigma for epsilon={epsilon}, delta={delta}")
    log_s = brentq(f, lo, hi, xtol=1e-15, maxiter=500)
    # Round up (conservative): the float evaluation of ln δ(σ) is accurate to ~1e-12 relative,
    # so add a 1e-10 relative margin on σ (it lowers δ(σ) by ~1e-8 relative, far more than the
    # evaluation error), then make sure the float check holds too.
    sigma = math.exp(log_s) * (1.0 + _SIGMA_MARGIN)
    while _log_gaussian_delta(sigma, epsilon, 1.0) > log_target:
        sigma *= 1.0 + _SIGMA_MARGIN
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

    def f(eps: float) -> float:
        return _log_gaussian_delta(s, eps, 1.0) - log_target

    if f(0.0) <= 0:
        return 0.0
    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
        if hi > 1e6:
            raise ParameterError(f"sigma={sigma} is too small for delta={delta}")
    eps = brentq(f, 0.0, hi, xtol=1e-15, maxiter=500)
    eps *= 1.0 + _SIGMA_MARGIN  # round up, as in gaussian_sigma
    while f(eps) > 0:
        eps *= 1.0 + _SIGMA_MARGIN
    return eps


# --------------------------------------------------------------------------- Laplace


def laplace_scale(budget: Budget, sensitivity: float = 1.0) -> float:
    """Scale b = Δ1/ε of the Laplace mechanism (pure ε-DP for ℓ1 sensitivity Δ1)."""
    check_positive("sensitivity", sensitivity)
    return sensitivity / budget.epsilon


def noise_exceeds(distribution: str, scale: float, margin: float) -> float:
    """P[Z ≥ margin] for Z ~ N(0, scale²) (``gaussian``) or Laplace(scale) (``laplace``): the
    probability that an item whose weight lies ``margin`` below a threshold crosses it.

    Gaussian: Φ(−margin/σ). Laplace: ½·e^(−x) for x = margin/b ≥ 0, else 1 − ½·e^x.
    """
    x = margin / scale
    if distribution == "gaussian":
        return ndtr(-x)
    if distribution == "laplace":
        return 0.5 * math.exp(-x) if x >= 0 else 1.0 - 0.5 * math.exp(x)
    raise ValueError(f"distribution must be 'gaussian' or 'laplace', got {distribution!r}")


# --------------------------------------------------------------------------- sampler floor

NOISED_VALUES_BOUND = 10**15
"""Assumed bound on the number of noised values (items) of one round."""

SAMPLER_DELTA_MARGIN = 1_000
"""A release may claim δ only if the sampler adds at most 1/1000 of it."""


def sampler_divergence(distribution: str) -> float:
    """N·τ: a bound on the probability that one round's noise, drawn by the floating-point
    sampler, differs from the exact distribution's.

    The continuous samplers of :mod:`spark_dp.randomness.continuous` differ from the exact
    Gaussian or Laplace, when coupled through the same uniforms, with probability τ per draw
    (:func:`~spark_dp.randomness.continuous.tail_mass`, ≈ 1.4e-39: an exponential beyond the
    sampler's reach); a round draws N ≤ :data:`NOISED_VALUES_BOUND` values.
    """
    from spark_dp.randomness.continuous import tail_mass

    return NOISED_VALUES_BOUND * tail_mass(distribution)


def divergence_delta(epsilon: float, divergence: float) -> float:
    """(1 + e^ε)·η, capped at 1: what an (ε, δ)-DP guarantee of exact mechanisms adds to δ when
    the mechanisms that run differ from them with probability at most η on every dataset.

    P[M'(D) ∈ S] ≤ P[M(D) ∈ S] + η ≤ e^ε·P[M(D') ∈ S] + δ + η ≤ e^ε·P[M'(D') ∈ S] + δ
    + (1 + e^ε)·η. Computed in log space (no overflow for large ε).
    """
    if divergence <= 0.0:
        return 0.0
    log_one_plus_exp = epsilon + math.log1p(math.exp(-epsilon))  # ln(1 + e^ε), no overflow
    return math.exp(min(log_one_plus_exp + math.log(divergence), 0.0))


def sampler_delta_floor(epsilon: float, distribution: str) -> float:
    """The δ the floating-point samplers may add to an (ε, δ) round: (1 + e^ε)·N·τ
    (:func:`divergence_delta` of :func:`sampler_divergence`).

    Floating-point granularity inside the samplers' reach is not covered (the caveat of
    Mironov 2012); the thresholding mechanisms release only which values cross a threshold.
    """
    check_epsilon(epsilon)
    return divergence_delta(epsilon, sampler_divergence(distribution))


def check_sampler_delta(budget: Budget, distribution: str, name: str = "delta") -> float:
    """Refuse δ = 0 and a δ below :data:`SAMPLER_DELTA_MARGIN` × :func:`sampler_delta_floor`
    for a thresholding round whose noise the floating-point samplers draw.

    Returns:
        the floor (for the report).

    Raises:
        ParameterError: δ = 0 (a threshold needs δ > 0), or δ too small for the samplers'
            tails (or ε too large for them).
    """
    epsilon, delta = budget.epsilon, budget.delta
    if delta <= 0.0:
        raise ParameterError(
            f"{name} must lie strictly between 0 and 1 for a thresholding round, got {delta!r}"
        )
    floor = divergence_delta(epsilon, sampler_divergence(distribution))
    if delta < SAMPLER_DELTA_MARGIN * floor:
        raise ParameterError(
            f"{name}={delta:.3g} is below the smallest δ the {distribution} noise sampler "
            f"supports at epsilon={epsilon:g} ({SAMPLER_DELTA_MARGIN * floor:.3g}: its tails "
            "could add more than 1/1000 of δ); choose a larger delta or a smaller epsilon"
        )
    return floor
