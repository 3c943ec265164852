"""Confidence bounds, the hockey-stick test of a claimed (ε, δ), and its exact power.

**The test.** A mechanism M is (ε, δ)-DP when, for every event E of one run's output and both
orders of every pair of neighbours (A, B),

    P_A[E] − e^ε·P_B[E] ≤ δ                           (the hockey-stick divergence at e^ε)

(Dwork & Roth 2014, Def. 2.4; Balle et al. 2018, Thm. 1). The audit counts how often E
happened in ``runs_a`` independent runs on A and ``runs_b`` on B and fails the mechanism when

    p_lo − e^ε·q_hi > δ

with p_lo a one-sided Clopper–Pearson lower bound on P_A[E] and q_hi an upper bound on P_B[E],
each at level α_b. If M is (ε, δ)-DP the two bounds hold together with probability ≥ 1 − 2α_b,
and then p_lo − e^ε·q_hi ≤ P_A[E] − e^ε·P_B[E] ≤ δ: a comparison fails a correct mechanism with
probability at most 2α_b, whatever its true probabilities. The only inputs are the counts and
the (ε, δ) under test, so no part of the mechanism's own calibration enters the verdict.
Equivalently the comparison shows the empirical bound ε ≥ ln((p_lo − δ)/q_hi)
(:func:`epsilon_lower_bound`), reported beside it.

**Multiple comparisons.** An audit makes m comparisons (events, their complements, both
orders, several canaries) and splits its family-wise error α between them (Bonferroni): each
comparison at α/m, each of its two bounds at α/(2m) (:class:`Confidence`). So a correct
mechanism fails its audit with probability at most α.

**Power.** :func:`hockey_stick_power` is the exact probability that a comparison fails when the
true probabilities are (p, q), as a sum over the binomial distribution of the first count (no
normal approximation); :func:`novel_test_power` the same for a one-sided rate test.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = [
    "Confidence",
    "EventCounts",
    "clopper_pearson",
    "epsilon_lower_bound",
    "epsilon_test_power",
    "hockey_stick_lower",
    "hockey_stick_power",
    "novel_test_power",
    "plugin_epsilon",
]


@dataclass(frozen=True)
class Confidence:
    """The family-wise error α of one audit and how it is split between its comparisons.

    Attributes:
        alpha: probability that a correct mechanism fails its audit (at most).
        comparisons: the number m of comparisons the audit makes (Bonferroni).
    """

    alpha: float = 1e-3
    comparisons: int = 1

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 0.5:
            raise ValueError(f"alpha must lie in (0, 0.5), got {self.alpha}")
        if self.comparisons < 1:
            raise ValueError(f"an audit makes at least one comparison, got {self.comparisons}")

    def over(self, comparisons: int) -> Confidence:
        """The same α split over ``comparisons`` comparisons."""
        return Confidence(self.alpha, comparisons)

    @property
    def per_test(self) -> float:
        """α of one comparison: α/m."""
        return self.alpha / self.comparisons

    @property
    def per_bound(self) -> float:
        """α of one one-sided bound of a comparison (two bounds per comparison): α/(2m)."""
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


def hockey_stick_lower(
    hits_a: int, runs_a: int, hits_b: int, runs_b: int, epsilon: float, alpha: float
) -> float:
    """p_lo − e^ε·q_hi: a lower confidence bound on P_A[E] − e^ε·P_B[E] (each bound at α)."""
    p_lo, _ = clopper_pearson(hits_a, runs_a, alpha)
    _, q_hi = clopper_pearson(hits_b, runs_b, alpha)
    return p_lo - math.exp(epsilon) * q_hi


def epsilon_lower_bound(p_lower: float, q_upper: float, delta: float) -> float:
    """ln((p_lo − δ)/q_hi), or 0 when p_lo ≤ δ (no evidence of any privacy loss)."""
    if p_lower <= delta:
        return 0.0
    if q_upper <= 0.0:
        return math.inf
    return max(0.0, math.log((p_lower - delta) / q_upper))


@dataclass(frozen=True)
class EventCounts:
    """How often an event happened on the runs of two datasets, and what it shows.

    Attributes:
        event: what happened, e.g. ``"novel item released"`` or ``"not (x released)"``.
        numerator: the dataset A whose probability is bounded from below (``D'`` or ``D``).
        denominator: the other dataset B.
        hits_numerator, runs_numerator: the event's count on A's runs.
        hits_denominator, runs_denominator: its count on B's runs.
    """

    event: str
    numerator: str
    denominator: str
    hits_numerator: int
    runs_numerator: int
    hits_denominator: int
    runs_denominator: int

    def hockey_stick_lower(self, epsilon: float, alpha: float) -> float:
        """p_lo − e^ε·q_hi with one-sided Clopper–Pearson bounds, each at level α."""
        return hockey_stick_lower(
            self.hits_numerator,
            self.runs_numerator,
            self.hits_denominator,
            self.runs_denominator,
            epsilon,
            alpha,
        )

    def epsilon_lower_bound(self, delta: float, alpha: float) -> float:
        """ln((p_lo − δ)/q_hi) with one-sided Clopper–Pearson bounds, each at level α."""
        p_lo, _ = clopper_pearson(self.hits_numerator, self.runs_numerator, alpha)
        _, q_hi = clopper_pearson(self.hits_denominator, self.runs_denominator, alpha)
        return epsilon_lower_bound(p_lo, q_hi, delta)

    @property
    def rates(self) -> tuple[float, float]:
        """The observed rates (on A, on B)."""
        return (
            self.hits_numerator / self.runs_numerator,
            self.hits_denominator / self.runs_denominator,
        )

    def power(self, epsilon: float, delta: float, alpha: float) -> float:
        """P[this comparison fails] if the observed rates were the true ones (an estimate)."""
        p, q = self.rates
        return hockey_stick_power(
            p, q, epsilon, delta, self.runs_numerator, self.runs_denominator, alpha
        )


def plugin_epsilon(p: float, q: float, delta: float, runs: int, alpha: float) -> float:
    """The ε bound an event with true probabilities p (numerator) and q would show at its
    expected counts: how the audit places its canaries before any run (no data involved)."""
    k_p = min(runs, max(0, round(p * runs)))
    k_q = min(runs, max(0, round(q * runs)))
    p_lo, _ = clopper_pearson(k_p, runs, alpha)
    _, q_hi = clopper_pearson(k_q, runs, alpha)
    return epsilon_lower_bound(p_lo, q_hi, delta)


@functools.lru_cache(maxsize=64)
def _lower_bounds(n: int, alpha: float) -> np.ndarray:
    """Clopper–Pearson lower bounds of k = 0..n successes (cached, read-only)."""
    k = np.arange(n + 1)
    out = np.zeros(n + 1)
    out[1:] = stats.beta.ppf(alpha, k[1:], n - k[1:] + 1)
    out.flags.writeable = False
    return out


@functools.lru_cache(maxsize=64)
def _upper_bounds(n: int, alpha: float) -> np.ndarray:
    """Clopper–Pearson upper bounds of k = 0..n successes (cached, read-only)."""
    k = np.arange(n + 1)
    out = np.ones(n + 1)
    out[:-1] = stats.beta.ppf(1.0 - alpha, k[:-1] + 1, n - k[:-1])
    out.flags.writeable = False
    return out


def novel_test_power(rate: float, share: float, runs: int, alpha: float) -> float:
    """P[the Clopper–Pearson lower bound of k/runs exceeds ``share``], k ~ Bin(runs, rate).

    That happens exactly when k ≥ k*, the smallest k whose bound does, so the power is
    P[Bin(runs, rate) ≥ k*]. At rate = share it is the test's false-failure rate (≤ α).
    """
    lower = _lower_bounds(runs, alpha)
    above = np.flatnonzero(lower > share)
    if len(above) == 0:
        return 0.0
    return float(stats.binom.sf(int(above[0]) - 1, runs, rate))


def hockey_stick_power(
    p: float, q: float, epsilon: float, delta: float, runs_a: int, runs_b: int, alpha: float
) -> float:
    """P[p_lo(X) − e^ε·q_hi(Y) > δ] for X ~ Bin(runs_a, p) and Y ~ Bin(runs_b, q), independent.

    Exact: for each x the comparison fails when q_hi(Y) < (p_lo(x) − δ)·e^(−ε), and q_hi is
    increasing in Y, so the power is Σ_x P[X = x]·P[Y ≤ y*(x)].
    """
    lower = _lower_bounds(runs_a, alpha)
    upper = _upper_bounds(runs_b, alpha)
    limit = (lower - delta) * math.exp(-epsilon)
    # y*(x) + 1 = number of y with upper[y] < limit[x] (upper is increasing)
    below = np.searchsorted(upper, limit, side="left")
    p_x = stats.binom.pmf(np.arange(runs_a + 1), runs_a, p)
    p_y = np.where(below > 0, stats.binom.cdf(below - 1, runs_b, q), 0.0)
    return float(np.sum(p_x * p_y))


def epsilon_test_power(
    p: float, q: float, delta: float, epsilon: float, runs: int, alpha: float
) -> float:
    """P[ln((p_lo − δ)/q_hi) > ε] with ``runs`` runs on each side: the hockey-stick power
    (ln((p_lo − δ)/q_hi) > ε is p_lo − e^ε·q_hi > δ)."""
    return hockey_stick_power(p, q, epsilon, delta, runs, runs, alpha)
