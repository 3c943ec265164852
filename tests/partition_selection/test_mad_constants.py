"""MAD's constants: τ and α of the docs/design/selection.md#vectors, the adaptive degrees, Lemma
B.8's α, and the checks that keep the MAD proof's preconditions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spark_dp.dp.calibration import Budget
from spark_dp.errors import ParameterError
from spark_dp.partition_selection import calibration as cal
from spark_dp.partition_selection import calibration as mc


def rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


# docs/design/selection.md#vectors: (ε, δ, Δ0, b_max, b_min) -> (σ, ρ, τ = ρ + 2σ, α at d_max = 50)
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
    round_ = cal.WeightAndThreshold.for_budget(Budget(eps, delta), d0, h_scale=b_max)
    c = mc.MadConstants.for_round(
        round_, beta=2.0, max_adaptive_degree=50, b_min=b_min, b_max=b_max
    )
    assert rel(round_.sigma, sigma) < 1e-6
    assert rel(round_.rho, rho) < 1e-6
    assert rel(c.tau, tau) < 1e-6
    assert rel(c.alpha, alpha) < 1e-6
    assert c.min_adaptive_degree == (1 if b_min == 1.0 else 4)


def test_reroute_factors_of_the_default_mad2r_run():
    # docs/design/selection.md#vectors: α/d_max = 0.018586 (round 1), 0.008586 (round 2).
    assert rel(mc.reroute_discount(1.0, 50) / 50, 0.018586) < 1e-4
    assert rel(mc.reroute_discount(0.5, 50) / 50, 0.008586) < 1e-4


@pytest.mark.parametrize(("b_min", "d_lo"), [(1.0, 1), (0.75, 2), (0.6, 3), (0.5, 4)])
def test_min_adaptive_degree(b_min, d_lo):
    assert mc.min_adaptive_degree(b_min) == d_lo


def test_alpha_satisfies_the_l2_inequality_of_lemma_b8():
    # α·γ/√d + sqrt(1 − 2·b_min·γ/√d + γ/d) ≤ 1 for every γ ∈ (0, 1]
    # (docs/design/selection.md#mad-constants).
    gammas = np.concatenate([np.logspace(-9, -1, 60), np.linspace(0.1, 1.0, 91)])
    for b_min in np.linspace(0.5, 1.0, 11):
        for d in (4, 5, 10, 50, 100, 1000):
            a = mc.reroute_discount(float(b_min), d)
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
    round_ = cal.WeightAndThreshold.for_budget(Budget(0.9, 9e-6), 100, h_scale=1.0)
    with pytest.raises(
        ParameterError, match=r"b_max=2 exceeds the h_scale=1.0 the threshold was calibrated for"
    ):
        mc.MadConstants.for_round(round_, beta=2, max_adaptive_degree=50, b_min=0.5, b_max=2)


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
    round_ = cal.WeightAndThreshold.for_budget(Budget(1.0, 1e-5), 100, h_scale=5.0)
    args = {"beta": 2.0, "max_adaptive_degree": 50, "b_min": 0.5, "b_max": 2.0, **kwargs}
    with pytest.raises(ParameterError, match=message):
        mc.MadConstants.for_round(round_, **args)
