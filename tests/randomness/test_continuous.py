"""Continuous samplers: the exponential's tail counted exactly on the implementation down to
e^-89, the reach of every sampler, and KS tests of keyed and entropy-keyed draws."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from spark_dp.calibration import check_sampler_delta, sampler_delta_floor
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


def tail_probability(x: float) -> float:
    """P(E > x) of the implementation: count the (w0, w1) words mapping above x, exactly."""
    w0_star = first_at_most(x, 0, TOP, lambda w: exp_of(w, TOP - 1))
    if w0_star > 0:  # every word with w0 < w0_star maps above x (w1 moves u by < 2^-64)
        partial = first_at_most(x, 0, TOP, lambda w: exp_of(w0_star - 1, w)) / TOP
        return (w0_star - 1 + partial) / TOP
    return first_at_most(x, 0, TOP, lambda w: exp_of(0, w)) / TOP / TOP


@pytest.mark.parametrize("x", [0.5, 3.0, 20.0, 43.0, 44.5, 50.0, 70.0, 85.0, 88.0])
def test_exponential_tail_is_exact_down_to_the_smallest_deltas(x):
    # P(E > x) = e^-x for every x the sampler reaches: δ levels down to 1e-38 are sampled.
    assert tail_probability(x) == pytest.approx(math.exp(-x), rel=1e-9)


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
    r = (Randomness.create(3) if mode == "keyed" else Randomness.create()).child("x").driver()
    n = 40_000
    assert stats.kstest(r.uniform(n), "uniform").pvalue > 1e-4
    assert stats.kstest(r.gaussian(2.5, n) / 2.5, "norm").pvalue > 1e-4
    assert stats.kstest(r.laplace(0.7, n) / 0.7, "laplace").pvalue > 1e-4


def test_gaussian_tail_frequency_at_four_sigma():
    z = Randomness.create(8).child("tail").driver().gaussian(1.0, 2_000_000)
    k, expected = int((np.abs(z) > 4.0).sum()), 2_000_000 * 2 * stats.norm.sf(4.0)
    assert stats.poisson.cdf(k, expected) > 1e-4 and stats.poisson.sf(k - 1, expected) > 1e-4


def test_streams_reproduce_and_differ():
    a = Randomness.create(1).child("noise", 1).driver().gaussian(1.0, 5)
    np.testing.assert_array_equal(
        a, Randomness.create(1).child("noise", 1).driver().gaussian(1.0, 5)
    )
    assert not np.allclose(a, Randomness.create(1).child("noise", 2).driver().gaussian(1.0, 5))
    assert not np.allclose(a, Randomness.create(2).child("noise", 1).driver().gaussian(1.0, 5))
    r = Randomness.create()
    assert not np.allclose(r.driver().uniform(4), Randomness.create().driver().uniform(4))


def test_sampler_delta_floor_refuses_deltas_the_tails_cannot_support():
    floor = sampler_delta_floor(1.0, "gaussian")
    assert floor == pytest.approx((1 + math.e) * 1e15 * C.tail_mass("gaussian"), rel=1e-9)
    assert check_sampler_delta(1e-15, 1.0, "gaussian") == floor
    with pytest.raises(ParameterError, match="below the smallest δ the gaussian noise sampler"):
        check_sampler_delta(1e-22, 1.0, "gaussian")
    with pytest.raises(ParameterError, match="smaller epsilon"):
        check_sampler_delta(0.5, 60.0, "laplace")  # e^60 overwhelms the 1e-39 tail
