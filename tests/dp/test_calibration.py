"""General driver-side calibration (analytic Gaussian, Laplace): the σ vectors of
docs/design/selection.md#vectors, high-precision checks, round trips, tiny δ, validation. The
partition-selection thresholds built on it are tested in
tests/partition_selection/test_calibration.py."""

from __future__ import annotations

import mpmath
import pytest

from spark_dp.dp import calibration as cal
from spark_dp.errors import ParameterError

# docs/design/selection.md#vectors: σ of a round with budget (ε, δ) is calibrated for (ε, δ/2).
SIGMA_3_6 = [
    ((1.0, 1e-5), 3.884141),
    ((0.1, 1e-6), 37.867164),
    ((0.9, 9e-6), 4.303919),
    ((0.05, 5e-7), 75.623462),
    ((0.15, 1.5e-6), 25.281635),
    ((0.8, 8e-6), 4.828578),
    ((1.0, 1e-11), 6.324115),
    ((0.1, 1e-12), 62.578591),
    ((0.9, 9e-12), 7.018686),
    ((0.5, 1e-5), 7.351149),
    ((8.0, 1e-5), 0.616514),
]


def rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


def _mp_delta(sigma, eps):
    mpmath.mp.dps = 60
    s, e = mpmath.mpf(sigma), mpmath.mpf(eps)
    phi = lambda x: mpmath.ncdf(x)
    return phi(1 / (2 * s) - e * s) - mpmath.e**e * phi(-1 / (2 * s) - e * s)


@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10, 1e-12, 1e-15])
@pytest.mark.parametrize("eps", [0.05, 1.0, 8.0])
def test_sigma_is_tight_and_conservative_against_high_precision(eps, delta):
    """δ(σ) ≤ δ at the returned σ, and a 1e-8 smaller σ already violates it (60 digits)."""
    sigma = cal.gaussian_sigma(cal.Budget(eps, delta))
    assert _mp_delta(sigma, eps) <= delta
    assert _mp_delta(sigma * (1 - 1e-8), eps) > delta


def test_tiny_delta_pitfall_values_from_spec():
    # docs/design/selection.md#sigma: absolute-tolerance solvers give 6.324061 and 62.048; the right
    # values are larger.
    assert rel(cal.gaussian_sigma(cal.Budget(1.0, 1e-11 / 2)), 6.324115) < 1e-6
    assert rel(cal.gaussian_sigma(cal.Budget(0.1, 1e-12 / 2)), 62.578591) < 1e-6


@pytest.mark.parametrize("sigma", [0.3, 1.0, 3.884141, 40.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-8, 1e-14])
def test_sigma_epsilon_round_trip(sigma, delta):
    eps = cal.gaussian_epsilon(sigma, delta)
    if eps == 0.0:
        assert cal.gaussian_delta(sigma, 0.0) <= delta
        return
    assert cal.gaussian_delta(sigma, eps) <= delta * (1 + 1e-9)
    assert rel(cal.gaussian_sigma(cal.Budget(eps, delta)), sigma) < 1e-8


def test_sigma_scales_linearly_with_sensitivity():
    base = cal.gaussian_sigma(cal.Budget(1.0, 1e-6))
    assert rel(cal.gaussian_sigma(cal.Budget(1.0, 1e-6), sensitivity=3.0), 3.0 * base) < 1e-12


def test_sigma_decreases_in_epsilon_and_delta():
    s = [cal.gaussian_sigma(cal.Budget(e, 1e-6)) for e in (0.1, 0.5, 1, 2, 8)]
    assert s == sorted(s, reverse=True)
    s = [cal.gaussian_sigma(cal.Budget(1.0, d)) for d in (1e-12, 1e-9, 1e-6, 1e-3)]
    assert s == sorted(s, reverse=True)


@pytest.mark.parametrize(("budget", "sigma"), SIGMA_3_6)
def test_sigma_matches_spec_3_6(budget, sigma):
    eps, delta = budget
    assert rel(cal.gaussian_sigma(cal.Budget(eps, delta / 2)), sigma) < 1e-6


def test_laplace_scale():
    assert cal.laplace_scale(cal.Budget(0.5), 2.0) == 4.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: cal.gaussian_sigma(cal.Budget(0.0, 1e-5)), "epsilon must be a finite number > 0"),
        (lambda: cal.gaussian_sigma(cal.Budget(-1.0, 1e-5)), "epsilon must be a finite number > 0"),
        (lambda: cal.gaussian_sigma(cal.Budget(float("nan"), 1e-5)), "epsilon"),
        (
            lambda: cal.gaussian_sigma(cal.Budget(1.0, 0.0)),
            "delta must lie strictly between 0 and 1",
        ),
        (lambda: cal.Budget(1.0, 1.0), r"delta must lie in \[0, 1\)"),
        (lambda: cal.Budget(1.0, -1e-9), r"delta must lie in \[0, 1\)"),
        (lambda: cal.Budget(float("inf"), 0.0), "epsilon must be a finite number > 0"),
        (lambda: cal.gaussian_sigma(cal.Budget(1.0, 1e-5), sensitivity=0), "sensitivity"),
    ],
)
def test_bad_parameters_are_named(call, message):
    with pytest.raises(ParameterError, match=message):
        call()
