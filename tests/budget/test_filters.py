"""The store's privacy filter (docs/design/adaptive-composition.md): each step's conversion to
zCDP, the conversion of ρ to (ε, δ) against dp-accounting's, the filter's budget, soundness
against exact compositions (hypothesis), the cap's refusals, and a store of an earlier version
set to PLD moved to the filter without under-counting."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
import sqlalchemy as sa
from dp_accounting import dp_event
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_dp.budget import BudgetRefused, BudgetStore, NoiseStep, noise_steps
from spark_dp.budget.schema import SETTINGS
from spark_dp.distinct_count.plan import plan_release
from spark_dp.dp.accounting import Charge, certified_epsilon, fits_cap
from spark_dp.dp.calibration import Budget, gaussian_epsilon, sampler_divergence
from spark_dp.dp.composition import tight_epsilon
from spark_dp.dp.filters import (
    FILTER_DELTA_SHARE,
    ZcdpFilter,
    filter_epsilon,
    release_cost,
    step_rho,
    zcdp_budget,
    zcdp_epsilon,
)
from spark_dp.dp.protocol import pure_dp_event
from spark_dp.partition_selection.calibration import LaplaceWeightAndThreshold, WeightAndThreshold
from spark_dp.report import Step
from tests.reference.accounting import pure_composition_delta


def gauss(multiplier: float, epsilon: float = 1.0, delta_noise: float = 1e-6) -> NoiseStep:
    return NoiseStep(dp_event.GaussianDpEvent(multiplier), epsilon, delta_noise)


def pure(epsilon: float) -> NoiseStep:
    return NoiseStep(pure_dp_event(epsilon), epsilon, 0.0)


def _exact_gaussian(multipliers: list[float], delta: float) -> float:
    """ε at δ of Gaussians composed exactly (one Gaussian, σ = (Σ m⁻²)^(-1/2))."""
    return gaussian_epsilon(sum(m**-2 for m in multipliers) ** -0.5, delta)


def _exact_pure(epsilon0: float, k: int, delta: float) -> float:
    """ε at δ of k ε0-DP steps composed optimally (the binomial of randomized response)."""
    low, high = 0.0, k * epsilon0
    if pure_composition_delta(epsilon0, k, 0.0) <= delta:
        return 0.0
    for _ in range(60):
        middle = (low + high) / 2
        if pure_composition_delta(epsilon0, k, middle) <= delta:
            high = middle
        else:
            low = middle
    return low


def test_each_step_is_converted_from_its_event():
    assert step_rho(gauss(4.0)) == pytest.approx(1 / 32)  # Δ²/(2σ²) with m = σ/Δ
    assert step_rho(NoiseStep(dp_event.LaplaceDpEvent(2.0), 0.5, 0.0)) == pytest.approx(0.125)
    discrete = NoiseStep(dp_event.DiscreteLaplaceDpEvent(0.25, 3), 0.75, 0.0)
    assert step_rho(discrete) == pytest.approx(0.75**2 / 2)  # pure ε = a·C
    # real calibrations: a Basic round (Δ2 = 1), a Laplace round (all of δ is its threshold's)
    # and the distinct count's GEM and discrete-Laplace count (pure 0.5 each)
    w = WeightAndThreshold.for_budget(Budget(0.5, 1e-6), max_contributions=20)
    lap = LaplaceWeightAndThreshold.for_budget(Budget(0.5, 1e-6), max_contributions=20)
    (gaussian_round,) = noise_steps([Step("round", w)])
    cost = release_cost(Charge(w.epsilon, w.delta, (gaussian_round,)))
    assert cost.rho == pytest.approx(1 / (2 * w.sigma**2))
    assert cost.delta == pytest.approx(w.delta / 2)  # the threshold's share
    assert cost.divergence == pytest.approx(sampler_divergence("gaussian"))
    (laplace_round,) = noise_steps([Step("round", lap)])
    cost = release_cost(Charge(lap.epsilon, lap.delta, (laplace_round,)))
    assert (cost.rho, cost.delta) == (pytest.approx(0.125), pytest.approx(1e-6))
    count = plan_release(1.0, 0.05, 10)
    charge = Charge(count.epsilon, 0.0, noise_steps(count.steps))
    assert release_cost(charge).rho == pytest.approx(2 * 0.5**2 / 2)
    # a step only basic composition accounts for (truncated-geometric selection): ε²/2 and δ
    assert release_cost(Charge(0.6, 1e-7)) == release_cost(Charge(0.6, 1e-7, ()))
    assert release_cost(Charge(0.6, 1e-7)).rho == pytest.approx(0.18)


@pytest.mark.parametrize("rho", [1e-6, 1e-3, 0.05, 0.5, 3.0, 40.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-6, 1e-3])
def test_the_conversion_is_dp_accountings_at_its_best_order(rho, delta):
    orders = np.concatenate([np.linspace(1.0101, 12, 4000), np.geomspace(12, 1e7, 6000)])
    reference, _ = compute_epsilon(orders, orders * rho, delta)
    got = zcdp_epsilon(rho, delta)
    assert got == pytest.approx(reference, rel=1e-4, abs=1e-9)
    assert got <= rho + 2 * math.sqrt(rho * math.log(1 / delta)) + 1e-12  # Bun & Steinke
    assert zcdp_epsilon(0.0, delta) == 0.0 and zcdp_epsilon(rho, 0.0) == math.inf


@pytest.mark.parametrize(("epsilon", "delta"), [(0.3, 1e-6), (1.0, 5e-6), (8.0, 1e-9)])
def test_the_budget_is_the_largest_rho_the_conversion_admits(epsilon, delta):
    rho = zcdp_budget(epsilon, delta)
    assert zcdp_epsilon(rho, delta) <= epsilon < zcdp_epsilon(rho * (1 + 1e-9), delta)
    cap = ZcdpFilter(epsilon, 2 * delta)
    assert cap.delta_budget == cap.conversion_delta == pytest.approx(delta)
    assert FILTER_DELTA_SHARE == 0.5 and cap.rho_budget == rho


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(min_value=0.8, max_value=30.0), min_size=1, max_size=12),
    st.sampled_from([1e-8, 1e-6, 1e-4]),
)
def test_the_filter_never_certifies_below_the_exact_gaussian_composition(multipliers, delta):
    """For Gaussian releases fixed in advance the exact composition is a lower bound of any
    sound certificate: the filter's ε (at the same total δ) is never below it."""
    charges = [Charge(1.0, 0.0, (gauss(m, 1e3, 0.5),)) for m in multipliers]
    assert filter_epsilon(charges, delta) >= _exact_gaussian(multipliers, delta) - 1e-9


@settings(max_examples=60, deadline=None)
@given(
    st.floats(min_value=0.01, max_value=2.0),
    st.integers(min_value=1, max_value=40),
    st.sampled_from([1e-9, 1e-6, 1e-3]),
)
def test_the_filter_never_certifies_below_the_exact_pure_composition(epsilon0, k, delta):
    """k pure ε0-DP releases: the optimal composition (exact) bounds every sound certificate
    from below; where it is basic composition's k·ε0 (few steps, small δ: basic is tight), the
    filter never certifies less than k·ε0; the store's basic accountant certifies k·ε0 itself."""
    charges = [Charge(epsilon0, 0.0, (pure(epsilon0),))] * k
    exact = _exact_pure(epsilon0, k, delta)
    got = filter_epsilon(charges, delta)
    assert got >= exact - 1e-9
    if exact >= k * epsilon0 * (1 - 1e-9):  # basic composition is tight here
        assert got >= k * epsilon0 * (1 - 1e-9)
    assert certified_epsilon(charges, delta, "basic") == pytest.approx(k * epsilon0)


def test_the_filter_admits_by_its_budgets_and_a_pure_cap_by_basic_composition():
    step = gauss(15.0, 0.5, 1e-7)  # ρ = 1/450
    one = Charge(0.5, 2e-7, (step,))  # the threshold: 1e-7
    cap = ZcdpFilter(1.0, 1e-5)
    n = math.floor(cap.rho_budget * 450 + 1e-9)
    assert cap.admits([one] * n) and not cap.admits([one] * (n + 1))
    assert fits_cap([one] * n, 1.0, 1e-5, "zcdp") and not fits_cap([one] * n, 1.0, 1e-5, "basic")
    # the releases' own δ: 1e-7 each, at most δ_B = 5e-6 in all
    assert not ZcdpFilter(100.0, 1e-5).admits([one] * 51)
    assert certified_epsilon([one] * 51, 1e-5, "zcdp") == math.inf
    # a cap with δ = 0 leaves the filter no conversion: basic composition, fixed by the cap
    pures = [Charge(0.25, 0.0, (pure(0.25),))] * 4
    assert fits_cap(pures, 1.0, 0.0, "zcdp") and not fits_cap(pures * 2, 1.9, 0.0, "zcdp")
    assert certified_epsilon(pures, 0.0, "zcdp") == pytest.approx(1.0)


def _reserve_until_refused(store, steps, epsilon, delta):
    n = 0
    while True:
        try:
            r = store.reserve(
                dataset="d", identity=f"i{n}", job="ps", epsilon=epsilon, delta=delta, noise=steps
            )
        except BudgetRefused as refused:
            return n, str(refused)
        store.commit(store.bind(store.charge(r), f"r{n}"))
        n += 1


def test_a_zcdp_store_admits_more_gaussian_releases_than_basic_and_stays_within_its_cap(tmp_path):
    round_ = WeightAndThreshold.for_budget(Budget(0.25, 1e-7), max_contributions=10)
    steps = noise_steps([Step("round 1", round_)])
    counts = {}
    for accountant in ("basic", "zcdp"):
        with BudgetStore.open(f"sqlite:///{tmp_path / accountant}.db") as store:
            store.set_accountant(accountant)
            store.set_cap("d", 2.0, 1e-5)
            counts[accountant], refusal = _reserve_until_refused(store, steps, 0.25, 1e-7)
            (row,) = store.summary()
            assert row.releases == counts[accountant]
    assert counts["basic"] == 8 and counts["zcdp"] > 8
    n = counts["zcdp"]
    assert "zcdp filter: with it they need a cap of ε=" in refusal and "\n" not in refusal
    rho = 1 / (2 * round_.sigma**2)
    assert n * rho <= zcdp_budget(2.0, 5e-6) < (n + 1) * rho
    # what was admitted is within the cap by the exact composition too
    assert _exact_gaussian([round_.sigma] * n, 1e-5 - n * 5e-8) <= 2.0


def test_a_store_set_to_pld_moves_to_the_filter_and_never_under_counts(tmp_path, caplog):
    """An earlier version's PLD store: opened, it is the zcdp filter (one warning, its setting
    rewritten so an earlier spark_dp refuses the store); its releases are re-counted by the
    filter, which certifies no less than their exact composition and refuses the next release
    where PLD would have admitted it."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    steps = (pure(0.25),)  # e.g. distinct counts: pure ε, where PLD beats basic composition
    charge = Charge(0.25, 0.0, steps)
    n = 12  # PLD certified 12 of them (and a 13th) within a cap of ε = 3.2 at δ = 1e-4
    assert tight_epsilon([charge] * (n + 1), 1e-4, "pld") <= 3.2 < (n + 1) * 0.25
    with BudgetStore.open(url) as store:
        store.set_cap("d", 100.0, 1e-4)
        for k in range(n):
            r = store.reserve(dataset="d", identity=f"i{k}", job="dc", epsilon=0.25, delta=0.0,
                              noise=steps)  # fmt: skip
            store.commit(store.bind(store.charge(r), f"r{k}"))
        store.set_cap("d", 3.2, 1e-4)
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(SETTINGS.insert().values(key="accountant", value="pld"))
    engine.dispose()
    with caplog.at_level(logging.WARNING, logger="spark_dp.budget"):
        store = BudgetStore.open(url)
    with store:
        assert store.accountant == "zcdp" and store._setting("accountant") == "zcdp"
        assert "accountant pld" in caplog.text and "zcdp" in caplog.text
        (row,) = store.summary()
        assert row.tight_epsilon == pytest.approx(filter_epsilon([charge] * n, 1e-4))
        assert row.tight_epsilon >= _exact_pure(0.25, n, 1e-4)  # never below the truth
        assert row.tight_epsilon > 3.2  # more than the cap: no further release
        with pytest.raises(BudgetRefused, match="zcdp filter"):
            store.reserve(dataset="d", identity="next", job="dc", epsilon=0.25, delta=0.0,
                          noise=steps)  # fmt: skip
