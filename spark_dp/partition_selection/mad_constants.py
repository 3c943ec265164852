"""Constants of the MAD weighting rounds: τ, α, adaptive degrees, and the MAD round itself.

Chen et al. 2025, Alg. 2 (ICML) / Alg. 3 (arXiv), Lemmas B.3, B.6, B.8;
docs/design/selection.md#mad, #mad-constants. Driver-only maths; a :class:`MadRound` is a
:class:`~.calibration.WeightAndThreshold` round whose weighting is MAD, and describes itself for the
privacy report (the :class:`~spark_dp.dp.protocol.RoundCalibration` protocol).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from spark_dp.checks import check_int_at_least, check_nonnegative
from spark_dp.dp.calibration import Budget
from spark_dp.errors import ParameterError
from spark_dp.partition_selection.calibration import WeightAndThreshold

if TYPE_CHECKING:
    from dp_accounting import DpEvent

__all__ = [
    "MadConstants",
    "MadRound",
    "check_bias_bounds",
    "min_adaptive_degree",
    "reroute_discount",
]


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
        gaussian = WeightAndThreshold.for_budget(budget, max_items, h_scale=b_max)
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
    def max_items(self) -> int:
        """The cap Δ0 the round's threshold is calibrated for."""
        return self.gaussian.max_items

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
