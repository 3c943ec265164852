"""The audit's statistics against exact small cases (no Spark): Clopper–Pearson bounds, the
hockey-stick test of a claimed (ε, δ), and the exact power of both tests."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from spark_dp.audit.statistics import (
    Confidence,
    EventCounts,
    clopper_pearson,
    epsilon_lower_bound,
    epsilon_test_power,
    hockey_stick_lower,
    hockey_stick_power,
    novel_test_power,
)


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (57, 400), (1, 2000)])
def test_clopper_pearson_matches_scipy_exact_interval(k, n):
    # scipy's two-sided exact interval at level 1 − 2a is the pair of one-sided bounds at a.
    a = 0.01
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=1 - 2 * a, method="exact")
    lo, hi = clopper_pearson(k, n, a)
    assert lo == pytest.approx(ci.low, abs=1e-12)
    assert hi == pytest.approx(ci.high, abs=1e-12)


def test_clopper_pearson_bounds_are_the_beta_quantiles():
    # k = 2 of n = 5 at α = 0.05: Beta⁻¹(0.05; 2, 4) and Beta⁻¹(0.95; 3, 3), closed forms of
    # the binomial tails P[Bin(5, lo) ≥ 2] = 0.05 and P[Bin(5, hi) ≤ 2] = 0.05.
    lo, hi = clopper_pearson(2, 5, 0.05)
    assert stats.binom.sf(1, 5, lo) == pytest.approx(0.05, abs=1e-12)
    assert stats.binom.cdf(2, 5, hi) == pytest.approx(0.05, abs=1e-12)


def test_hockey_stick_lower_is_p_lo_minus_e_eps_q_hi():
    eps, a = math.log(2.0), 1e-3
    p_lo, _ = clopper_pearson(500, 1000, a)
    _, q_hi = clopper_pearson(100, 900, a)
    assert hockey_stick_lower(500, 1000, 100, 900, eps, a) == pytest.approx(p_lo - 2.0 * q_hi)
    counts = EventCounts("e", "D'", "D", 500, 1000, 100, 900)
    assert counts.hockey_stick_lower(eps, a) == pytest.approx(p_lo - 2.0 * q_hi)
    assert counts.rates == (0.5, pytest.approx(100 / 900))


@pytest.mark.parametrize("delta", [0.0, 0.05, 0.2])
def test_hockey_stick_test_and_epsilon_bound_agree(delta):
    # p_lo − e^ε·q_hi > δ  ⟺  ln((p_lo − δ)/q_hi) > ε, for every count
    a, eps = 1e-3, 1.0
    for hits_a, hits_b in itertools.product(range(0, 301, 25), range(0, 301, 25)):
        counts = EventCounts("e", "A", "B", hits_a, 300, hits_b, 300)
        fails = counts.hockey_stick_lower(eps, a) > delta
        assert fails == (counts.epsilon_lower_bound(delta, a) > eps), (hits_a, hits_b)


def test_epsilon_lower_bound_formula():
    assert epsilon_lower_bound(0.5, 0.1, 0.0) == pytest.approx(math.log(5))
    assert epsilon_lower_bound(0.5, 0.1, 0.2) == pytest.approx(math.log(3))
    assert epsilon_lower_bound(0.2, 0.1, 0.2) == 0.0  # p_lo ≤ δ: no evidence
    assert epsilon_lower_bound(0.5, 0.0, 0.2) == math.inf


def brute_force_power(p, q, eps, delta, n_a, n_b, a):
    """Σ over every (x, y) of P[X = x]·P[Y = y]·[p_lo(x) − e^ε·q_hi(y) > δ]."""
    total = 0.0
    for x in range(n_a + 1):
        for y in range(n_b + 1):
            if hockey_stick_lower(x, n_a, y, n_b, eps, a) > delta:
                total += stats.binom.pmf(x, n_a, p) * stats.binom.pmf(y, n_b, q)
    return total


@pytest.mark.parametrize(
    "p,q,eps,delta,n_a,n_b,a",
    [
        (0.9, 0.1, 0.5, 0.0, 7, 9, 0.1),
        (0.6, 0.05, 1.0, 0.1, 12, 5, 0.05),
        (0.3, 0.3, 0.0, 0.0, 10, 10, 0.2),
        (0.99, 0.01, 2.0, 0.2, 20, 30, 0.01),
    ],
)
def test_hockey_stick_power_equals_the_brute_force_sum(p, q, eps, delta, n_a, n_b, a):
    exact = brute_force_power(p, q, eps, delta, n_a, n_b, a)
    assert hockey_stick_power(p, q, eps, delta, n_a, n_b, a) == pytest.approx(exact, abs=1e-12)


def test_novel_test_power_equals_the_brute_force_sum():
    n, a, share = 25, 0.05, 0.1
    for rate in (0.05, 0.1, 0.3, 0.6):
        exact = sum(
            stats.binom.pmf(k, n, rate) for k in range(n + 1) if clopper_pearson(k, n, a)[0] > share
        )
        assert novel_test_power(rate, share, n, a) == pytest.approx(exact, abs=1e-12)


def test_false_failure_rate_of_a_tight_mechanism_is_at_most_alpha():
    # A mechanism exactly at its claim (rate = share; p = e^ε·q + δ) fails with prob ≤ its α.
    c = Confidence(1e-3, 5)
    assert novel_test_power(0.1, 0.1, 4000, c.per_test) <= c.per_test
    for q in (0.01, 0.1, 0.25):
        eps, delta = 1.0, 0.1
        p = math.exp(eps) * q + delta
        assert hockey_stick_power(p, q, eps, delta, 2000, 3000, c.per_bound) <= c.per_test


def test_power_functions_agree_with_simulation():
    rng = np.random.default_rng(0)
    n, a = 300, 0.01
    x = rng.binomial(n, 0.2, 4000)
    sim = np.mean([clopper_pearson(int(k), n, a)[0] > 0.12 for k in x])
    assert novel_test_power(0.2, 0.12, n, a) == pytest.approx(sim, abs=0.03)
    y = rng.binomial(n, 0.1, 4000)
    sim = np.mean(
        [
            EventCounts("e", "A", "B", int(i), n, int(j), n).epsilon_lower_bound(0.05, a) > 1.0
            for i, j in zip(x, y, strict=True)
        ]
    )
    assert epsilon_test_power(0.2, 0.1, 0.05, 1.0, n, a) == pytest.approx(sim, abs=0.03)


def test_confidence_splits_alpha_over_the_comparisons():
    c = Confidence(1e-3).over(20)
    assert c.comparisons == 20
    assert c.per_test == pytest.approx(5e-5)
    assert c.per_bound == pytest.approx(2.5e-5)
    with pytest.raises(ValueError):
        Confidence(0.0)
    with pytest.raises(ValueError):
        Confidence(1e-3, 0)
