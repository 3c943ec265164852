"""Exact problem-size reductions of DC(D; ℓ) in Spark ("peeling"), for all ℓ at once.

docs/design/counting.md#peeling (rules R1/R2, proofs App. A.4), #curve. Not in the
paper; they keep DC(D; ℓ) exactly. With per-person capacities c_i (initially min(ℓ, |u_i|)):

* **R1 (light persons)**: a person whose degree is ≤ c_i covers all its items; they are
  counted and removed from everybody.
* **R2 (private items)**: a person holding p_i items nobody else holds covers min(c_i, p_i) of
  them; c_i drops by that amount and the private items are removed.

R1 and R2 act on disjoint items, so a round applies both; every intermediate state is exact:
DC(D; ℓ) = covered(ℓ) + DC(remaining core with capacities c_i).

Both rules depend on ℓ. Two Spark forms are implemented:

* :func:`first_round` — the first round **in closed form for every ℓ**, without replicating
  the data: degrees and holder counts do not depend on ℓ yet, so at bound ℓ person i is light
  iff d_i ≤ ℓ, item x is covered by a light person iff m_x = min holder degree ≤ ℓ, and a heavy
  person takes min(ℓ, p_i) private items. An edge (i, x) with ≥ 2 holders survives exactly for
  ℓ ∈ [p_i + 1, min(d_i, m_x) − 1], with capacity ℓ − p_i. The covered counts per ℓ are
  cumulative sums of per-ℓ events (≤ ℓ_max rows), so the cost does not grow with ℓ_max × data.
* :func:`peel_rounds` — further rounds on an (ell, user, item) table, each ℓ separately, to a
  fixpoint or a round cap (docs/design/counting.md#curve: "batch several ℓ by adding an ell
  column").

Every count here is private: functions return DataFrames and the caller aggregates them to
ℓ_max values on the driver; nothing is logged except row counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from spark_dp.caching import CacheScope
from spark_dp.io import ITEM, USER_ID

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = [
    "ELL",
    "FirstRound",
    "count_as_ell",
    "explode_rows",
    "first_round",
    "peel_rounds",
    "per_ell_sums",
]

ELL = "ell"
LO, HI, OFFSET, CAP = "lo", "hi", "offset", "cap"


@dataclass
class FirstRound:
    """Result of :func:`first_round`.

    Attributes:
        events: (ell, slope, jump): per-ℓ changes of the number of items the first round
            covers; :meth:`covered` turns them into the counts. Private.
        rows: (user_id, item, lo, hi, offset): the surviving edges; edge alive for
            lo ≤ ℓ ≤ hi, where its person has capacity ℓ − offset.
    """

    events: DataFrame
    rows: DataFrame
    max_contributions: int

    def covered(self) -> NDArray[np.int64]:
        """Items covered by the first round at ℓ = 1..ℓ_max (int64 array; private).

        covered(ℓ) = Σ_{k ≤ ℓ} (jump(k) + Σ_{j ≤ k} slope(j)): two running sums of ℓ_max values.
        """
        sums = per_ell_sums(self.events, self.max_contributions, ("slope", "jump"))
        return np.cumsum(np.cumsum(sums["slope"]) + sums["jump"])


def per_ell_sums(
    events: DataFrame, max_contributions: int, columns: Sequence[str] = ("value",)
) -> dict[str, NDArray[np.int64]]:
    """Sum ``columns`` of an (ell, ...) DataFrame per ℓ = 1..ℓ_max; ℓ outside is ignored.

    One small aggregation; the driver receives at most ℓ_max rows. Returns one int64 array of
    length ℓ_max per column (index ℓ − 1). Private when the inputs are: never log them.
    """
    from pyspark.sql import functions as F

    rows = (
        events.where(F.col(ELL).between(1, max_contributions))
        .groupBy(ELL)
        .agg(*[F.sum(c).alias(c) for c in columns])
        .collect()
    )
    out = {c: np.zeros(max_contributions, dtype=np.int64) for c in columns}
    for r in rows:
        for c in columns:
            out[c][int(r[ELL]) - 1] = int(r[c] or 0)
    return out


def count_as_ell(value: Column, max_contributions: int) -> Column:
    """A count (a degree, a number of private items) as an ``int`` ℓ, capped at ℓ_max + 1 first:
    a count past 2^31 neither wraps nor fails the cast (Spark 4's ANSI mode: an error that
    would depend on the data), and an ℓ past ℓ_max stays past it (ignored as before)."""
    from pyspark.sql import functions as F

    return F.least(value, F.lit(max_contributions + 1)).cast("int")


def first_round(pairs: DataFrame, max_contributions: int, cache: CacheScope) -> FirstRound:
    """Apply R1 and R2 once, for every ℓ = 1..ℓ_max simultaneously (see the module docstring).

    Args:
        pairs: distinct (user_id, item) pairs.
        max_contributions: ℓ_max.
        cache: where the per-edge statistics both outputs read are kept.

    Returns:
        :class:`FirstRound`.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_user, by_item = Window.partitionBy(USER_ID), Window.partitionBy(ITEM)
    one = F.lit(1)
    edges = cache.persist(
        pairs.select(
            USER_ID,
            ITEM,
            F.count(one).over(by_user).alias("deg"),
            (F.min(ITEM).over(by_user) == F.col(ITEM)).alias("person_rep"),
        )
        .select(
            "*",
            F.count(one).over(by_item).alias("holders"),
            F.min("deg").over(by_item).alias("min_deg"),
            (F.min(USER_ID).over(by_item) == F.col(USER_ID)).alias("item_rep"),
        )
        .withColumn("private", F.sum((F.col("holders") == 1).cast("int")).over(by_user))
    )  # -> (user_id, item, deg, person_rep, holders, min_deg, item_rep, private); *_rep marks
    #      one row per person / per item

    # covered(ℓ) through its per-ℓ changes (collected by FirstRound.covered):
    # R1: an item whose lightest holder has degree m is covered for every ℓ ≥ m (a jump at m).
    # R2: a heavy person (d > ℓ) takes f(ℓ) = min(ℓ, p) private items; f rises by 1 per ℓ up
    #     to k = min(p, d − 1) (slope +1 from ℓ = 1, −1 from k + 1) and drops by k at ℓ = d,
    #     when the person becomes light and R1 counts its items.
    k = F.least("private", F.col("deg") - 1)
    heavy = F.col("person_rep") & (k >= 1)

    def event(when: Column, ell: Column, slope: int, jump: Column) -> Column:
        return F.when(
            when,
            F.struct(
                count_as_ell(ell, max_contributions).alias(ELL),
                F.lit(slope).cast("long").alias("slope"),
                jump.cast("long").alias("jump"),
            ),
        )

    events = edges.select(
        F.explode(
            F.filter(
                F.array(
                    event(F.col("item_rep"), F.col("min_deg"), 0, F.lit(1)),
                    event(heavy, F.lit(1), 1, F.lit(0)),
                    event(heavy, k + 1, -1, F.lit(0)),
                    event(heavy, F.col("deg"), 0, -k),
                ),
                lambda e: e.isNotNull(),
            )
        ).alias("e")
    ).select("e.*")  # -> (ell, slope, jump): one scan; item_rep / person_rep pick one row each

    rows = (
        edges.where(F.col("holders") >= 2)
        .select(
            USER_ID,
            ITEM,
            count_as_ell(F.col("private") + 1, max_contributions).alias(LO),
            F.least(F.least("deg", "min_deg") - 1, F.lit(max_contributions)).cast("int").alias(HI),
            # kept: private < ℓ_max
            count_as_ell(F.col("private"), max_contributions).alias(OFFSET),
        )
        .where(F.col(LO) <= F.col(HI))
    )  # -> (user_id, item, lo, hi, offset)
    return FirstRound(events=events, rows=rows, max_contributions=max_contributions)


def explode_rows(rows: DataFrame) -> DataFrame:
    """One row per alive ℓ: (user_id, item, lo, hi, offset) -> (ell, user_id, item, cap)."""
    from pyspark.sql import functions as F

    # -> (ell, user_id, item, cap)
    return rows.select(F.explode(F.sequence(LO, HI)).alias(ELL), USER_ID, ITEM, OFFSET).select(
        ELL, USER_ID, ITEM, (F.col(ELL) - F.col(OFFSET)).cast("int").alias(CAP)
    )


def peel_rounds(
    cur: DataFrame, max_rounds: int, cache: CacheScope
) -> tuple[list[DataFrame], DataFrame, int]:
    """Run R1/R2 on each ℓ separately, to a fixpoint or ``max_rounds`` rounds.

    Args:
        cur: (ell, user_id, item, cap) rows; cap is the person's capacity at that ℓ (the same
            on all its rows of that ℓ).
        max_rounds: round cap (stopping early is safe: every state is exact).
        cache: materializes each round's tables (cutting the plans that grow with the
            rounds); the covered counts read them.

    Returns:
        (covered, core, rounds): covered is a list of (ell, covered) DataFrames (one per
        round, over cached data, private), core the remaining (ell, user_id, item, cap)
        rows (cached) and rounds the number of rounds run. Row counts stay internal
        (private).
    """
    from pyspark.sql import functions as F

    covered: list[DataFrame] = []
    cur = cache.persist(cur)
    rows = cur.count()
    rounds = 0
    while rows and rounds < max_rounds:
        rounds += 1
        pdeg = cur.groupBy(ELL, USER_ID).agg(
            F.count(F.lit(1)).alias("deg"), F.first(CAP).alias(CAP)
        )  # -> (ell, user_id, deg, cap)
        hold = cur.groupBy(ELL, ITEM).agg(F.count(F.lit(1)).alias("holders"))
        # -> (ell, item, holders)
        t = cache.materialize(cur.drop(CAP).join(pdeg, [ELL, USER_ID]).join(hold, [ELL, ITEM]))
        # -> (ell, item, user_id, deg, cap, holders)
        is_light = F.col("deg") <= F.col(CAP)
        light_items = t.where(is_light).select(ELL, ITEM).distinct()  # -> (ell, item)
        take = (
            t.where(~is_light & (F.col("holders") == 1))
            .groupBy(ELL, USER_ID, CAP)
            .agg(F.count(F.lit(1)).alias("private"))
            .select(ELL, USER_ID, F.least("private", CAP).alias("take"))
        )  # -> (ell, user_id, take)
        step = (
            light_items.groupBy(ELL)
            .agg(F.count(F.lit(1)).alias("covered"))
            .unionByName(take.groupBy(ELL).agg(F.sum("take").alias("covered")))
        )  # -> (ell, covered); lazy, over the cached t
        nxt = cache.materialize(
            t.where(~is_light & (F.col("holders") >= 2))
            .join(light_items, [ELL, ITEM], "left_anti")
            .join(take, [ELL, USER_ID], "left")
            .select(
                ELL,
                USER_ID,
                ITEM,
                (F.col(CAP) - F.coalesce(F.col("take"), F.lit(0))).cast("int").alias(CAP),
            )
            .where(F.col(CAP) > 0)
        )  # -> (ell, user_id, item, cap)
        new_rows = nxt.count()
        covered.append(step)
        cur = nxt
        if new_rows == rows:  # no rule applied anywhere: fixpoint
            break
        rows = new_rows
    return covered, cur, rounds
