"""The exact curve DC(D; ℓ), ℓ = 1..ℓ_max, in Spark: peel, split into components, solve.

Knop & Steinke 2023, eq. (2), Algorithm 1 (SENSITIVEDISTINCTCOUNT) and Theorem 1.1;
docs/design/counting.md#exact, #peeling, #curve. The values are exactly those of Algorithm 1
(max-flow per ℓ); only the way of computing them differs:

1. :func:`~spark_dp.distinct_count.peeling.first_round`: the reductions R1/R2 once, in closed
   form for every ℓ. Most of the data leaves here; what survives are edges alive on an ℓ range.
2. Optionally (large cores, ``spark_rounds``): more R1/R2 rounds per ℓ in Spark on an
   (ell, user, item) table (:func:`~spark_dp.distinct_count.peeling.peel_rounds`).
3. :func:`~spark_dp.distinct_count.components.connected_components` of the surviving
   person–item graph (union over ℓ), when it is large. DC is a sum over components, so each
   component (and each residue class of ℓ mod ``ell_blocks``, for parallelism) is an
   independent ``groupBy().applyInPandas`` task.
4. Each task runs :func:`~spark_dp.distinct_count.local_solver.solve_rows`: for ℓ ascending,
   peel that ℓ to a fixpoint in numpy and solve the rest with scipy's max-flow, warm-started
   from the previous ℓ's flow.

Early stop: an edge survives the first round only for ℓ < min(d_i, m_x) ≤ max degree, so for
larger ℓ the first round alone gives the (saturated) value DC(D) without any solve, and within a
task no flow is solved when the warm start meets the upper bound min(#items, Σ c_i).

The driver receives only per-ℓ sums (ℓ_max values). The curve is private: never log it. The
engineering knobs (``spark_rounds``, ``spark_rounds_min_rows``, ``ell_blocks``, components
method) never change a value (C4 of docs/design/counting.md#greedy). Steps 2-4 run in one logged
stage, ``dc core``: which of them run depends on the sizes of the data (the first round's
edges, the core's), so the stages a run logs are the same on every input
(docs/privacy/boundary.md#logs); the sizes and the choices they made go through the
unsafe-debug gate only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from spark_dp.caching import CacheScope
from spark_dp.checks import check_int_at_least
from spark_dp.distinct_count.components import connected_components
from spark_dp.distinct_count.local_solver import solve_rows
from spark_dp.distinct_count.peeling import (
    ELL,
    HI,
    LO,
    OFFSET,
    explode_rows,
    first_round,
    peel_rounds,
    per_ell_sums,
)
from spark_dp.io import ITEM, USER_ID
from spark_dp.logs import StageTimer, get_logger, log_private

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import Column, DataFrame

__all__ = ["CurveResult", "core_graph", "exact_curve"]

log = get_logger(__name__)


@dataclass
class CurveResult:
    """The curve and operator diagnostics.

    Attributes:
        curve: int64 array, ``curve[ℓ-1] = DC(D; ℓ)``. Private.
        stats: row counts of the intermediate tables (operator-facing sizes such as
            ``first_round_rows`` and ``core_rows``; never released in a privacy report).
    """

    curve: NDArray[np.int64]
    stats: dict[str, Any] = field(default_factory=dict)


def exact_curve(
    pairs: DataFrame,
    max_contributions: int,
    *,
    components: str = "auto",
    spark_rounds: int = 8,
    spark_rounds_min_rows: int = 20_000_000,
    components_min_rows: int = 5_000_000,
    ell_blocks: int = 2,
    timer: StageTimer | None = None,
) -> CurveResult:
    """DC(D; ℓ) for ℓ = 1..ℓ_max of distinct (user_id, item) pairs.

    Args:
        pairs: distinct (user_id, item) string pairs (e.g. from :func:`spark_dp.io.load_pairs`),
            ideally cached.
        max_contributions: ℓ_max, public and data-independent.
        components: connected-components method (``auto``, ``graphframes``, ``dataframe``).
        spark_rounds: cap on the per-ℓ peeling rounds run in Spark after the first round.
        spark_rounds_min_rows: run those Spark rounds only when the first round leaves at least
            this many edges; smaller cores are peeled per ℓ inside the executor tasks, which is
            faster (values are identical either way).
        components_min_rows: split the core into connected components only when it has at
            least this many rows; a smaller core is solved as one task, which takes seconds
            for a few million rows (values identical either way).
        ell_blocks: deal each component's ℓ values round-robin to this many tasks (ℓ ≡ b + 1
            mod B), for parallelism when one component dominates; each task warm-starts from
            its previous ℓ. Rows are replicated at most B times.
        timer: stage timer for progress logging (one is made when omitted).

    Returns:
        :class:`CurveResult`.
    """
    check_int_at_least("max_contributions", max_contributions, 1)
    check_int_at_least("spark_rounds", spark_rounds, 0)
    check_int_at_least("spark_rounds_min_rows", spark_rounds_min_rows, 0)
    check_int_at_least("components_min_rows", components_min_rows, 0)
    check_int_at_least("ell_blocks", ell_blocks, 1)
    timer = timer or StageTimer(log)
    stats: dict[str, Any] = {}
    pieces: list[DataFrame] = []  # (ell, value) DataFrames whose per-ℓ sums make the curve

    with CacheScope() as cache:
        with timer.stage("dc first round"):
            fr = first_round(pairs, max_contributions, cache)
            rows = cache.persist(fr.rows)
            covered = fr.covered()
            stats["first_round_rows"] = rows.count()

        with timer.stage("dc core"):  # what runs inside depends on the data: never logged
            core = rows
            stats["spark_rounds"] = 0
            if spark_rounds > 0 and stats["first_round_rows"] >= spark_rounds_min_rows:
                core = _spark_peeling(rows, spark_rounds, cache, pieces, stats)
            core = cache.persist(core)
            stats["core_rows"] = core.count()
            labelled = _labelled(core, components, components_min_rows, cache, stats)
            pieces.append(_solved(labelled, ell_blocks, cache))  # an empty core solves to nothing

        with timer.stage("dc curve"):
            total = pieces[0]
            for p in pieces[1:]:
                total = total.unionByName(p)
            curve = covered + per_ell_sums(total, max_contributions)["value"]
    log_private(log, "dc curve sizes: %s", stats)
    return CurveResult(curve=curve, stats=stats)


def _spark_peeling(
    rows: DataFrame,
    spark_rounds: int,
    cache: CacheScope,
    pieces: list[DataFrame],
    stats: dict[str, Any],
) -> DataFrame:
    """Up to ``spark_rounds`` per-ℓ peeling rounds in Spark after the first round: their
    covered counts join ``pieces`` (ell, value); returns the remaining core, one ℓ per row,
    as (user_id, item, lo, hi, offset)."""
    from pyspark.sql import functions as F

    steps, remaining, n = peel_rounds(explode_rows(rows), spark_rounds, cache)
    pieces += [s.select(ELL, F.col("covered").alias("value")) for s in steps]
    stats["spark_rounds"] = n
    return remaining.select(
        USER_ID,
        ITEM,
        F.col(ELL).alias(LO),
        F.col(ELL).alias(HI),
        (F.col(ELL) - F.col("cap")).alias(OFFSET),
    )  # -> (user_id, item, lo, hi, offset), one ℓ per row


def _labelled(
    core: DataFrame,
    components: str,
    components_min_rows: int,
    cache: CacheScope,
    stats: dict[str, Any],
) -> DataFrame:
    """The core with its connected component (person-item graph): (user_id, item, lo, hi,
    offset, component); one component 0 when the core is below ``components_min_rows``."""
    from pyspark.sql import functions as F

    if stats["core_rows"] < components_min_rows:
        stats["components"] = "not split"
        return core.withColumn("component", F.lit(0).cast("long"))
    person_v, _ = _vertex_ids()
    labels = cache.persist(connected_components(core_graph(core), cache, method=components))
    # -> (vertex, component)
    labelled = core.join(labels.withColumnRenamed("vertex", "pv"), person_v == F.col("pv")).drop(
        "pv"
    )  # -> (user_id, item, lo, hi, offset, component)
    stats["components"] = labels.select("component").distinct().count()
    return labelled


def _vertex_ids() -> tuple[Column, Column]:
    """The person's and the item's vertex ids: 64-bit hashes of the names. A collision merges
    two vertices, which can only merge components, so the values stay exact (C4)."""
    from pyspark.sql import functions as F

    return F.xxhash64(F.lit("person"), F.col(USER_ID)), F.xxhash64(F.lit("item"), F.col(ITEM))


def core_graph(core: DataFrame) -> DataFrame:
    """The person–item graph of the core rows (user_id, item, ...): (src, dst) long vertex ids,
    each edge once (``bench.components`` times its connected components)."""
    person_v, item_v = _vertex_ids()
    return core.select(person_v.alias("src"), item_v.alias("dst")).distinct()  # -> (src, dst)


def _solved(labelled: DataFrame, ell_blocks: int, cache: CacheScope) -> DataFrame:
    """(ell, value): each component's exact values, its ℓ dealt round-robin to ``ell_blocks``
    tasks (ℓ ≡ block + 1 mod B), summed per ℓ."""
    from pyspark.sql import functions as F

    first = F.col(LO)
    last = F.least(F.col(HI), F.col(LO) + ell_blocks - 1)
    blocked = labelled.withColumn(
        "block",
        F.explode(
            F.array_distinct(F.transform(F.sequence(first, last), lambda e: (e - 1) % ell_blocks))
        ),
    )  # -> (user_id, item, lo, hi, offset, component, block): ℓ ≡ block + 1 mod B
    return cache.persist(
        blocked.groupBy("component", "block")
        .applyInPandas(_solve_group_fn(ell_blocks), "ell int, value long")
        .groupBy(ELL)
        .agg(F.sum("value").alias("value"))
    )  # -> (ell, value)


def _solve_group_fn(blocks: int) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """The ``applyInPandas`` function: exact values of one component at ℓ ≡ block + 1 (mod B)."""
    import pandas as pd

    def solve(df: pd.DataFrame) -> pd.DataFrame:
        block = int(df["block"].iloc[0])
        lo = int(df[LO].min())
        first = lo + (block + 1 - lo) % blocks  # smallest ℓ ≥ lo with ℓ ≡ block + 1 (mod B)
        ells = np.arange(first, int(df[HI].max()) + 1, blocks)
        person, _ = pd.factorize(df[USER_ID])
        item, _ = pd.factorize(df[ITEM])
        values = solve_rows(
            person,
            item,
            df[LO].to_numpy(),
            df[HI].to_numpy(),
            df[OFFSET].to_numpy(),
            ells,
        )
        return pd.DataFrame({ELL: ells.astype(np.int32), "value": values})

    return solve
