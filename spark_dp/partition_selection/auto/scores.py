"""``--max-contributions auto`` in Spark: every candidate Δ0 scored in one pass, then GEM.

docs/design/tuning.md. The pairs are ranked once per user by the capping stream and capped at the
largest candidate (:func:`~.capping.ranked_cap`, kept partitioned by user): the cap at any
candidate c is then the pairs of rank ≤ c (nested caps), and the algorithm's own cap at the
chosen Δ0 reads the same table (:func:`~.capping.ranked_input`), so the choice adds one item
aggregation over the capped pairs to the run, not a shuffle. That aggregation holds one
conditional fixed-point sum per candidate:

    W_i(c) = min(Σ_{(u, i) : rank ≤ c} ⌊2^32/√min(d_u, c)⌋, 2^53)      (exact sums)

then a vectorized pandas UDF evaluates each item's term ⌊2^32·g_c(W_i(c)/2^32)⌋ (scipy's
``ndtr``) and Spark sums the terms exactly: only |C| integers reach the driver. GEM samples ĉ
from them on the choice's own stream (:class:`~.plan.calibration.DeltaChoice`).

Both sums add terms up to 2^32 and are taken as ``decimal(38,0)`` (:func:`exact_sum`): exact
and order-independent, and no input can overflow them (10^38 > 2^126 would need 2^94 rows). A
``long`` sum would overflow past 2^31 users of one item or 2^31 items, wrapping silently on
Spark 3.5 (GEM's sensitivity void) and failing on Spark 4 (an error that depends on the data)
(docs/design/tuning.md#exact-sums).

Nothing here is logged but stage names, seconds and the chosen Δ0 (released); the scores and
weights are private.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from spark_dp.pandas_udfs import series_udf
from spark_dp.partition_selection.auto.calibration import (
    WEIGHT_CAP,
    WEIGHT_SCALE,
    DeltaChoice,
    quantized_terms,
)
from spark_dp.partition_selection.capping import ranked_cap
from spark_dp.partition_selection.columns import CAP_RANK, DEGREE, ITEM
from spark_dp.partition_selection.layout import aggregated_per_core, keep, per_core
from spark_dp.report import Step

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import Column, DataFrame

    from spark_dp.caching import CacheScope
    from spark_dp.logs import StageTimer
    from spark_dp.partition_selection.auto.composition import TightComposition
    from spark_dp.partition_selection.calibration import WeightAndThreshold
    from spark_dp.randomness import Randomness

__all__ = [
    "CHOICE_LABEL",
    "EXACT_SUM",
    "Tuning",
    "candidate_weights",
    "choose_max_contributions",
    "clipped_weight",
    "exact_sum",
    "score_totals",
]

CHOICE_LABEL = "private choice of Δ0"
"""The label of the choice's step in plans and reports."""

EXACT_SUM = "decimal(38,0)"
"""The Spark type of the exact sums: 38 decimal digits, so integers summed in it never overflow
on any input Spark can hold."""


def exact_sum(values: Column) -> Column:
    """Σ ``values`` (integers) as ``decimal(38,0)``: exact, order-independent, never
    overflowing (module docstring); null over no rows."""
    from pyspark.sql import functions as F

    return F.sum(values.cast(EXACT_SUM))


def clipped_weight(total: Column) -> Column:
    """A fixed-point weight sum clipped to :data:`~.plan.calibration.WEIGHT_CAP` (2^53), as a
    ``long`` (0 over no rows): 1-Lipschitz, so one user still moves it by at most its share."""
    from pyspark.sql import functions as F

    return F.least(F.coalesce(total, F.lit(0)), F.lit(WEIGHT_CAP)).cast("long")


@dataclass(frozen=True)
class Tuning:
    """The choice that ran: its calibration and the released Δ0.

    Attributes:
        choice: the GEM calibration (ε_t, candidates, sensitivities).
        max_contributions: ĉ, the chosen Δ0 (released: it is in the report).
        composition: the release's PLD certificate (choice and rounds), or ``None`` (basic
            composition).
    """

    choice: DeltaChoice
    max_contributions: int
    composition: TightComposition | None = None

    @property
    def step(self) -> Step[DeltaChoice]:
        """The choice as a budget step of the release."""
        return Step(CHOICE_LABEL, self.choice)

    def to_report(self) -> dict[str, Any]:
        """Public account: the method, the candidates, the sensitivities, the spend, ĉ."""
        out = {**self.step.to_report(), "chosen_max_contributions": self.max_contributions}
        if self.composition is not None:
            out["release_composition"] = self.composition.to_report()
        return out


def _weight_column(candidate: int) -> str:
    return f"_w{candidate}_private"


def _contribution(candidate: int) -> Column:
    """⌊2^32/√min(d, c)⌋ for a pair of rank ≤ c, null otherwise (the same double arithmetic
    as :func:`~.plan.calibration.fixed_point_weight`)."""
    from pyspark.sql import functions as F

    k = F.least(F.col(DEGREE), F.lit(candidate)).cast("double")
    share = F.floor(F.lit(float(WEIGHT_SCALE)) / F.sqrt(k)).cast("long")
    return F.when(F.col(CAP_RANK) <= candidate, share)


def candidate_weights(ranked: DataFrame, candidates: tuple[int, ...]) -> DataFrame:
    """W_i(c) for every item and candidate, in one sum by item.

    Args:
        ranked: (user_id, item, cap_rank, degree) from :func:`~.capping.ranked_cap` at a bound
            ≥ every candidate.
        candidates: the grid C.

    Returns:
        (item, _w<c>_private per candidate): fixed-point Basic weights at Δ0 = c, clipped to
        2^53 (0 where no user keeps the item at c). Private: never log or write it.
    """
    sums = [
        clipped_weight(exact_sum(_contribution(c))).alias(_weight_column(c)) for c in candidates
    ]
    # -> (item, _w<c>_private, ...)
    return per_core(ranked).groupBy(ITEM).agg(*sums)


def score_totals(weights: DataFrame, scores: Sequence[WeightAndThreshold]) -> list[int]:
    """Σ_i ⌊2^32·g_c(W_i(c)/2^32)⌋ per candidate (private), summed exactly in Spark
    (:func:`exact_sum`).

    One pandas UDF per candidate, each its own constants (σ, ρ(c) of ``scores``, one Basic
    calibration per candidate); Spark evaluates them in one Python pass over the item weights
    (one task per core, :func:`~.layout.aggregated_per_core`).
    """
    from pyspark.sql import functions as F

    terms = [
        _term(float(c.sigma), float(c.rho))(F.col(_weight_column(c.max_contributions)))
        for c in scores
    ]
    spread = aggregated_per_core(weights)  # one Python task per core
    totals = spread.select(*[exact_sum(t).alias(f"_s{k}") for k, t in enumerate(terms)]).collect()
    # -> one row: the |C| integer totals
    return [int(totals[0][k] or 0) for k in range(len(terms))]


def _term(sigma: float, rho: float) -> Any:
    """The pandas UDF W ↦ ⌊2^32·g(W/2^32)⌋ of one candidate (:func:`quantized_terms`)."""

    def term(w: pd.Series) -> pd.Series:
        import pandas as pd

        return pd.Series(quantized_terms(w.to_numpy(dtype=np.int64), sigma, rho), index=w.index)

    return series_udf(term, "long")


def choose_max_contributions(
    pairs: DataFrame,
    choice: DeltaChoice,
    randomness: Randomness,
    *,
    timer: StageTimer,
    cache: CacheScope,
) -> tuple[Tuning, DataFrame]:
    """Rank and cap the pairs at the largest candidate, score every candidate, sample ĉ.

    Args:
        pairs: (user_id, item); a repeated pair counts once (the ranking drops it).
        choice: the plan's choice (ε_t, the candidates' score calibrations).
        randomness: the release's bound randomness: the ranking uses child("capping", 1), as
            the algorithm's cap does; GEM draws on child("tuning").
        timer: stage logger (stage names and seconds; ĉ is released).
        cache: where the ranked pairs are kept (the caller drops them after the selection).

    Returns:
        (the :class:`Tuning`, the ranked pairs (user_id, item, cap_rank, degree), kept).
    """
    bound = max(choice.candidates)
    with timer.stage("rank for the choice of Δ0", max_contributions=bound):
        ranked = keep(ranked_cap(pairs, bound, randomness.child("capping", 1)), cache)
    with timer.stage(CHOICE_LABEL) as info:
        totals = score_totals(candidate_weights(ranked, choice.candidates), choice.scores)
        chosen = choice.choose(totals, randomness.child("tuning").driver())
        info.public(max_contributions=chosen)
    return Tuning(choice, chosen), ranked
