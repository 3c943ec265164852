"""Turn validated incidences into the working tables of the distributed algorithm.

docs/design/bounding.md#inputs (normalization), #round-plan (initialization). Input: string
(record_id, user_id) pairs, validated (:func:`spark_dp.io.validate_edges`), repeated pairs
allowed: the first step drops them (a pair counts once, docs/design/bounding.md#inputs). Output:

* ``records`` (rec, record_id): rec is the record's 0-based position in the shared order
  (docs/design/bounding.md#orders), computed once by a distributed sort; it is the record's compact
  id afterwards;
* ``inc`` (rec, user_id, size, lead[, urank]): all incidences, with |h| and ``lead`` = this
  row is the record's first user (so Σ lead counts records without a distinct); ``urank`` is
  the record's rank in its user's own order (``per-user`` orders only);
* ``users`` (user_id, cap, heavy): capacity (per-user table, else the default b) and whether
  the user has more records than the skew threshold (salted ranking, docs/design/bounding.md#skew).

The state before round 1 is :func:`~.proposal_rounds.initial_state`. Nothing here reads record
content (fixed-graph DP, docs/design/bounding.md#fixed-graph-dp): only ids, sizes and
content-free weights.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spark_dp.contribution_bounding.bias_mitigating import interleave_position_column
from spark_dp.contribution_bounding.columns import (
    CAPACITY,
    HEAVY,
    INCIDENCE_COUNT,
    LARGE,
    LEAD,
    LIST_POSITION,
    NEGATED_WEIGHT,
    PRIO,
    REC,
    RECORD_ID,
    SIZE,
    URANK,
    USER_ID,
    WEIGHT,
)
from spark_dp.contribution_bounding.orders import (
    OrderPlan,
    global_positions,
    with_prio,
)
from spark_dp.errors import ParameterError
from spark_dp.logs import log_private
from spark_dp.session import shuffle_partitions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_dp.contribution_bounding.state_store import StateStore

__all__ = ["Prepared", "prepare"]


@dataclass
class Prepared:
    """Working tables shared by every pass of a run (see the module docstring)."""

    inc: DataFrame
    records: DataFrame
    users: DataFrame
    n_records: int
    n_incidences: int
    n_users: int
    zero_cap_users: int
    heavy_users: int

    def counts(self) -> dict[str, int]:
        """The row counts (confidential diagnostics)."""
        names = ("n_records", "n_incidences", "n_users", "zero_cap_users", "heavy_users")
        return {k: getattr(self, k) for k in names}


# --------------------------------------------------------------------------- inputs


# --------------------------------------------------------------------------- preparation


def _record_positions(
    records: DataFrame, plan: OrderPlan, checkpoint: Callable[[DataFrame], DataFrame]
) -> tuple[DataFrame, int]:
    """(record_id, size[, weight]) -> ((rec, record_id, size), count)."""
    from pyspark.sql import functions as F

    r = with_prio(records, plan.seed, PRIO, RECORD_ID)
    if plan.interleave:
        u_thr, c1, c2 = plan.interleave
        r = r.withColumn(LARGE, F.col(SIZE) > F.lit(u_thr))
        r, totals = global_positions(
            r, [SIZE, PRIO, RECORD_ID], LIST_POSITION, checkpoint=checkpoint, group_col=LARGE
        )
        # -> (record_id, size, prio, large, q)
        rec = interleave_position_column(
            F.col(LIST_POSITION), F.col(LARGE), totals.get(False, 0), totals.get(True, 0), c1, c2
        )
        r = r.withColumn(REC, rec)
    else:
        keys = {
            "size-hash": [SIZE, PRIO, RECORD_ID],
            "hash": [PRIO, RECORD_ID],
            # the fallback order of docs/design/bounding.md#per-user-orders
            "per-user": [PRIO, RECORD_ID],
            "weighted-global": [NEGATED_WEIGHT, PRIO, RECORD_ID],
        }[plan.order]
        if plan.order == "weighted-global":
            r = r.withColumn(NEGATED_WEIGHT, -F.coalesce(F.col(WEIGHT), F.lit(0.0)) + F.lit(0.0))
        r, totals = global_positions(r, keys, REC, checkpoint=checkpoint)
    positions = r.select(REC, RECORD_ID, SIZE)
    # -> (rec, record_id, size)
    return positions, sum(totals.values())


def prepare(
    incidences: DataFrame,
    *,
    plan: OrderPlan,
    max_contributions: int | None,
    capacities: DataFrame | None = None,
    weights: DataFrame | None = None,
    skew_threshold: int = 100_000,
    store: StateStore,
    log: logging.Logger | None = None,
) -> Prepared:
    """Build (or reload from ``store``) the working tables of a run.

    The steps, in order: check the inputs (:func:`_check_inputs`), size the records and drop
    repeated pairs (:func:`_sized_incidences`), place the records in the order
    (:func:`_record_positions`), key the incidences by position (:func:`_incidence_table`),
    give every user its capacity (:func:`_user_table`), then count and record what was
    prepared (:func:`_counted`).

    Args:
        incidences: (record_id, user_id) strings without nulls; a repeated pair counts once.
        plan: the order.
        max_contributions: the default bound b for users missing from ``capacities``
            (``None``: they get 0).
        capacities: optional (user_id, cap) table; rows of unknown users are ignored.
        weights: checked weights (:func:`check_weights`) for weighted-global / per-user.
        skew_threshold: users with more records are marked heavy.
        store: a :class:`~.state_store.StateStore`.
        log: optional logger (counts only).

    Raises:
        ParameterError: weighted-global without weights, or neither max_contributions nor a
            table.
    """
    from pyspark.sql import functions as F

    done = store.read_json("prepared.json")
    if done is not None:
        users = _saved(store, "users").drop(INCIDENCE_COUNT)
        return Prepared(_saved(store, "inc"), _saved(store, "records"), users, **done["counts"])
    _check_inputs(incidences, plan, max_contributions, capacities, weights)
    sized = _sized_incidences(incidences, store)
    # -> (record_id, user_id, size, lead)
    records = sized.where(F.col(LEAD)).select(RECORD_ID, SIZE)
    # -> (record_id, size)
    if plan.order == "weighted-global" and weights is not None:  # None was refused above
        records = records.join(weights.select(RECORD_ID, WEIGHT), RECORD_ID, "left")
        # -> (record_id, size, weight)
    records, n_records = _record_positions(records, plan, store.checkpoint)
    # -> (rec, record_id, size); a checkpoint plus a broadcast join: cheap to reuse
    store.keep("records", records.select(REC, RECORD_ID))
    mapping = _saved(store, "records")
    inc = _incidence_table(sized, records, plan, weights, store)
    # -> (rec, user_id, size, lead[, urank])
    users = _user_table(inc, max_contributions, capacities, skew_threshold, store)
    # -> (user_id, cap, heavy, deg)
    return _counted(inc, mapping, users, n_records, store, log)


def _check_inputs(
    incidences: DataFrame,
    plan: OrderPlan,
    max_contributions: int | None,
    capacities: DataFrame | None,
    weights: DataFrame | None,
) -> None:
    """Refuse weighted-global without weights, and a run with neither max_contributions nor a
    capacities table."""
    if plan.order == "weighted-global" and weights is None:
        raise ParameterError("order weighted-global needs record weights (--record-weights)")
    if max_contributions is None and capacities is None:
        raise ParameterError("pass a capacity b (--max-contributions) and/or a capacities table")


def _sized_incidences(incidences: DataFrame, store: StateStore) -> DataFrame:
    """(record_id, user_id, size, lead), checkpointed: one shuffle by record, sorted by user
    within it; a repeated (record, user) row follows its first copy and is dropped there, so
    the input need not be deduplicated first (a shuffle less); lead marks the record's first
    user."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_record = Window.partitionBy(RECORD_ID)
    in_record = by_record.orderBy(USER_ID)
    previous = F.lag(USER_ID).over(in_record)  # ids are never null (validated)
    sized = (
        incidences.select(RECORD_ID, USER_ID, previous.alias("_prev"))
        .where(F.col("_prev").isNull() | (F.col("_prev") != F.col(USER_ID)))
        .select(
            RECORD_ID,
            USER_ID,
            F.count(F.lit(1)).over(by_record).alias(SIZE),
            F.col("_prev").isNull().alias(LEAD),
        )
    )
    return store.checkpoint(sized)  # read by the sort's sampling, the sort and the join


def _incidence_table(
    sized: DataFrame,
    records: DataFrame,
    plan: OrderPlan,
    weights: DataFrame | None,
    store: StateStore,
) -> DataFrame:
    """The incidences keyed by their record's position (saved): (rec, user_id, size, lead),
    plus ``urank``, the record's rank in its user's own order, for per-user orders."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    inc = sized.join(records.select(RECORD_ID, REC), RECORD_ID)
    # -> (record_id, user_id, size, lead, rec)
    cols = [REC, USER_ID, SIZE, LEAD]
    if plan.per_user:
        if weights is not None and USER_ID in weights.columns:
            inc = inc.join(weights.select(RECORD_ID, USER_ID, WEIGHT), [RECORD_ID, USER_ID], "left")
        else:
            inc = inc.withColumn(WEIGHT, F.lit(None).cast("double"))
        negw = -F.coalesce(F.col(WEIGHT), F.lit(0.0)) + F.lit(0.0)
        own = Window.partitionBy(USER_ID).orderBy(negw, F.col("_uprio"), F.col(RECORD_ID))
        inc = with_prio(inc, plan.seed, "_uprio", USER_ID, RECORD_ID)
        inc = inc.withColumn(URANK, (F.row_number().over(own) - 1).cast("long"))
        cols.append(URANK)
    return store.save("inc", inc.select(*cols))


def _user_table(
    inc: DataFrame,
    max_contributions: int | None,
    capacities: DataFrame | None,
    skew_threshold: int,
    store: StateStore,
) -> DataFrame:
    """(user_id, cap, heavy, deg), kept: each user's capacity (its row of ``capacities``, else
    the default b), whether it is heavy, and its number of incidences."""
    from pyspark.sql import functions as F

    users = (
        inc.repartition(shuffle_partitions(inc.sparkSession), USER_ID)
        .groupBy(USER_ID)
        .agg(F.count(F.lit(1)).alias(INCIDENCE_COUNT))
    )
    # -> (user_id, deg). An explicit partition count, never merged by adaptive execution (merged
    #    partitions of millions of users make Spark 3.5's hash aggregation fail to spill in a
    #    small driver: UNABLE_TO_ACQUIRE_MEMORY): the session's shuffle partitions, a setting,
    #    never the input's size (a literal of the plan: docs/privacy/boundary.md#plans). Few
    #    incidences per user: a partial aggregation before this shuffle would hardly reduce it.
    if capacities is not None:
        users = users.join(capacities.select(USER_ID, CAPACITY), USER_ID, "left")
    else:
        users = users.withColumn(CAPACITY, F.lit(None).cast("long"))
    # A user missing from the capacities without a default b gets 0: the most conservative
    # reading, so that no row decides the exit code (docs/privacy/caveats.md#bad-rows).
    default = F.lit(0 if max_contributions is None else max_contributions).cast("long")
    users = users.select(
        USER_ID,
        F.coalesce(F.col(CAPACITY), default).alias(CAPACITY),
        (F.col(INCIDENCE_COUNT) > F.lit(skew_threshold)).alias(HEAVY),
        INCIDENCE_COUNT,
    )
    store.keep("users", users)
    return _saved(store, "users")


def _counted(
    inc: DataFrame,
    mapping: DataFrame,
    users: DataFrame,
    n_records: int,
    store: StateStore,
    log: logging.Logger | None,
) -> Prepared:
    """The prepared tables with their counts (one small aggregation), recorded in the store."""
    from pyspark.sql import functions as F

    s = users.agg(
        F.count(F.lit(1)).alias("n"),
        F.sum(INCIDENCE_COUNT).alias("incidences"),
        F.sum((F.col(CAPACITY) <= 0).cast("long")).alias("zero"),
        F.sum(F.col(HEAVY).cast("long")).alias("heavy"),
    ).collect()[0]
    prepared = Prepared(
        inc,
        mapping,
        users.drop(INCIDENCE_COUNT),
        n_records=n_records,
        n_incidences=int(s["incidences"] or 0),  # no users: an empty input
        n_users=int(s["n"]),
        zero_cap_users=int(s["zero"] or 0),
        heavy_users=int(s["heavy"] or 0),
    )
    store.write_json("prepared.json", {"counts": prepared.counts()})
    if log is not None:
        log_private(
            log,
            "prepared %d records, %d incidences, %d users (%d with capacity 0, %d heavy)",
            prepared.n_records,
            prepared.n_incidences,
            prepared.n_users,
            prepared.zero_cap_users,
            prepared.heavy_users,
        )
    return prepared


def _saved(store: StateStore, name: str) -> DataFrame:
    """A table this run saved before (it must be there)."""
    df = store.load(name)
    if df is None:
        raise RuntimeError(f"the prepared state lists {name!r} but the store does not hold it")
    return df
