"""Calibration of partition selection's rounds: thresholds ρ, σ, MAD's constants, and the
classic count thresholding's keep probabilities and thresholds.

Driver-only numpy (no scipy: :mod:`spark_dp.dp.numerics`), no Spark. Built on the general
Gaussian and Laplace mechanisms of :mod:`spark_dp.dp.calibration`; every round here states its
own sensitivity and budget split and describes itself (the
:class:`~spark_dp.dp.protocol.RoundCalibration` protocol).

Contents
--------
* Weight-and-threshold thresholds ρ (Chen et al. 2025, Alg. 1 line 2 and proof of Thm. 3.3;
  docs/design/selection.md#rho): :func:`gaussian_threshold`, and the Laplace variant
  :func:`laplace_weighted_threshold` (docs/design/selection.md#basic).
* :class:`WeightAndThreshold`: σ and ρ of one Gaussian round for a budget (ε, δ), with δ split
  δ/2 for the Gaussian noise and δ/2 for the novel-item threshold
  (docs/design/selection.md#budget-split); :class:`LaplaceWeightAndThreshold`, the Laplace round.
* MAD's constants (Chen et al. 2025, Alg. 2 (ICML) / Alg. 3 (arXiv), Lemmas B.3, B.6, B.8;
  docs/design/selection.md#mad, #mad-constants): τ, α, adaptive degrees
  (:class:`MadConstants`), and :class:`MadRound`, a :class:`WeightAndThreshold` round whose
  weighting is MAD.
* Classic count thresholding (:mod:`.classic`), calibrated as Google's differential-privacy
  library (``cc/algorithms/partition-selection.h``, which PipelineDP uses through PyDP) does:
  every user contributes to at most k items, and the number n of users holding an item is
  thresholded. :class:`TruncatedGeometric`: the optimal keep probabilities p(n) of Desfontaines
  et al. 2022; :class:`LaplaceThresholding`: n + Laplace(k/ε) ≥ T;
  :class:`GaussianThresholding`: n + N(0, σ²) ≥ T, σ for (ε, δ/2) and Δ2 = √k.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from spark_dp.checks import check_delta, check_int_at_least, check_nonnegative, check_positive
from spark_dp.dp.calibration import (
    Budget,
    check_sampler_delta,
    gaussian_sigma,
    laplace_scale,
    noise_exceeds,
    sampler_delta_floor,
)
from spark_dp.dp.numerics import ndtri
from spark_dp.dp.protocol import basic_only_event, gaussian_event, laplace_event
from spark_dp.errors import ParameterError

if TYPE_CHECKING:
    from dp_accounting import DpEvent

__all__ = [
    "GaussianThresholding",
    "LaplaceThresholding",
    "LaplaceWeightAndThreshold",
    "MadConstants",
    "MadRound",
    "Threshold",
    "TruncatedGeometric",
    "WeightAndThreshold",
    "adjusted_delta",
    "check_bias_bounds",
    "gaussian_threshold",
    "gaussian_thresholding_threshold",
    "laplace_thresholding_threshold",
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
    sigma: float, delta_threshold: float, max_contributions: int, h_scale: float = 1.0
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
        max_contributions: the degree cap Δ0.
        h_scale: b_max for biased rounds (MAD2R round 2), 1 otherwise.
    """
    check_positive("sigma", sigma)
    check_delta(delta_threshold, "delta_threshold")
    check_int_at_least("max_contributions", max_contributions, 1)
    check_positive("h_scale", h_scale)
    t = np.arange(1, max_contributions + 1, dtype=float)
    q = -np.expm1(np.log1p(-delta_threshold) / t)
    # Φ⁻¹(1 − q) = −Φ⁻¹(q): evaluating in the lower tail keeps full precision for tiny q.
    values = h_scale / np.sqrt(t) - sigma * ndtri(q)
    i = int(np.argmax(values))
    return Threshold(rho=float(values[i]), argmax_t=i + 1)


def laplace_weighted_threshold(budget: Budget, max_contributions: int) -> Threshold:
    """Threshold of the Laplace weight-and-threshold variant (ℓ1 weighting 1/d per item).

    ρ_Lap = max_{t=1..Δ0} [ 1/t + (1/ε)·ln(1 / (2·(1 − (1−δ)^{1/t}))) ], noise Laplace(1/ε).
    The whole δ goes to the threshold because the Laplace mechanism is pure ε-DP
    (docs/design/selection.md#basic, from Gopi et al. 2020). Stable form:
    1 − (1−δ)^{1/t} = −expm1(log1p(−δ)/t). Needs δ > 0.
    """
    epsilon, delta = budget.epsilon, check_delta(budget.delta)
    check_int_at_least("max_contributions", max_contributions, 1)
    t = np.arange(1, max_contributions + 1, dtype=float)
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
    max_contributions: int
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
    def for_budget(
        cls, budget: Budget, max_contributions: int, h_scale: float = 1.0
    ) -> WeightAndThreshold:
        """σ for (ε, δ/2) with Δ2 = 1, and ρ for (σ, δ/2, Δ0, h(t) = h_scale/√t)."""
        check_sampler_delta(budget, "gaussian")
        half = budget.delta / 2.0
        sigma = gaussian_sigma(Budget(budget.epsilon, half), sensitivity=cls.l2_sensitivity)
        thr = gaussian_threshold(sigma, half, max_contributions, h_scale)
        return cls(
            epsilon=budget.epsilon,
            delta=budget.delta,
            max_contributions=int(max_contributions),
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
    max_contributions: int
    scale: float
    rho: float
    argmax_t: int

    l1_sensitivity: ClassVar[float] = 1.0
    """Δ1 of the weighting 1/d_u."""

    @classmethod
    def for_budget(cls, budget: Budget, max_contributions: int) -> LaplaceWeightAndThreshold:
        """Scale 1/ε and ρ_Lap for (ε, δ, Δ0)."""
        check_sampler_delta(budget, "laplace")
        thr = laplace_weighted_threshold(budget, max_contributions)
        return cls(
            budget.epsilon,
            budget.delta,
            int(max_contributions),
            laplace_scale(budget, cls.l1_sensitivity),
            thr.rho,
            thr.argmax_t,
        )

    def to_report(self) -> dict[str, Any]:
        """JSON-ready description (public constants)."""
        return {
            "mechanism": "laplace weight-and-threshold",
            "l1_sensitivity": self.l1_sensitivity,
            "max_contributions": self.max_contributions,
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


# --------------------------------------------------------------------------- MAD's constants


def reroute_discount(b_min: float, max_adaptive_degree: int) -> float:
    """α = b_min − 1/(2·√d_max), the discount on the excess an adaptive user re-sends in MAD.

    Lemma B.8 (Chen et al. 2025, ICML App. B; arXiv Sec. 5) shows this is the infimum over the
    new user's excess γ ∈ (0, 1] of the admissible α in the ℓ2 bound
    α·γ/√d_max + sqrt(1 − 2·b_min·γ/√d_max + γ/d_max) ≤ 1 (docs/design/selection.md#mad-constants).
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
    """MAD's bias multipliers: b_min ∈ [0.5, 1] and a finite b_max ≥ 1
    (docs/design/selection.md#mad, #mad-preconditions).

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
    users with ⌈1/b_min²⌉ ≤ d_u ≤ d_max are adaptive (docs/design/selection.md#mad, #mad-constants).
    MAD's novel ℓ∞ sensitivity is b_max/√t (Lemma 4.1/B.3), so the round's threshold must have
    been calibrated with h(t) = b_max/√t or larger: :meth:`for_round` checks this, and MAD's
    ℓ2 sensitivity is 1 (Lemma 4.2/B.6), as :class:`WeightAndThreshold` assumes.

    Attributes:
        tau: truncation level τ (≥ 1, a precondition of Lemma B.3).
        alpha: reroute discount α.
        beta: β, noise standard deviations between ρ and τ.
        max_adaptive_degree: d_max (≥ 4, docs/design/selection.md#mad-preconditions).
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
    """A Gaussian weight-and-threshold round whose weighting is MAD (docs/design/selection.md#mad,
    #mad-constants).

    MAD's ℓ2 sensitivity is 1 (Lemma 4.2 ICML / B.6) and its novel-item ℓ∞ bound is
    b_max/√t (Lemma 4.1 / B.3), so the round spends exactly what its
    :class:`WeightAndThreshold` (calibrated with h_scale = b_max) says; τ and α follow from it
    (:meth:`MadConstants.for_round`). MAD2R's second round also carries the rule (C_lb, C_ub)
    that turns round 1's noisy weights into its biases (docs/design/selection.md#mad2r).
    """

    gaussian: WeightAndThreshold
    constants: MadConstants
    c_lb: float | None = None
    c_ub: float | None = None

    @classmethod
    def for_budget(
        cls,
        budget: Budget,
        max_contributions: int,
        *,
        beta: float,
        d_max: int,
        b_min: float = 1.0,
        b_max: float = 1.0,
        c_lb: float | None = None,
        c_ub: float | None = None,
    ) -> MadRound:
        """σ and ρ for (ε, δ) with h(t) = b_max/√t, then τ = ρ + β·σ and α."""
        gaussian = WeightAndThreshold.for_budget(budget, max_contributions, h_scale=b_max)
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
    def delta_noise(self) -> float:
        """δ share of the Gaussian mechanism (δ/2)."""
        return self.gaussian.delta_noise

    @property
    def delta_threshold(self) -> float:
        """δ share of the novel-item threshold (δ/2)."""
        return self.gaussian.delta_threshold

    @property
    def max_contributions(self) -> int:
        """The cap Δ0 the round's threshold is calibrated for."""
        return self.gaussian.max_contributions

    @property
    def argmax_t(self) -> int:
        """The t attaining ρ's maximum."""
        return self.gaussian.argmax_t

    def dp_event(self) -> DpEvent:
        """The Gaussian round's event: MAD's ℓ2 sensitivity is 1 as well."""
        return self.gaussian.dp_event()

    def release_probability(self, weight: float) -> float:
        """P[w + N(0, σ²) ≥ ρ] for an item of (truncated) weight w."""
        return self.gaussian.release_probability(weight)

    def to_report(self) -> dict[str, Any]:
        """The Gaussian round's description, MAD's constants and the bias rule if any."""
        out = {**self.gaussian.to_report(), **self.constants.to_report()}
        if self.c_lb is not None:
            out.update(c_lb=self.c_lb, c_ub=self.c_ub)
        return out


# --------------------------------------------------------------------------- count thresholding


def adjusted_delta(delta: float, max_contributions: int) -> float:
    """δ_k = 1 − (1 − δ)^{1/k}: the per-item δ such that a user's k items, each kept with
    probability ≤ δ_k independently, are all dropped with probability ≥ 1 − δ.

    Stable form −expm1(log1p(−δ)/k).
    """
    check_delta(delta)
    check_int_at_least("max_contributions", max_contributions, 1)
    return -math.expm1(math.log1p(-delta) / max_contributions)


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
    max_contributions: int
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
    def for_budget(cls, budget: Budget, max_contributions: int) -> TruncatedGeometric:
        """The strategy for (ε, δ) and k = ``max_contributions`` items per user."""
        check_sampler_delta(budget, "laplace")
        epsilon, delta = budget.epsilon, budget.delta
        d = adjusted_delta(delta, max_contributions)
        e = epsilon / max_contributions
        n1 = 1 + math.floor(math.log1p(math.tanh(e / 2.0) * (1.0 / d - 1.0)) / e)
        p1 = _tg_low(n1, e, d)
        n2 = n1 + math.floor(math.log1p(math.expm1(e) / d * (1.0 - p1)) / e)
        return cls(float(epsilon), float(delta), int(max_contributions), e, d, n1, n2)

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


def laplace_thresholding_threshold(budget: Budget, max_contributions: int) -> float:
    """Threshold T of Laplace count thresholding: keep an item iff n + Laplace(k/ε) ≥ T.

    A user changes k counts by 1 each (ℓ1 sensitivity k, so scale b = k/ε, pure ε-DP). The
    whole δ bounds the chance that one of the new user's k novel items (count 1) crosses T:
    P(1 + L ≥ T) = δ' = 1 − (1 − δ)^{1/k}, i.e. T = 1 − b·ln(2δ') for δ' ≤ 1/2 and
    T = 1 + b·ln(2(1 − δ')) otherwise. Google's library branches on δ instead of δ'; the two
    agree for every δ ≤ 1/2.
    """
    b = laplace_scale(budget, sensitivity=float(max_contributions))
    d = adjusted_delta(budget.delta, max_contributions)
    if d <= 0.5:
        return 1.0 - b * math.log(2.0 * d)
    return 1.0 + b * math.log(2.0 * (1.0 - d))


class _NoisyCount(ABC):
    """What Laplace and Gaussian count thresholding share: keep an item held by n users iff
    n + noise ≥ T, the noise of scale ``noise_scale`` from ``distribution``."""

    distribution: ClassVar[str]
    max_contributions: int
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
    max_contributions: int
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
        return laplace_event(self.scale, self.max_contributions)

    @classmethod
    def for_budget(cls, budget: Budget, max_contributions: int) -> LaplaceThresholding:
        """Scale k/ε and the threshold for (ε, δ, k)."""
        check_sampler_delta(budget, "laplace")
        return cls(
            budget.epsilon,
            budget.delta,
            int(max_contributions),
            laplace_scale(budget, sensitivity=float(max_contributions)),
            laplace_thresholding_threshold(budget, max_contributions),
        )

    def to_report(self) -> dict[str, Any]:
        """JSON-ready description (public constants)."""
        out = asdict(self)
        out.update(
            mechanism="laplace count thresholding",
            l1_sensitivity=self.max_contributions,
            sampler_delta_floor=sampler_delta_floor(self.epsilon, "laplace"),
        )
        return out


def gaussian_thresholding_threshold(
    sigma: float, delta_threshold: float, max_contributions: int
) -> float:
    """Threshold T of Gaussian count thresholding for a given noise σ.

    T = 1 + σ·Φ̄⁻¹(δ'), δ' = 1 − (1 − δ_thr)^{1/k}: a novel item has count 1, so each of the
    new user's ≤ k novel items crosses T with probability δ' and some item with probability
    δ_thr. Here ``delta_threshold`` is the threshold's own share of δ.
    """
    check_positive("sigma", sigma)
    d = adjusted_delta(delta_threshold, max_contributions)
    return 1.0 - sigma * float(ndtri(d)[0])


@dataclass(frozen=True)
class GaussianThresholding(_NoisyCount):
    """Gaussian count thresholding: keep iff n + N(0, σ²) ≥ threshold.

    The budget (ε, δ) is split as in Google's library: δ/2 for the Gaussian mechanism on the
    counts (ℓ2 sensitivity √k: a user changes k counts by 1) and δ/2 for the threshold.
    """

    epsilon: float
    delta: float
    max_contributions: int
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
        return gaussian_event(self.sigma, math.sqrt(self.max_contributions))

    @classmethod
    def for_budget(cls, budget: Budget, max_contributions: int) -> GaussianThresholding:
        """σ for (ε, δ/2) with Δ2 = √k, and the threshold for δ/2."""
        check_int_at_least("max_contributions", max_contributions, 1)
        check_sampler_delta(budget, "gaussian")
        half = budget.delta / 2.0
        noise = Budget(budget.epsilon, half)
        sigma = gaussian_sigma(noise, sensitivity=math.sqrt(max_contributions))
        threshold = gaussian_thresholding_threshold(sigma, half, max_contributions)
        return cls(
            budget.epsilon,
            budget.delta,
            int(max_contributions),
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
            l2_sensitivity=math.sqrt(self.max_contributions),
            sampler_delta_floor=sampler_delta_floor(self.epsilon, "gaussian"),
        )
        return out
