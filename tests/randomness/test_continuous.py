"""Continuous samplers: the exponential's tail counted exactly on the implementation down to
e^-89, the Gaussian's and the Laplace's tails at the jobs' δ levels by the same exact count
(conditionally on the other words of a draw), the reach of every sampler, and KS tests of keyed
and entropy-keyed draws."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from spark_dp.dp.calibration import Budget, check_sampler_delta, sampler_delta_floor
from spark_dp.errors import ParameterError
from spark_dp.randomness import Randomness
from spark_dp.randomness import continuous as C

TOP = 2**64


def exp_of(w0: int, w1: int) -> float:
    return float(C.exponential(np.array([w0], np.uint64), np.array([w1], np.uint64))[0])


def first_at_most(x: float, lo: int, hi: int, value) -> int:
    """Smallest w in [lo, hi) with value(w) <= x (value is non-increasing in w)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if value(mid) <= x:
            hi = mid
        else:
            lo = mid + 1
    return lo


WORDS = 2.0**128  # equally likely (w0, w1) pairs


def tail_words(x: float, value=exp_of) -> int:
    """How many of the 2¹²⁸ word pairs (w0, w1) have value(w0, w1) > x, counted exactly.

    ``value`` must be non-increasing in w0, in w1 for a fixed w0, and from the end of one w0 row
    to the start of the next (true of E = −ln u, u increasing in (w0, w1), and of anything
    increasing in E). Then rows w0 < w* (w* the first row whose last word maps to ≤ x) lie
    wholly above x, rows after w* wholly at or below it, and row w* is split at a w1 found by
    bisection.
    """
    w0_star = first_at_most(x, 0, TOP, lambda w: value(w, TOP - 1))
    if w0_star == TOP:
        return TOP * TOP
    return w0_star * TOP + first_at_most(x, 0, TOP, lambda w: value(w0_star, w))


def assert_tail(count: int, log_tail: float) -> None:
    """``count`` word pairs of 2¹²⁸ against the exact tail exp(log_tail): equal up to the 2⁻¹²⁸
    grid of the uniform (one pair either way) and floating-point rounding (1e-12 relative)."""
    exact = math.exp(log_tail) * WORDS
    assert abs(count - exact) <= 1.0 + 1e-12 * exact, (count, exact)


@pytest.mark.parametrize("x", [0.5, 3.0, 20.0, 43.0, 44.5, 50.0, 70.0, 85.0, 88.0])
def test_exponential_tail_is_exact_down_to_the_smallest_deltas(x):
    # P(E > x) = e^-x, up to one pair of words in 2^128, for every x the sampler reaches: the
    # thresholds of δ levels down to 1e-38 see the exact exponential tail.
    assert_tail(tail_words(x), -x)


def test_the_tail_count_can_fail():
    # A tail off by one part in 10^9, or two words short, is caught.
    with pytest.raises(AssertionError):
        assert_tail(tail_words(43.0), -43.0 + 1e-9)
    with pytest.raises(AssertionError):
        assert_tail(tail_words(70.0) - 2, -70.0)
    assert tail_words(3.0) / WORDS == pytest.approx(math.exp(-3.0), rel=1e-14, abs=0)


# Tail probabilities of the noise at the thresholds the jobs calibrate: δ = 1e-5 (the default)
# and its shares (MAD2R spends δ/10 in round 1, each split again in two), down to the smallest
# δ the sampler floor accepts at ε = 1 (about 5e-21 for the Gaussian).
JOB_TAILS = [1e-5, 5e-7, 1e-10, 1e-15, 1e-20]


def third_words(n: int) -> list[int]:
    """Words for the draw's other uniform: the extremes and a spread in between."""
    rng = np.random.default_rng(2024)
    spread = rng.integers(0, TOP, size=n, dtype=np.uint64, endpoint=False).tolist()
    return [0, 1, TOP // 8, TOP // 4 - 1, TOP // 2 + 1, TOP - 1, *spread]


@pytest.mark.parametrize("tail", JOB_TAILS)
def test_gaussian_tail_at_the_jobs_deltas_is_exact(tail):
    """P(Z > z) of the Box-Muller sampler at P(N(0,1) > z) = δ-level tails, without sampling.

    Z = √(2E)·cos(2πU) with E from words (w0, w1) and U from w2. For a fixed w2 with
    c = cos(2πU) > 0, Z is non-increasing in (w0, w1), so P(Z > z | w2) is counted exactly on
    the implementation (:func:`tail_words`); it must equal P(E > z²/(2c²)) =
    exp(−z²/(2c²)) (the exponential's exact tail, tested above), and 0 when c ≤ 0. Averaging
    that conditional over U, uniform on the 2⁻⁵³ grid, is a Riemann sum of
    ∫₀¹ exp(−z²/(2cos²2πu))·1[cos 2πu > 0] du = P(N(0,1) > z) (Box-Muller), off by at most the
    grid step times the integrand's variation (< 2⁻⁵¹ relative to the tail at these z); the
    last check evaluates that integral by quadrature. Sampling could not see a 1e-20 tail.
    """
    z = float(stats.norm.isf(tail))
    for w2 in third_words(24):
        c = math.cos(2.0 * math.pi * float(C.uniform(np.array([w2], np.uint64))[0]))

        def gauss(w0: int, w1: int, w2: int = w2) -> float:
            return float(C.gaussian(np.array([[w0, w1, w2]], np.uint64))[0])

        count = tail_words(z, gauss)
        if c > 0:
            assert_tail(count, -(z * z) / (2 * c * c))
        else:
            assert count == 0
    u = (np.arange(1 << 20) + 0.5) / (1 << 20)
    c = np.cos(2 * np.pi * u)
    integrand = np.where(c > 0, np.exp(-(z * z) / (2 * np.maximum(c, 1e-12) ** 2)), 0.0)
    assert integrand.mean() == pytest.approx(tail, rel=1e-9)


@pytest.mark.parametrize("tail", JOB_TAILS)
def test_laplace_tail_at_the_jobs_deltas_is_exact(tail):
    """P(L > x) of L = E1 − E2 at P(Lap(1) > x) = ½e⁻ˣ = δ-level tails, without sampling.

    For fixed words of E2 (value e2), L is non-increasing in E1's words, so P(L > x | e2) is
    counted exactly; it must equal P(E1 > x + e2) = exp(−(x + e2)). Averaged over E2 (an exact
    Exp(1) up to its reach, tested above) that is e⁻ˣ·E[e^(−E2)] = ½e⁻ˣ.
    """
    x = -math.log(2.0 * tail)
    for w2 in third_words(6):
        for w3 in (0, TOP // 3, TOP - 1):
            e2 = exp_of(w2, w3)

            def lap(w0: int, w1: int, w2: int = w2, w3: int = w3) -> float:
                return float(C.laplace(np.array([[w0, w1, w2, w3]], np.uint64))[0])

            assert_tail(tail_words(x, lap), -(x + e2))


def test_reach_of_each_sampler():
    zero = np.zeros(1, np.uint64)
    assert exp_of(0, 0) == pytest.approx(C.EXPONENTIAL_REACH, rel=1e-12)
    assert exp_of(TOP - 1, TOP - 1) == 0.0
    w = np.zeros((1, 3), np.uint64)
    assert abs(C.gaussian(w)[0]) == pytest.approx(C.GAUSSIAN_REACH, rel=1e-12)
    assert C.laplace(np.array([[0, 0, TOP - 1, TOP - 1]], np.uint64))[0] == pytest.approx(
        C.EXPONENTIAL_REACH, rel=1e-12
    )
    assert C.uniform(zero)[0] == 0.0 and C.uniform(np.array([TOP - 1], np.uint64))[0] < 1.0
    assert C.tail_mass("gaussian") == pytest.approx(math.exp(-129 * math.log(2)))
    assert C.tail_mass("laplace") == 2 * C.tail_mass("gaussian")


@pytest.mark.parametrize("mode", ["keyed", "entropy"])
def test_driver_samplers_have_the_right_distribution(mode):
    r = (
        (Randomness.create(3).bind("test") if mode == "keyed" else Randomness.create().bind("test"))
        .child("x")
        .driver()
    )
    n = 40_000
    assert stats.kstest(r.uniform(n), "uniform").pvalue > 1e-4
    assert stats.kstest(r.gaussian(2.5, n) / 2.5, "norm").pvalue > 1e-4
    assert stats.kstest(r.laplace(0.7, n) / 0.7, "laplace").pvalue > 1e-4


def test_gaussian_tail_frequency_at_four_sigma():
    z = Randomness.create(8).bind("test").child("tail").driver().gaussian(1.0, 2_000_000)
    k, expected = int((np.abs(z) > 4.0).sum()), 2_000_000 * 2 * stats.norm.sf(4.0)
    assert stats.poisson.cdf(k, expected) > 1e-4 and stats.poisson.sf(k - 1, expected) > 1e-4


def test_streams_reproduce_and_differ():
    a = Randomness.create(1).bind("test").child("noise", 1).driver().gaussian(1.0, 5)
    np.testing.assert_array_equal(
        a, Randomness.create(1).bind("test").child("noise", 1).driver().gaussian(1.0, 5)
    )
    assert not np.allclose(
        a, Randomness.create(1).bind("test").child("noise", 2).driver().gaussian(1.0, 5)
    )
    assert not np.allclose(
        a, Randomness.create(2).bind("test").child("noise", 1).driver().gaussian(1.0, 5)
    )
    r = Randomness.create().bind("test")
    assert not np.allclose(
        r.driver().uniform(4), Randomness.create().bind("test").driver().uniform(4)
    )


def test_sampler_delta_floor_refuses_deltas_the_tails_cannot_support():
    floor = sampler_delta_floor(1.0, "gaussian")
    assert floor == pytest.approx((1 + math.e) * 1e15 * C.tail_mass("gaussian"), rel=1e-9)
    assert check_sampler_delta(Budget(1.0, 1e-15), "gaussian") == floor
    with pytest.raises(ParameterError, match="below the smallest δ the gaussian noise sampler"):
        check_sampler_delta(Budget(1.0, 1e-22), "gaussian")
    with pytest.raises(ParameterError, match="smaller epsilon"):
        check_sampler_delta(Budget(60.0, 0.5), "laplace")  # e^60 overwhelms the 1e-39 tail
