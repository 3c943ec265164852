"""Calibration of the distinct-count release: GEM's choice of ℓ and the noisy count (driver only).

Knop & Steinke 2023, Algorithm 1 lines 9–15 and Algorithm 2 lines 8–12, Theorem 3.4 (GEM) and
Lemma 3.2 (composition); docs/design/counting.md#scores, #discrete-laplace.

Each object below knows the share of ε it spends (``epsilon``, ``delta`` = 0: pure DP), the
sensitivity of what it noises and its own constants, and describes itself for the privacy report
(``to_report()``), and names the dp-accounting event of its noise (``dp_event()``): the
:class:`~spark_dp.dp.protocol.Calibration` protocol. How ε is split between
them is decided once, by :func:`spark_dp.distinct_count.plan.plan_release`.

* :class:`GemSelection`: ℓ̂ ∈ {1, …, ℓ_max} by the generalized exponential mechanism at
  ε_select on the scores q_ℓ = c(D; ℓ) − shift(ℓ). c(·; ℓ) moves by at most ℓ when one person
  is added or removed and the shift is data-independent, so Δ_ℓ = ℓ; the margin is
  t = (2/ε_select)·ln(ℓ_max/β).
* :class:`DiscreteLaplaceRelease` (the release): ν̂ = c(D; ℓ̂) − shift(ℓ̂) + X with X from the
  discrete Laplace of scale b = ℓ̂/ε_count, P[X = x] ∝ exp(−|x|/b), sampled exactly
  (:mod:`spark_dp.randomness.exact`). c(·; ℓ̂) is an integer query of sensitivity ℓ̂, so the
  release is ε_count-DP for every fixed ℓ̂ with no floating-point caveat; the integer shift is
  the smallest c with P[X > c] = p^(c+1)/(1+p) ≤ β, p = e^(−1/b)
  (docs/design/counting.md#discrete-laplace).
* :class:`LaplaceRelease`: the paper's continuous Laplace with shift (ℓ/ε_count)·ln(1/(2β))
  (paper eq. (4)); kept for the baselines and for comparisons with the paper's figures, not
  used by the job (its floating-point noise is open to the attacks of Mironov 2012).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from spark_dp.checks import check_int_at_least
from spark_dp.dp.calibration import Budget, laplace_scale
from spark_dp.dp.gem import gem_probabilities, gem_select, gem_threshold
from spark_dp.dp.protocol import Calibration, PureDp, laplace_event
from spark_dp.randomness import DriverNoise

if TYPE_CHECKING:
    from dp_accounting import DpEvent

__all__ = [
    "CountCalibration",
    "DiscreteLaplaceRelease",
    "GemSelection",
    "LaplaceRelease",
    "discrete_lower_bound_shift",
    "lower_bound_shift",
]


def lower_bound_shift(ell: ArrayLike, epsilon_count: float, beta: float) -> NDArray[np.float64]:
    """(ℓ/ε_count)·ln(1/(2β)): P[Lap(ℓ/ε_count) ≥ shift] = β (paper eq. (4),
    docs/design/counting.md#release)."""
    return np.asarray(ell, dtype=float) / epsilon_count * math.log(1.0 / (2.0 * beta))


@dataclass(frozen=True)
class GemSelection(PureDp):
    """The GEM choice of the contribution bound ℓ̂ ∈ {1, …, ℓ_max} (Algorithm 3;
    docs/design/counting.md#gem): pure ε_select-DP for any t and β (Theorem 3.4), so δ = 0
    and the pure ε_select event (:class:`~spark_dp.dp.protocol.PureDp`).

    Attributes:
        epsilon: ε_select, the budget of the choice.
        beta: β of the margin t (the same β as the lower bound).
        max_contributions: ℓ_max; the candidates are 1..ℓ_max.
    """

    epsilon: float
    beta: float
    max_contributions: int

    @property
    def sensitivities(self) -> NDArray[np.float64]:
        """Δ_ℓ = ℓ for ℓ = 1..ℓ_max: the sensitivity of the score q_ℓ."""
        return np.arange(1, self.max_contributions + 1, dtype=float)

    @property
    def margin(self) -> float:
        """t = (2/ε_select)·ln(ℓ_max/β) (Algorithm 3 line 3)."""
        return gem_threshold(self.max_contributions, self.epsilon, self.beta)

    def probabilities(self, scores: ArrayLike) -> NDArray[np.float64]:
        """P[ℓ̂ = ℓ] for ℓ = 1..ℓ_max (private: tests and the NON-PRIVATE debug file only)."""
        return gem_probabilities(scores, self.sensitivities, self.epsilon, self.beta)

    def choose(self, scores: ArrayLike, noise: DriverNoise) -> int:
        """ℓ̂, sampled by GEM from the scores q_1..q_ℓmax (ε_select-DP)."""
        q = np.asarray(scores)
        return gem_select(q, self.sensitivities, self.epsilon, self.beta, noise) + 1

    def to_report(self) -> dict[str, Any]:
        """Public description: mechanism, candidates, score, sensitivity and t."""
        return {
            "mechanism": "generalized exponential mechanism (Raskhodnikova-Smith)",
            "candidates": f"1..{self.max_contributions}",
            "score": "q_ℓ = c(D;ℓ) − shift(ℓ), the count step's lower-bound shift at ℓ",
            "sensitivity": "Δ_ℓ = ℓ",
            "t": self.margin,
            "beta": self.beta,
        }


class CountCalibration(Calibration, Protocol):
    """The noisy release of c(D; ℓ̂) as a lower bound: what a noise kind must provide."""

    @property
    def beta(self) -> float: ...

    @property
    def mechanism(self) -> str: ...

    def scale(self, ell: int) -> float: ...

    def shift(self, ell: ArrayLike) -> NDArray[np.float64] | NDArray[np.int64]: ...

    def sample(self, ell: int, noise: DriverNoise) -> float | int: ...

    def noise_at_least(self, x: ArrayLike, ell: int) -> NDArray[np.float64]: ...

    def at(self, ell: int) -> CountCalibration: ...


@dataclass(frozen=True)
class LaplaceRelease(PureDp):
    """The Laplace release of c(D; ℓ̂) shifted down to a 1 − β lower bound
    (docs/design/counting.md#release); pure ε_count-DP (δ = 0), its event the Laplace one.

    Sensitivity ℓ̂ (ℓ̂ is fixed by the earlier GEM step), scale ℓ̂/ε_count, shift
    (ℓ̂/ε_count)·ln(1/(2β)): the paper's full shift, not the half that the authors' public code
    subtracts (which fails with probability √(β/2); docs/design/counting.md#half-shift).

    Attributes:
        epsilon: ε_count, the budget of the release.
        beta: failure probability of the lower bound, in (0, ½).
        ell: ℓ̂ once GEM has chosen it (it is released, so public); ``None`` in a plan.
    """

    epsilon: float
    beta: float
    ell: int | None = None

    mechanism: ClassVar[str] = "Laplace"

    def dp_event(self) -> DpEvent:
        """Laplace(ℓ̂/ε_count) on c(D; ℓ̂) of ℓ1 sensitivity ℓ̂: ``LaplaceDpEvent(1/ε_count)``
        whatever ℓ̂ GEM chose."""
        return laplace_event(self.scale(1), 1.0)

    def scale(self, ell: int) -> float:
        """b = ℓ/ε_count: the Laplace scale for sensitivity ℓ."""
        return laplace_scale(Budget(self.epsilon), sensitivity=float(ell))

    def shift(self, ell: ArrayLike) -> NDArray[np.float64]:
        """(ℓ/ε_count)·ln(1/(2β)) for each ℓ (:func:`lower_bound_shift`)."""
        return lower_bound_shift(ell, self.epsilon, self.beta)

    def sample(self, ell: int, noise: DriverNoise) -> float:
        """One Lap(ℓ/ε_count) draw from the driver stream ``noise``."""
        return float(noise.laplace(self.scale(ell), 1)[0])

    def noise_at_least(self, x: ArrayLike, ell: int) -> NDArray[np.float64]:
        """P[X ≥ x] for X ~ Lap(ℓ/ε_count): ½·e^(−x/b) for x ≥ 0, else 1 − ½·e^(x/b)."""
        z = np.asarray(x, dtype=float) / self.scale(ell)
        return np.where(z >= 0, 0.5 * np.exp(-np.abs(z)), 1.0 - 0.5 * np.exp(-np.abs(z)))

    def at(self, ell: int) -> LaplaceRelease:
        """The same calibration with ℓ̂ = ``ell`` fixed (for the report of a release)."""
        return replace(self, ell=check_int_at_least("ell", ell, 1))

    def to_report(self) -> dict[str, Any]:
        """Public description; the numbers at ℓ̂ once it is fixed (:meth:`at`), else formulas."""
        if self.ell is None:
            return {
                "mechanism": self.mechanism,
                "sensitivity": "ℓ̂",
                "scale": "ℓ̂/ε_count",
                "lower_bound_shift": "(ℓ̂/ε_count)·ln(1/(2β))",
                "beta": self.beta,
            }
        return {
            "mechanism": self.mechanism,
            "sensitivity": self.ell,
            "scale": self.scale(self.ell),
            "lower_bound_shift": float(self.shift(self.ell)),
            "beta": self.beta,
        }


def discrete_lower_bound_shift(scale: float, beta: float) -> int:
    """The smallest integer c ≥ 0 with P[X > c] ≤ β for X discrete Laplace of scale b.

    P[X > c] = p^(c+1)/(1+p), p = e^(−1/b), so c = max(0, ⌈b·ln(1/(β(1+p)))⌉ − 1)
    (docs/design/counting.md#discrete-laplace; b = 7.3, β = 0.05 gives 17). The bound is rechecked
    in log space and c raised while it fails, so rounding can only make the shift larger (a safer
    lower bound).
    """
    p = math.exp(-1.0 / scale)
    log_tail_bound = math.log(beta)

    def log_tail(c: int) -> float:  # ln P[X > c]
        return -(c + 1) / scale - math.log1p(p)

    c = max(0, math.ceil(scale * -(math.log(beta) + math.log1p(p))) - 1)
    while log_tail(c) > log_tail_bound:
        c += 1
    return c


@dataclass(frozen=True)
class DiscreteLaplaceRelease(PureDp):
    """The exact discrete-Laplace release of c(D; ℓ̂) as a 1 − β lower bound
    (docs/design/counting.md#discrete-laplace).

    Sensitivity ℓ̂ (an integer query; ℓ̂ is fixed by the earlier GEM step), noise
    P[X = x] ∝ exp(−|x|·ε_count/ℓ̂) drawn exactly, and the integer shift of
    :func:`discrete_lower_bound_shift`, so ν̂ = c(D; ℓ̂) + X − shift ≤ DC(D) with probability
    ≥ 1 − β. Pure ε_count-DP for every ℓ̂ GEM chooses: δ = 0 and the event that dominates
    every ε_count-DP mechanism (the discrete Laplace at sensitivity ℓ̂ = 1 is that event itself;
    :class:`~spark_dp.dp.protocol.PureDp`).

    Attributes:
        epsilon: ε_count, the budget of the release.
        beta: failure probability of the lower bound, in (0, ½).
        ell: ℓ̂ once GEM has chosen it (it is released, so public); ``None`` in a plan.
    """

    epsilon: float
    beta: float
    ell: int | None = None

    mechanism: ClassVar[str] = "discrete Laplace"

    def exact_scale(self, ell: int) -> Fraction:
        """b = ℓ/ε_count as an exact rational (the float ε_count is a dyadic rational)."""
        return Fraction(int(ell)) / Fraction(self.epsilon)

    def scale(self, ell: int) -> float:
        """b = ℓ/ε_count: the discrete Laplace scale for sensitivity ℓ."""
        return float(self.exact_scale(ell))

    def shift(self, ell: ArrayLike) -> NDArray[np.int64]:
        """The integer lower-bound shift for each ℓ (:func:`discrete_lower_bound_shift`)."""
        ells = np.atleast_1d(np.asarray(ell, dtype=np.int64))
        out = np.array(
            [discrete_lower_bound_shift(self.scale(int(x)), self.beta) for x in ells],
            dtype=np.int64,
        )
        return out.reshape(np.shape(ell))

    def sample(self, ell: int, noise: DriverNoise) -> int:
        """One exact discrete Laplace draw of scale ℓ/ε_count from the driver stream."""
        return noise.discrete_laplace(self.exact_scale(ell))

    def noise_at_least(self, x: ArrayLike, ell: int) -> NDArray[np.float64]:
        """P[X ≥ x] for integer x and X discrete Laplace of scale b = ℓ/ε_count:
        P[X > c] = p^(c+1)/(1 + p) with p = e^(−1/b), and X is symmetric."""
        p = math.exp(-1.0 / self.scale(ell))
        x = np.asarray(x, dtype=float)
        upper = np.power(p, np.maximum(x, 1.0)) / (1.0 + p)
        lower = 1.0 - np.power(p, np.maximum(1.0 - x, 1.0)) / (1.0 + p)
        return np.asarray(np.where(x >= 1.0, upper, lower), dtype=float)

    def at(self, ell: int) -> DiscreteLaplaceRelease:
        """The same calibration with ℓ̂ = ``ell`` fixed (for the report of a release)."""
        return replace(self, ell=check_int_at_least("ell", ell, 1))

    def to_report(self) -> dict[str, Any]:
        """Public description; the numbers at ℓ̂ once it is fixed (:meth:`at`), else formulas."""
        if self.ell is None:
            return {
                "mechanism": self.mechanism,
                "sampler": "exact (Canonne-Kamath-Steinke 2020, Algorithm 2)",
                "sensitivity": "ℓ̂",
                "scale": "ℓ̂/ε_count",
                "lower_bound_shift": "min c ≥ 0 with p^(c+1)/(1+p) ≤ β, p = exp(−ε_count/ℓ̂)",
                "beta": self.beta,
            }
        return {
            "mechanism": self.mechanism,
            "sampler": "exact (Canonne-Kamath-Steinke 2020, Algorithm 2)",
            "sensitivity": self.ell,
            "scale": self.scale(self.ell),
            "lower_bound_shift": int(self.shift(self.ell)),
            "beta": self.beta,
        }
