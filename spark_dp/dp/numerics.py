"""The scalar numerics of the calibration, in pure Python: the standard normal's CDF Φ, ln Φ and
Φ⁻¹, and Brent's root finder.

The driver calibrates every mechanism before any data is read (``--dry-run`` stops there), so
the calibration does not import scipy (most of a dry run's time): these functions stand in for
scipy's ``special.ndtr``, ``special.log_ndtr``, ``special.ndtri`` and ``optimize.brentq``, to
within a few units in the last place (tests/dp/test_numerics.py holds them to scipy and to
mpmath over their whole range; docs/design/selection.md#sigma-tolerance says how σ is rounded
up afterwards, whatever the last digits of these).

* Φ(x) = erfc(−x/√2)/2 from the C library's ``erfc`` (correctly rounded to about 1 ulp), with
  1 − erfc(x/√2)/2 above 0 so that neither tail cancels.
* ln Φ(x): ``log1p(−erfc(x/√2)/2)`` above −1, ``log(erfc(−x/√2)/2)`` down to −30, and below it
  the asymptotic series ln Φ(x) = −x²/2 − ln(−x) − ln √(2π) + ln(1 − 1/x² + 3/x⁴ − …), whose
  first omitted term is below 1e-30 there.
* Φ⁻¹(p), elementwise on arrays: Wichura's algorithm AS 241 (PPND16, Appl. Statist. 37, 1988),
  relative error about 1e-16 for every p in (0, 1), down to the smallest doubles.
* :func:`brentq`: Brent's method as scipy implements it (``scipy/optimize/Zeros/brentq.c``),
  statement for statement.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from spark_dp.errors import ParameterError

__all__ = ["brentq", "log_ndtr", "ndtr", "ndtri"]

_SQRT1_2 = 0.7071067811865476  # 1/√2
_LN_SQRT_2PI = 0.9189385332046728  # ln √(2π)
_ASYMPTOTIC_BELOW = -30.0
_ASYMPTOTIC_TERMS = 12


def ndtr(x: float) -> float:
    """Φ(x), the standard normal CDF."""
    if x >= 0.0:
        return 1.0 - 0.5 * math.erfc(x * _SQRT1_2)
    return 0.5 * math.erfc(-x * _SQRT1_2)


def log_ndtr(x: float) -> float:
    """ln Φ(x), without cancellation in either tail."""
    if x > -1.0:
        return math.log1p(-0.5 * math.erfc(x * _SQRT1_2))
    if x > _ASYMPTOTIC_BELOW:
        return math.log(0.5 * math.erfc(-x * _SQRT1_2))
    if x == -math.inf:
        return -math.inf
    # Φ(x) = φ(x)/(−x) · Σ_k (−1)^k (2k−1)!! / x^(2k)   (x → −∞)
    z = 1.0 / (x * x)
    term = series = 1.0
    for k in range(1, _ASYMPTOTIC_TERMS):
        term *= -(2 * k - 1) * z
        series += term
    return -0.5 * x * x - _LN_SQRT_2PI - math.log(-x) + math.log(series)


# AS 241's coefficients: the central region |p − 1/2| ≤ 0.425, then r = √(−ln min(p, 1 − p))
# up to 5 and beyond 5.
_A = (
    3.387132872796366608,
    133.14166789178437745,
    1971.5909503065514427,
    13731.693765509461125,
    45921.953931549871457,
    67265.770927008700853,
    33430.575583588128105,
    2509.0809287301226727,
)
_B = (
    1.0,
    42.313330701600911252,
    687.1870074920579083,
    5394.1960214247511077,
    21213.794301586595867,
    39307.89580009271061,
    28729.085735721942674,
    5226.495278852545925,
)
_C = (
    1.42343711074968357734,
    4.6303378461565452959,
    5.7694972214606914055,
    3.64784832476320460504,
    1.27045825245236838258,
    0.24178072517745061177,
    0.0227238449892691845833,
    7.7454501427834140764e-4,
)
_D = (
    1.0,
    2.05319162663775882187,
    1.6763848301838038494,
    0.68976733498510000455,
    0.14810397642748007459,
    0.0151986665636164571966,
    5.475938084995344946e-4,
    1.05075007164441684324e-9,
)
_E = (
    6.6579046435011037772,
    5.4637849111641143699,
    1.7848265399172913358,
    0.29656057182850489123,
    0.026532189526576123093,
    0.0012426609473880784386,
    2.71155556874348757815e-5,
    2.01033439929228813265e-7,
)
_F = (
    1.0,
    0.59983220655588793769,
    0.13692988092273580531,
    0.0148753612908506148525,
    7.868691311456132591e-4,
    1.8463183175100546818e-5,
    1.4215117583164458887e-7,
    2.04426310338993978564e-15,
)


def _ratio(
    num: Sequence[float], den: Sequence[float], x: NDArray[np.float64]
) -> NDArray[np.float64]:
    """num(x)/den(x) for polynomials given lowest coefficient first (Horner), elementwise."""
    n = np.zeros_like(x)
    d = np.zeros_like(x)
    for a, b in zip(reversed(num), reversed(den), strict=True):
        n = n * x + a
        d = d * x + b
    return n / d


def ndtri(p: ArrayLike) -> NDArray[np.float64]:
    """Φ⁻¹(p) elementwise: the x with Φ(x) = p (−∞ at 0, +∞ at 1).

    Raises:
        ParameterError: a p outside [0, 1] (or NaN).
    """
    p = np.atleast_1d(np.asarray(p, dtype=np.float64))
    if not np.all((p >= 0.0) & (p <= 1.0)):
        raise ParameterError("the normal quantile needs probabilities in [0, 1]")
    q = p - 0.5
    central = q * _ratio(_A, _B, 0.180625 - q * q)
    with np.errstate(divide="ignore"):  # r = ∞ at p = 0 or 1, handled below
        r = np.sqrt(-np.log(np.where(q < 0.0, p, 1.0 - p)))
    with np.errstate(invalid="ignore"):  # ∞/∞ at p = 0 or 1, handled below
        tail = np.where(r <= 5.0, _ratio(_C, _D, r - 1.6), _ratio(_E, _F, r - 5.0))
    x = np.where(np.abs(q) <= 0.425, central, np.where(q < 0.0, -tail, tail))
    x[p == 0.0] = -np.inf
    x[p == 1.0] = np.inf
    return x


def brentq(
    f: Callable[[float], float],
    xa: float,
    xb: float,
    *,
    xtol: float = 2e-12,
    rtol: float = 4 * sys.float_info.epsilon,
    maxiter: int = 100,
) -> float:
    """A root of ``f`` in [xa, xb], where f(xa) and f(xb) differ in sign (Brent's method,
    scipy's ``brentq`` statement for statement: the same steps on the same values).

    Raises:
        ParameterError: f(xa) and f(xb) have the same sign, or no convergence in ``maxiter``.
    """
    xpre, xcur = xa, xb
    xblk = fblk = spre = scur = 0.0
    fpre, fcur = f(xpre), f(xcur)
    if fpre == 0.0:
        return xpre
    if fcur == 0.0:
        return xcur
    if math.copysign(1.0, fpre) == math.copysign(1.0, fcur):
        raise ParameterError("brentq: f(a) and f(b) must have different signs")
    for _ in range(maxiter):
        if fpre != 0.0 and fcur != 0.0 and math.copysign(1.0, fpre) != math.copysign(1.0, fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2.0
        sbis = (xblk - xcur) / 2.0
        if fcur == 0.0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # interpolate
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:  # extrapolate
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2.0 * abs(stry) < min(abs(spre), 3.0 * abs(sbis) - delta):  # a good short step
                spre, scur = scur, stry
            else:  # bisect
                spre = scur = sbis
        else:  # bisect
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0.0 else -delta)
        fcur = f(xcur)
    raise ParameterError(f"brentq: no convergence in {maxiter} iterations")
