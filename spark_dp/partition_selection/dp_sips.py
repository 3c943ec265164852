"""DP-SIPS: Basic run over several rounds with a split budget, found items removed.

Swanberg, Desfontaines, Haney 2023, as described by Chen et al. 2025 (Sec. 6 ICML / Sec. 7
arXiv); spec partition_selection.md §2.7. Round r spends (f_r·ε, f_r·δ) (ε and δ are split
alike, spec A3) and runs Basic on the users' sets without the items found so far. By default
each round re-caps from the user's remaining uncapped items (the black-box reading, spec A8);
with ``recap_each_round=False`` the round-1 cap is kept and degrees are recomputed after the
removals. Basic composition gives (Σ f_r·ε, Σ f_r·δ).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from spark_dp.logs import StageTimer
from spark_dp.partition_selection.capping import with_degree
from spark_dp.partition_selection.columns import ITEM, USER_ID
from spark_dp.partition_selection.joins import small_side
from spark_dp.partition_selection.plan import dp_sips_rounds
from spark_dp.partition_selection.result import RoundResult, Selection
from spark_dp.partition_selection.rounds import capped_input, default_timer, gaussian_round
from spark_dp.partition_selection.weighting import basic_weights
from spark_dp.randomness import Randomness

__all__ = ["dp_sips"]


def dp_sips(
    pairs: DataFrame,
    *,
    epsilon: float,
    delta: float,
    max_items: int,
    split: Sequence[float],
    randomness: Randomness,
    recap_each_round: bool = True,
    timer: StageTimer | None = None,
) -> Selection:
    """DP-SIPS over ``split`` (e.g. [0.1, 0.9] or [0.05, 0.15, 0.8]).

    Args:
        pairs: (user_id, item); a repeated pair counts once (the cap drops it).
        epsilon: total ε.
        delta: total δ.
        max_items: Δ0.
        split: budget shares f_r of the rounds (each > 0, sum ≤ 1).
        randomness: the job's randomness (round r caps with child("capping", r) and draws
            noise from child("noise", r)).
        recap_each_round: re-cap from the remaining uncapped items in every round.
        timer: stage logger.

    Returns:
        the :class:`Selection`; its items are the disjoint union of the rounds' items.
    """
    timer = default_timer(timer)
    calibrations = dp_sips_rounds(epsilon, delta, max_items, split)
    rounds: list[RoundResult] = []
    found: DataFrame | None = None
    first_cap: DataFrame | None = None
    for r, calibration in enumerate(calibrations, start=1):
        done = None if found is None else small_side(found)
        if r == 1 or recap_each_round:
            remaining = pairs if done is None else pairs.join(done, ITEM, "left_anti")
            # -> (user_id, item): the users' sets without the items found so far
            reuse = r == 1 and not recap_each_round and len(calibrations) > 1
            capped = capped_input(
                remaining,
                max_items,
                randomness.child("capping", r),
                timer,
                stage=f"cap {r}",
                reuse=reuse,
            )
            if reuse:
                first_cap = capped
        else:
            capped = with_degree(first_cap.join(done, ITEM, "left_anti").select(USER_ID, ITEM))
            # -> (user_id, item, degree), the round-1 cap without the found items
        with timer.stage(f"round {r}") as info:
            round_ = gaussian_round(
                f"round {r}", basic_weights(capped), calibration, randomness.child("noise", r)
            )
            info["output_items"] = round_.output_items
        rounds.append(round_)
        found = round_.items if found is None else found.unionByName(round_.items)
        # -> (item): every item found so far
    if first_cap is not None:
        first_cap.unpersist()
    return Selection(
        "dp-sips",
        found,
        rounds,
        mechanism={
            "weighting": "basic per round; items found earlier removed from every user's set",
            "l2_sensitivity": 1.0,
            "novel_item_bound": "h(t) = 1/sqrt(t)",
            "noise": "gaussian",
            "split": list(split),
            "recap_each_round": recap_each_round,
            "reference": "Swanberg et al. 2023; spec §2.7",
        },
    )
