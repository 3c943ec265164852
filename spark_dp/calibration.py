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

from spark_dp.checks import (
    check_delta,
    check_epsilon,
    check_int_at_least,
    check_nonnegative,
    check_positive,
)
from spark_dp.errors import ParameterError

__all__ = [
    "GaussianThresholding",
    "LaplaceThresholding",
    "MadConstants",
    "Threshold",
    "TruncatedGeometric",
    "WeightAndThreshold",
    "adjusted_delta",
    "check_bias_bounds",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_sigma",
    "gaussian_threshold",
    "gaussian_thresholding_threshold",
    "laplace_scale",
    "laplace_thresholding_threshold",
    "laplace_weighted_threshold",
    "min_adaptive_degree",
    "reroute_discount",
]


# --------------------------------------------------------------------------- Gaussian

_SIGMA_MARGIN = 1e-10


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
    f = lambda eps: _log_gaussian_delta(s, eps, 1.0) - log_target
    if f(0.0) <= 0:
        return 0.0
    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
        if hi > 1e6:
            raise ParameterError(f"sigma={sigma} is too small for delta={delta}")
    eps = optimize.brentq(f, 0.0, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    eps *= 1.0 + _SIGMA_MARGIN  # round up, as in gaussian_sigma
    while f(eps) > 0:
        eps *= 1.0 + _SIGMA_MARGIN
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
        return cls(
            float(epsilon),
            float(delta),
            int(max_items),
            laplace_scale(epsilon),
            thr.rho,
            thr.argmax_t,
        )

    def to_report(self) -> dict:
        """JSON-ready description (public constants)."""
        return {
            "mechanism": "laplace weight-and-threshold",
            "l1_sensitivity": 1.0,
            "max_items": self.max_items,
            "scale": self.scale,
            "rho": self.rho,
            "argmax_t": self.argmax_t,
            "delta_threshold": self.delta,
        }


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

    def to_report(self) -> dict:
        """JSON-ready description (public constants)."""
        return asdict(self)


# --------------------------------------------------------------------------- classic thresholding
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

    @classmethod
    def for_budget(cls, epsilon: float, delta: float, max_partitions: int) -> TruncatedGeometric:
        """The strategy for (ε, δ) and k = ``max_partitions`` items per user."""
        check_epsilon(epsilon)
        d = adjusted_delta(delta, max_partitions)
        e = epsilon / max_partitions
        n1 = 1 + math.floor(math.log1p(math.tanh(e / 2.0) * (1.0 / d - 1.0)) / e)
        p1 = _tg_low(n1, e, d)
        n2 = n1 + math.floor(math.log1p(math.expm1(e) / d * (1.0 - p1)) / e)
        return cls(float(epsilon), float(delta), int(max_partitions), e, d, n1, n2)

    def keep_probability(self, n) -> np.ndarray:
        """p(n) for user counts ``n`` (array-like of integers ≥ 0)."""
        n = np.asarray(n, dtype=float)
        e, d, n1 = self.adjusted_epsilon, self.adjusted_delta, self.crossover_1
        p1 = _tg_low(n1, e, d)
        with np.errstate(over="ignore", invalid="ignore"):
            low = _tg_low(n, e, d)
            mid = p1 - (1.0 - p1 + d / math.expm1(e)) * np.expm1(-(n - n1) * e)
        out = np.where(n <= n1, low, np.where(n <= self.crossover_2, mid, 1.0))
        return np.where(n <= 0, 0.0, np.minimum(out, 1.0))

    def to_report(self) -> dict:
        """JSON-ready description (public constants)."""
        out = asdict(self)
        out["mechanism"] = "truncated geometric partition selection"
        return out


def _tg_low(n, adjusted_epsilon: float, adjusted_delta: float):
    """δ'·(e^{nε'} − 1)/(e^{ε'} − 1), the first branch of the truncated-geometric p(n)."""
    ratio = np.expm1(np.multiply(n, adjusted_epsilon)) / math.expm1(adjusted_epsilon)
    return ratio * adjusted_delta


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

    @classmethod
    def for_budget(cls, epsilon: float, delta: float, max_partitions: int) -> LaplaceThresholding:
        """Scale k/ε and the threshold for (ε, δ, k)."""
        return cls(
            float(epsilon),
            float(delta),
            int(max_partitions),
            laplace_scale(epsilon, sensitivity=float(max_partitions)),
            laplace_thresholding_threshold(epsilon, delta, max_partitions),
        )

    def to_report(self) -> dict:
        """JSON-ready description (public constants)."""
        out = asdict(self)
        out.update(mechanism="laplace count thresholding", l1_sensitivity=self.max_partitions)
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

    @classmethod
    def for_budget(cls, epsilon: float, delta: float, max_partitions: int) -> GaussianThresholding:
        """σ for (ε, δ/2) with Δ2 = √k, and the threshold for δ/2."""
        check_epsilon(epsilon)
        check_delta(delta)
        check_int_at_least("max_partitions", max_partitions, 1)
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

    def to_report(self) -> dict:
        """JSON-ready description (public constants)."""
        out = asdict(self)
        out.update(
            mechanism="gaussian count thresholding",
            l2_sensitivity=math.sqrt(self.max_partitions),
        )
        return out
