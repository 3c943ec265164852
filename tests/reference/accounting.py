"""Independent reference of privacy-loss composition (tests only): no dp-accounting.

The privacy loss L = ln(p(x)/q(x)), x ~ p, of each mechanism is put on a grid of step h, every
value rounded up (``upper``: δ can only grow, so the result bounds the true δ from above) or
down (``lower``: a bound from below). Losses of composed mechanisms add, so their grid
distributions convolve, and the hockey-stick divergence at ε is
δ(ε) = E[(1 − e^(ε − L))₊] (Dwork & Rothblum 2016; Meiser & Mohammadi 2018), with an infinite
loss counting fully.

* Laplace(b) on a sensitivity-1 query, ε0 = 1/b: L = ε0 with mass ½, L = −ε0 with mass ½·e^−ε0,
  and on (−ε0, ε0) the density e^((l − ε0)/2)/4 (x = (1 − b·l)/2 between the two means).
* Gaussian with noise multiplier σ: L ~ N(μ²/2, μ²), μ = 1/σ; the tails beyond 14 μ are
  dropped (lower) or put at +∞ (upper).
* The randomized-response pair of an ε-DP mechanism: L = ±ε with masses e^ε/(1 + e^ε) and
  1/(1 + e^ε); k of them compose to an exact binomial (:func:`pure_composition_delta`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import signal, special

__all__ = ["LossGrid", "epsilon_at", "pure_composition_delta"]


class LossGrid:
    """A privacy-loss distribution on the grid h·(offset + k), plus the mass at +∞."""

    def __init__(self, h: float, offset: int, probs: np.ndarray, infinite: float = 0.0):
        self.h, self.offset, self.probs, self.infinite = h, offset, probs, infinite

    @classmethod
    def identity(cls, h: float) -> LossGrid:
        return cls(h, 0, np.array([1.0]))

    @classmethod
    def laplace(cls, epsilon0: float, h: float, *, upper: bool) -> LossGrid:
        kmin, kmax = math.floor(-epsilon0 / h), math.ceil(epsilon0 / h)
        probs = np.zeros(kmax - kmin + 1)
        probs[_index(-epsilon0, h, upper) - kmin] += 0.5 * math.exp(-epsilon0)
        probs[_index(epsilon0, h, upper) - kmin] += 0.5
        ks = np.arange(kmin, kmax)  # bin k: [k·h, (k + 1)·h] ∩ (−ε0, ε0)
        left = np.clip(ks * h, -epsilon0, epsilon0)
        right = np.clip((ks + 1) * h, -epsilon0, epsilon0)
        mass = (np.exp((right - epsilon0) / 2.0) - np.exp((left - epsilon0) / 2.0)) / 2.0
        np.add.at(probs, (ks + 1 if upper else ks) - kmin, mass)
        return cls(h, kmin, probs)

    @classmethod
    def gaussian(cls, multiplier: float, h: float, *, upper: bool) -> LossGrid:
        mu = 1.0 / multiplier
        mean, sd = mu * mu / 2.0, mu
        a, b = mean - 14.0 * sd, mean + 14.0 * sd
        k = np.arange(math.floor(a / h), math.ceil(b / h) + 1)
        cdf = special.ndtr((k * h - mean) / sd)
        mass = np.diff(cdf)
        probs = np.zeros(len(k))
        if upper:
            probs[1:] = mass  # the bin (k−1, k]·h goes to k·h
            return cls(h, int(k[0]), probs, infinite=float(special.ndtr(-(k[-1] * h - mean) / sd)))
        probs[:-1] = mass
        return cls(h, int(k[0]), probs)

    def compose(self, other: LossGrid) -> LossGrid:
        probs = np.clip(signal.fftconvolve(self.probs, other.probs), 0.0, None)
        finite = 1.0 - self.infinite
        infinite = self.infinite + finite * other.infinite
        return LossGrid(self.h, self.offset + other.offset, probs, infinite)

    def power(self, count: int) -> LossGrid:
        out = LossGrid.identity(self.h)
        for _ in range(count):
            out = out.compose(self)
        return out

    def delta(self, epsilon: float) -> float:
        losses = (self.offset + np.arange(len(self.probs))) * self.h
        gain = -np.expm1(np.minimum(epsilon - losses, 0.0))
        return float(np.sum(self.probs * gain) + self.infinite)


def _index(value: float, h: float, upper: bool) -> int:
    return math.ceil(value / h - 1e-9) if upper else math.floor(value / h + 1e-9)


def epsilon_at(grid: LossGrid, delta: float, hi: float = 50.0) -> float:
    """The smallest ε with grid.delta(ε) ≤ delta (bisection; δ(ε) decreases in ε)."""
    lo = 0.0
    if grid.delta(lo) <= delta:
        return 0.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        lo, hi = (lo, mid) if grid.delta(mid) <= delta else (mid, hi)
    return hi


def pure_composition_delta(epsilon0: float, count: int, epsilon: float) -> float:
    """Exact δ(ε) of ``count`` composed randomized-response pairs of parameter ε0."""
    p = math.exp(epsilon0) / (1.0 + math.exp(epsilon0))  # mass of the loss +ε0
    total = 0.0
    for j in range(count + 1):
        loss = (2 * j - count) * epsilon0
        if loss > epsilon:
            weight = math.comb(count, j) * p**j * (1 - p) ** (count - j)
            total += weight * -math.expm1(epsilon - loss)
    return total
