"""Calibration of the private choice of Δ0 (``--max-contributions auto``), driver only.

docs/design/tuning.md. The release spends ε_t = share·ε on choosing Δ0 from a public grid C and
runs the algorithm with (ε − ε_t, δ) at the chosen Δ0. Everything here is a public constant of
(ε, δ, C, share): no data.

* The **score** of a candidate c is Basic's predicted number of released items at the release's
  own calibration (σ(c), ρ(c) of Basic at (ε − ε_t, δ) and Δ0 = c; Chen et al. 2025 Thm. 3.3):

      s(c) = Σ_i g_c(w_i(c)),   g_c(w) = Φ((w − ρ(c))/σ(c)) − Φ(−ρ(c)/σ(c)),

  w_i(c) = Σ_{u ∋ i, rank_u(i) ≤ c} 1/√min(d_u, c) the Basic weight after capping every user at
  c items (nested caps: one keyed ranking of each user's items for every candidate). g_c(0) = 0,
  so an absent item and an item of weight 0 score alike, and g_c is φ(0)/σ(c)-Lipschitz with
  values in [0, 1]. Adding or removing one user with d items changes the weights of at most
  k = min(d, c) items (its own kept items, including those nobody else holds), each by
  1/√k, and nothing else: so s(c) moves by at most k·min(1, φ(0)/(σ(c)·√k)) ≤
  min(c, √c/(σ(c)·√(2π))) (docs/design/tuning.md#sensitivity).
* The sums are exact: weights are fixed-point integers (1/√k rounded down to a multiple of
  2^−32) summed as ``decimal(38,0)`` and clipped to 2^53 (1-Lipschitz), and each term g_c is
  rounded down to a multiple of 2^−32 and summed as ``decimal(38,0)``: no floating-point order
  changes any value between neighbours and no input size overflows a sum; a term's rounding
  and the float evaluation of Φ add at most :data:`TERM_SLACK` per changed term, which the
  stated sensitivity includes: Δ(c) = min(c, √c/(σ(c)·√(2π))) + c·η.
* :class:`DeltaChoice` samples ĉ by the generalized exponential mechanism (Raskhodnikova & Smith
  2016; the package's GEM, :mod:`spark_dp.dp.gem`) on the exact rational scores:
  ε_t-DP whatever the sensitivities (Knop & Steinke 2023, Thm. 3.4).
* :class:`AnyCandidate` is one step of the selection calibrated at whichever Δ0 is chosen: the
  budget reservation books it before the choice is made.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from spark_dp.checks import check_epsilon
from spark_dp.dp.calibration import Budget
from spark_dp.dp.gem import gem_probabilities, gem_select, gem_threshold
from spark_dp.dp.protocol import PureDp, RoundCalibration, basic_only_event
from spark_dp.partition_selection.calibration import WeightAndThreshold

if TYPE_CHECKING:
    from dp_accounting import DpEvent

    from spark_dp.randomness import DriverNoise

__all__ = [
    "TERM_SCALE",
    "TERM_SLACK",
    "TUNING_BETA",
    "WEIGHT_CAP",
    "WEIGHT_SCALE",
    "AnyCandidate",
    "DeltaChoice",
    "fixed_point_weight",
    "quantized_terms",
    "score_sensitivity",
]

WEIGHT_SCALE = 2**32
"""Weights are integers in units of 2^−32: a pair of a user with k kept items contributes
⌊2^32/√k⌋ (:func:`fixed_point_weight`)."""

TERM_SCALE = 2**32
"""Each score term g_c(w) ∈ [0, 1] is rounded down to a multiple of 2^−32 (summed exactly as
``decimal(38,0)`` in Spark: no overflow at any number of items, :mod:`.scores`)."""

WEIGHT_CAP = 2**53
"""A fixed-point weight W is clipped to 2^53 (w ≤ 2^21 users' worth) before its term: exact as
a double, and clipping is 1-Lipschitz, so the sensitivity holds; every term has saturated long
before unless ρ + 8.3σ > 2^21 (docs/design/tuning.md#exact-sums)."""

TERM_SLACK = 2.0**-30
"""η: a bound on what rounding a term down and evaluating Φ in floating point add to the change
of one term between neighbours (2^−32 from the rounding, far less than 2^−33 from Φ and the
fixed-point weights; docs/design/tuning.md#exact-sums)."""

TUNING_BETA = 0.05
"""β of GEM's margin t = (2/ε_t)·ln(|C|/β): the chosen candidate's score is within
Δ(c)·(4/ε_t)·ln(|C|/β) of the best with probability ≥ 1 − β (utility only; any β is private)."""

_PHI0 = 1.0 / math.sqrt(2.0 * math.pi)


def fixed_point_weight(degree: int | np.ndarray) -> int | np.ndarray:
    """⌊2^32/√k⌋, the fixed-point contribution of a pair whose user keeps k items (the same
    double arithmetic as the Spark expression of :mod:`.scores`: a correctly rounded square root
    and division, then the floor)."""
    return np.floor(float(WEIGHT_SCALE) / np.sqrt(np.asarray(degree, dtype=float))).astype(np.int64)


def quantized_terms(weights: np.ndarray, sigma: float, rho: float) -> np.ndarray:
    """⌊2^32·g(w)⌋ for fixed-point weights W (w = min(W, 2^53)/2^32), g(w) = Φ((w − ρ)/σ) −
    Φ(−ρ/σ).

    Vectorized (scipy ``ndtr``); the Spark pass evaluates it in a pandas UDF on weights it has
    clipped already (:data:`WEIGHT_CAP`). A term depends on its item's weight only, so an item
    whose weight is the same on two neighbours gets the same term, bit for bit.
    """
    from scipy import special  # loads on first use: a job's `--help` needs no scipy

    clipped = np.minimum(np.asarray(weights, dtype=np.int64), WEIGHT_CAP)
    w = clipped.astype(np.float64) / WEIGHT_SCALE
    g = special.ndtr((w - rho) / sigma) - special.ndtr(-rho / sigma)
    return np.floor(np.clip(g, 0.0, 1.0) * TERM_SCALE).astype(np.int64)


def score_sensitivity(max_contributions: int, sigma: float) -> float:
    """Δ(c) = min(c, √c·φ(0)/σ) + c·η: the most one user moves the quantized score s(c)
    (docs/design/tuning.md#sensitivity)."""
    return (
        min(float(max_contributions), math.sqrt(max_contributions) * _PHI0 / sigma)
        + max_contributions * TERM_SLACK
    )


@dataclass(frozen=True)
class DeltaChoice(PureDp):
    """GEM's choice of Δ0 among the candidates, ε_t-DP (docs/design/tuning.md#gem): δ = 0 and
    the pure ε_t event (:class:`~spark_dp.dp.protocol.PureDp`).

    Attributes:
        epsilon: ε_t, the budget of the choice (``tuning_share``·ε).
        scores: one Basic calibration per candidate, at the selection's budget (ε − ε_t, δ)
            and Δ0 = c: its σ and ρ define the score s(c).
        beta: β of GEM's margin (:data:`TUNING_BETA`).
    """

    epsilon: float
    scores: tuple[WeightAndThreshold, ...]
    beta: float = TUNING_BETA

    @classmethod
    def for_budget(
        cls, epsilon: float, selection: Budget, candidates: tuple[int, ...]
    ) -> DeltaChoice:
        """The choice at ε_t = ``epsilon`` over ``candidates``, scored at Basic's calibration of
        the ``selection`` budget."""
        check_epsilon(epsilon, "tuning epsilon")
        scores = tuple(WeightAndThreshold.for_budget(selection, c) for c in candidates)
        return cls(epsilon=float(epsilon), scores=scores)

    @property
    def candidates(self) -> tuple[int, ...]:
        """The grid C of Δ0, increasing."""
        return tuple(s.max_contributions for s in self.scores)

    @property
    def sensitivities(self) -> tuple[float, ...]:
        """Δ(c) of each candidate's score (:func:`score_sensitivity`)."""
        return tuple(score_sensitivity(s.max_contributions, s.sigma) for s in self.scores)

    @property
    def margin(self) -> float:
        """t = (2/ε_t)·ln(|C|/β), GEM's margin per unit of sensitivity."""
        return gem_threshold(len(self.scores), self.epsilon, self.beta)

    def choose(self, totals: list[int], noise: DriverNoise) -> int:
        """ĉ, sampled by GEM from the exact scores s(c) = totals[c]/2^32 (ε_t-DP).

        Args:
            totals: Σ_i ⌊2^32·g_c(w_i(c))⌋ per candidate, in grid order (private).
            noise: the choice's driver stream.
        """
        q = [Fraction(int(t), TERM_SCALE) for t in totals]
        return self.candidates[gem_select(q, self.sensitivities, self.epsilon, self.beta, noise)]

    def probabilities(self, totals: list[int]) -> np.ndarray:
        """P[ĉ = c] per candidate (private: tests only)."""
        q = np.asarray(totals, dtype=float) / TERM_SCALE
        return gem_probabilities(q, self.sensitivities, self.epsilon, self.beta)

    def to_report(self) -> dict[str, Any]:
        """Public description: method, candidates, score, sensitivities and GEM's margin."""
        return {
            "mechanism": "generalized exponential mechanism (Raskhodnikova-Smith)",
            "candidates": list(self.candidates),
            "score": "s(c) = Σ_i Φ((w_i(c) − ρ(c))/σ) − Φ(−ρ(c)/σ): Basic's expected number "
            "of released items at Δ0 = c (w_i(c): Basic weights, every user capped at c)",
            "score_sigma": self.scores[0].sigma,
            "score_rho": [s.rho for s in self.scores],
            "sensitivities": list(self.sensitivities),
            "t": self.margin,
            "beta": self.beta,
            "reference": "docs/design/tuning.md",
        }


@dataclass(frozen=True)
class AnyCandidate:
    """Round ``index`` of the selection, calibrated at whichever candidate Δ0 the choice makes.

    The budget store reserves the release before any data is read, so before ĉ is known. Every
    candidate's round spends the same (ε_r, δ_r) (the split does not depend on Δ0), and its noise
    is the same event (σ of a Gaussian round and the scale of a Laplace round depend on (ε_r, δ_r)
    only): so whatever ĉ is chosen, the round is dominated by that event, given the history
    (docs/design/tuning.md#reservation). If the candidates' events ever differ, the round is
    left to basic composition. (ε, δ, δ_noise) are the largest over the candidates.
    """

    rounds: tuple[RoundCalibration, ...]

    @property
    def epsilon(self) -> float:
        """The round's ε at any candidate (the largest)."""
        return max(float(r.epsilon) for r in self.rounds)

    @property
    def delta(self) -> float:
        """The round's δ at any candidate (the largest)."""
        return max(float(r.delta) for r in self.rounds)

    @property
    def delta_noise(self) -> float:
        """The noise's share of δ at any candidate (the largest)."""
        return max(float(r.delta_noise) for r in self.rounds)

    def dp_event(self) -> DpEvent:
        """The candidates' common event, or basic composition only when they differ."""
        events = [r.dp_event() for r in self.rounds]
        if all(e == events[0] for e in events[1:]):
            return events[0]
        return basic_only_event()

    def to_report(self) -> dict[str, Any]:
        """Public description: the round at every candidate (its mechanism and thresholds)."""
        first = self.rounds[0].to_report()
        return {
            "mechanism": first.get("mechanism"),
            "calibrated_at": "the chosen Δ0",
            "rho_by_candidate": {
                str(r.max_contributions): r.to_report().get("rho", r.to_report().get("threshold"))
                for r in self.rounds
            },
        }
