"""Exact samplers on a stream of random bits: no floating-point exp, log or division.

Canonne, Kamath & Steinke 2020, "The Discrete Gaussian for Differential Privacy", Algorithm 1
(Bernoulli(exp(−γ)) for rational γ) and Algorithm 2 (the discrete Laplace); the exponential
mechanism by rejection with those Bernoullis (every weight exp(−γ_i) ≤ 1 and the largest is 1,
so a uniform proposal is accepted with probability ≥ 1/m). All arithmetic is on Python integers
and :class:`fractions.Fraction`, so each output has exactly the stated distribution, given
uniform bits: the floating-point attacks of Mironov (2012) and Ilvento (2020) have nothing to
exploit. Expected cost: O(1) bits for a Bernoulli, O(1) Bernoullis for a discrete Laplace draw,
O(m) proposals for the exponential mechanism over m candidates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

__all__ = [
    "bernoulli",
    "bernoulli_exp",
    "discrete_laplace",
    "exponential_mechanism",
    "uniform_below",
]

Bits = Callable[[int], int]
"""``bits(k)``: an integer of k uniform random bits."""


def uniform_below(bits: Bits, m: int) -> int:
    """A uniform integer in {0, …, m − 1} (rejection from ⌈log2 m⌉ bits)."""
    if m < 1:
        raise ValueError("uniform_below needs m >= 1")
    if m == 1:
        return 0
    k = (m - 1).bit_length()
    while True:
        x = bits(k)
        if x < m:
            return x


def bernoulli(bits: Bits, p: Fraction) -> bool:
    """True with probability p ∈ [0, 1] (p rational)."""
    if not 0 <= p <= 1:
        raise ValueError("a Bernoulli probability lies in [0, 1]")
    return uniform_below(bits, p.denominator) < p.numerator


def bernoulli_exp(bits: Bits, gamma: Fraction) -> bool:
    """True with probability exp(−γ), γ ≥ 0 rational (CKS 2020, Algorithm 1)."""
    if gamma < 0:
        raise ValueError("bernoulli_exp needs gamma >= 0")
    while gamma > 1:
        if not bernoulli_exp(bits, Fraction(1)):
            return False
        gamma -= 1
    k = 1
    while bernoulli(bits, gamma / k):
        k += 1
    return k % 2 == 1


def discrete_laplace(bits: Bits, scale: Fraction) -> int:
    """X with P[X = x] ∝ exp(−|x|/scale) on the integers, scale > 0 rational (CKS 2020, Alg. 2).

    With scale = t/s in lowest terms: U uniform in {0..t−1} accepted with probability
    exp(−U/t), V ~ Geometric(1 − e⁻¹), Y = ⌊(U + t·V)/s⌋, a random sign, and the duplicate zero
    rejected.
    """
    if scale <= 0:
        raise ValueError("discrete_laplace needs scale > 0")
    t, s = scale.numerator, scale.denominator
    while True:
        u = uniform_below(bits, t)
        if not bernoulli_exp(bits, Fraction(u, t)):
            continue
        v = 0
        while bernoulli_exp(bits, Fraction(1)):
            v += 1
        y = (u + t * v) // s
        negative = bits(1) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def exponential_mechanism(bits: Bits, gammas: Sequence[Fraction]) -> int:
    """Index i with probability exp(−γ_i)/Σ_j exp(−γ_j), all γ_i ≥ 0 rational.

    Rejection: propose i uniformly, accept with probability exp(−(γ_i − min γ)); the accepted
    index has exactly the target distribution.
    """
    if not gammas:
        raise ValueError("the exponential mechanism needs at least one candidate")
    low = min(gammas)
    shifted = [g - low for g in gammas]
    while True:
        i = uniform_below(bits, len(shifted))
        if bernoulli_exp(bits, shifted[i]):
            return i
