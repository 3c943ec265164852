"""MAD2R: two MAD rounds; round 2 is biased by round 1's (internal) noisy weights.

Chen et al. 2025, Alg. 5 (ICML, App. A) / Alg. 4 (arXiv); docs/design/selection.md#mad2r.

1. Cap every user once at Δ0 (reused by both rounds).
2. Round 1, budget (ε1, δ1): unbiased MAD, σ1 for (ε1, δ1/2), ρ1 for δ1/2 and h(t) = 1/√t;
   w̃1 = w1 + N(0, σ1²) is kept internally and never released;
   U1 = {i : w̃1(i) ≥ ρ1}.
3. Round 2, budget (ε2, δ2): ρ2 for δ2/2 and h(t) = b_max/√t. Every user drops the items of
   U1 and the hopeless items U_low = {i : w̃1(i) + C_ub·σ1 < ρ2}; the others get the bias
   b(i) = min{1, ρ2/w̃_lb(i)} with w̃_lb = max{0, w̃1 − C_lb·σ1} (b = 1 when w̃_lb = 0).
   Biased MAD (b_min, b_max) on the reduced sets, fresh noise N(0, σ2²), U2 = {w̃2 ≥ ρ2}.
4. Release the union of U1 and U2 (disjoint sets).

Each round is a weight-and-threshold run (Thm. 3.3); round 2 reads w̃1 only as post-processing
of round 1's release (U1, w̃_ext), so MAD2R is (ε1 + ε2, δ1 + δ2)-DP by basic composition
(Thm. B.1). Spec decisions applied: δ_r, not the total δ, inside ρ_r
(docs/design/selection.md#mad2r-delta); ε and δ split by the same shares
(docs/design/selection.md#split).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_dp.caching import CacheScope
from spark_dp.dp.calibration import Budget
from spark_dp.errors import ParameterError
from spark_dp.logs import StageTimer
from spark_dp.partition_selection.calibration import MadRound
from spark_dp.partition_selection.columns import BIAS, ITEM, NOISY_WEIGHT, USER_ID
from spark_dp.partition_selection.layout import keep
from spark_dp.partition_selection.mad import max_adaptive_degree
from spark_dp.partition_selection.result import Selection, SelectionPlan
from spark_dp.partition_selection.rounds import (
    capped_input,
    counted_round,
    default_timer,
    gaussian_round,
)
from spark_dp.partition_selection.thresholding import noisy_weights, select_above
from spark_dp.partition_selection.user_weights import weights_from_sums, with_user_sums
from spark_dp.partition_selection.weighting import unbiased_user_weights
from spark_dp.randomness import Randomness
from spark_dp.report import Step

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_dp.partition_selection.params import PartitionSelectionParams

__all__ = ["plan", "round_two_items", "round_two_pairs", "run"]


def round_two_items(
    noisy: DataFrame,
    *,
    sigma1: float,
    rho1: float,
    rho2: float,
    c_lb: float,
    c_ub: float,
    cache: CacheScope,
) -> tuple[DataFrame, DataFrame]:
    """What round 1's noisy weights decide for round 2 (Alg. 5 lines 10-14 ICML).

    Removed: U1 (w̃1 ≥ ρ1) and U_low (w̃1 + C_ub·σ1 < ρ2). Biased: the remaining items with
    w̃_lb = max{0, w̃1 − C_lb·σ1} ≥ ρ2 get b(i) = ρ2/w̃_lb(i) ≤ 1. Every other item keeps
    b = 1 (including w̃_lb = 0; docs/design/selection.md#mad2r-bias). Both tables are subsets of
    ``noisy``, one row per
    item: when ``noisy`` is small enough to broadcast, so are they, and they are broadcast
    without a Spark job of their own (:meth:`~spark_dp.caching.CacheScope.small_subset`), so
    the pairs are not shuffled. ``noisy`` must stay cached until their join has run.

    Args:
        noisy: (item, noisy_weight_private) of round 1, as :meth:`~spark_dp.caching.CacheScope.
            materialize` returned it.
        sigma1: σ1.
        rho1: ρ1.
        rho2: ρ2.
        c_lb: C_lb ≥ 0.
        c_ub: C_ub ≥ 0.
        cache: where both tables are kept.

    Returns:
        ((item) removed from every user's set, (item, bias_private) of the biased items).
        Private: never log or write them.
    """
    from pyspark.sql import functions as F

    w1 = F.col(NOISY_WEIGHT)
    lower = F.greatest(w1 - c_lb * sigma1, F.lit(0.0))
    removed = noisy.where((w1 >= rho1) | (w1 + c_ub * sigma1 < rho2)).select(ITEM)
    # -> (item): U1 and U_low
    biased = noisy.where((w1 < rho1) & (lower >= rho2)).select(ITEM, (rho2 / lower).alias(BIAS))
    # -> (item, bias_private); lower ≥ ρ2 > 0 implies w̃1 + C_ub·σ1 ≥ ρ2, so not removed
    return cache.small_subset(noisy, removed), cache.small_subset(noisy, biased)


def round_two_pairs(capped: DataFrame, removed: DataFrame, biased: DataFrame) -> DataFrame:
    """The users' round-2 sets: S_u without the removed items, with biases (1 by default).

    Args:
        capped: (user_id, item, ...), the round-1 cap.
        removed: (item) from :func:`round_two_items`.
        biased: (item, bias_private) from :func:`round_two_items`.

    Returns:
        (user_id, item, bias_private).
    """
    from pyspark.sql import functions as F

    # -> (user_id, item, bias_private)
    return (
        capped.select(USER_ID, ITEM)
        .join(removed, ITEM, "left_anti")
        .join(biased, ITEM, "left")
        .select(USER_ID, ITEM, F.coalesce(F.col(BIAS), F.lit(1.0)).alias(BIAS))
    )


def plan(params: PartitionSelectionParams) -> SelectionPlan:
    """MAD2R: round r spends (f_r·ε, f_r·δ); round 2's ρ uses h(t) = b_max/√t
    (docs/design/selection.md#mad2r).

    Raises:
        ParameterError: ``split`` does not hold exactly two shares.
    """
    p = params
    if len(p.split) != 2:
        raise ParameterError(
            f"split must hold exactly two shares for mad2r (round 1, round 2), got "
            f"{list(p.split)}; e.g. --split 0.1,0.9"
        )
    f1, f2 = p.split
    cap, beta, d_max = p.fixed_max_contributions(), p.beta, p.max_adaptive_degree
    budget = Budget(p.epsilon, p.delta)
    round1 = MadRound.for_budget(budget.scaled(f1), cap, beta=beta, d_max=d_max)
    round2 = MadRound.for_budget(
        budget.scaled(f2),
        cap,
        beta=beta,
        d_max=d_max,
        b_min=p.b_min,
        b_max=p.b_max,
        c_lb=p.c_lb,
        c_ub=p.c_ub,
    )
    return SelectionPlan(
        "mad2r",
        (Step("round 1", round1), Step("round 2", round2)),
        weighting="MAD2R: round 1 unbiased MAD; round 2 MAD biased by round 1's noisy "
        "weights, without the items found or hopeless after round 1",
        reference="Chen et al. 2025 Alg. 5 (ICML) / Alg. 4 (arXiv); docs/design/selection.md#mad2r",
        options={"split": (float(f1), float(f2))},
    )


def run(
    pairs: DataFrame,
    plan: SelectionPlan,
    randomness: Randomness,
    *,
    timer: StageTimer | None = None,
    cache: CacheScope | None = None,
) -> Selection:
    """MAD2R (see the module docstring).

    Args:
        pairs: (user_id, item); a repeated pair counts once (the cap drops it).
        plan: from :func:`plan` (two MAD rounds, the second with its bias rule).
        randomness: the job's randomness.
        timer: stage logger.
        cache: where the run keeps what it reuses (handed to the :class:`Selection`).

    Returns:
        the :class:`Selection`, two rounds; its items are the union of U1 and U2.
    """
    timer = default_timer(timer)
    cache = cache if cache is not None else CacheScope()
    step1, step2 = plan.steps
    cal1, cal2 = plan.calibration(0, MadRound), plan.calibration(1, MadRound)
    if cal2.c_lb is None or cal2.c_ub is None:
        raise TypeError("MAD2R's round 2 needs its bias rule (c_lb, c_ub); build it with plan()")
    capped = capped_input(
        pairs, plan.max_contributions, randomness.child("capping", 1), timer, cache
    )

    with timer.stage("round 1") as info:
        w1 = max_adaptive_degree(unbiased_user_weights(capped), cal1.constants, cache)
        noisy1 = cache.materialize(
            noisy_weights(
                w1,
                distribution="gaussian",
                scale=cal1.sigma,
                randomness=randomness.child("noise", 1),
            )
        )
        # -> (item, noisy_weight_private), internal only; cached: three queries read it
        round1 = counted_round(step1, select_above(noisy1, cal1.rho), cache)
        # -> (item): U1
        info.public(output_items=round1.output_items)

    with timer.stage("round 2 user weights"):
        removed, biased = round_two_items(
            noisy1,
            sigma1=cal1.sigma,
            rho1=cal1.rho,
            rho2=cal2.rho,
            c_lb=cal2.c_lb,
            c_ub=cal2.c_ub,
            cache=cache,
        )
        b_min, b_max = cal2.constants.b_min, cal2.constants.b_max
        reduced = round_two_pairs(capped, removed, biased)
        reduced = keep(with_user_sums(reduced, b_min, b_max), cache)
        cache.drop(capped)
        cache.drop(noisy1)  # after the join that broadcast its removed and biased items
        # -> (user_id, item, bias_private, degree, _k, _m, needs_loop): S_u without U1 and
        #    U_low with UserWeights' per-user sums (windows computed once, in this pass), kept
        #    (still partitioned and sorted by user: two broadcast joins onto the capped pairs)
        #    for round 2's three passes. U1 holds the most popular items, so this is usually a
        #    fraction of the capped pairs, and the capped pairs are released before round 2
        #    reads it
        weighted = weights_from_sums(reduced, b_min, b_max, cache)
        # -> (user_id, item, degree, user_weight_private); the loop users' weights are
        #    computed (and cached) here, the others are SQL expressions of each pass

    with timer.stage("round 2") as info:
        w2 = max_adaptive_degree(weighted, cal2.constants, cache)
        round2 = gaussian_round(step2, w2, randomness.child("noise", 2), cache)
        info.public(output_items=round2.output_items)
    cache.drop(reduced)
    return Selection(
        plan,
        round1.items.unionByName(round2.items),
        [round1, round2],
        cache=cache,
        notes=[
            "Round 1's noisy weights were kept inside the job for round 2 (post-processing of "
            "round 1's release) and were never written out.",
        ],
    )
