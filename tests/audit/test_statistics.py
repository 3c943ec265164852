"""The audit's statistics, and the power of ``--fast`` against each broken variant (no Spark).

The power is computed exactly (binomial sums) from each broken variant's true behaviour, derived
here by hand from its calibration, at the canary and event the audit itself would choose. At the
fast parameters (ε = 1, δ = 0.2, Δ0 = 2, 2,000 runs per dataset, α = 1e-3) the table is:

==============================  ==========  =============================  =======
variant                         test        true value vs claimed          power
==============================  ==========  =============================  =======
broken-rho-full-delta           novel       rate 0.200 vs share 0.100      1.000
broken-full-delta               novel       rate 0.200 vs share 0.100      1.000
broken-double-singletons        novel       rate 0.300 vs share 0.100      1.000
broken-no-cap                   novel       rate 0.317 vs share 0.100      1.000
broken-sigma-2eps               ε           σ for 2ε at the chosen event   0.998
broken-greedy-update-prefix     novel       rate 0.813 vs share 0.200      1.000
broken-distinct-count-4eps      ε           noise for 4·ε_count            1.000
==============================  ==========  =============================  =======

(``test_power_table`` recomputes and prints it; the assertions are the ≥ 0.95 requirement.) The
distinct-count audit has less reach: count noise for 3·ε_count is caught with power 1.0, for
2·ε_count with power ≈ 0 (its best event shows the count step's ε and almost none of GEM's).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from spark_dp.audit.api import DEFAULT_RUNS, default_runs
from spark_dp.audit.broken import BROKEN, build_broken
from spark_dp.audit.placement import (
    count_event_probabilities,
    place_count_event,
    place_epsilon_item,
)
from spark_dp.audit.scenario import choice_datasets, distinct_count_datasets
from spark_dp.audit.statistics import (
    Confidence,
    EventCounts,
    clopper_pearson,
    epsilon_lower_bound,
    epsilon_test_power,
    novel_test_power,
)
from spark_dp.audit.targets import MECHANISMS, SparkSelection, build_target
from spark_dp.distinct_count import exact_curve_local
from spark_dp.partition_selection.calibration import LaplaceWeightAndThreshold, WeightAndThreshold
from spark_dp.partition_selection.mad_constants import MadRound
from spark_dp.partition_selection.tuning_calibration import fixed_point_weight, quantized_terms

ALPHA = Confidence().alpha


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (57, 400), (1, 2000)])
def test_clopper_pearson_matches_scipy_exact_interval(k, n):
    # scipy's two-sided exact interval at level 1 − 2a is the pair of one-sided bounds at a.
    a = 0.01
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=1 - 2 * a, method="exact")
    lo, hi = clopper_pearson(k, n, a)
    assert lo == pytest.approx(ci.low, abs=1e-12)
    assert hi == pytest.approx(ci.high, abs=1e-12)


def test_epsilon_lower_bound_formula():
    assert epsilon_lower_bound(0.5, 0.1, 0.0) == pytest.approx(math.log(5))
    assert epsilon_lower_bound(0.5, 0.1, 0.2) == pytest.approx(math.log(3))
    assert epsilon_lower_bound(0.2, 0.1, 0.2) == 0.0  # p_lo ≤ δ: no evidence
    counts = EventCounts("e", "D'", "D", 500, 1000, 100, 1000)
    lo, _ = clopper_pearson(500, 1000, 1e-4)
    _, hi = clopper_pearson(100, 1000, 1e-4)
    assert counts.epsilon_lower_bound(0.05, 1e-4) == pytest.approx(math.log((lo - 0.05) / hi))


def test_false_failure_rate_of_a_tight_mechanism_is_at_most_alpha():
    # A mechanism exactly at its claim (rate = share; p = e^ε·q + δ) fails with prob ≤ α/5.
    c = Confidence()
    assert novel_test_power(0.1, 0.1, 4000, c.per_test) <= c.per_test
    q, eps, delta = 0.1, 1.0, 0.1
    p = math.exp(eps) * q + delta
    assert epsilon_test_power(p, q, delta, eps, 2000, c.per_bound) <= c.per_test


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


# --------------------------------------------------------------------------- power table


def gaussian_novel_rate(cal: WeightAndThreshold, t: int, h: float) -> float:
    """P[one of t novel items of weight h crosses ρ] with noise N(0, σ²)."""
    return 1.0 - stats.norm.cdf((cal.rho - h) / cal.sigma) ** t


def broken_novel_rate(name: str) -> tuple[float, float]:
    """(true novel-item rate of the broken variant, its claimed share) at the fast parameters."""
    target = build_broken(name)
    claim = target.claim
    if name == "broken-greedy-update-prefix":
        eps, delta, n = claim.epsilon, claim.delta, target.novel_items()
        # the first novel item gets weight 1 (crosses with prob. δ), the others 0 (δ·e^−ε each)
        return 1.0 - (1.0 - delta) * (1.0 - delta * math.exp(-eps)) ** (n - 1), claim.delta_novel
    assert isinstance(target, SparkSelection)
    real = build_target("basic").plan.calibration(0, WeightAndThreshold)
    broken = target.plan.calibration(0, WeightAndThreshold)
    cap, n = real.max_items, target.novel_items()
    t = min(cap, n)
    if name == "broken-double-singletons":
        return gaussian_novel_rate(real, t, 2.0 / math.sqrt(t)), claim.delta_novel
    if name == "broken-no-cap":
        return gaussian_novel_rate(real, n, 1.0 / math.sqrt(n)), claim.delta_novel
    return gaussian_novel_rate(broken, t, 1.0 / math.sqrt(t)), claim.delta_novel


def best_comparison_power(p: float, q: float, delta: float, eps: float, runs: int) -> float:
    """Power of the best of the four comparisons (a lower bound on the power of their max)."""
    a = Confidence().per_bound
    return max(
        epsilon_test_power(p, q, delta, eps, runs, a),
        epsilon_test_power(q, p, delta, eps, runs, a),
        epsilon_test_power(1 - q, 1 - p, delta, eps, runs, a),
        epsilon_test_power(1 - p, 1 - q, delta, eps, runs, a),
    )


def sigma_2eps_power() -> float:
    target = build_broken("broken-sigma-2eps")
    claim, runs = target.claim, DEFAULT_RUNS
    m = place_epsilon_item(target.release_probability, claim.delta_event, runs,
                           Confidence().per_bound)  # fmt: skip
    # the broken σ is what the run really uses, so its model is the truth here
    truth = target.plan.calibration(0, WeightAndThreshold).release_probability
    return best_comparison_power(truth(m + 1.0), truth(float(m)), claim.delta_event,
                                 claim.epsilon, runs)  # fmt: skip


def local_curve(sets: dict, ell_max: int) -> np.ndarray:
    pairs = [(u, i) for u, items in sets.items() for i in items]
    persons = {u: k for k, u in enumerate(sets)}
    items = {i: k for k, i in enumerate(sorted({i for _, i in pairs}))}
    return exact_curve_local(
        np.array([persons[u] for u, _ in pairs]), np.array([items[i] for _, i in pairs]), ell_max
    )


def count_4eps_power() -> float:
    target = build_broken("broken-distinct-count-4eps")
    plan, runs = target.plan, default_runs("broken-distinct-count-4eps")
    base, neighbour = distinct_count_datasets(plan.ell_max)
    c_d, c_n = local_curve(base, plan.ell_max), local_curve(neighbour, plan.ell_max)
    event = place_count_event(plan, c_d, c_n, runs, Confidence().per_bound)
    cut = np.array([float(event.cut)])
    p_rows, q_rows = (
        count_event_probabilities(plan, c_n, cut),
        count_event_probabilities(plan, c_d, cut),
    )
    pick = slice(None) if event.ell is None else slice(event.ell - 1, event.ell)
    p, q = float(p_rows[pick].sum()), float(q_rows[pick].sum())
    return best_comparison_power(p, q, 0.0, target.claim.epsilon, runs)


def noiseless_choice_power() -> float:
    # the noiseless argmax on the audit's datasets: Δ0 = top on D' always, on D never
    target = build_broken("broken-auto-noiseless")
    choice = target.choice
    low, top = choice.scores[0], choice.scores[-1]
    totals = []
    for sets in choice_datasets(low.sigma, low.rho, top.rho, top.max_items):
        totals.append(local_choice_totals(sets, choice))
    picks = [target.choose(choice, t, None) for t in totals]
    p = float(picks[1] == top.max_items)
    q = float(picks[0] == top.max_items)
    return best_comparison_power(p, q, 0.0, target.claim.epsilon, default_runs(target.name))


def local_choice_totals(sets: dict, choice) -> list[int]:
    """The exact score totals on the driver (every user keeps its first c items: the audit's
    users hold one item, or the canary's targets, all alike)."""
    out = []
    for score in choice.scores:
        c = score.max_items
        weights: dict = {}
        for items in sets.values():
            share = int(fixed_point_weight(min(len(items), c)))
            for i in items[:c]:
                weights[i] = weights.get(i, 0) + share
        w = np.fromiter(weights.values(), dtype=np.int64, count=len(weights))
        out.append(int(quantized_terms(w, score.sigma, score.rho).sum()))
    return out


def test_power_table():
    c = Confidence()
    rows = []
    for name, variant in BROKEN.items():
        if variant.caught_by == "novel-item test":
            rate, share = broken_novel_rate(name)
            power = novel_test_power(rate, share, 2 * default_runs(name), c.per_test)
            rows.append((name, f"rate {rate:.3f} vs share {share:g}", power))
        elif name == "broken-sigma-2eps":
            rows.append((name, "ε test", sigma_2eps_power()))
        elif name == "broken-auto-noiseless":
            rows.append((name, "ε test", noiseless_choice_power()))
        else:
            rows.append((name, "ε test", count_4eps_power()))
    for name, what, power in rows:
        print(f"{name:32s} {what:32s} power {power:.4f}")
    assert {r[0] for r in rows} == set(BROKEN)
    for name, _, power in rows:
        assert power >= 0.95, name


SINGLE_ROUND = [
    m for m in MECHANISMS if m not in ("dp-sips", "mad2r", "distinct-count", "auto-choice")
]


@pytest.mark.parametrize("name", SINGLE_ROUND)
def test_the_novel_canary_attains_the_claimed_share(name):
    # At the canary (t novel items after the cap, each of weight h(t)), the chance that one is
    # released equals the claimed share: the novel-item test is as sharp as it can be.
    target = build_target(name)
    if isinstance(target, SparkSelection):
        cal = target.plan.steps[0].calibration
    else:
        cal = target.calibration
    model = cal.release_probability
    n = target.novel_items()
    if isinstance(cal, LaplaceWeightAndThreshold):
        t = min(cal.max_items, n)
        h = 1.0 / t
    elif isinstance(cal, WeightAndThreshold | MadRound):
        t = min(cal.max_items, n)
        h = 1.0 / math.sqrt(t)
    elif name == "greedy-update":
        t, h = 1, 1.0  # the canary's budget of 1 lands on one novel item
    else:
        t, h = cal.max_items, 1.0  # count thresholding: k items of count 1
    rate = 1.0 - (1.0 - model(h)) ** t
    assert rate == pytest.approx(target.claim.delta_novel, rel=1e-9)
