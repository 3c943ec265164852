"""The outputs of a bounding run: selected records and per-user final degrees.

Spec contribution_bounding.md §2.3. Both tables are confidential (spec A36): together with
the hypergraph they reveal who shares records. The per-user degrees are recomputed here from
the full incidence table and the final selection, independently of the round bookkeeping, and
every run checks d(u) ≤ cap(u) on them (spec T1) before anything is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spark_dp.io import CAPACITY, RECORD_ID, USER_ID

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["STATUSES", "check_feasible", "selected_records", "user_state"]

# SATURATED: d = cap; EXHAUSTED: d < cap and nothing eligible is left; OPEN: d < cap with
# eligible records left (only when the rounds stopped early with finish=none).
STATUSES = ("SATURATED", "EXHAUSTED", "OPEN")


def selected_records(
    chosen: DataFrame, records: DataFrame, *, with_multiplicity: bool
) -> DataFrame:
    """Map positions back to ids.

    Args:
        chosen: (rec, multiplicity) of selected records.
        records: (rec, record_id).
        with_multiplicity: keep the ``multiplicity`` column (duplicate algorithms).

    Returns:
        (record_id[, multiplicity]).
    """
    out = chosen.join(records, "rec")
    # -> (rec, multiplicity, record_id)
    cols = [RECORD_ID, "multiplicity"] if with_multiplicity else [RECORD_ID]
    return out.select(*cols)


def user_state(
    inc: DataFrame, users: DataFrame, chosen: DataFrame, remaining: DataFrame | None = None
) -> DataFrame:
    """(user_id, cap, d, status) for every user of the incidences.

    Args:
        inc: (rec, user_id) of all records.
        users: (user_id, cap) of all users.
        chosen: (rec, multiplicity) of the selection.
        remaining: (rec, user_id) still eligible when the run stopped (finish=none), or None.
    """
    from pyspark.sql import functions as F

    deg = (
        inc.select("rec", USER_ID)
        .join(chosen, "rec")
        .groupBy(USER_ID)
        .agg(F.sum("multiplicity").cast("long").alias("d"))
    )
    # -> (user_id, d)
    out = (
        users.select(USER_ID, CAPACITY)
        .join(deg, USER_ID, "left")
        .withColumn("d", F.coalesce(F.col("d"), F.lit(0).cast("long")))
    )
    open_flag = F.lit(False)
    if remaining is not None:
        still = remaining.select(USER_ID).distinct().withColumn("_open", F.lit(True))
        out = out.join(still, USER_ID, "left")
        open_flag = F.coalesce(F.col("_open"), F.lit(False))
    status = (
        F.when(F.col("d") >= F.col(CAPACITY), F.lit("SATURATED"))
        .when(open_flag, F.lit("OPEN"))
        .otherwise(F.lit("EXHAUSTED"))
    )
    # -> (user_id, cap, d, status)
    return out.select(USER_ID, CAPACITY, "d", status.alias("status"))


def check_feasible(state: DataFrame) -> dict[str, Any]:
    """Degree summary of a user_state table; raises if any user exceeds its capacity.

    Returns:
        {"max_degree": k, "saturated": n, "exhausted": n, "open": n}.

    Raises:
        RuntimeError: some d(u) > cap(u) (a bug: every algorithm here is feasible by design).
    """
    from pyspark.sql import functions as F

    row = state.agg(
        F.max("d").alias("k"),
        F.sum((F.col("d") > F.col(CAPACITY)).cast("long")).alias("over"),
        *[F.sum((F.col("status") == s).cast("long")).alias(s) for s in STATUSES],
    ).collect()[0]
    if row["over"]:
        raise RuntimeError(f"{row['over']} users exceed their capacity: refusing to write")
    return {
        "max_degree": int(row["k"] or 0),
        "saturated": int(row["SATURATED"] or 0),
        "exhausted": int(row["EXHAUSTED"] or 0),
        "open": int(row["OPEN"] or 0),
    }
