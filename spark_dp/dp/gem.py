"""Generalized exponential mechanism (GEM) of Raskhodnikova & Smith, on the driver.

Knop & Steinke 2023, Algorithm 3 and Theorem 3.4 (after [RS15, Thm 1.4]); the O(m log m)
scores of App. B; docs/design/counting.md#gem, #release. Shared by the distinct count's choice
of ℓ and partition selection's choice of Δ0 (docs/design/tuning.md#gem).

Given scores q_1..q_m whose sensitivities are Δ_1..Δ_m > 0, privacy parameter ε_g and β:

    t   = (2/ε_g)·ln(m/β)
    a_i = q_i − t·Δ_i
    s_i = min_j (a_i − a_j)/(Δ_i + Δ_j)            (≤ 0; = 0 at argmax a)
    P[î = i] ∝ exp(ε_g·s_i/2)

Each ratio (a_i − a_j)/(Δ_i + Δ_j) moves by at most 1 between neighbours, so s has sensitivity
1 and the selection is ε_g-DP for any t and β (these only affect utility). Utility:
P[q_î ≥ max_j (q_j − Δ_j·(4/ε_g)·ln(m/β))] ≥ 1 − β.

The scores and probabilities are private (they are functions of the data): never log them.
The release samples with exact rational scores and the exact exponential mechanism
(:func:`gem_select`); the floating-point :func:`gem_scores` and :func:`gem_probabilities` serve
tests and the NON-PRIVATE debug file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from spark_dp.checks import check_epsilon, check_positive
from spark_dp.errors import ParameterError
from spark_dp.randomness import DriverNoise

__all__ = [
    "gem_probabilities",
    "gem_scores",
    "gem_scores_exact",
    "gem_select",
    "gem_threshold",
]

_NAIVE_MAX = 5000  # the naive O(m²) scores are used up to this m ("auto")
_BLOCK = 512


def _check(
    q: ArrayLike | Sequence[Any], sens: ArrayLike | Sequence[Any], epsilon: float, beta: float
) -> tuple[np.ndarray, np.ndarray]:
    scores = np.asarray(q, dtype=float)
    deltas = np.asarray(sens, dtype=float)
    if scores.ndim != 1 or scores.shape != deltas.shape or len(scores) == 0:
        raise ParameterError("GEM needs 1-d score and sensitivity arrays of the same length >= 1")
    if not np.all(np.isfinite(scores)):
        raise ParameterError("GEM scores must be finite numbers")
    if not np.all(np.isfinite(deltas)) or np.any(deltas <= 0):
        raise ParameterError("GEM sensitivities must be finite and > 0")
    check_epsilon(epsilon, "epsilon_select")
    check_positive("beta", beta)
    return scores, deltas


def gem_threshold(m: int, epsilon: float, beta: float) -> float:
    """t = (2/ε_g)·ln(m/β), the margin GEM subtracts per unit of sensitivity (Alg. 3 line 3)."""
    return 2.0 / epsilon * math.log(m / beta)


def _shifted(q: np.ndarray, sens: np.ndarray, epsilon: float, beta: float) -> np.ndarray:
    """a_i = q_i − t·Δ_i."""
    return q - gem_threshold(len(q), epsilon, beta) * sens


def _scores_naive(a: np.ndarray, sens: np.ndarray) -> np.ndarray:
    """s_i = min_j (a_i − a_j)/(Δ_i + Δ_j), in row blocks to bound memory."""
    out = np.empty(len(a))
    for start in range(0, len(a), _BLOCK):
        ai = a[start : start + _BLOCK, None]
        di = sens[start : start + _BLOCK, None]
        out[start : start + _BLOCK] = np.min((ai - a[None, :]) / (di + sens[None, :]), axis=1)
    return out


def _scores_hull(a: np.ndarray, sens: np.ndarray) -> np.ndarray:
    """The same scores in O(m log m) (App. B; docs/design/counting.md#gem-fast).

    s_i is the root of a_i − Δ_i·s = g(s), g(s) = max_j (a_j + Δ_j·s) the upper envelope of
    lines; the left side decreases and g increases, so the root is unique. Find the envelope
    piece that holds it by a (vectorized) binary search over the breakpoints.
    """
    order = np.lexsort((a, sens))  # Δ ascending, then a ascending
    h = np.array(_upper_envelope(a, sens, [int(j) for j in order]))
    ha, hd = a[h], sens[h]
    breaks = (ha[:-1] - ha[1:]) / (hd[1:] - hd[:-1])  # increasing
    # Piece k of g holds s in [breaks[k-1], breaks[k]]; φ_i(X) = a_i − Δ_i·X − g(X) decreases,
    # so the root lies in the first piece k whose right breakpoint has φ_i ≤ 0.
    lo = np.zeros(len(a), dtype=np.int64)
    hi = np.full(len(a), len(breaks), dtype=np.int64)
    while np.any(lo < hi):
        active = lo < hi
        mid = np.minimum((lo + hi) // 2, len(breaks) - 1)
        x = breaks[mid]
        phi = a - sens * x - (ha[mid] + hd[mid] * x)
        right = active & (phi > 0)
        lo = np.where(right, mid + 1, lo)
        hi = np.where(active & ~right, mid, hi)
    j = h[lo]
    return (a - a[j]) / (sens + sens[j])


def gem_scores(
    q: ArrayLike, sens: ArrayLike, epsilon: float, beta: float, method: str = "auto"
) -> np.ndarray:
    """Normalized GEM scores s_i (Algorithm 3 line 5).

    Args:
        q: scores q_i.
        sens: their sensitivities Δ_i > 0.
        epsilon: the GEM's own budget ε_g (ε/2 in the distinct-count mechanism).
        beta: β of t = (2/ε_g)·ln(m/β).
        method: ``"naive"`` (O(m²), blocked), ``"hull"`` (O(m log m)), or ``"auto"`` (naive up
            to m = 5000). Both give the same scores (tests check 1e-9 agreement).
    """
    scores, deltas = _check(q, sens, epsilon, beta)
    a = _shifted(scores, deltas, epsilon, beta)
    if method == "auto":
        method = "naive" if len(scores) <= _NAIVE_MAX else "hull"
    if method == "naive":
        return _scores_naive(a, deltas)
    if method == "hull":
        return _scores_hull(a, deltas)
    raise ParameterError(f"method must be 'auto', 'naive' or 'hull', got {method!r}")


def gem_probabilities(q: ArrayLike, sens: ArrayLike, epsilon: float, beta: float) -> np.ndarray:
    """P[î = i] ∝ exp(ε_g·s_i/2), normalized by log-sum-exp (max s = 0, so no overflow)."""
    z = epsilon * gem_scores(q, sens, epsilon, beta) / 2.0
    w = np.exp(z - z.max())
    return w / w.sum()


def _rational(x: Fraction | int | float | np.number) -> Fraction:
    """The exact rational value of a Python or numpy number (numpy scalars become Python
    numbers first, so the arithmetic is on unbounded integers)."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, int | np.integer):
        return Fraction(int(x))
    return Fraction(float(x))


def gem_scores_exact(
    q: Sequence[Fraction | int | float] | NDArray[Any],
    sens: Sequence[int | float] | NDArray[Any],
    epsilon: float,
    beta: float,
) -> list[Fraction]:
    """The normalized GEM scores s_i in exact rational arithmetic (O(m log m), hull method).

    Every input is turned into the rational number it holds (a float is a dyadic rational), and
    s_i = min_j (a_i − a_j)/(Δ_i + Δ_j), a_i = q_i − t·Δ_i, is computed without rounding, so its
    sensitivity is exactly 1: no floating-point error can move a score by more than one unit
    between neighbours. t may be any public constant (it only affects utility): it is the
    rational value of the float :func:`gem_threshold`.
    """
    m = len(_check(q, sens, epsilon, beta)[0])
    t = Fraction(gem_threshold(m, epsilon, beta))
    d = [_rational(x) for x in sens]
    a = [_rational(x) - t * di for x, di in zip(q, d, strict=True)]
    hull = _upper_envelope(a, d, sorted(range(len(a)), key=lambda j: (d[j], a[j])))
    breaks = [
        (a[hull[k]] - a[hull[k + 1]]) / (d[hull[k + 1]] - d[hull[k]]) for k in range(len(hull) - 1)
    ]
    out = []
    for i in range(len(a)):
        lo, hi = 0, len(breaks)
        while lo < hi:  # first piece whose right breakpoint has φ_i ≤ 0 (see _scores_hull)
            mid = (lo + hi) // 2
            x = breaks[mid]
            h = hull[mid]
            if a[i] - d[i] * x - (a[h] + d[h] * x) > 0:
                lo = mid + 1
            else:
                hi = mid
        j = hull[lo]
        out.append((a[i] - a[j]) / (d[i] + d[j]))
    return out


def gem_select(
    q: Sequence[Fraction | int | float] | NDArray[Any],
    sens: Sequence[int | float] | NDArray[Any],
    epsilon: float,
    beta: float,
    noise: DriverNoise,
) -> int:
    """Index î sampled by GEM at budget ε_g = ``epsilon`` (ε_g-DP), exactly.

    P[î = i] ∝ exp(ε_g·s_i/2) with the exact scores of :func:`gem_scores_exact`, sampled by the
    exact exponential mechanism of :mod:`spark_dp.randomness` (rational arithmetic, no
    floating-point exp: Ilvento 2020's attack has nothing to use).

    Args:
        q, sens, epsilon, beta: as in :func:`gem_scores`.
        noise: the driver noise stream (``randomness.child(...).driver()``).
    """
    scores = gem_scores_exact(q, sens, epsilon, beta)
    half_epsilon = Fraction(epsilon) / 2
    return noise.exponential_mechanism([-half_epsilon * s for s in scores])


def _upper_envelope(a: Any, d: Any, order: list[int]) -> list[int]:
    """The lines y = a_j + d_j·s that attain max_j on some s, by increasing slope: ``order``
    sorts the lines by (d, a); floats or exact rationals alike (one monotone-chain pass)."""
    hull: list[int] = []
    for j in order:
        if hull and d[hull[-1]] == d[j]:
            hull.pop()  # equal slopes: keep the larger intercept (j comes later)
        while len(hull) >= 2:
            h1, h2 = hull[-2], hull[-1]
            if (a[j] - a[h1]) * (d[h2] - d[h1]) >= (a[h2] - a[h1]) * (d[j] - d[h1]):
                hull.pop()  # h2 never attains the maximum of the lines
            else:
                break
        hull.append(j)
    return hull
