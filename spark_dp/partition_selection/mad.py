"""MAD (MaxAdaptiveDegree): adaptive reweighting that moves weight off items far above ρ.

Chen et al. 2025, Alg. 2 (ICML, Sec. 4) / Alg. 3 (arXiv); docs/design/selection.md#mad.
With constants τ, α, d_max, d_lo = ⌈1/b_min²⌉ (:class:`spark_dp.dp.calibration.MadConstants`),
adaptive users are those with d_lo ≤ d_u ≤ d_max, and:

1. w_init(i) = Σ_{u adaptive, i ∈ S_u} 1/d_u                  (ℓ1-bounded initial weights)
2. r(i) = max{0, 1 − τ/w_init(i)}, w_trunc(i) = min(w_init(i), τ)
   (max, not the printed min{0, ·}: the proof of Lemma B.6 needs max;
   docs/design/selection.md#mad-excess-sign)
3. e_u = (1/d_u)·Σ_{i ∈ S_u} r(i): each adaptive user's share of the truncated excess,
   re-sent as α·e_u/d_max to each of its own items (the divisor is d_max, not d_u)
4. w(i) = w_trunc(i) + Σ_{u adaptive} (α·e_u/d_max + w_b^u(i) − 1/d_u)
                     + Σ_{u not adaptive} w_b^u(i),   with w_b^u from UserWeights.

Sensitivity: Δ2 ≤ 1 (Lemma 4.2 / B.6) and novel Δ∞(t) ≤ b_max/√t (Lemma 4.1 / B.3), so an
unbiased MAD round uses exactly Basic's σ and ρ (Corollary B.2). The ℓ2 bound holds for the
dataset-level difference w' − w, not per user (docs/design/selection.md#mad-neighbour-l2).

Data flow (docs/design/selection.md#spark-plan): w_init and the part of w that needs no rerouting
are one sum by item over every pair; the truncated items (at most n/τ rows) are broadcast onto the
adaptive users' pairs and e_u is a sum over each user's pairs (a window over the user's pairs, not a
per-user table joined back); the rerouted excess is a second sum by item over those pairs only,
joined to the first by item. On pairs kept partitioned by user (:func:`~.layout.keep`), as the
runs keep their capped pairs, neither user step moves a pair between tasks; the sums by item
shuffle only partial sums.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_dp.caching import CacheScope
from spark_dp.dp.calibration import Budget
from spark_dp.logs import StageTimer
from spark_dp.partition_selection.calibration import MadConstants, MadRound
from spark_dp.partition_selection.columns import DEGREE, ITEM, USER_ID, USER_WEIGHT, WEIGHT
from spark_dp.partition_selection.layout import aggregated_per_core, per_core
from spark_dp.partition_selection.result import Selection, SelectionPlan
from spark_dp.partition_selection.rounds import gaussian_round, single_round
from spark_dp.partition_selection.weighting import unbiased_user_weights
from spark_dp.randomness import Randomness
from spark_dp.report import Step

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_dp.partition_selection.params import PartitionSelectionParams

__all__ = ["max_adaptive_degree", "plan", "run"]


def max_adaptive_degree(pairs: DataFrame, constants: MadConstants, cache: CacheScope) -> DataFrame:
    """MAD item weights (see the module docstring for the maths).

    Two sums by item. The first, over every pair, gives w_init(i) and the part of w(i) that
    needs no rerouting, B(i) = Σ_u w_b^u(i) − Σ_{u adaptive} 1/d_u. The second, over the pairs
    of adaptive users only, gives the rerouted excess R(i) = Σ_{u adaptive} α·e_u/d_max
    (e_u a window over the user's pairs, after a broadcast of the truncated items); the pairs
    of users with e_u = 0 are dropped before that sum. Then w(i) = min(w_init(i), τ) + B(i) +
    R(i), a join of two tables with one row per item. The window and the second sum read only
    the adaptive pairs, not every pair.

    Args:
        pairs: (user_id, item, degree, user_weight_private): capped pairs with the users'
            UserWeights (1/√d when unbiased, see
            :func:`~spark_dp.partition_selection.weighting.unbiased_user_weights`).
        constants: τ, α, d_max, d_lo of the round.
        cache: where the first sums are kept (and the truncated items, when there are too
            many items to broadcast them unseen).

    Returns:
        (item, weight_private), one row per item of ``pairs``. Private: never log or write it.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    c = constants
    degree = F.col(DEGREE)
    adaptive = (degree >= c.min_adaptive_degree) & (degree <= c.max_adaptive_degree)
    marked = pairs.select(USER_ID, ITEM, DEGREE, USER_WEIGHT, adaptive.alias("_adaptive"))
    # -> (user_id, item, degree, user_weight_private, _adaptive)
    initial = F.when(F.col("_adaptive"), 1.0 / degree).otherwise(0.0)
    first = cache.materialize(
        aggregated_per_core(
            per_core(marked)
            .groupBy(ITEM)
            .agg(
                F.sum(initial).alias("_w_init"), F.sum(F.col(USER_WEIGHT) - initial).alias("_base")
            )
        )
    )
    # -> (item, _w_init, _base): w_init(i) and B(i); read twice (truncated items, final join),
    #    cached in one partition per core (layout.aggregated_per_core: Spark 3.5 keeps a cached
    #    aggregation's 200 shuffle partitions, and every read of it ran 200 tasks)
    excess = cache.small_subset(
        first,
        first.where(F.col("_w_init") > c.tau).select(
            ITEM, (1.0 - c.tau / F.col("_w_init")).alias("_r")
        ),
    )
    # -> (item, _r): only the items truncated at τ, where r(i) > 0 (at most n/τ rows);
    #    broadcast without a job of its own when the item sums are small
    user_excess = F.sum(F.coalesce(F.col("_r"), F.lit(0.0)) / degree).over(
        Window.partitionBy(USER_ID)
    )
    # e_u = Σ_{i ∈ S_u} r(i)/d_u, over an adaptive user's pairs
    shares = (
        marked.where(F.col("_adaptive"))
        .select(USER_ID, ITEM, DEGREE)
        .join(excess, ITEM, "left")
        .select(ITEM, user_excess.alias("_e"))
    )
    # -> (item, _e) for every pair of an adaptive user
    rerouted = (
        per_core(shares)
        .where(F.col("_e") > 0.0)
        .groupBy(ITEM)
        .agg(F.sum(F.lit(c.alpha / c.max_adaptive_degree) * F.col("_e")).alias("_rerouted"))
    )
    # -> (item, _rerouted): R(i), for the items of users with e_u > 0
    w_trunc = F.least(F.col("_w_init"), F.lit(c.tau))
    weight = F.col("_base") + F.coalesce(F.col("_rerouted"), F.lit(0.0)) + w_trunc
    # -> (item, weight_private)
    return first.join(rerouted, ITEM, "left").select(ITEM, weight.alias(WEIGHT))


def plan(params: PartitionSelectionParams) -> SelectionPlan:
    """Single-round unbiased MAD: Basic's σ and ρ (Corollary B.2), τ = ρ + β·σ and α."""
    round_ = MadRound.for_budget(
        Budget(params.epsilon, params.delta),
        params.fixed_max_contributions(),
        beta=params.beta,
        d_max=params.max_adaptive_degree,
    )
    return SelectionPlan(
        "mad",
        (Step("round 1", round_),),
        weighting="MAD (unbiased): truncation at tau, excess rerouted by adaptive users",
        reference="Chen et al. 2025 Alg. 2 (ICML) / Alg. 3 (arXiv); docs/design/selection.md#mad",
    )


def run(
    pairs: DataFrame,
    plan: SelectionPlan,
    randomness: Randomness,
    *,
    timer: StageTimer | None = None,
    cache: CacheScope | None = None,
) -> Selection:
    """Single-round unbiased MAD: WeightAndThreshold with ALG = MAD(τ = ρ + βσ), h(t) = 1/√t.

    Same σ and ρ as Basic (Corollary B.2); its output stochastically dominates Basic's on the
    same capped data (Thm. C.1). docs/design/selection.md#mad.

    Args:
        pairs: (user_id, item); a repeated pair counts once (the cap drops it).
        plan: from :func:`plan`.
        randomness: the job's randomness.
        timer: stage logger.
        cache: where the run keeps what it reuses (handed to the :class:`Selection`).
    """
    step = plan.steps[0]
    constants = plan.calibration(0, MadRound).constants
    cache = cache if cache is not None else CacheScope()
    round_ = single_round(
        pairs,
        max_contributions=plan.max_contributions,
        randomness=randomness,
        timer=timer,
        cache=cache,
        run=lambda capped, noise: gaussian_round(
            step,
            max_adaptive_degree(unbiased_user_weights(capped), constants, cache),
            noise,
            cache,
        ),
        reuse=True,  # the truncated items are computed in a query of their own
    )
    return Selection(plan, round_.items, [round_], cache=cache)
