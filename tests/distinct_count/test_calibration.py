"""Calibration objects and the plan: ε split, sensitivities, t, scale, shift
(docs/design/counting.md#scores)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import laplace

from spark_dp.distinct_count.calibration import (
    DiscreteLaplaceRelease,
    GemSelection,
    LaplaceRelease,
    discrete_lower_bound_shift,
    lower_bound_shift,
)
from spark_dp.distinct_count.plan import SELECT_FRACTION, plan_release, require_epsilon
from spark_dp.dp.gem import gem_probabilities
from spark_dp.errors import ParameterError
from spark_dp.randomness import Randomness
from tests.distinct_count.helpers import FASHION


def test_worked_example_of_spec_3_7() -> None:
    # docs/design/counting.md#worked-example: curve [3, 5, 5], ε = 1, β = 0.05, ℓ_max = 3 (the
    # paper's continuous noise).
    plan = plan_release(1.0, 0.05, 3, noise="laplace")
    assert plan.select.margin == pytest.approx(16.377378, abs=1e-6)  # t = (4/ε)·ln(3/0.05)
    assert plan.count.shift(np.arange(1, 4)) == pytest.approx(
        [4.605170, 9.210340, 13.815511], abs=1e-6
    )
    q = plan.scores(np.array([3, 5, 5]))
    assert q == pytest.approx([-1.605170, -4.210340, -8.815511], abs=1e-6)
    assert plan.select.probabilities(q) == pytest.approx([0.776486, 0.159637, 0.063877], abs=1e-6)
    assert [plan.count.scale(ell) for ell in (1, 2, 3)] == [2.0, 4.0, 6.0]


def discrete_tail(scale: float, c: int) -> float:
    """P[X > c] of the discrete Laplace of scale b: p^(c+1)/(1+p), p = e^(−1/b)
    (docs/design/counting.md#discrete-laplace)."""
    p = math.exp(-1.0 / scale)
    return p ** (c + 1) / (1 + p)


def test_the_job_plan_uses_the_exact_discrete_laplace() -> None:
    # The worked example of docs/design/counting.md#worked-example with the hardened count: integer
    # shifts and scores.
    plan = plan_release(1.0, 0.05, 3)
    assert isinstance(plan.count, DiscreteLaplaceRelease)
    shifts = plan.count.shift(np.arange(1, 4))
    assert shifts.dtype == np.int64
    for ell, c in zip((1, 2, 3), shifts, strict=True):
        b = 2.0 * ell
        assert discrete_tail(b, int(c)) <= 0.05 < discrete_tail(b, int(c) - 1)  # smallest c
    q = plan.scores(np.array([3, 5, 5]))
    assert q.tolist() == (np.array([3, 5, 5]) - shifts).tolist()
    assert [plan.count.scale(ell) for ell in (1, 2, 3)] == [2.0, 4.0, 6.0]
    assert plan.count.exact_scale(3) == 6


@pytest.mark.parametrize(
    ("scale", "beta", "expected"),
    [(7.3, 0.05, 17), (2.0, 0.05, 5), (0.5, 0.25, 0), (40.0, 1e-3, 249)],
)
def test_discrete_shift_is_the_smallest_with_tail_at_most_beta(
    scale: float, beta: float, expected: int
) -> None:
    c = discrete_lower_bound_shift(scale, beta)
    assert c == expected  # docs/design/counting.md#discrete-laplace: b = 7.3, β = 0.05 → 17
    assert discrete_tail(scale, c) <= beta
    assert c == 0 or discrete_tail(scale, c - 1) > beta


def test_discrete_release_reports_its_sampler_and_integer_shift() -> None:
    count = DiscreteLaplaceRelease(0.5, 0.05)
    assert count.to_report()["mechanism"] == "discrete Laplace"
    at = count.at(7).to_report()
    assert at["scale"] == 14.0 and at["sensitivity"] == 7
    assert at["lower_bound_shift"] == discrete_lower_bound_shift(14.0, 0.05)
    assert "exact" in at["sampler"]
    a = count.sample(7, Randomness.create(4).bind("test").child("count noise").driver())
    assert isinstance(a, int)
    assert a == count.sample(7, Randomness.create(4).bind("test").child("count noise").driver())


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0, 10.0])
def test_the_plan_splits_epsilon_once_and_exactly(epsilon: float) -> None:
    plan = plan_release(epsilon, 0.05, 100, method="greedy")
    assert plan.select.epsilon == epsilon * SELECT_FRACTION == epsilon / 2
    assert plan.select.epsilon + plan.count.epsilon == plan.epsilon == epsilon
    assert plan.select.delta == plan.count.delta == 0.0
    select, count = plan.steps
    assert (select.calibration, count.calibration) == (plan.select, plan.count)
    assert select.epsilon + count.epsilon == epsilon
    assert (plan.method, plan.beta, plan.max_contributions) == ("greedy", 0.05, 100)


def test_gem_selection_knows_its_sensitivities_and_margin() -> None:
    gem = GemSelection(epsilon=0.5, beta=0.05, max_contributions=100)
    assert gem.sensitivities.tolist() == list(range(1, 101))  # Δ_ℓ = ℓ
    assert gem.margin == pytest.approx(2 / 0.5 * math.log(100 / 0.05))
    q = FASHION - lower_bound_shift(np.arange(1, 101), 0.5, 0.05)
    np.testing.assert_array_equal(
        gem.probabilities(q), gem_probabilities(q, np.arange(1, 101, dtype=float), 0.5, 0.05)
    )
    ells = [gem.choose(q, Randomness.create(s).bind("test").driver()) for s in range(200)]
    assert 1 <= min(ells) and max(ells) <= 100
    report = gem.to_report()
    assert report["candidates"] == "1..100" and report["sensitivity"] == "Δ_ℓ = ℓ"
    assert report["t"] == gem.margin and report["beta"] == 0.05
    assert "exponential mechanism" in report["mechanism"]


def test_laplace_release_shift_has_tail_probability_beta() -> None:
    # P[Lap(b) ≥ b·ln(1/(2β))] = β: the released ν̂ exceeds c(D; ℓ̂) with probability β.
    for ell, eps_count, beta in [(1, 0.5, 0.05), (17, 0.5, 0.01), (40, 2.0, 0.2)]:
        count = LaplaceRelease(eps_count, beta)
        scale = count.scale(ell)
        assert scale == ell / eps_count
        shift = float(count.shift(ell))
        assert laplace.sf(shift, scale=scale) == pytest.approx(beta, rel=1e-12)


def test_laplace_release_draws_from_the_stream_it_is_given() -> None:
    count = LaplaceRelease(0.5, 0.05)
    a = count.sample(7, Randomness.create(4).bind("test").child("laplace").driver())
    b = float(Randomness.create(4).bind("test").child("laplace").driver().laplace(14.0, 1)[0])
    assert a == b


def test_laplace_release_reports_formulas_in_a_plan_and_numbers_at_ell_hat() -> None:
    count = LaplaceRelease(0.5, 0.05)
    plan_view = count.to_report()
    assert plan_view["mechanism"] == "Laplace" and plan_view["scale"] == "ℓ̂/ε_count"
    assert count.ell is None
    fixed = count.at(7)
    assert fixed.ell == 7 and (fixed.epsilon, fixed.beta) == (count.epsilon, count.beta)
    assert fixed.to_report() == {
        "mechanism": "Laplace",
        "sensitivity": 7,
        "scale": 14.0,
        "lower_bound_shift": pytest.approx(14 * math.log(10)),
        "beta": 0.05,
    }
    with pytest.raises(ParameterError, match="ell must be an integer >= 1"):
        count.at(0)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0.0, 0.05, 10), "epsilon must be a finite number > 0"),
        ((1.0, 0.5, 10), "beta must lie strictly between 0.0 and 0.5"),
        ((1.0, 0.0, 10), "beta must lie strictly between 0.0 and 0.5"),
        ((1.0, 0.05, 0), "max_contributions must be an integer >= 1"),
    ],
)
def test_plan_rejects_bad_parameters(args: tuple[float, float, int], match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        plan_release(*args)


def test_epsilon_is_required() -> None:
    with pytest.raises(ParameterError, match="epsilon is required: pass --epsilon"):
        require_epsilon(None)
    assert require_epsilon(2) == 2.0
