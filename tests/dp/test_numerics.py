"""The calibration's pure-Python numerics against scipy and mpmath (test oracles): Φ, ln Φ and
Φ⁻¹ to within a few units in the last place over their whole range, Brent's method step for
step as scipy's, and σ of the Gaussian mechanism as before."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, special

from spark_dp.dp.calibration import Budget, gaussian_delta, gaussian_epsilon, gaussian_sigma
from spark_dp.dp.numerics import brentq, log_ndtr, ndtr, ndtri
from spark_dp.errors import ParameterError

mpmath.mp.dps = 60
TINY = 1e-300  # below it a double has lost relative precision (subnormals start at 2.2e-308)


def true_ndtr(x: float) -> mpmath.mpf:
    return mpmath.ncdf(mpmath.mpf(x))


def true_log_ndtr(x: float) -> mpmath.mpf:
    # in the upper tail ln Φ(x) = ln(1 − Φ(−x)), where Φ(x) itself would round to 1
    if x < 0:
        return mpmath.log(mpmath.ncdf(mpmath.mpf(x)))
    return mpmath.log1p(-mpmath.ncdf(-mpmath.mpf(x)))


def bound(x: float) -> float:
    """The error a double x allows: x/√2 is rounded before erfc, whose condition number is
    about x² there (scipy's ndtr and log_ndtr do the same)."""
    return (x * x + 8.0) * 2.2e-16


def relative(ours: float, truth: mpmath.mpf) -> float:
    return float(abs(mpmath.mpf(ours) - truth) / abs(truth))


@settings(max_examples=400, deadline=None)
@given(st.floats(min_value=-1e4, max_value=9.0))
def test_log_ndtr_is_accurate_in_both_tails(x):
    truth = true_log_ndtr(x)
    if abs(truth) < TINY:
        return
    assert relative(log_ndtr(x), truth) < max(bound(x) / max(1.0, float(abs(truth))), 4e-16)


@settings(max_examples=400, deadline=None)
@given(st.floats(min_value=-37.0, max_value=37.0))
def test_ndtr_is_accurate(x):
    truth = true_ndtr(x)
    if truth < TINY:
        return
    assert relative(ndtr(x), truth) < bound(x)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.floats(min_value=1e-300, max_value=1.0 - 1e-16), st.floats(-300.0, -0.3)))
def test_ndtri_is_accurate_down_to_the_smallest_probabilities(value):
    p = 10.0**value if value < 0 else value
    x = float(ndtri(p)[0])
    if p == 0.5:
        assert x == 0.0
        return
    truth = mpmath.findroot(lambda z: mpmath.ncdf(z) - mpmath.mpf(p), mpmath.mpf(x))
    assert relative(x, truth) < 4e-15


def test_the_functions_agree_with_scipy_on_a_grid():
    xs = np.concatenate([np.linspace(-1000.0, 9.0, 20001), np.linspace(-40.0, 10.0, 20001)])
    ours = np.array([log_ndtr(float(x)) for x in xs])
    theirs = special.log_ndtr(xs)
    big = np.abs(theirs) > TINY
    assert np.max(np.abs(ours[big] - theirs[big]) / np.abs(theirs[big])) < 1e-13
    ps = np.concatenate([10.0 ** np.linspace(-300.0, -0.3, 20001), np.linspace(0.0, 1.0, 20001)])
    finite = np.isfinite(special.ndtri(ps)) & (special.ndtri(ps) != 0)
    got, want = ndtri(ps)[finite], special.ndtri(ps)[finite]
    assert np.max(np.abs(got - want) / np.abs(want)) < 4e-15


def test_edges():
    assert ndtr(-math.inf) == 0.0 and ndtr(math.inf) == 1.0 and ndtr(0.0) == 0.5
    assert log_ndtr(-math.inf) == -math.inf and log_ndtr(math.inf) == 0.0
    assert log_ndtr(0.0) == pytest.approx(math.log(0.5), rel=1e-16)
    assert list(ndtri([0.0, 0.5, 1.0])) == [-math.inf, 0.0, math.inf]
    for bad in (-0.1, 1.5, math.nan):
        with pytest.raises(ParameterError, match="probabilit"):
            ndtri(bad)


@settings(max_examples=300, deadline=None)
@given(
    st.floats(-3.0, 3.0),
    st.floats(-3.0, 3.0),
    st.floats(0.1, 5.0),
    st.sampled_from(["cubic", "tanh", "exp"]),
)
def test_brentq_takes_scipys_steps(a, b, c, shape):
    f = {
        "cubic": lambda x: x**3 - a * x - b,
        "tanh": lambda x: math.tanh(c * x + a) + 0.3 * b,
        "exp": lambda x: math.expm1(c * x) - a,
    }[shape]
    lo, hi = -4.0, 4.0
    if math.copysign(1.0, f(lo)) == math.copysign(1.0, f(hi)):
        with pytest.raises(ParameterError, match="different signs"):
            brentq(f, lo, hi)
        return
    for tol in ({"xtol": 1e-15, "rtol": 4 * np.finfo(float).eps, "maxiter": 500}, {}):
        assert brentq(f, lo, hi, **tol) == optimize.brentq(f, lo, hi, **tol)


def test_brentq_says_when_it_does_not_converge():
    with pytest.raises(ParameterError, match="no convergence in 3"):
        brentq(lambda x: math.copysign(1.0, x - 0.3), -1e6, 1e6, maxiter=3)  # bisection only


def scipy_gaussian_sigma(epsilon: float, delta: float, near: float) -> float:
    """σ of the analytic Gaussian mechanism (Δ2 = 1) with scipy's log_ndtr and brentq, searched
    within a factor e of ``near``."""

    def log_delta(log_s: float) -> float:
        s = math.exp(log_s)
        a, b = 1 / (2 * s) - epsilon * s, -1 / (2 * s) - epsilon * s
        x = epsilon + special.log_ndtr(b) - special.log_ndtr(a)
        return special.log_ndtr(a) + math.log(-math.expm1(x))

    f = lambda log_s: log_delta(log_s) - math.log(delta)
    lo, hi = math.log(near) - 1.0, math.log(near) + 1.0
    return math.exp(optimize.brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps))


@pytest.mark.parametrize("epsilon", [0.01, 0.1, 1.0, 4.0, 16.0])
@pytest.mark.parametrize("delta", [1e-15, 1e-10, 1e-5, 1e-2])
def test_sigma_is_scipys_to_the_rounding_margin_and_still_meets_its_delta(epsilon, delta):
    sigma = gaussian_sigma(Budget(epsilon, delta))
    assert sigma == pytest.approx(scipy_gaussian_sigma(epsilon, delta, sigma), rel=1e-9)
    assert gaussian_delta(sigma, epsilon) <= delta  # rounded up: never below the target
    assert gaussian_epsilon(sigma, delta) == pytest.approx(epsilon, rel=1e-8)
