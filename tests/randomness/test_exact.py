"""Exact samplers against exact distributions (chi-square, ≥ 30k draws) and against OpenDP.

Every sampler is tested on bits from a keyed stream (a test key) and from an entropy key (the
production default); the entropy cases are marked slow (they repeat the keyed ones' draws).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from spark_dp.randomness import Randomness
from spark_dp.randomness import exact as X


def source(seed: int | None):
    """The exact samplers' bit source: a test key from ``seed``, or an entropy key (None)."""
    return Randomness.create(seed).bind("test").child("exact").driver()


ENTROPY = pytest.mark.slow


def keyed_and_entropy(seed: int) -> list:
    """Parameters ``[seed, None]`` for a test that runs on both kinds of key."""
    return [pytest.param(seed, id="keyed"), pytest.param(None, id="entropy", marks=ENTROPY)]


def chi_square_ok(counts: np.ndarray, probs: np.ndarray, min_expected: float = 5.0) -> float:
    """p-value of a chi-square test, tail cells pooled until each expects ≥ min_expected."""
    n = counts.sum()
    exp = probs * n
    order = np.argsort(-exp)
    keep, pooled_c, pooled_e = [], 0.0, 0.0
    for i in order:
        if exp[i] >= min_expected:
            keep.append((counts[i], exp[i]))
        else:
            pooled_c += counts[i]
            pooled_e += exp[i]
    if pooled_e > 0:
        keep.append((pooled_c, pooled_e))
    c, e = np.array(keep).T
    return float(stats.chisquare(c, e * c.sum() / e.sum()).pvalue)


@pytest.mark.parametrize("seed", keyed_and_entropy(1))
def test_uniform_below_is_uniform(seed):
    d = source(seed)
    draws = np.array([X.uniform_below(d.bits, 7) for _ in range(30_000)])
    assert chi_square_ok(np.bincount(draws, minlength=7), np.full(7, 1 / 7)) > 1e-4
    assert X.uniform_below(d.bits, 1) == 0


@pytest.mark.parametrize(
    ("gamma", "seed"),
    [
        (Fraction(0), 2),
        (Fraction(3, 10), 2),
        (Fraction(1), 2),
        (Fraction(27, 10), 2),
        pytest.param(Fraction(27, 10), None, id="entropy-27/10", marks=ENTROPY),
    ],
)
def test_bernoulli_exp_has_probability_exp_minus_gamma(gamma, seed):
    d = source(seed)
    n = 30_000
    k = sum(X.bernoulli_exp(d.bits, gamma) for _ in range(n))
    p = math.exp(-float(gamma))
    assert stats.binomtest(k, n, p).pvalue > 1e-4


def discrete_laplace_pmf(scale: float, support: np.ndarray) -> np.ndarray:
    p = math.exp(-1.0 / scale)
    return (1 - p) / (1 + p) * p ** np.abs(support)


@pytest.mark.parametrize(
    ("scale", "seed"),
    [
        (Fraction(5, 2), 3),
        (Fraction(7, 3), 3),
        (Fraction(1, 4), 3),
        (Fraction(30), 3),
        pytest.param(Fraction(7, 3), None, id="entropy-7/3", marks=ENTROPY),
    ],
)
def test_discrete_laplace_matches_its_pmf(scale, seed):
    d = source(seed)
    draws = np.array([d.discrete_laplace(scale) for _ in range(30_000)])
    lim = int(np.abs(draws).max()) + 1
    support = np.arange(-lim, lim + 1)
    counts = np.array([(draws == v).sum() for v in support])
    probs = discrete_laplace_pmf(float(scale), support)
    assert chi_square_ok(counts, probs / probs.sum()) > 1e-4


def test_discrete_laplace_lower_bound_tail_at_beta():
    # docs/design/counting.md#discrete-laplace: b = 7.3, β = 0.05 → shift c = 17, P[X > 17] =
    # p^18/(1+p) = 0.0455.
    from spark_dp.distinct_count.calibration import discrete_lower_bound_shift

    assert discrete_lower_bound_shift(7.3, 0.05) == 17
    d = source(4)
    n = 40_000
    k = sum(d.discrete_laplace(Fraction(73, 10)) > 17 for _ in range(n))
    p = math.exp(-18 / 7.3) / (1 + math.exp(-1 / 7.3))
    assert abs(p - 0.0455) < 5e-4
    assert stats.binomtest(k, n, p).pvalue > 1e-4


def test_discrete_laplace_agrees_with_opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    meas = dp.m.make_laplace(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale=2.5)
    theirs = np.array([meas(0) for _ in range(30_000)])
    d = source(5)
    ours = np.array([d.discrete_laplace(Fraction(5, 2)) for _ in range(30_000)])
    support = np.arange(-12, 13)
    table = np.array([[(np.clip(s, -12, 12) == v).sum() for v in support] for s in (ours, theirs)])
    table = table[:, table.sum(axis=0) > 0]
    assert stats.chi2_contingency(table).pvalue > 1e-4


@pytest.mark.parametrize("seed", keyed_and_entropy(6))
def test_exponential_mechanism_matches_its_weights(seed):
    gammas = [Fraction(0), Fraction(1, 2), Fraction(1), Fraction(3), Fraction(10)]
    d = source(seed)
    draws = np.array([X.exponential_mechanism(d.bits, gammas) for _ in range(30_000)])
    w = np.exp(-np.array([float(g) for g in gammas]))
    assert chi_square_ok(np.bincount(draws, minlength=5), w / w.sum()) > 1e-4
    shifted = [g + 7 for g in gammas]  # only differences matter
    draws2 = np.array([X.exponential_mechanism(d.bits, shifted) for _ in range(30_000)])
    assert chi_square_ok(np.bincount(draws2, minlength=5), w / w.sum()) > 1e-4


def test_exact_samplers_reproduce_with_the_key():
    a = [source(9).discrete_laplace(Fraction(3)) for _ in range(1)]
    assert a == [source(9).discrete_laplace(Fraction(3))]
    d1, d2 = source(9), source(9)
    assert [d1.discrete_laplace(Fraction(3)) for _ in range(50)] == [
        d2.discrete_laplace(Fraction(3)) for _ in range(50)
    ]
    assert [d1.bits(64) for _ in range(3)] != [
        Randomness.create().bind("test").driver().bits(64) for _ in range(3)
    ]
