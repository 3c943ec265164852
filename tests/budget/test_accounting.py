"""Composition: basic sums, and the tight PLD/RDP accountant for Gaussian noise.

The tight accountant is checked against an exact oracle: Gaussian mechanisms with noise
multipliers σ_i compose to exactly one Gaussian mechanism with σ = (Σ σ_i⁻²)^{-1/2} (μ-GDP),
whose ε at δ is the analytic Gaussian's (spark_dp.calibration.gaussian_epsilon).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from spark_dp.budget import BudgetRefused, BudgetStore, GaussianStep, gaussian_steps
from spark_dp.budget.accounting import Charge, composed_multiplier, fits_cap, tight_epsilon
from spark_dp.calibration import gaussian_epsilon
from spark_dp.errors import ParameterError
from spark_dp.partition_selection import PartitionSelectionParams
from spark_dp.partition_selection.calibration import LaplaceWeightAndThreshold, WeightAndThreshold
from spark_dp.partition_selection.classic import GaussianThresholding
from spark_dp.partition_selection.mad_constants import MadRound
from spark_dp.partition_selection.registry import REGISTRY
from spark_dp.report import Step


def _exact(multipliers, delta):
    return gaussian_epsilon((sum(m**-2 for m in multipliers)) ** -0.5, delta)


def test_gaussian_steps_are_read_from_the_real_calibrations():
    w = WeightAndThreshold.for_budget(0.5, 1e-6, max_items=20)
    mad = MadRound.for_budget(0.5, 1e-6, 20, beta=2.0, d_max=50, b_min=0.5, b_max=2.0)
    thr = GaussianThresholding.for_budget(0.5, 1e-6, max_partitions=9)
    lap = LaplaceWeightAndThreshold.for_budget(0.5, 1e-6, max_items=20)
    steps = [Step("a", w), Step("b", mad), Step("c", thr), Step("d", lap)]
    got = gaussian_steps(steps)
    assert got == (
        GaussianStep(w.sigma, 0.5, 5e-7),  # Δ2 = 1; δ/2 on the noise, δ/2 on the threshold
        GaussianStep(mad.sigma, 0.5, 5e-7),
        GaussianStep(thr.sigma / 3.0, 0.5, 5e-7),  # Δ2 = √k
    )  # the Laplace round is left to basic composition


def test_every_gaussian_round_of_a_plan_is_found():
    for name, gaussian_rounds in [("dp-sips", 3), ("mad2r", 2), ("basic-laplace", 0)]:
        params = PartitionSelectionParams(
            algorithm=name, split=(0.2, 0.3, 0.5)[: 3 if name == "dp-sips" else 2]
        )
        plan = REGISTRY[name].plan(params)
        steps = gaussian_steps(plan.steps)
        assert len(steps) == gaussian_rounds
        assert sum(s.epsilon for s in steps) == pytest.approx(plan.epsilon if steps else 0.0)
        assert sum(s.delta_noise for s in steps) == pytest.approx(plan.delta / 2 if steps else 0.0)


@dataclass(frozen=True)
class _Misdescribed:
    epsilon: float = 0.5
    delta: float = 1e-6

    def to_report(self):
        return {"mechanism": "gaussian x", "sigma": 1.0, "l2_sensitivity": 1.0, "delta_noise": 5e-7}


def test_a_step_whose_sigma_does_not_give_its_budget_is_refused():
    with pytest.raises(ParameterError, match="is not"):
        gaussian_steps([Step("bad", _Misdescribed())])


@pytest.mark.parametrize("multipliers", [[3.0], [4.0] * 10, [2.0, 5.0, 9.0, 9.0]])
def test_pld_matches_the_exact_gaussian_composition(multipliers):
    charges = [Charge(1.0, 2e-9, (GaussianStep(m, 1.0, 1e-9),)) for m in multipliers]
    delta = 1e-5 + len(multipliers) * 1e-9  # thresholds take 1e-9 each, the Gaussians 1e-5
    exact = _exact(multipliers, 1e-5)
    pld = tight_epsilon(charges, delta, "pld")
    rdp = tight_epsilon(charges, delta, "rdp")
    assert exact - 1e-6 <= pld <= exact * 1.01 + 1e-3  # an upper bound, and a tight one
    assert rdp >= pld - 1e-6


def test_gaussians_compose_to_one_gaussian():
    assert composed_multiplier([3.0, 4.0]) == pytest.approx(2.4)  # 1/√(1/9 + 1/16)
    assert composed_multiplier([2.0] * 4) == pytest.approx(1.0)


def test_the_threshold_delta_and_pure_steps_are_added_by_basic_composition():
    g = GaussianStep(5.0, 0.4, 1e-7)
    charge = Charge(0.9, 3e-7, (g,))  # + ε 0.5 of a Laplace step, + δ 2e-7 of a threshold
    assert charge.rest == pytest.approx((0.5, 2e-7))
    assert tight_epsilon([charge] * 3, 6e-7, "pld") == math.inf  # δ all taken by thresholds
    got = tight_epsilon([charge] * 3, 1e-5, "pld")
    assert got == pytest.approx(1.5 + _exact([5.0] * 3, 1e-5 - 6e-7), rel=0.01)


def test_fits_cap_uses_either_valid_bound():
    g = GaussianStep(5.0, 0.9, 5e-7)
    charges = [Charge(0.9, 1e-6, (g,))] * 4  # basic: ε 3.6; exact: σ = 2.5, ε(8e-6) = 1.58
    assert not fits_cap(charges, 2.0, 1e-5, "basic")
    assert fits_cap(charges, 1.6, 1e-5, "pld") and not fits_cap(charges, 1.55, 1e-5, "pld")
    assert fits_cap(charges, 2.0, 1e-5, "rdp")
    assert fits_cap(charges[:1], 0.9, 1e-6, "basic")  # basic suffices without an accountant
    assert not fits_cap(charges, 2.0, 2e-6, "pld")  # thresholds need 2e-6 already


def test_a_pld_store_admits_more_gaussian_releases_and_never_too_many(tmp_path):
    round_ = WeightAndThreshold.for_budget(0.25, 2e-6, max_items=10)
    steps = gaussian_steps([Step("round 1", round_)])
    counts = {}
    for accountant in ("basic", "pld"):
        with BudgetStore.open(f"sqlite:///{tmp_path / accountant}.db") as store:
            store.set_accountant(accountant)
            store.set_cap("d", 1.0, 1e-4)
            n = 0
            while True:
                try:
                    r = store.reserve(
                        dataset="d",
                        identity=f"i{n}",
                        job="ps",
                        epsilon=0.25,
                        delta=2e-6,
                        gaussian=steps,
                    )
                except BudgetRefused:
                    break
                store.commit(store.bind(store.charge(r), f"r{n}"))
                n += 1
            counts[accountant] = n
            (row,) = store.summary()
            assert row.releases == n
    assert counts["basic"] == 4
    n = counts["pld"]
    assert n > 4
    # the exact composition of what was admitted is within the cap, and one more is not
    assert _exact([round_.sigma] * n, 1e-4 - n * 1e-6) <= 1.0
    assert _exact([round_.sigma] * (n + 1), 1e-4 - (n + 1) * 1e-6) > 1.0 * 0.99
