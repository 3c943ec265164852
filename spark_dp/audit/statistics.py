"""Confidence bounds, the empirical ε lower bound and the power of the audit's two tests.

Two tests decide an audit (each at a stated confidence, see :class:`Confidence`):

* **novel-item test.** A canary item that is absent without the canary is never released on D,
  so (ε, δ)-DP needs P_{D'}[released] ≤ δ; the mechanisms' own proofs give the sharper share
  δ_novel (δ/2 for the Gaussian weight-and-threshold rounds, Chen et al. 2025 Thm. 3.3). The
  test fails when the one-sided Clopper–Pearson lower bound of the observed rate exceeds
  δ_novel.
* **ε test.** For an event E with positive probability on both datasets,
  P_A[E] ≤ e^ε·P_B[E] + δ_E for (A, B) = (D', D) and (D, D') gives
  ε ≥ ln((p_lo − δ_E)/q_hi) with p_lo a lower bound of P_A[E] and q_hi an upper bound of
  P_B[E]. The audit evaluates E and its complement in both directions (so D − user, the same
  pair read the other way, is covered) and reports the largest bound; the test fails when it
  exceeds the claimed ε.

Multiple testing: an audit makes :data:`TESTS_PER_AUDIT` comparisons (one novel-item test and
four ε comparisons) and splits its family-wise error α between them (Bonferroni); an ε
comparison uses two one-sided bounds, each at α/(2·TESTS_PER_AUDIT). So a correct mechanism,
even one whose bounds are exactly tight, fails its audit with probability at most α.

The power functions below are exact binomial computations (no normal approximation): they give
the probability that a mechanism whose true probabilities are p (and q) fails the test.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = [
    "TESTS_PER_AUDIT",
    "Claim",
    "Confidence",
    "EventCounts",
    "clopper_pearson",
    "epsilon_lower_bound",
    "epsilon_test_power",
    "novel_test_power",
    "plugin_epsilon",
]

TESTS_PER_AUDIT = 5
"""Comparisons per audit: one novel-item test and four ε comparisons (E and not-E, both ways)."""


@dataclass(frozen=True)
class Claim:
    """The guarantee a mechanism's calibration claims, as the audit tests it.

    Attributes:
        epsilon: total ε.
        delta: total δ.
        delta_novel: bound on P[some item of a new user that nobody else holds is released]
            (None for the distinct count, which has no such event).
        delta_event: δ share of an event on one item that other users also hold.
    """

    epsilon: float
    delta: float
    delta_novel: float | None
    delta_event: float


@dataclass(frozen=True)
class Confidence:
    """The family-wise error α of one audit and the level of each bound it computes.

    Attributes:
        alpha: probability that a correct mechanism fails its audit (at most).
    """

    alpha: float = 1e-3

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 0.5:
            raise ValueError(f"alpha must lie in (0, 0.5), got {self.alpha}")

    @property
    def per_test(self) -> float:
        """α of one comparison (Bonferroni over :data:`TESTS_PER_AUDIT`)."""
        return self.alpha / TESTS_PER_AUDIT

    @property
    def per_bound(self) -> float:
        """α of one one-sided bound of an ε comparison (two bounds per comparison)."""
        return self.per_test / 2.0


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper–Pearson bounds on a binomial probability, each at confidence 1 − α.

    lower = Beta⁻¹(α; k, n − k + 1) (0 when k = 0), upper = Beta⁻¹(1 − α; k + 1, n − k)
    (1 when k = n): P[lower > p] ≤ α and P[upper < p] ≤ α for every true p.
    """
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    lower = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    upper = 1.0 if k == n else float(stats.beta.ppf(1.0 - alpha, k + 1, n - k))
    return lower, upper


def epsilon_lower_bound(p_lower: float, q_upper: float, delta: float) -> float:
    """ln((p_lo − δ)/q_hi), or 0 when p_lo ≤ δ (no evidence of any privacy loss)."""
    if p_lower <= delta:
        return 0.0
    if q_upper <= 0.0:
        return math.inf
    return max(0.0, math.log((p_lower - delta) / q_upper))


@dataclass(frozen=True)
class EventCounts:
    """How often an event happened on the runs of two datasets, and the ε bound it gives.

    Attributes:
        event: what happened, e.g. ``"canary item released"`` or ``"not released"``.
        numerator: the dataset whose probability is bounded from below (``D'`` or ``D``).
        denominator: the other dataset.
        hits_numerator, runs_numerator: the event's count on the numerator's runs.
        hits_denominator, runs_denominator: its count on the denominator's runs.
    """

    event: str
    numerator: str
    denominator: str
    hits_numerator: int
    runs_numerator: int
    hits_denominator: int
    runs_denominator: int

    def epsilon_lower_bound(self, delta: float, alpha: float) -> float:
        """ln((p_lo − δ)/q_hi) with one-sided Clopper–Pearson bounds, each at level α."""
        p_lo, _ = clopper_pearson(self.hits_numerator, self.runs_numerator, alpha)
        _, q_hi = clopper_pearson(self.hits_denominator, self.runs_denominator, alpha)
        return epsilon_lower_bound(p_lo, q_hi, delta)


def plugin_epsilon(p: float, q: float, delta: float, runs: int, alpha: float) -> float:
    """The ε bound an event with true probabilities p (numerator) and q would show at its
    expected counts: how the audit places its canaries before any run (no data involved)."""
    k_p = min(runs, max(0, round(p * runs)))
    k_q = min(runs, max(0, round(q * runs)))
    p_lo, _ = clopper_pearson(k_p, runs, alpha)
    _, q_hi = clopper_pearson(k_q, runs, alpha)
    return epsilon_lower_bound(p_lo, q_hi, delta)


def _lower_bounds(n: int, alpha: float) -> np.ndarray:
    k = np.arange(n + 1)
    out = np.zeros(n + 1)
    out[1:] = stats.beta.ppf(alpha, k[1:], n - k[1:] + 1)
    return out


def _upper_bounds(n: int, alpha: float) -> np.ndarray:
    k = np.arange(n + 1)
    out = np.ones(n + 1)
    out[:-1] = stats.beta.ppf(1.0 - alpha, k[:-1] + 1, n - k[:-1])
    return out


def novel_test_power(rate: float, share: float, runs: int, alpha: float) -> float:
    """P[the novel-item test fails] when the true release rate is ``rate``.

    The test fails when the Clopper–Pearson lower bound of k/runs exceeds ``share``; that
    happens exactly when k ≥ k*, the smallest k whose bound does, so the power is
    P[Bin(runs, rate) ≥ k*]. At rate = share it is the test's false-failure rate (≤ α).
    """
    lower = _lower_bounds(runs, alpha)
    above = np.flatnonzero(lower > share)
    if len(above) == 0:
        return 0.0
    return float(stats.binom.sf(int(above[0]) - 1, runs, rate))


def epsilon_test_power(
    p: float, q: float, delta: float, epsilon: float, runs: int, alpha: float
) -> float:
    """P[ln((p_lo − δ)/q_hi) > ε] for X ~ Bin(runs, p) and Y ~ Bin(runs, q), independent.

    Exact: for each x the comparison fails when q_hi(Y) < (p_lo(x) − δ)·e^(−ε), and q_hi is
    increasing in Y, so the power is Σ_x P[X = x]·P[Y ≤ y*(x)].
    """
    lower = _lower_bounds(runs, alpha)
    upper = _upper_bounds(runs, alpha)
    limit = (lower - delta) * math.exp(-epsilon)
    # y*(x) + 1 = number of y with upper[y] < limit[x] (upper is increasing)
    below = np.searchsorted(upper, limit, side="left")
    p_x = stats.binom.pmf(np.arange(runs + 1), runs, p)
    p_y = np.where(below > 0, stats.binom.cdf(below - 1, runs, q), 0.0)
    return float(np.sum(p_x * p_y))
