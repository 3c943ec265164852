"""Calibration of the weight-and-threshold rounds: σ and ρ, MAD constants, Laplace threshold.

docs/design/selection.md#vectors vectors (σ, ρ, argmax t, τ, α) to 1e-6 relative, the threshold's
union bound, and the validation messages. The count-thresholding strategies are tested in
test_classic.py, the general Gaussian calibration in tests/dp/test_calibration.py.
"""

from __future__ import annotations

import math

import pytest
from scipy import stats

from spark_dp.dp.calibration import Budget, gaussian_sigma
from spark_dp.errors import ParameterError
from spark_dp.partition_selection import calibration as cal


def rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


def test_basic_laplace_threshold_matches_spec():
    # docs/design/selection.md#basic-laplace, #vectors: ρ_Lap(ε=1, δ=1e-5, Δ0=100) = 15.434944,
    # arg-max t = 100.
    thr = cal.laplace_weighted_threshold(Budget(1.0, 1e-5), 100)
    assert rel(thr.rho, 15.434944) < 1e-6
    assert thr.argmax_t == 100


# --------------------------------------------------------------------------- classic


# docs/design/selection.md#vectors (relative tolerance 1e-6 on 6-decimal values).
# (ε, δ, Δ0, h_scale) -> (σ, ρ, argmax t, τ = ρ + 2σ)
SPEC_3_6 = [
    ((1.0, 1e-5, 100, 1.0), (3.884141, 20.789744, 100, 28.558025)),  # Basic / MAD default
    ((0.1, 1e-6, 100, 1.0), (37.867164, 217.106449, 100, 292.840777)),  # MAD2R round 1
    ((0.9, 9e-6, 100, 2.0), (4.303919, 23.208049, 100, 31.815887)),  # MAD2R round 2
    ((0.9, 9e-6, 100, 1.0), (4.303919, 23.108049, 100, None)),  # DP-SIPS [0.1,0.9] rd 2
    ((0.05, 5e-7, 100, 1.0), (75.623462, 442.283402, 100, None)),  # DP-SIPS 3-split rd 1
    ((0.15, 1.5e-6, 100, 1.0), (25.281635, 143.233582, 100, None)),  # rd 2
    ((0.8, 8e-6, 100, 1.0), (4.828578, 26.015597, 100, None)),  # rd 3
    ((1.0, 1e-11, 100, 1.0), (6.324115, 47.157117, 100, 59.805347)),  # Common Crawl single
    ((0.1, 1e-12, 100, 1.0), (62.578591, 484.411756, 100, 609.568938)),  # CC MAD2R rd 1
    ((0.9, 9e-12, 100, 2.0), (7.018686, 52.522943, 100, 66.560315)),  # CC MAD2R rd 2
]


# docs/design/selection.md#vectors: (ε, δ, Δ0) -> (σ, ρ, argmax t)
SPEC_SWEEP = [
    ((0.5, 1e-5, 100), (7.351149, 39.257537, 100)),
    ((2.0, 1e-5, 100), (2.067206, 11.111433, 100)),
    ((4.0, 1e-5, 100), (1.115937, 6.044288, 100)),
    ((8.0, 1e-5, 100), (0.616514, 3.723249, 1)),  # the arg-max is t = 1 here
    ((1.0, 1e-3, 100), (2.766672, 12.320723, 100)),
    ((1.0, 1e-7, 100), (4.808702, 29.478336, 100)),
    ((1.0, 1e-9, 100), (5.609600, 38.281755, 100)),
    ((1.0, 1e-5, 1), (3.884141, 18.156923, 1)),
    ((1.0, 1e-5, 10), (3.884141, 19.316039, 10)),
    ((1.0, 1e-5, 50), (3.884141, 20.336379, 50)),
    ((1.0, 1e-5, 200), (3.884141, 21.244366, 200)),
    ((1.0, 1e-5, 1000), (3.884141, 22.290579, 1000)),
]


@pytest.mark.parametrize(("setting", "expected"), SPEC_3_6)
def test_weight_and_threshold_matches_spec_3_6(setting, expected):
    eps, delta, d0, h = setting
    sigma, rho, t, tau = expected
    c = cal.WeightAndThreshold.for_budget(Budget(eps, delta), d0, h)
    assert rel(c.sigma, sigma) < 1e-6
    assert rel(c.rho, rho) < 1e-6
    assert c.argmax_t == t
    if tau is not None:
        assert rel(c.rho + 2 * c.sigma, tau) < 1e-6


@pytest.mark.parametrize(("setting", "expected"), SPEC_SWEEP)
def test_sweep_matches_spec(setting, expected):
    eps, delta, d0 = setting
    sigma, rho, t = expected
    c = cal.WeightAndThreshold.for_budget(Budget(eps, delta), d0)
    assert rel(c.sigma, sigma) < 1e-6
    assert rel(c.rho, rho) < 1e-6
    assert c.argmax_t == t


def test_literal_pseudocode_thresholds_differ_as_the_spec_says():
    # docs/design/selection.md#mad2r-delta: with the total δ inside ρ1 the threshold would be
    # 201.807910 (not used).
    sigma1 = gaussian_sigma(Budget(0.1, 1e-6 / 2))
    literal = cal.gaussian_threshold(sigma1, 1e-5 / 2, 100).rho
    assert rel(literal, 201.807910) < 1e-6
    assert literal < cal.gaussian_threshold(sigma1, 1e-6 / 2, 100).rho


def test_laplace_weighted_threshold_matches_spec():
    thr = cal.laplace_weighted_threshold(Budget(1.0, 1e-5), 100)
    assert rel(thr.rho, 15.434944) < 1e-6
    assert thr.argmax_t == 100


def test_threshold_union_bound_is_exact():
    """P(max of t noise draws > ρ − h(t)) = δ_thr at the arg-max t (proof of Thm 3.3)."""

    sigma, d_thr, d0 = 3.0, 1e-4, 20
    thr = cal.gaussian_threshold(sigma, d_thr, d0)
    t = thr.argmax_t
    p_any = 1 - stats.norm.cdf((thr.rho - 1 / math.sqrt(t)) / sigma) ** t
    assert rel(p_any, d_thr) < 1e-6
    for t2 in range(1, d0 + 1):  # every other t is at least as safe
        p2 = 1 - stats.norm.cdf((thr.rho - 1 / math.sqrt(t2)) / sigma) ** t2
        assert p2 <= d_thr * (1 + 1e-9)


def test_report_of_a_round_is_complete():
    c = cal.WeightAndThreshold.for_budget(Budget(1.0, 1e-5), 100)
    r = c.to_report()
    assert r["delta_noise"] == r["delta_threshold"] == 5e-6
    assert r["sigma"] == c.sigma and r["rho"] == c.rho and r["l2_sensitivity"] == 1.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: cal.gaussian_threshold(1.0, 1e-5, 0), "max_contributions must be an integer >= 1"),
        (lambda: cal.WeightAndThreshold.for_budget(Budget(1.0, 2.0), 100), "delta"),
        (lambda: cal.laplace_weighted_threshold(Budget(1.0, 1e-5), 0), "max_contributions"),
    ],
)
def test_bad_threshold_parameters_are_named(call, message):
    with pytest.raises(ParameterError, match=message):
        call()
