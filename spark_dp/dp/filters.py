"""The zCDP privacy filter: a dataset's releases composed so that the cap holds even when each
release's parameters are chosen from the outputs of earlier ones
(docs/design/adaptive-composition.md).

The documented workflow chooses a release from earlier outputs (``spark-dp preview`` recommends
an algorithm and Δ0, the release then runs with them). Composition theorems for mechanisms
fixed in advance (PLD, RDP composed over releases) do not cover that; a **privacy filter** does:
a stopping rule on the releases' parameters whose cap holds under full adaptivity (Rogers,
Roth, Ullman & Vadhan 2016). Basic composition is one (Σ ε_i ≤ ε, Σ δ_i ≤ δ). This module is
the other the store offers, the approximate-zCDP filter of Whitehouse, Ramdas, Rogers & Wu
2023 (with the Rényi filter of Feldman & Zrnic 2021 at every order):

* each release i costs (ρ_i, δ_i) (:func:`release_cost`): ρ_i sums its noise steps'
  zero-concentrated DP, ρ = 1/(2m²) for a Gaussian of multiplier m = σ/Δ2, ρ = ε²/2 for a pure
  ε-DP step (Laplace, discrete Laplace, GEM; Bun & Steinke 2016, Prop. 1.4), and ε_rest²/2 for
  what only basic composition accounts for (ε_rest, δ_rest; an (ε, δ)-DP step is δ-approximately
  ε²/2-zCDP, Kairouz, Oh & Viswanath 2015); δ_i sums the δ no noise accounts for (the
  thresholds' shares, δ_rest) and (1 + e^ε)·η_i of its floating-point samplers;
* a cap (ε, δ) is split once, from the cap alone: δ_B = :data:`FILTER_DELTA_SHARE`·δ for the
  releases' δ_i, δ' = δ − δ_B for the conversion, and ρ_B, the largest ρ whose conversion
  (:func:`zcdp_epsilon`) at δ' is at most ε (:func:`zcdp_budget`);
* a release is admitted when, with it, Σ ρ_i ≤ ρ_B and Σ δ_i ≤ δ_B (:class:`ZcdpFilter`).

Then the releases are (ε, δ)-DP together, whatever chose them. A cap with δ = 0 has no room
for a conversion: the store then uses basic composition, chosen from the cap before any
release. Inside one release the PLD certificate of ``--max-contributions auto`` still holds
(its parameters are fixed before it runs); across releases PLD is not used.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from spark_dp.dp.calibration import divergence_delta, sampler_divergence
from spark_dp.dp.composition import REL_TOL, Charge, NoiseStep

__all__ = [
    "FILTER_DELTA_SHARE",
    "ReleaseCost",
    "ZcdpFilter",
    "filter_epsilon",
    "release_cost",
    "step_rho",
    "zcdp_budget",
    "zcdp_epsilon",
]

FILTER_DELTA_SHARE = 0.5
"""The share of a cap's δ the filter gives the releases' own δ (thresholds, basic steps,
samplers); the rest is the δ of the zCDP conversion. Fixed before any release, from the cap."""

_ORDERS = (math.log(0.01), 30.0)  # log(α − 1) searched (α > 1.01: stable, as dp-accounting)


def step_rho(step: NoiseStep) -> float:
    """ρ of one noise step: 1/(2m²) for a Gaussian of multiplier m (Δ²/(2σ²)); ε²/2 for a pure
    step, with ε read from its event (Laplace 1/m, discrete Laplace a·C)."""
    event = step.event
    if step.kind == "gaussian":
        return 1.0 / (2.0 * event.noise_multiplier**2)
    if step.kind == "laplace":
        epsilon = 1.0 / event.noise_multiplier
    else:
        epsilon = event.noise_parameter * event.sensitivity
    return epsilon * epsilon / 2.0


@dataclass(frozen=True)
class ReleaseCost:
    """What one release costs the filter (module docstring).

    Attributes:
        rho: Σ of its noise steps' ρ, plus ε_rest²/2 for its steps only basic composition covers.
        delta: the δ no noise accounts for: its thresholds' shares and δ_rest.
        divergence: η, the probability that its floating-point samplers differ from exact
            noise (it costs (1 + e^ε)·η at the cap's ε).
    """

    rho: float
    delta: float
    divergence: float


def release_cost(charge: Charge) -> ReleaseCost:
    """The filter's cost of one release: every noise step converted, the rest of the release
    (ε_rest, δ_rest = its (ε, δ) minus its noise steps' ε and δ_noise) as one approximate step."""
    steps, eps_rest, delta_rest = charge.split(lambda s: True)
    rho = math.fsum([*(step_rho(s) for s in steps), eps_rest * eps_rest / 2.0])
    divergence = math.fsum(sampler_divergence(s.sampler) for s in steps if s.sampler is not None)
    return ReleaseCost(rho, delta_rest, divergence)


def _conversion(rho: float, delta: float, log_order: float) -> float:
    """ε of a ρ-zCDP pair at δ through its Rényi divergence of order α = 1 + e^log_order:
    ε = αρ + log((α − 1)/α) − (log δ + log α)/(α − 1) (Canonne, Kamath & Steinke 2020, Prop. 12,
    as dp-accounting's ``compute_epsilon``). Valid at every α > 1."""
    alpha_minus_1 = math.exp(log_order)
    alpha = 1.0 + alpha_minus_1
    return (
        alpha * rho
        + math.log(alpha_minus_1 / alpha)
        - (math.log(delta) + math.log(alpha)) / alpha_minus_1
    )


@lru_cache(maxsize=4096)
def zcdp_epsilon(rho: float, delta: float) -> float:
    """The ε at which a ρ-zCDP mechanism is (ε, δ)-DP: the conversion of :func:`_conversion` at
    the best order found (a golden-section search on log(α − 1); any order gives a valid bound,
    so a search that misses the optimum only loosens it), never above Bun & Steinke's
    ρ + 2√(ρ·log(1/δ)), never below 0."""
    if not (rho >= 0 and math.isfinite(rho)) or not (0 < delta < 1):
        return math.inf
    if rho == 0:
        return 0.0
    lo, hi = _ORDERS
    f = lambda x: _conversion(rho, delta, x)
    grid = [lo + (hi - lo) * k / 64 for k in range(65)]
    best = min(grid, key=f)
    a, b = max(lo, best - (hi - lo) / 64), min(hi, best + (hi - lo) / 64)
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(80):  # golden section inside the grid's best bracket
        c, d = b - ratio * (b - a), a + ratio * (b - a)
        if f(c) <= f(d):
            b = d
        else:
            a = c
    found = min(f(best), f((a + b) / 2.0))
    simple = rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))
    return max(0.0, min(found, simple))


@lru_cache(maxsize=1024)
def zcdp_budget(epsilon: float, delta: float) -> float:
    """ρ_B: the largest ρ (to a relative 1e-12, from below) with ``zcdp_epsilon(ρ, δ) ≤ ε``
    (bisection: the conversion grows with ρ)."""
    if not (epsilon > 0 and 0 < delta < 1):
        return 0.0
    lo, hi = 0.0, max(epsilon, 1e-12)
    while zcdp_epsilon(hi, delta) <= epsilon:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        if hi - lo <= 1e-12 * hi:
            break
        middle = (lo + hi) / 2.0
        if zcdp_epsilon(middle, delta) <= epsilon:
            lo = middle
        else:
            hi = middle
    return lo


def _totals(charges: Iterable[Charge]) -> tuple[float, float, float]:
    costs = [release_cost(c) for c in charges]
    return (
        math.fsum(c.rho for c in costs),
        math.fsum(c.delta for c in costs),
        math.fsum(c.divergence for c in costs),
    )


@dataclass(frozen=True)
class ZcdpFilter:
    """The filter of a cap (ε, δ), δ > 0 (module docstring): ρ_B and δ_B, fixed by the cap."""

    epsilon: float
    delta: float

    @property
    def delta_budget(self) -> float:
        """δ_B: what the releases' own δ may add up to."""
        return self.delta * FILTER_DELTA_SHARE

    @property
    def conversion_delta(self) -> float:
        """δ': the δ of the conversion of Σ ρ_i to (ε, δ')."""
        return self.delta - self.delta_budget

    @property
    def rho_budget(self) -> float:
        """ρ_B: the largest Σ ρ_i the cap admits."""
        return zcdp_budget(self.epsilon, self.conversion_delta)

    def admits(self, charges: Iterable[Charge]) -> bool:
        """Whether the releases fit: Σ ρ_i ≤ ρ_B and Σ δ_i + (1 + e^ε)·Σ η_i ≤ δ_B."""
        rho, delta, divergence = _totals(charges)
        parts = delta + divergence_delta(self.epsilon, divergence)
        return rho <= self.rho_budget * (1 + REL_TOL) and parts <= self.delta_budget * (1 + REL_TOL)


def filter_epsilon(charges: Iterable[Charge], delta: float) -> float:
    """The smallest cap ε, at cap δ = ``delta``, whose filter admits ``charges``: the
    conversion of Σ ρ_i at δ' (``inf`` when their own δ exceeds δ_B, or δ = 0)."""
    if not delta > 0:
        return math.inf
    cap = ZcdpFilter(1.0, delta)
    rho, parts, divergence = _totals(charges)
    epsilon = zcdp_epsilon(rho, cap.conversion_delta)
    if parts + divergence_delta(epsilon, divergence) > cap.delta_budget * (1 + REL_TOL):
        return math.inf
    return epsilon
