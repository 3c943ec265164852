"""Composition: basic sums, and the tight PLD/RDP accountant for every noise event (what the
``--max-contributions auto`` certificate composes inside one release, and the privacy audit
checks; across releases the store uses a privacy filter, tests/budget/test_filters.py).

The tight accountant is checked against exact oracles and against dp-accounting itself:
Gaussian mechanisms with noise multipliers σ_i compose to exactly one Gaussian mechanism with
σ = (Σ σ_i⁻²)^{-1/2} (μ-GDP), whose ε at δ is the analytic Gaussian's
(spark_dp.dp.calibration.gaussian_epsilon); k pure-ε steps compose to a binomial; Laplace steps
are bracketed by the grid oracle of tests/reference/accounting.py; and mixed Gaussian,
Laplace and pure steps must give what a dp-accounting accountant composing each event on its
own gives.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pytest
import sqlalchemy as sa
from dp_accounting import dp_event, pld, rdp

from spark_dp.budget import BudgetStore, NoiseStep, noise_steps
from spark_dp.budget.schema import RUNS
from spark_dp.distinct_count.plan import plan_release
from spark_dp.dp.accounting import Charge, composed_multiplier, tight_delta, tight_epsilon
from spark_dp.dp.calibration import Budget, gaussian_epsilon, gaussian_sigma
from spark_dp.dp.protocol import pure_dp_event
from spark_dp.errors import ParameterError
from spark_dp.partition_selection import PartitionSelectionParams
from spark_dp.partition_selection.calibration import (
    GaussianThresholding,
    LaplaceThresholding,
    LaplaceWeightAndThreshold,
    MadRound,
    TruncatedGeometric,
    WeightAndThreshold,
)
from spark_dp.partition_selection.registry import REGISTRY
from spark_dp.report import Step
from tests.reference.accounting import LossGrid, pure_composition_delta

SAMPLER = 1e15 * math.exp(-129 * math.log(2.0))  # N·τ of one Gaussian round (Laplace: twice)


def _exact(multipliers, delta):
    return gaussian_epsilon((sum(m**-2 for m in multipliers)) ** -0.5, delta)


def gauss(multiplier: float, epsilon: float, delta_noise: float) -> NoiseStep:
    return NoiseStep(dp_event.GaussianDpEvent(multiplier), epsilon, delta_noise)


def lap(epsilon: float) -> NoiseStep:
    return NoiseStep(dp_event.LaplaceDpEvent(1.0 / epsilon), epsilon, 0.0)


def test_noise_steps_are_read_from_the_real_calibrations():
    w = WeightAndThreshold.for_budget(Budget(0.5, 1e-6), max_contributions=20)
    mad = MadRound.for_budget(Budget(0.5, 1e-6), 20, beta=2.0, d_max=50, b_min=0.5, b_max=2.0)
    thr = GaussianThresholding.for_budget(Budget(0.5, 1e-6), max_contributions=9)
    lap_round = LaplaceWeightAndThreshold.for_budget(Budget(0.5, 1e-6), max_contributions=20)
    lap_count = LaplaceThresholding.for_budget(Budget(0.5, 1e-6), max_contributions=9)
    tg = TruncatedGeometric.for_budget(Budget(0.5, 1e-6), max_contributions=9)
    steps = [Step(str(k), c) for k, c in enumerate([w, mad, thr, lap_round, lap_count, tg])]
    got = noise_steps(steps)
    assert got == (
        gauss(w.sigma, 0.5, 5e-7),  # Δ2 = 1; δ/2 on the noise, δ/2 on the threshold
        gauss(mad.sigma, 0.5, 5e-7),
        gauss(thr.sigma / 3.0, 0.5, 5e-7),  # Δ2 = √k
        lap(0.5),  # Laplace(1/ε) on weights of ℓ1 sensitivity 1; all of δ on the threshold
        lap(0.5),  # Laplace(k/ε) on counts of ℓ1 sensitivity k
    )  # the truncated-geometric keep probabilities are left to basic composition
    assert [s.sampler for s in got] == ["gaussian"] * 3 + ["laplace"] * 2


def test_the_distinct_count_steps_are_pure_and_exact():
    for noise in ("discrete-laplace", "laplace"):
        plan = plan_release(1.0, 0.05, 10, noise=noise)
        gem, count = noise_steps(plan.steps)
        assert gem == NoiseStep(dp_event.DiscreteLaplaceDpEvent(0.5, 1), 0.5, 0.0)
        assert gem.sampler is None  # GEM samples exactly
        if noise == "laplace":  # Laplace(ℓ̂/ε) at sensitivity ℓ̂, whatever ℓ̂ is
            assert count == lap(0.5) and count.sampler == "laplace"
        else:  # exact discrete Laplace: dominated by the pure event
            assert count == gem


def test_every_round_of_a_plan_is_found():
    for name, gaussian_rounds in [("dp-sips", 3), ("mad2r", 2), ("basic-laplace", 0)]:
        params = PartitionSelectionParams(
            algorithm=name, split=(0.2, 0.3, 0.5)[: 3 if name == "dp-sips" else 2]
        )
        plan = REGISTRY[name].plan(params)
        steps = noise_steps(plan.steps)
        assert len(steps) == len(plan.steps)
        gaussian = [s for s in steps if s.kind == "gaussian"]
        assert len(gaussian) == gaussian_rounds
        assert sum(s.epsilon for s in steps) == pytest.approx(plan.epsilon)
        assert sum(s.delta_noise for s in steps) == pytest.approx(plan.delta / 2 if gaussian else 0)


@dataclass(frozen=True)
class _Misdescribed:
    event: object
    epsilon: float = 0.5
    delta: float = 1e-6
    delta_noise: float = 5e-7

    def dp_event(self):
        return self.event

    def to_report(self):
        return {}


@pytest.mark.parametrize(
    "event",
    [
        dp_event.GaussianDpEvent(1.0),  # σ = 1 is (0.5, 0.13)-DP, not (0.5, 5e-7)
        dp_event.LaplaceDpEvent(1.0),  # 1-DP, not 0.5-DP
        dp_event.DiscreteLaplaceDpEvent(0.25, 3),  # 0.75-DP
    ],
)
def test_a_step_whose_event_does_not_give_its_budget_is_refused(event):
    with pytest.raises(ParameterError, match=r"step 'bad'.* is not"):
        noise_steps([Step("bad", _Misdescribed(event))])


@pytest.mark.parametrize("multipliers", [[3.0], [4.0] * 10, [2.0, 5.0, 9.0, 9.0]])
def test_pld_matches_the_exact_gaussian_composition(multipliers):
    charges = [Charge(1.0, 2e-9, (gauss(m, 1.0, 1e-9),)) for m in multipliers]
    delta = 1e-5 + len(multipliers) * 1e-9  # thresholds take 1e-9 each, the Gaussians 1e-5
    exact = _exact(multipliers, 1e-5)
    pld_eps = tight_epsilon(charges, delta, "pld")
    rdp_eps = tight_epsilon(charges, delta, "rdp")
    assert exact - 1e-6 <= pld_eps <= exact * 1.01 + 1e-3  # an upper bound, and a tight one
    assert rdp_eps >= pld_eps - 1e-6


def test_gaussians_compose_to_one_gaussian():
    assert composed_multiplier([3.0, 4.0]) == pytest.approx(2.4)  # 1/√(1/9 + 1/16)
    assert composed_multiplier([2.0] * 4) == pytest.approx(1.0)


def test_the_threshold_delta_and_pure_steps_are_added_by_basic_composition():
    g = gauss(5.0, 0.4, 1e-7)
    charge = Charge(0.9, 3e-7, (g,))  # + ε 0.5 of a step not described, + δ 2e-7 of a threshold
    assert charge.rest == pytest.approx((0.5, 2e-7))
    assert tight_epsilon([charge] * 3, 6e-7, "pld") == math.inf  # δ all taken by thresholds
    got = tight_epsilon([charge] * 3, 1e-5, "pld")
    assert got == pytest.approx(1.5 + _exact([5.0] * 3, 1e-5 - 6e-7), rel=0.01)


def test_the_samplers_floor_is_paid_at_the_composed_epsilon():
    # five Gaussian steps of ε = 10: at a total ε of 45 the samplers' floor (1 + e^45)·5·N·τ is
    # far above the sum of the steps' own floors, 5·(1 + e^10)·N·τ
    sigma = gaussian_sigma(Budget(10.0, 1e-6))
    charges = [Charge(10.0, 2e-6, (gauss(sigma, 10.0, 1e-6),))] * 5
    floor = (1 + math.exp(45.0)) * 5 * SAMPLER
    assert floor > 1e-4
    assert tight_delta(charges, 45.0, "pld") >= floor + 5e-6  # + the thresholds' δ
    assert tight_delta(charges, 45.0, "pld") > 1e-4  # so a cap of (45, 1e-4) is not met


def _mixed_charges():
    """Two MAD2R-like Gaussian releases, Laplace rounds, a distinct count and a truncated-
    geometric selection (basic only), each with its thresholds' δ."""
    g1, g2 = gaussian_sigma(Budget(0.4, 1e-6)), gaussian_sigma(Budget(0.6, 1e-6))
    mad2r = Charge(1.0, 4e-6, (gauss(g1, 0.4, 1e-6), gauss(g2, 0.6, 1e-6)))  # + 2e-6 thresholds
    laplace_round = Charge(0.2, 1e-7, (lap(0.2),))
    count = Charge(1.0, 0.0, (NoiseStep(pure_dp_event(0.5), 0.5, 0.0),) * 2)
    geometric = Charge(0.3, 1e-7)
    return [mad2r, mad2r, *[laplace_round] * 6, count, geometric]


def _direct(charges, accountant, composed_kinds):
    """ε_rest, δ_rest, and an accountant that composed every supported event one by one."""
    acc = pld.PLDAccountant() if accountant == "pld" else rdp.RdpAccountant()
    eps_rest = delta_rest = 0.0
    for c in charges:
        steps = [s for s in c.noise if s.kind in composed_kinds]
        for s in steps:
            acc.compose(s.event)
        eps_rest += c.epsilon - sum(s.epsilon for s in steps)
        delta_rest += c.delta - sum(s.delta_noise for s in steps)
    return acc, eps_rest, delta_rest


@pytest.mark.parametrize(
    ("accountant", "kinds"),
    [("pld", {"gaussian", "laplace", "discrete_laplace"}), ("rdp", {"gaussian", "laplace"})],
)
def test_mixed_gaussian_and_laplace_steps_compose_as_dp_accounting_does(accountant, kinds):
    charges = _mixed_charges()
    acc, eps_rest, delta_rest = _direct(charges, accountant, kinds)
    n_sampled = 2 * 2 + 6 * 2  # Gaussian rounds once, Laplace rounds twice the tail mass
    for epsilon in (2.0, 3.0, 4.5):
        floor = (1 + math.exp(epsilon)) * n_sampled * SAMPLER
        expected = delta_rest + acc.get_delta(epsilon - eps_rest) + floor
        assert tight_delta(charges, epsilon, accountant) == pytest.approx(expected, rel=1e-2)
    delta = 1e-5
    expected = eps_rest + acc.get_epsilon(delta - delta_rest)
    assert tight_epsilon(charges, delta, accountant) == pytest.approx(expected, rel=1e-3)
    assert tight_epsilon(charges, delta, accountant) < sum(c.epsilon for c in charges)


def test_pure_steps_compose_as_randomized_response():
    # k pure-ε steps: the loss is ±ε0 per step, a binomial; PLD bounds it tightly from above
    for epsilon0, k in [(0.5, 1), (0.5, 8), (0.1, 40)]:
        charges = [Charge(epsilon0, 0.0, (NoiseStep(pure_dp_event(epsilon0), epsilon0, 0.0),))]
        for epsilon in (0.0, 0.5 * k * epsilon0, 0.9 * k * epsilon0):
            exact = pure_composition_delta(epsilon0, k, epsilon)
            got = tight_delta(charges * k, epsilon, "pld")
            assert exact - 1e-12 <= got <= exact * 1.01 + 1e-6


@pytest.mark.parametrize("ell", [2, 3, 7])
def test_the_discrete_laplace_at_any_sensitivity_is_dominated_by_the_pure_event(ell):
    # DLap(ε/ℓ) against a shift of ℓ is ε-DP; its PLD lies below the randomized-response one
    for epsilon0 in (0.3, 1.0):
        at_ell = pld.PLDAccountant()
        at_ell.compose(dp_event.DiscreteLaplaceDpEvent(epsilon0 / ell, ell), 3)
        pure = pld.PLDAccountant()
        pure.compose(pure_dp_event(epsilon0), 3)
        for epsilon in (0.0, 0.5, 1.0, 2.0):
            assert at_ell.get_delta(epsilon) <= pure.get_delta(epsilon) + 1e-9


def test_laplace_steps_are_bracketed_by_the_grid_oracle():
    charges = [Charge(0.2, 1e-7, (lap(0.2),))] * 10 + [Charge(0.5, 0.0, (gauss(4.0, 0.5, 1e-3),))]
    h = 2e-4
    upper = LossGrid.laplace(0.2, h, upper=True).power(10)
    upper = upper.compose(LossGrid.gaussian(4.0, h, upper=True))
    lower = LossGrid.laplace(0.2, h, upper=False).power(10)
    lower = lower.compose(LossGrid.gaussian(4.0, h, upper=False))
    for epsilon in (0.5, 1.0, 1.5):
        got = tight_delta(charges, epsilon, "pld") - 10 * 1e-7
        assert lower.delta(epsilon) - 1e-12 <= got <= upper.delta(epsilon) * 1.01 + 1e-9


def test_old_gaussian_step_dicts_are_read_as_gaussian_steps():
    old = {"noise_multiplier": 3.0, "epsilon": 0.5, "delta_noise": 1e-6}  # before issue 37
    assert NoiseStep.from_dict(old) == gauss(3.0, 0.5, 1e-6)
    for step in (gauss(3.0, 0.5, 1e-6), lap(0.3), NoiseStep(pure_dp_event(0.4), 0.4, 0.0)):
        assert NoiseStep.from_dict(step.to_dict()) == step


def test_a_store_with_old_gaussian_rows_reads_and_composes_as_before(tmp_path):
    # rows reserved before Laplace steps were recorded hold {noise_multiplier, epsilon,
    # delta_noise} without "event": the store reads them as Gaussian steps
    url = f"sqlite:///{tmp_path / 'old.db'}"
    round_ = WeightAndThreshold.for_budget(Budget(0.25, 2e-6), max_contributions=10)
    steps = noise_steps([Step("round 1", round_)])
    old = json.dumps([{"noise_multiplier": round_.sigma, "epsilon": 0.25, "delta_noise": 1e-6}])
    with BudgetStore.open(url) as store:
        store.set_accountant("zcdp")
        store.set_cap("d", 1.0, 1e-4)
        for n in range(5):
            kw = {"epsilon": 0.25, "delta": 2e-6, "noise": steps}
            r = store.reserve(dataset="d", identity=f"i{n}", job="ps", **kw)
            store.commit(store.bind(store.charge(r), f"r{n}"))
        (before,) = store.summary()
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(RUNS.update().values(noise=old))
    engine.dispose()
    with BudgetStore.open(url) as store:
        (after,) = store.summary()
        assert after.tight_epsilon == before.tight_epsilon < 1.0 < after.spent_epsilon
        kw = {"epsilon": 0.25, "delta": 2e-6, "noise": steps}
        r = store.reserve(dataset="d", identity="i5", job="ps", **kw)  # still fits
        store.commit(store.bind(store.charge(r), "r5"))
