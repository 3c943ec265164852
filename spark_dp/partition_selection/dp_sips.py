"""DP-SIPS: Basic run over several rounds with a split budget, found items removed.

Swanberg, Desfontaines, Haney 2023, as described by Chen et al. 2025 (Sec. 6 ICML / Sec. 7
arXiv); docs/design/selection.md#dp-sips. Round r spends (f_r·ε, f_r·δ) (ε and δ are split
alike, docs/design/selection.md#split) and runs Basic on the users' sets without the items found so
far. By default each round re-caps from the user's remaining uncapped items (the black-box reading,
docs/design/selection.md#recap); with ``recap_each_round=False`` the round-1 cap is kept and degrees
are recomputed after the removals. Basic composition gives (Σ f_r·ε, Σ f_r·δ).

Data flow: the pairs are shuffled by user once and kept (:mod:`.layout`); each round removes the
items found so far with a broadcast anti-join, which keeps that layout, so a re-cap sorts each
user partition in place instead of reading and shuffling the input again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_dp.caching import CacheScope
from spark_dp.dp.calibration import Budget
from spark_dp.logs import StageTimer
from spark_dp.partition_selection.calibration import WeightAndThreshold
from spark_dp.partition_selection.capping import with_degree
from spark_dp.partition_selection.columns import ITEM, USER_ID
from spark_dp.partition_selection.layout import by_user, keep
from spark_dp.partition_selection.result import RoundResult, Selection, SelectionPlan
from spark_dp.partition_selection.rounds import capped_input, default_timer, gaussian_round
from spark_dp.partition_selection.weighting import basic_weights
from spark_dp.randomness import Randomness
from spark_dp.report import Step

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_dp.partition_selection.params import PartitionSelectionParams

__all__ = ["plan", "run"]


def plan(params: PartitionSelectionParams) -> SelectionPlan:
    """DP-SIPS: one Basic calibration per budget share f_r of ``split``
    (docs/design/selection.md#dp-sips, #split)."""
    p = params
    budget = Budget(p.epsilon, p.delta)
    steps = tuple(
        Step(
            f"round {r}",
            WeightAndThreshold.for_budget(budget.scaled(f), p.fixed_max_contributions()),
        )
        for r, f in enumerate(p.split, start=1)
    )
    return SelectionPlan(
        "dp-sips",
        steps,
        weighting="basic per round; items found earlier removed from every user's set",
        reference="Swanberg et al. 2023; docs/design/selection.md#dp-sips",
        options={"split": tuple(p.split), "recap_each_round": p.recap_each_round},
    )


def run(
    pairs: DataFrame,
    plan: SelectionPlan,
    randomness: Randomness,
    *,
    timer: StageTimer | None = None,
    cache: CacheScope | None = None,
) -> Selection:
    """DP-SIPS over the plan's rounds (e.g. split [0.1, 0.9] or [0.05, 0.15, 0.8]).

    Args:
        pairs: (user_id, item); a repeated pair counts once (the cap drops it).
        plan: from :func:`plan`; its ``recap_each_round`` option re-caps from the remaining
            uncapped items in every round.
        randomness: the job's randomness (round r caps with child("capping", r) and draws
            noise from child("noise", r)).
        timer: stage logger.
        cache: where the run keeps what it reuses (handed to the :class:`Selection`).

    Returns:
        the :class:`Selection`; its items are the disjoint union of the rounds' items.
    """
    timer = default_timer(timer)
    cache = cache if cache is not None else CacheScope()
    max_contributions = plan.max_contributions
    recap_each_round = bool(plan.options["recap_each_round"])
    rounds: list[RoundResult] = []
    found: DataFrame | None = None
    first_cap: DataFrame | None = None
    source, shuffled = pairs, False
    if recap_each_round and len(plan.steps) > 1:
        with timer.stage("shuffle by user"):
            source, shuffled = keep(by_user(pairs.select(USER_ID, ITEM)), cache), True
        # -> (user_id, item) as read (repeated pairs included), partitioned by user
    for r, step in enumerate(plan.steps, start=1):
        released = sum(earlier.output_items for earlier in rounds)  # public: their releases
        done = None if found is None else cache.small_side(found, rows=released)
        # the items found so far, broadcast without a count when few
        if done is None or recap_each_round or first_cap is None:
            remaining = source if done is None else source.join(done, ITEM, "left_anti")
            # -> (user_id, item): the users' sets without the items found so far
            reuse = r == 1 and not recap_each_round and len(plan.steps) > 1
            capped = capped_input(
                remaining,
                max_contributions,
                randomness.child("capping", r),
                timer,
                cache,
                stage=f"cap {r}",
                reuse=reuse,
                shuffle=not shuffled,
            )
            if reuse:
                first_cap = capped
        else:
            capped = with_degree(first_cap.join(done, ITEM, "left_anti").select(USER_ID, ITEM))
            # -> (user_id, item, degree), the round-1 cap without the found items
        with timer.stage(f"round {r}") as info:
            round_ = gaussian_round(
                step, basic_weights(capped), randomness.child("noise", r), cache
            )
            info.public(output_items=round_.output_items)
        rounds.append(round_)
        found = round_.items if found is None else found.unionByName(round_.items)
        # -> (item): every item found so far
    if first_cap is not None:
        cache.drop(first_cap)
    if shuffled:
        cache.drop(source)
    if found is None:
        raise ValueError("a DP-SIPS plan has at least one round")
    return Selection(plan, found, rounds, cache=cache)
