"""The PLD certificate of ``--max-contributions auto`` (docs/design/tuning.md#composition).

The oracle is exact and independent of dp-accounting: the choice is dominated by the
randomized-response pair of ε_t (privacy loss ±ε_t, +ε_t with probability q = e^ε_t/(1 + e^ε_t)),
the Gaussian rounds compose to one Gaussian of multiplier m = (Σ m_i⁻²)^−1/2, and the hockey-stick
divergence of a product is the mixture over the first pair's outcomes:

    δ(ε) = q·δ_G(m, ε − ε_t) + (1 − q)·δ_G(m, ε + ε_t),
    δ_G(m, e) = Φ(−e·m + 1/(2m)) − e^e·Φ(−e·m − 1/(2m))   (Balle & Wang 2018, any real e),

to which the thresholds' δ is added (basic composition). The release must be (ε, δ)-DP by it.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from spark_dp.dp.accounting import Charge, noise_steps
from spark_dp.partition_selection import PartitionSelectionParams, plan_selection
from spark_dp.partition_selection.auto.calibration import DeltaChoice
from spark_dp.partition_selection.auto.composition import certified_delta
from spark_dp.partition_selection.auto.plan import AutoPlan
from spark_dp.report import Step


def _gaussian_delta(m: float, e: float) -> float:
    return float(norm.cdf(-e * m + 1 / (2 * m)) - math.exp(e) * norm.cdf(-e * m - 1 / (2 * m)))


def exact_delta(plan: AutoPlan, epsilon: float) -> float:
    """The exact δ at ε of the choice and the rounds of ``plan`` (module docstring)."""
    rounds = [s.calibration for s in plan.plans[0].steps]
    m = math.fsum(r.dp_event().noise_multiplier ** -2 for r in rounds) ** -0.5
    et = plan.choice.epsilon
    q = math.exp(et) / (1 + math.exp(et))
    noise = q * _gaussian_delta(m, epsilon - et) + (1 - q) * _gaussian_delta(m, epsilon + et)
    return noise + sum(r.delta_threshold for r in rounds)


def _auto(algorithm: str, epsilon: float, delta: float, share: float) -> AutoPlan:
    plan = plan_selection(
        PartitionSelectionParams(
            algorithm=algorithm,
            epsilon=epsilon,
            delta=delta,
            max_contributions="auto",
            tuning_share=share,
        )
    )
    assert isinstance(plan, AutoPlan)
    return plan


@pytest.mark.parametrize("algorithm", ["basic", "mad", "mad2r", "dp-sips"])
@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-5), (0.3, 1e-8), (4.0, 1e-6)])
def test_the_certificate_holds_by_the_exact_composition(algorithm, epsilon, delta):
    plan = _auto(algorithm, epsilon, delta, 0.05)
    c = plan.composition
    assert c is not None and (plan.epsilon, plan.delta) == (epsilon, delta)
    # the rounds get more than basic composition leaves, never more than ε
    assert epsilon * 0.95 < c.selection_epsilon <= epsilon
    assert all(p.epsilon == pytest.approx(c.selection_epsilon) for p in plan.plans)
    assert c.certified_delta <= delta
    assert exact_delta(plan, epsilon) <= delta * (1 + 1e-9)
    # the steps alone add up to more than the release's ε: the certificate is what proves it
    assert sum(s.epsilon for s in plan.steps) > epsilon


@pytest.mark.parametrize("share", [0.03, 0.05, 0.1])
def test_basic_gets_all_the_certificate_allows(share):
    # one Gaussian round: the bisection stops within ε_t/4096 of the largest ε_s that fits, so
    # the exact δ is close to the budget, and a little more ε_s would not fit
    plan = _auto("basic", 1.0, 1e-5, share)
    assert plan.composition is not None and plan.composition.selection_epsilon < 1.0
    assert exact_delta(plan, 1.0) >= 1e-5 * 0.99
    again = _auto("basic", 1.0, 1e-5, share)
    assert again.composition == plan.composition  # public parameters only: the same budget


@settings(max_examples=12, deadline=None)
@given(
    epsilon=st.floats(0.1, 8.0),
    delta_exponent=st.floats(-9.0, -3.0),
    share=st.floats(0.01, 0.5),
    algorithm=st.sampled_from(["basic", "mad2r"]),
)
def test_the_certificate_holds_for_any_public_parameters(epsilon, delta_exponent, share, algorithm):
    delta = 10.0**delta_exponent
    plan = _auto(algorithm, epsilon, delta, share)
    assert (plan.epsilon, plan.delta) == (epsilon, delta)
    if plan.composition is None:  # basic composition: the steps add up to the release
        assert sum(s.epsilon for s in plan.steps) == pytest.approx(epsilon)
        assert plan.plans[0].epsilon == pytest.approx(epsilon * (1 - share))
    else:
        assert plan.composition.selection_epsilon >= epsilon * (1 - share)
    assert exact_delta(plan, epsilon) <= delta * (1 + 1e-9)


def test_a_choice_that_spends_twice_its_claim_breaks_the_certificate():
    # the certificate has power: the same rounds after a choice at 2·ε_t exceed δ, by the
    # accountant and by the exact composition alike
    plan = _auto("basic", 1.0, 1e-5, 0.05)
    doubled = DeltaChoice(2 * plan.choice.epsilon, plan.choice.scores)
    steps = (Step(plan.steps[0].label, doubled), *plan.steps[1:])
    assert certified_delta(steps, 1.0, 1e-5) > 1e-5
    broken = AutoPlan(plan.algorithm, doubled, plan.plans, plan.composition)
    assert exact_delta(broken, 1.0) > 1e-5


@pytest.mark.parametrize("algorithm", ["basic-laplace", "truncated-geometric"])
def test_without_a_better_bound_the_release_is_the_sum_of_its_steps(algorithm):
    # pure-ε Laplace noise may spend no δ, and truncated geometric has no accountant event:
    # the PLD bound proves nothing better, the rounds get ε − ε_t, the account is the sum
    plan = _auto(algorithm, 1.0, 1e-5, 0.1)
    assert plan.composition is None
    assert plan.plans[0].epsilon == pytest.approx(0.9)
    assert plan.epsilon == pytest.approx(sum(s.epsilon for s in plan.steps))


def test_a_certified_release_is_composed_whole_or_booked_by_its_total():
    plan = _auto("basic", 1.0, 1e-5, 0.05)
    charge = Charge(plan.epsilon, plan.delta, noise_steps(plan.steps))
    assert charge.certified
    steps, eps, delta = charge.split(lambda s: True)  # PLD composes both steps
    assert len(steps) == 2 and eps == 0.0
    assert delta == pytest.approx(plan.plans[0].steps[0].calibration.delta_threshold)
    # an accountant that cannot compose the choice's event (RDP) books the whole release at
    # its certified (ε, δ): never ε minus the round's ε, which would drop the choice
    steps, eps, delta = charge.split(lambda s: s.kind == "gaussian")
    assert steps == () and (eps, delta) == (1.0, 1e-5)
    # a release whose steps add up to its total is split as before
    fixed = plan.plans[0]
    plain = Charge(fixed.epsilon, fixed.delta, noise_steps(fixed.steps))
    assert not plain.certified
    assert plain.split(lambda s: False) == ((), fixed.epsilon, fixed.delta)
