"""Turn validated incidences into the working tables of the distributed algorithm.

Spec contribution_bounding.md §2.2 (normalization) and §3.5 (initialization). Input: string
(record_id, user_id) pairs, deduplicated (:func:`spark_dp.io.validate_edges`). Output:

* ``records`` (rec, record_id): rec is the record's 0-based position in the shared order
  (spec §3.3), computed once by a distributed sort; it is the record's compact id afterwards;
* ``inc`` (rec, user_id, size, lead[, urank]): all incidences, with |h| and ``lead`` = this
  row is the record's first user (so Σ lead counts records without a distinct); ``urank`` is
  the record's rank in its user's own order (``per-user`` orders only);
* ``users`` (user_id, cap, heavy): capacity (per-user table, else the default b) and whether
  the user has more records than the skew threshold (salted ranking, spec §3.6).

Nothing here reads record content (fixed-graph DP, spec §1.5, T19): only ids, sizes and
content-free weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spark_dp.contribution_bounding.bias_mitigating import interleave_position_column
from spark_dp.contribution_bounding.orders import (
    global_positions,
    prio_column,
    user_prio_column,
)
from spark_dp.errors import InputContractError, ParameterError
from spark_dp.io import CAPACITY, RECORD_ID, USER_ID

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "WEIGHT",
    "OrderPlan",
    "Prepared",
    "RoundState",
    "check_weights",
    "initial_state",
    "input_fingerprint",
    "prepare",
]

WEIGHT = "weight"


@dataclass(frozen=True)
class OrderPlan:
    """The order a run uses: a name of :data:`~.orders.ORDERS`, its seed, and optionally the
    small/large interleave (u_thr, c1, c2) of the bias-mitigating variant (spec §4.6)."""

    order: str
    seed: int | str
    interleave: tuple[int, int, int] | None = None

    @property
    def per_user(self) -> bool:
        """True for per-user orders (no shared order; spec P7 applies)."""
        return self.order == "per-user"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description."""
        out = {"order": self.order, "seed": self.seed}
        if self.interleave:
            out["interleave"] = dict(zip(("u_thr", "c1", "c2"), self.interleave, strict=True))
        return out


@dataclass
class Prepared:
    """Working tables shared by every pass of a run (see the module docstring)."""

    inc: Any
    records: Any
    users: Any
    n_records: int
    n_incidences: int
    n_users: int
    zero_cap_users: int
    heavy_users: int

    def counts(self) -> dict[str, int]:
        """The row counts (confidential diagnostics)."""
        names = ("n_records", "n_incidences", "n_users", "zero_cap_users", "heavy_users")
        return {k: getattr(self, k) for k in names}


@dataclass
class RoundState:
    """Eligible incidences and unsaturated users, plus the eligible counts."""

    inc: Any
    users: Any
    records: int
    incidences: int


# --------------------------------------------------------------------------- inputs


def _fingerprint(df, cols: list[str]) -> dict[str, int]:
    from pyspark.sql import functions as F

    row = df.agg(
        F.count(F.lit(1)).alias("n"),
        F.bit_xor(F.xxhash64(*[F.col(c).cast("string") for c in cols])).alias("x"),
    ).collect()[0]
    return {"rows": int(row["n"]), "xor": int(row["x"] or 0)}


def input_fingerprint(
    incidences: DataFrame, capacities: DataFrame | None = None, weights: DataFrame | None = None
) -> dict[str, Any]:
    """Order-free digests of the inputs (row count and XOR of row hashes), to tell whether a
    work directory belongs to the same inputs before resuming from it."""
    out = {"incidences": _fingerprint(incidences, [RECORD_ID, USER_ID])}
    if capacities is not None:
        out["capacities"] = _fingerprint(capacities, [USER_ID, CAPACITY])
    if weights is not None:
        out["weights"] = _fingerprint(weights, weights.columns)
    return out


def check_weights(weights: DataFrame, *, per_user: bool) -> DataFrame:
    """Validate a content-free weight table: (record_id[, user_id], weight).

    Returns:
        (record_id string[, user_id string], weight double), one row per key.

    Raises:
        InputContractError: missing columns, non-numeric, null or non-finite weights, or a key
            listed twice.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    keys = [RECORD_ID, USER_ID] if per_user else [RECORD_ID]
    missing = [c for c in [*keys, WEIGHT] if c not in weights.columns]
    if missing:
        raise InputContractError(
            f"record weights need columns {[*keys, WEIGHT]}; missing {missing}, present "
            f"{weights.columns}"
        )
    if not isinstance(weights.schema[WEIGHT].dataType, T.NumericType):
        raise InputContractError(
            f"record weights column {WEIGHT!r} must be numeric, got "
            f"{weights.schema[WEIGHT].dataType.simpleString()}"
        )
    w = weights.select(
        *[F.col(k).cast("string").alias(k) for k in keys], F.col(WEIGHT).cast("double")
    )
    s = w.agg(
        F.count(F.lit(1)).alias("n"),
        F.sum((F.col(WEIGHT).isNull() | F.isnan(WEIGHT)).cast("long")).alias("bad"),
        F.sum(F.col(WEIGHT).isin(float("inf"), float("-inf")).cast("long")).alias("inf"),
        F.count_distinct(*[F.col(k) for k in keys]).alias("keys"),
    ).collect()[0]
    if s["bad"] or s["inf"]:
        raise InputContractError(
            f"record weights: {int(s['bad'] or 0) + int(s['inf'] or 0)} weights are null, NaN "
            "or infinite; give every listed record a finite weight"
        )
    if s["keys"] != s["n"]:
        raise InputContractError(
            f"record weights: {s['n'] - s['keys']} rows repeat a key {keys}; keep one per key"
        )
    return w


# --------------------------------------------------------------------------- preparation


def _record_positions(records, plan: OrderPlan, checkpoint):
    """(record_id, size[, weight]) -> ((rec, record_id, size), count)."""
    from pyspark.sql import functions as F

    r = records.withColumn("prio", prio_column(plan.seed))
    if plan.interleave:
        u_thr, c1, c2 = plan.interleave
        r = r.withColumn("large", F.col("size") > F.lit(u_thr))
        r, totals = global_positions(
            r, ["size", "prio", RECORD_ID], "q", checkpoint=checkpoint, group_col="large"
        )
        # -> (record_id, size, prio, large, q)
        rec = interleave_position_column(
            F.col("q"), F.col("large"), totals.get(False, 0), totals.get(True, 0), c1, c2
        )
        r = r.withColumn("rec", rec)
    else:
        keys = {
            "size-hash": ["size", "prio", RECORD_ID],
            "hash": ["prio", RECORD_ID],
            "per-user": ["prio", RECORD_ID],  # the fallback order of spec A9
            "weighted-global": ["negw", "prio", RECORD_ID],
        }[plan.order]
        if plan.order == "weighted-global":
            r = r.withColumn("negw", -F.coalesce(F.col(WEIGHT), F.lit(0.0)) + F.lit(0.0))
        r, totals = global_positions(r, keys, "rec", checkpoint=checkpoint)
    # -> (rec, record_id, size)
    return r.select("rec", RECORD_ID, "size"), sum(totals.values())


def prepare(
    incidences: DataFrame,
    *,
    plan: OrderPlan,
    capacity: int | None,
    capacities: DataFrame | None = None,
    weights: DataFrame | None = None,
    skew_threshold: int = 100_000,
    store,
    log=None,
) -> Prepared:
    """Build (or reload from ``store``) the working tables of a run.

    Args:
        incidences: (record_id, user_id) strings, deduplicated.
        plan: the order.
        capacity: default b for users missing from ``capacities`` (``None``: every user must
            be listed).
        capacities: optional (user_id, cap) table; rows of unknown users are ignored.
        weights: checked weights (:func:`check_weights`) for weighted-global / per-user.
        skew_threshold: users with more records are marked heavy.
        store: a :class:`~.state_store.StateStore`.
        log: optional logger (counts only).

    Raises:
        InputContractError: users without any capacity.
        ParameterError: weighted-global without weights.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    done = store.read_json("prepared.json")
    if done is not None:
        users = store.load("users").drop("deg")
        return Prepared(store.load("inc"), store.load("records"), users, **done["counts"])
    if plan.order == "weighted-global" and weights is None:
        raise ParameterError("order weighted-global needs record weights (--record-weights)")
    if capacity is None and capacities is None:
        raise ParameterError("pass a capacity b (--capacity) and/or a capacities table")
    if capacity is None:  # every user must be listed: check before any heavy work
        missing = (
            incidences.select(USER_ID)
            .distinct()
            .join(capacities.select(USER_ID), USER_ID, "left_anti")
            .count()
        )
        if missing:
            raise InputContractError(
                f"{missing} users of the incidences are missing from the capacities table and "
                "no default capacity was given; pass --capacity B for them or list every user"
            )

    by_record = Window.partitionBy(RECORD_ID)
    sized = incidences.select(
        RECORD_ID,
        USER_ID,
        F.count(F.lit(1)).over(by_record).alias("size"),
        (F.col(USER_ID) == F.min(USER_ID).over(by_record)).alias("lead"),
    )
    sized = store.checkpoint(sized)  # read by the sort's sampling, the sort and the join
    # -> (record_id, user_id, size, lead): one shuffle by record; lead marks one row per record
    records = sized.where(F.col("lead")).select(RECORD_ID, "size")
    # -> (record_id, size)
    if plan.order == "weighted-global":
        records = records.join(weights.select(RECORD_ID, WEIGHT), RECORD_ID, "left")
    records, n_records = _record_positions(records, plan, store.checkpoint)
    # -> (rec, record_id, size); a checkpoint plus a broadcast join: cheap to reuse
    store.keep("records", records.select("rec", RECORD_ID))
    mapping = store.load("records")

    inc = sized.join(records.select(RECORD_ID, "rec"), RECORD_ID)
    # -> (record_id, user_id, size, lead, rec)
    cols = ["rec", USER_ID, "size", "lead"]
    if plan.per_user:
        if weights is not None and USER_ID in weights.columns:
            inc = inc.join(weights.select(RECORD_ID, USER_ID, WEIGHT), [RECORD_ID, USER_ID], "left")
        else:
            inc = inc.withColumn(WEIGHT, F.lit(None).cast("double"))
        negw = -F.coalesce(F.col(WEIGHT), F.lit(0.0)) + F.lit(0.0)
        own = Window.partitionBy(USER_ID).orderBy(
            negw, user_prio_column(plan.seed), F.col(RECORD_ID)
        )
        inc = inc.withColumn("urank", (F.row_number().over(own) - 1).cast("long"))
        cols.append("urank")
    inc = store.save("inc", inc.select(*cols))
    # -> (rec, user_id, size, lead[, urank])

    users = inc.groupBy(USER_ID).agg(F.count(F.lit(1)).alias("deg"))
    # -> (user_id, deg)
    if capacities is not None:
        users = users.join(capacities.select(USER_ID, CAPACITY), USER_ID, "left")
    else:
        users = users.withColumn(CAPACITY, F.lit(None).cast("long"))
    default = F.lit(capacity).cast("long") if capacity is not None else F.lit(None).cast("long")
    users = users.select(
        USER_ID,
        F.coalesce(F.col(CAPACITY), default).alias(CAPACITY),
        (F.col("deg") > F.lit(skew_threshold)).alias("heavy"),
        "deg",
    )
    store.keep("users", users)
    users = store.load("users")
    # -> (user_id, cap, heavy, deg)
    s = users.agg(
        F.count(F.lit(1)).alias("n"),
        F.sum("deg").alias("incidences"),
        F.sum((F.col(CAPACITY) <= 0).cast("long")).alias("zero"),
        F.sum(F.col("heavy").cast("long")).alias("heavy"),
    ).collect()[0]
    prepared = Prepared(
        inc,
        mapping,
        users.drop("deg"),
        n_records=n_records,
        n_incidences=int(s["incidences"]),
        n_users=int(s["n"]),
        zero_cap_users=int(s["zero"] or 0),
        heavy_users=int(s["heavy"] or 0),
    )
    store.write_json("prepared.json", {"counts": prepared.counts()})
    if log is not None:
        log.info(
            "prepared %d records, %d incidences, %d users (%d with capacity 0, %d heavy)",
            prepared.n_records,
            prepared.n_incidences,
            prepared.n_users,
            prepared.zero_cap_users,
            prepared.heavy_users,
        )
    return prepared


def initial_state(
    inc: DataFrame, users: DataFrame, store, *, known: tuple[int, int, int] | None = None
) -> RoundState:
    """Round-0 state: users with cap ≤ 0 start saturated and their records leave (spec A7).

    Args:
        inc: (rec, user_id, size, lead[, urank]) of the instance.
        users: (user_id, cap, heavy) covering every user of ``inc``.
        store: where the pruned incidences are saved (``round-0000/inc``) when needed.
        known: (records, incidences, users with cap ≤ 0) when already counted; with no
            such user nothing is recomputed.

    Returns:
        The state before round 1; ``users`` gains d = 0 and keeps only users with cap > 0.
    """
    from pyspark.sql import functions as F

    active = users.where(F.col(CAPACITY) > 0).withColumn("d", F.lit(0).cast("long"))
    # -> (user_id, cap, heavy, d)
    if known is not None and known[2] == 0:
        return RoundState(inc, active, known[0], known[1])
    zero = users.where(F.col(CAPACITY) <= 0).select(USER_ID)
    dead = inc.join(zero, USER_ID, "left_semi").select("rec").distinct()
    eligible = store.save("round-0000/inc", inc.join(dead, "rec", "left_anti"))
    # -> (rec, user_id, size, lead[, urank])
    return state_with_counts(eligible, active)


def state_with_counts(inc: DataFrame, users: DataFrame) -> RoundState:
    """Wrap a materialized eligible table with its counts (records via Σ lead)."""
    from pyspark.sql import functions as F

    row = inc.agg(
        F.count(F.lit(1)).alias("n"), F.sum(F.col("lead").cast("long")).alias("r")
    ).collect()[0]
    return RoundState(inc, users, int(row["r"] or 0), int(row["n"]))
