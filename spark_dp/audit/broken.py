"""Deliberately broken mechanisms: the audit must fail every one of them.

Each variant wraps a real mechanism and changes exactly one thing, then runs through the same
code path as the real one (a registry entry with a different ``plan`` or ``run`` goes through
``select_partitions``; an oracle or a distinct-count plan is swapped in the same way). The
changes are the mistakes issue 15 lists, and the pre-fix GreedyUpdate of issue 14:

===========================  ===================================================  ==========
variant                      the one change                                       caught by
===========================  ===================================================  ==========
broken-rho-full-delta        Basic's ρ calibrated for δ instead of δ/2            novel test
broken-full-delta            Basic's σ and ρ both calibrated for the full δ       novel test
broken-double-singletons     Basic's weight doubled on items held by one user     novel test
broken-sigma-2eps            Basic's σ calibrated for 2ε (ρ follows from it)      ε test
broken-no-cap                Basic without the Δ0 cap (ρ still for Δ0 items)      novel test
broken-greedy-update-prefix  GreedyUpdate noising every item, zero weights too    novel test
broken-distinct-count-4eps   distinct count's noise calibrated for 4·ε_count      ε test
broken-auto-noiseless        Δ0 chosen as the argmax of the noiseless scores      ε test
===========================  ===================================================  ==========

Nothing here is ever registered: the job, ``calibrate`` and the bench cannot reach it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_dp.audit.choice import ChoiceTarget
from spark_dp.audit.targets import (
    CountTarget,
    OracleSelection,
    Settings,
    SparkSelection,
    Target,
    build_target,
)
from spark_dp.calibration import Budget, gaussian_sigma
from spark_dp.distinct_count.calibration import DiscreteLaplaceRelease
from spark_dp.partition_selection import basic
from spark_dp.partition_selection.calibration import WeightAndThreshold, gaussian_threshold
from spark_dp.partition_selection.columns import ITEM, USER_COUNT, WEIGHT
from spark_dp.partition_selection.oracles import (
    OracleResult,
    greedy_update_histogram,
    laplace_release,
)
from spark_dp.partition_selection.result import SelectionPlan
from spark_dp.partition_selection.tuning_calibration import DeltaChoice
from spark_dp.partition_selection.weighting import basic_weights
from spark_dp.randomness import DriverNoise, Randomness
from spark_dp.registry import Algorithm
from spark_dp.report import Step

__all__ = ["BROKEN", "BrokenVariant", "build_broken"]

NO_CAP = 10**9
"""The cap of ``broken-no-cap``: larger than any user's number of items."""


def _map_rounds(
    plan: SelectionPlan, change: Callable[[WeightAndThreshold], WeightAndThreshold]
) -> SelectionPlan:
    steps = tuple(
        Step(s.label, change(plan.calibration(k, WeightAndThreshold)))
        for k, s in enumerate(plan.steps)
    )
    return replace(plan, steps=steps)


def rho_full_delta(cal: WeightAndThreshold) -> WeightAndThreshold:
    """ρ for the whole δ instead of δ/2 (σ unchanged)."""
    thr = gaussian_threshold(cal.sigma, cal.delta, cal.max_items, cal.h_scale)
    return replace(cal, rho=thr.rho, argmax_t=thr.argmax_t)


def full_delta(cal: WeightAndThreshold) -> WeightAndThreshold:
    """σ for (ε, δ) and ρ for δ: the whole δ spent twice."""
    sigma = gaussian_sigma(Budget(cal.epsilon, cal.delta))
    thr = gaussian_threshold(sigma, cal.delta, cal.max_items, cal.h_scale)
    return replace(cal, sigma=sigma, rho=thr.rho, argmax_t=thr.argmax_t)


def sigma_double_epsilon(cal: WeightAndThreshold) -> WeightAndThreshold:
    """σ for (2ε, δ/2); ρ recomputed from that σ, so the novel-item rate stays δ/2."""
    sigma = gaussian_sigma(Budget(2.0 * cal.epsilon, cal.delta_noise))
    thr = gaussian_threshold(sigma, cal.delta_threshold, cal.max_items, cal.h_scale)
    return replace(cal, sigma=sigma, rho=thr.rho, argmax_t=thr.argmax_t)


def doubled_singleton_weights(capped: DataFrame) -> DataFrame:
    """Basic weights, doubled on the items that exactly one user holds."""
    holders = capped.groupBy(ITEM).agg(F.count(F.lit(1)).alias(USER_COUNT))
    weight = F.when(F.col(USER_COUNT) == 1, 2.0 * F.col(WEIGHT)).otherwise(F.col(WEIGHT))
    return basic_weights(capped).join(holders, ITEM).select(ITEM, weight.alias(WEIGHT))


def greedy_update_prefix(
    pairs: pd.DataFrame,
    *,
    epsilon: float,
    delta: float,
    beta: float = 4.0,
    randomness: Randomness,
) -> OracleResult:
    """GreedyUpdate as it was before issue 14: Laplace noise on every item of the union."""
    w, names, calibration = greedy_update_histogram(
        pairs, epsilon=epsilon, delta=delta, beta=beta, randomness=randomness
    )
    items = laplace_release(w, names, calibration, randomness)  # every item, not w > 0
    return OracleResult("greedy-update", items, epsilon, delta, calibration)


@dataclass(frozen=True)
class BrokenVariant:
    """A real mechanism with one deliberate mistake.

    Attributes:
        name: the variant's name (``broken-...``).
        base: the real mechanism it breaks.
        change: the one thing it changes.
        caught_by: the audit test that must fail it.
        apply: real target → broken target.
    """

    name: str
    base: str
    change: str
    caught_by: str
    apply: Callable[[Any], Target]


def _plan_change(
    change: Callable[[WeightAndThreshold], WeightAndThreshold],
) -> Callable[[SparkSelection], SparkSelection]:
    def apply(target: SparkSelection) -> SparkSelection:
        return replace(target, plan=_map_rounds(target.plan, change))

    return apply


def _no_cap(target: SparkSelection) -> SparkSelection:
    """Run with every round's cap lifted to NO_CAP while σ and ρ stay calibrated for Δ0: the
    target's plan (and so its claim) is the real one, the run gets the uncapped one."""
    entry = target.entry

    def uncapped_run(pairs: DataFrame, plan: SelectionPlan, *args: Any, **kw: Any) -> Any:
        return entry.run(pairs, _map_rounds(plan, _uncapped), *args, **kw)

    return replace(target, entry=Algorithm(entry.name, entry.summary, entry.plan, uncapped_run))


def _uncapped(cal: WeightAndThreshold) -> WeightAndThreshold:
    return replace(cal, max_items=NO_CAP)


def _double_singletons(target: SparkSelection) -> SparkSelection:
    entry = target.entry
    run = functools.partial(basic.run, weighting=doubled_singleton_weights)
    return replace(target, entry=Algorithm(entry.name, entry.summary, entry.plan, run))


def _greedy_prefix(target: OracleSelection) -> OracleSelection:
    return replace(target, run=greedy_update_prefix)


def argmax_choice(choice: DeltaChoice, totals: list[int], noise: DriverNoise) -> int:
    """Δ0 from the noiseless scores: the argmax of s(c), no GEM (the noise is not drawn)."""
    best = max(range(len(totals)), key=lambda k: (totals[k], -k))
    return choice.candidates[best]


def _noiseless_choice(target: ChoiceTarget) -> ChoiceTarget:
    return replace(target, choose=argmax_choice)


def _count_four_epsilon(target: CountTarget) -> CountTarget:
    plan = target.plan
    count = DiscreteLaplaceRelease(4.0 * plan.count.epsilon, plan.count.beta)
    return replace(target, plan=replace(plan, count=count))


_VARIANTS = (
    BrokenVariant(
        "broken-rho-full-delta",
        "basic",
        "ρ calibrated with the full δ, not δ/2",
        "novel-item test",
        _plan_change(rho_full_delta),
    ),
    BrokenVariant(
        "broken-full-delta",
        "basic",
        "σ and ρ both calibrated with the full δ",
        "novel-item test",
        _plan_change(full_delta),
    ),
    BrokenVariant(
        "broken-double-singletons",
        "basic",
        "weights of single-user items doubled",
        "novel-item test",
        _double_singletons,
    ),
    BrokenVariant(
        "broken-sigma-2eps",
        "basic",
        "σ calibrated for 2ε",
        "ε test",
        _plan_change(sigma_double_epsilon),
    ),
    BrokenVariant(
        "broken-no-cap",
        "basic",
        "no Δ0 cap (ρ still calibrated for Δ0)",
        "novel-item test",
        _no_cap,
    ),
    BrokenVariant(
        "broken-greedy-update-prefix",
        "greedy-update",
        "noise on every item of the union, zero weights too (before issue 14)",
        "novel-item test",
        _greedy_prefix,
    ),
    BrokenVariant(
        "broken-auto-noiseless",
        "auto-choice",
        "Δ0 chosen as the argmax of the noiseless scores (no GEM)",
        "ε test",
        _noiseless_choice,
    ),
    BrokenVariant(
        "broken-distinct-count-4eps",
        "distinct-count",
        "count noise calibrated for 4·ε_count",
        "ε test",
        _count_four_epsilon,
    ),
)

BROKEN: dict[str, BrokenVariant] = {v.name: v for v in _VARIANTS}
"""The broken variants by name."""


def build_broken(name: str, settings: Settings | None = None) -> Target:
    """The target of broken variant ``name``: its base mechanism's target, changed."""
    variant = BROKEN[name]
    target = variant.apply(build_target(variant.base, settings))
    return replace(target, name=name, change=variant.change)
