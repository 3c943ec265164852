"""GEM (Algorithm 3): docs/design/counting.md#tests vectors, fast = naive scores, privacy and
utility, sampling."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from spark_dp.distinct_count.release import selection_probabilities
from spark_dp.dp.gem import (
    gem_probabilities,
    gem_scores,
    gem_scores_exact,
    gem_select,
    gem_threshold,
)
from spark_dp.errors import ParameterError
from spark_dp.randomness import Randomness
from tests.distinct_count.helpers import FASHION, datasets, exact
from tests.reference.distinct_count import gem_probabilities_reference


def _percentiles(
    p: np.ndarray, ells: np.ndarray, qs: tuple[float, ...] = (0.1, 0.5, 0.9)
) -> list[int]:
    cdf = np.cumsum(p)
    return [int(ells[np.searchsorted(cdf, q)]) for q in qs]


def test_vector_7_3_item_7() -> None:
    q, sens = np.array([10.0, 15.0, 16.0]), np.array([1.0, 2.0, 3.0])
    # t = (2/ε)·ln(m/β) = 2·ln 30 = 6.802395
    assert 2 * math.log(3 / 0.1) == pytest.approx(6.802395, abs=1e-6)
    assert gem_scores(q, sens, 1.0, 0.1) == pytest.approx([0, -0.600798, -1.901197], abs=1e-6)
    assert gem_probabilities(q, sens, 1.0, 0.1) == pytest.approx(
        [0.470139, 0.348148, 0.181713], abs=1e-6
    )


def test_vector_7_3_item_8_worked_example() -> None:
    # docs/design/counting.md#worked-example: curve [3, 5, 5], ε = 1, β = 0.05, ℓ_max = 3 (GEM at
    # ε/2).
    assert selection_probabilities([3, 5, 5], 1.0, 0.05, noise="laplace") == pytest.approx(
        [0.776486, 0.159637, 0.063877], abs=1e-6
    )


def test_vector_7_3_item_9_fashion_reproduction_config() -> None:
    # ε_g = 1, β = 0.001, candidates 1..99, utility c − ℓ·ln 500 (paper Table 4 settings).
    ells = np.arange(1, 100)
    p = gem_probabilities(FASHION[:99] - ells * math.log(500), ells, 1.0, 0.001)
    top = {int(ells[i]): round(float(p[i]), 4) for i in np.argsort(-p)[:6]}
    assert top == {8: 0.1697, 9: 0.1590, 10: 0.1342, 7: 0.1266, 11: 0.0985, 12: 0.0727}
    assert _percentiles(p, ells) == [7, 9, 14]


def test_vector_7_3_item_10_fashion_algorithm_1_defaults() -> None:
    ells = np.arange(1, 101)
    p = selection_probabilities(FASHION, 1.0, 0.05, noise="laplace")
    top = {int(ells[i]): round(float(p[i]), 4) for i in np.argsort(-p)[:3]}
    assert top == {8: 0.1275, 7: 0.1213, 9: 0.1133}
    assert _percentiles(p, ells) == [6, 10, 18]
    assert int(np.argmax(FASHION - 2 * ells * math.log(10))) + 1 == 17


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.floats(-1e4, 1e4), min_size=1, max_size=40),
    st.booleans(),
    st.floats(0.05, 5),
)
def test_hull_scores_equal_naive_scores_and_the_reference(
    values: list[float], integer: bool, eps: float
) -> None:
    q = np.round(values) if integer else np.array(values)  # integer scores create ties
    sens = np.arange(1, len(q) + 1, dtype=float)
    naive, hull = gem_scores(q, sens, eps, 0.05, "naive"), gem_scores(q, sens, eps, 0.05, "hull")
    assert np.allclose(naive, hull, rtol=1e-9, atol=1e-9 * (1 + np.abs(naive).max()))
    assert np.all(naive <= 1e-12) and np.max(naive) == pytest.approx(0, abs=1e-12)
    assert gem_probabilities(q, sens, eps, 0.05) == pytest.approx(
        gem_probabilities_reference(q, sens, eps, 0.05), rel=1e-9, abs=1e-300
    )


def test_hull_with_arbitrary_sensitivities_and_auto_switch() -> None:
    rng = np.random.default_rng(3)
    for _ in range(100):
        m = int(rng.integers(1, 30))
        q, sens = rng.normal(0, 100, m), rng.integers(1, 6, m).astype(float)
        assert np.allclose(
            gem_scores(q, sens, 0.7, 0.1, "naive"), gem_scores(q, sens, 0.7, 0.1, "hull")
        )
    q = rng.normal(0, 1e3, 6000)
    sens = np.arange(1, 6001, dtype=float)
    auto = gem_scores(q, sens, 1.0, 0.05)  # m > 5000: the O(m log m) path
    assert np.allclose(auto, gem_scores(q, sens, 1.0, 0.05, "naive"))


def test_probabilities_unchanged_by_adding_a_constant() -> None:
    q, sens = np.array([5.0, 9.0, 2.0, 14.0]), np.arange(1.0, 5.0)
    assert gem_probabilities(q + 1234.5, sens, 0.8, 0.05) == pytest.approx(
        gem_probabilities(q, sens, 0.8, 0.05), rel=1e-9
    )


@settings(max_examples=60, deadline=None)
@given(datasets(max_persons=8, universe=12, max_size=8), st.integers(0, 7))
def test_exact_privacy_check_on_neighbours(sets: list[list[int]], j: int) -> None:
    # docs/design/counting.md#tests: |ln p_ℓ(D) − ln p_ℓ(D−j)| ≤ ε_g for every ℓ.
    j = j % len(sets)
    neighbour = sets[:j] + sets[j + 1 :]
    eps, beta, max_contributions = 1.0, 0.05, 8
    p = selection_probabilities(exact(sets, max_contributions), eps, beta)
    p2 = selection_probabilities(
        exact(neighbour, max_contributions) if neighbour else np.zeros(max_contributions, int),
        eps,
        beta,
    )
    assert np.max(np.abs(np.log(p) - np.log(p2))) <= eps / 2 + 1e-9


def test_utility_guarantee_holds_exactly_on_the_fashion_curve() -> None:
    # docs/design/counting.md#tests: Σ_{i: q_i ≥ max_j (q_j − 4Δ_j ln(m/β)/ε_g)} p_i ≥ 1 − β.
    eps_g, beta = 0.5, 0.05
    ells = np.arange(1, 101, dtype=float)
    q = FASHION - 2 * ells / 1.0 * math.log(1 / (2 * beta))
    p = gem_probabilities(q, ells, eps_g, beta)
    good = q >= np.max(q - 4 * ells * math.log(100 / beta) / eps_g)
    assert p[good].sum() >= 1 - beta


def test_huge_epsilon_returns_the_argmax() -> None:
    rng = np.random.default_rng(4)
    for seed in range(20):
        q = rng.permutation(np.arange(30, dtype=float) * 7.0)  # tie-free
        sens = np.ones(30)
        noise = Randomness.create(seed).bind("test").driver()
        assert gem_select(q, sens, 1000.0, 0.05, noise) == int(np.argmax(q))


def _naive_exact_scores(q: list[Fraction], d: list[Fraction], t: Fraction) -> list[Fraction]:
    a = [qi - t * di for qi, di in zip(q, d, strict=True)]
    return [min((a[i] - a[j]) / (d[i] + d[j]) for j in range(len(a))) for i in range(len(a))]


@pytest.mark.parametrize("seed", range(6))
def test_exact_hull_scores_equal_the_exact_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 60))
    q = np.cumsum(rng.integers(0, 40, m)) - np.arange(1, m + 1) * rng.integers(0, 9)
    sens = np.arange(1, m + 1) if seed % 2 else rng.integers(1, 5, m)
    got = gem_scores_exact(q, sens, 0.5, 0.05)
    t = Fraction(gem_threshold(m, 0.5, 0.05))
    expected = _naive_exact_scores(
        [Fraction(int(x)) for x in q], [Fraction(int(x)) for x in sens], t
    )
    assert got == expected  # exact rational equality
    assert max(got) == 0 and all(isinstance(x, Fraction) for x in got)
    floats = gem_scores(q.astype(float), sens.astype(float), 0.5, 0.05, method="naive")
    np.testing.assert_allclose([float(x) for x in got], floats, atol=1e-9)


@pytest.mark.main_python
def test_sampled_frequencies_match_the_distribution() -> None:
    # gem_select samples exactly (rational scores, exact exponential mechanism). It is the exact
    # exponential mechanism over gem_scores_exact, draw for draw on one stream (checked on 300
    # draws); that mechanism's frequencies then meet P[i] ∝ exp(ε_g·s_i/2) over 30k draws (the
    # rational scores are computed once, which is what makes 30k draws affordable).
    q = FASHION[:40] - 2 * np.arange(1, 41) * math.log(10)
    sens = np.arange(1, 41, dtype=float)
    p = gem_probabilities(q, sens, 0.5, 0.05)
    bound = Randomness.create(2024).bind("test")
    by_select, by_mechanism = (bound.child("chi-square").driver() for _ in range(2))
    weights = [-Fraction(0.5) / 2 * s for s in gem_scores_exact(q, sens, 0.5, 0.05)]
    selected = [gem_select(q, sens, 0.5, 0.05, by_select) for _ in range(300)]
    assert selected == [by_mechanism.exponential_mechanism(weights) for _ in range(300)]
    n = 30000
    draws = np.array([by_mechanism.exponential_mechanism(weights) for _ in range(n)])
    observed = np.bincount(draws, minlength=len(p)).astype(float)
    expected = p * n
    big = expected >= 5  # pool the rare cells into one
    obs = np.r_[observed[big], observed[~big].sum()]
    exp = np.r_[expected[big], expected[~big].sum()]
    assert chisquare(obs, exp).pvalue > 1e-3


@pytest.mark.parametrize(
    ("q", "sens", "eps", "beta", "match"),
    [
        ([], [], 1.0, 0.1, "length"),
        ([1.0, 2.0], [1.0], 1.0, 0.1, "length"),
        ([1.0, float("nan")], [1.0, 2.0], 1.0, 0.1, "finite"),
        ([1.0, 2.0], [1.0, 0.0], 1.0, 0.1, "sensitivities"),
        ([1.0], [1.0], 0.0, 0.1, "epsilon_select"),
        ([1.0], [1.0], 1.0, -1.0, "beta"),
    ],
)
def test_bad_inputs_name_the_problem(
    q: list[float], sens: list[float], eps: float, beta: float, match: str
) -> None:
    with pytest.raises(ParameterError, match=match):
        gem_scores(q, sens, eps, beta)
