"""Continuous noise from PRF words: exponential, Gaussian and Laplace, with known tail reach.

* E ~ Exp(1): E = −ln(u), u = w0·2⁻⁶⁴ + (w1 + ½)·2⁻¹²⁸ from two 64-bit words. u is uniform on a
  grid that reaches 2⁻¹²⁹, so E reaches :data:`EXPONENTIAL_REACH` = 129·ln 2 ≈ 89.4 and
  P(E > x) = e⁻ˣ holds for every x below it, up to the grid (2⁻¹²⁸) and floating-point rounding
  (counted exactly over the words in tests/randomness/test_continuous.py).
* Gaussian: Box-Muller, Z = √(2E)·cos(2πU) with E as above and U = (w2 ≫ 11)·2⁻⁵³; |Z| reaches
  √(2·89.4) ≈ 13.4 (:data:`GAUSSIAN_REACH`).
* Laplace: L = E1 − E2 (four words); |L| reaches 89.4.

These are floating-point samplers: the partition-selection thresholds use them because those
mechanisms release only which items cross a threshold, never a noisy number. What the sampler
cannot produce is its tail beyond the reach (:func:`tail_mass`: probability 1.4e-39 per
exponential); :func:`spark_dp.dp.calibration.check_sampler_delta` turns it into the smallest δ a
release may claim. Numbers that are released as numbers (the distinct
count) use the exact discrete samplers of :mod:`.exact` instead.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "EXPONENTIAL_REACH",
    "GAUSSIAN_REACH",
    "WORDS",
    "exponential",
    "gaussian",
    "laplace",
    "tail_mass",
    "uniform",
]

EXPONENTIAL_REACH = 129 * math.log(2.0)
"""Largest E = −ln(u) the two-word uniform can produce (u ≥ 2⁻¹²⁹)."""

GAUSSIAN_REACH = math.sqrt(2.0 * EXPONENTIAL_REACH)
"""Largest |Z| of the Box-Muller sampler, in standard deviations."""

WORDS = {"gaussian": 3, "laplace": 4}
"""64-bit words one draw consumes."""

_TWO_M64 = 2.0**-64
_TWO_M128 = 2.0**-128
_TWO_M53 = 2.0**-53


def uniform(w: np.ndarray) -> np.ndarray:
    """U in [0, 1) on the 2⁻⁵³ grid from the top 53 bits of each word."""
    out: np.ndarray = (w >> np.uint64(11)).astype(np.float64) * _TWO_M53
    return out


def exponential(w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
    """Exp(1) draws from two words each (see the module docstring)."""
    u = w0.astype(np.float64) * _TWO_M64 + (w1.astype(np.float64) + 0.5) * _TWO_M128
    out: np.ndarray = -np.log(np.minimum(u, 1.0))
    return out


def gaussian(w: np.ndarray) -> np.ndarray:
    """Standard normal draws from rows of three words (Box-Muller)."""
    e = exponential(w[:, 0], w[:, 1])
    out: np.ndarray = np.sqrt(2.0 * e) * np.cos(2.0 * math.pi * uniform(w[:, 2]))
    return out


def laplace(w: np.ndarray) -> np.ndarray:
    """Standard Laplace (scale 1) draws from rows of four words: E1 − E2."""
    out: np.ndarray = exponential(w[:, 0], w[:, 1]) - exponential(w[:, 2], w[:, 3])
    return out


def tail_mass(distribution: str) -> float:
    """Probability that one draw differs from the exact distribution's, beyond floating point.

    Couple the sampler with the exact distribution through the same uniforms: they differ only
    when an exponential E exceeds the reach, which happens with probability e^(−reach) per
    exponential (one for the Gaussian, two for the Laplace).
    """
    if distribution == "gaussian":
        return math.exp(-EXPONENTIAL_REACH)
    if distribution == "laplace":
        return 2.0 * math.exp(-EXPONENTIAL_REACH)
    raise ValueError(f"distribution must be 'gaussian' or 'laplace', got {distribution!r}")
