"""Calibration of the partition-selection mechanisms: MAD constants and classic thresholds.

σ and ρ themselves (spec §3.6) are covered by tests/test_calibration.py; here: τ and α of the
§3.6 table, the Basic-Laplace threshold, and the keep-probability vectors of the classic
strategies published with Google's DP library (issue 3), to 1e-6 relative.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from spark_dp import calibration as cal
from spark_dp.errors import ParameterError


def rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


# spec partition_selection.md §3.6: (ε, δ, Δ0, b_max, b_min) -> (σ, ρ, τ = ρ + 2σ, α at d_max = 50)
MAD_TABLE = [
    ((1.0, 1e-5, 100, 1.0, 1.0), (3.884141, 20.789744, 28.558025, 0.929289)),  # Basic / MAD
    ((0.1, 1e-6, 100, 1.0, 1.0), (37.867164, 217.106449, 292.840777, 0.929289)),  # MAD2R rd 1
    ((0.9, 9e-6, 100, 2.0, 0.5), (4.303919, 23.208049, 31.815887, 0.429289)),  # MAD2R rd 2
    ((1.0, 1e-11, 100, 1.0, 1.0), (6.324115, 47.157117, 59.805347, 0.929289)),  # Common Crawl
    ((0.1, 1e-12, 100, 1.0, 1.0), (62.578591, 484.411756, 609.568938, 0.929289)),  # CC rd 1
    ((0.9, 9e-12, 100, 2.0, 0.5), (7.018686, 52.522943, 66.560315, 0.429289)),  # CC rd 2
]


@pytest.mark.parametrize(("setting", "expected"), MAD_TABLE)
def test_mad_constants_match_spec_3_6(setting, expected):
    eps, delta, d0, b_max, b_min = setting
    sigma, rho, tau, alpha = expected
    round_ = cal.WeightAndThreshold.for_budget(eps, delta, d0, h_scale=b_max)
    c = cal.MadConstants.for_round(
        round_, beta=2.0, max_adaptive_degree=50, b_min=b_min, b_max=b_max
    )
    assert rel(round_.sigma, sigma) < 1e-6
    assert rel(round_.rho, rho) < 1e-6
    assert rel(c.tau, tau) < 1e-6
    assert rel(c.alpha, alpha) < 1e-6
    assert c.min_adaptive_degree == (1 if b_min == 1.0 else 4)


def test_reroute_factors_of_the_default_mad2r_run():
    # spec §3.6 "Reroute factor per item": α/d_max = 0.018586 (round 1), 0.008586 (round 2).
    assert rel(cal.reroute_discount(1.0, 50) / 50, 0.018586) < 1e-4
    assert rel(cal.reroute_discount(0.5, 50) / 50, 0.008586) < 1e-4


@pytest.mark.parametrize(("b_min", "d_lo"), [(1.0, 1), (0.75, 2), (0.6, 3), (0.5, 4)])
def test_min_adaptive_degree(b_min, d_lo):
    assert cal.min_adaptive_degree(b_min) == d_lo


def test_alpha_satisfies_the_l2_inequality_of_lemma_b8():
    # α·γ/√d + sqrt(1 − 2·b_min·γ/√d + γ/d) ≤ 1 for every γ ∈ (0, 1] (spec §3.3).
    gammas = np.concatenate([np.logspace(-9, -1, 60), np.linspace(0.1, 1.0, 91)])
    for b_min in np.linspace(0.5, 1.0, 11):
        for d in (4, 5, 10, 50, 100, 1000):
            a = cal.reroute_discount(float(b_min), d)
            lhs = a * gammas / math.sqrt(d) + np.sqrt(
                1 - 2 * b_min * gammas / math.sqrt(d) + gammas / d
            )
            assert lhs.max() <= 1.0 + 1e-12
            # ... and it is tight: a slightly larger α breaks it for small γ.
            worse = (a + 1e-3) * gammas / math.sqrt(d) + np.sqrt(
                1 - 2 * b_min * gammas / math.sqrt(d) + gammas / d
            )
            assert worse.max() > 1.0


def test_mad_constants_refuse_a_b_max_above_the_calibrated_h():
    round_ = cal.WeightAndThreshold.for_budget(0.9, 9e-6, 100, h_scale=1.0)
    with pytest.raises(
        ParameterError, match=r"b_max=2 exceeds the h_scale=1.0 the threshold was calibrated for"
    ):
        cal.MadConstants.for_round(round_, beta=2, max_adaptive_degree=50, b_min=0.5, b_max=2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"b_min": 0.4}, r"b_min must lie in \[0.5, 1\]"),
        ({"b_min": 1.2}, r"b_min must lie in \[0.5, 1\]"),
        ({"b_max": 0.9}, r"b_max must be a finite number >= 1"),
        ({"b_max": math.inf}, r"b_max must be a finite number >= 1"),
        ({"max_adaptive_degree": 3}, r"max_adaptive_degree must be an integer >= 4"),
        ({"beta": -1.0}, r"beta must be a finite number >= 0"),
    ],
)
def test_mad_constants_validation(kwargs, message):
    round_ = cal.WeightAndThreshold.for_budget(1.0, 1e-5, 100, h_scale=5.0)
    args = {"beta": 2.0, "max_adaptive_degree": 50, "b_min": 0.5, "b_max": 2.0, **kwargs}
    with pytest.raises(ParameterError, match=message):
        cal.MadConstants.for_round(round_, **args)


def test_basic_laplace_threshold_matches_spec():
    # spec §2.3 / §3.6 [external]: ρ_Lap(ε=1, δ=1e-5, Δ0=100) = 15.434944, arg-max t = 100.
    thr = cal.laplace_weighted_threshold(1.0, 1e-5, 100)
    assert rel(thr.rho, 15.434944) < 1e-6
    assert thr.argmax_t == 100


# --------------------------------------------------------------------------- classic


@pytest.mark.parametrize(
    ("users", "expected"),
    [(6, 0.58840484458), (8, 0.86807080625), (15, 1.0), (1, 0.02)],
)
def test_truncated_geometric_published_vector(users, expected):
    # issue 3: truncated geometric with ε = 0.5, δ = 0.02, k = 1.
    tg = cal.TruncatedGeometric.for_budget(0.5, 0.02, 1)
    assert rel(float(tg.keep_probability(users)), expected) < 1e-6


def test_laplace_thresholding_published_threshold():
    assert rel(cal.laplace_thresholding_threshold(0.5, 0.02, 1), 7.43775164974) < 1e-6
    lt = cal.LaplaceThresholding.for_budget(0.5, 0.02, 1)
    assert lt.scale == 2.0
    assert lt.threshold == cal.laplace_thresholding_threshold(0.5, 0.02, 1)


def test_gaussian_thresholding_published_threshold_from_stddev():
    # issue 3: σ = 10, δ = 1e-5 (the threshold's own share), k = 10.
    t = cal.gaussian_thresholding_threshold(10.0, 1e-5, 10)
    assert rel(t, 48.53423399421888) < 1e-6


@pytest.mark.parametrize(
    ("eps", "delta", "k"), [(0.5, 0.02, 1), (1.0, 1e-5, 1), (1.0, 1e-5, 100), (3.0, 1e-9, 7)]
)
def test_truncated_geometric_satisfies_the_dp_inequalities(eps, delta, k):
    # For one item and one partition-level ε', δ': p(n) ≤ e^ε' p(n−1) + δ' and
    # 1 − p(n−1) ≤ e^ε' (1 − p(n)) + δ' for every n ≥ 1 (keep and drop events), p(1) = δ'.
    tg = cal.TruncatedGeometric.for_budget(eps, delta, k)
    n = np.arange(0, tg.crossover_2 + 5)
    p = tg.keep_probability(n)
    e, d = tg.adjusted_epsilon, tg.adjusted_delta
    assert p[0] == 0.0
    assert rel(p[1], d) < 1e-9
    assert np.all(np.diff(p) >= 0)
    assert np.all(p[1:] <= math.exp(e) * p[:-1] + d + 1e-12)
    assert np.all(1 - p[:-1] <= math.exp(e) * (1 - p[1:]) + d + 1e-12)
    assert p[tg.crossover_2 + 1] == 1.0
    assert p[tg.crossover_2] < 1.0


def test_adjusted_delta_is_the_inverse_of_the_union_bound():
    for delta, k in [(1e-5, 1), (1e-5, 100), (0.3, 7), (1e-15, 1000)]:
        d = cal.adjusted_delta(delta, k)
        assert rel(-math.expm1(k * math.log1p(-d)), delta) < 1e-9


@pytest.mark.parametrize(("eps", "delta", "k"), [(0.5, 0.02, 1), (1.0, 1e-5, 10), (1.0, 0.9, 1)])
def test_laplace_thresholding_keeps_a_novel_item_with_probability_adjusted_delta(eps, delta, k):
    # P(1 + Laplace(k/ε) ≥ T) = δ' on both branches of the formula.
    t = cal.laplace_thresholding_threshold(eps, delta, k)
    p = stats.laplace.sf(t - 1.0, scale=k / eps)
    assert rel(p, cal.adjusted_delta(delta, k)) < 1e-9


def test_gaussian_thresholding_splits_delta_and_uses_sqrt_k():
    g = cal.GaussianThresholding.for_budget(1.0, 1e-5, 10)
    assert g.delta_noise == g.delta_threshold == 5e-6
    assert g.sigma == cal.gaussian_sigma(1.0, 5e-6, sensitivity=math.sqrt(10))
    p = stats.norm.sf(g.threshold - 1.0, scale=g.sigma)
    assert rel(p, cal.adjusted_delta(5e-6, 10)) < 1e-9
    assert g.to_report()["l2_sensitivity"] == math.sqrt(10)
