"""DistributedContributionBounding: one proposal round as a DataFrame step.

[A] Algorithm 1 and §2; docs/design/bounding.md#proposal-rounds (semantics), #round-plan (DataFrame
plan), #skew (performance). One round:

1. every unsaturated user u with eligible records proposes its best cap(u) − d(u) of them
   (all of them if fewer remain, docs/design/bounding.md#proposal-rounds): a window rank per user;
2. a record is accepted iff all its users proposed it (count of proposals = |h|);
3. degrees grow by the accepted records; users reaching d = cap saturate;
4. accepted records and all eligible records of newly saturated users leave the eligible set.

Invariants (docs/design/bounding.md#properties): after every round d(u) ≤ cap(u) (P1: a user
proposes at most its residual and accepted records are a subset of its proposals); M only grows
(P2); with a shared order the best eligible record is accepted in every round (P3), the result at
exhaustion is exactly the sequential greedy in that order (P4), and a driver greedy over the
remainder gives the same answer as more rounds (P6). Per-user orders can deadlock (P7); on the first
round that accepts nothing the run switches to the shared hash order
(docs/design/bounding.md#per-user-orders).

Sensitivity/privacy: the selection reads only the hypergraph (fixed-graph DP); it spends no
privacy budget. Its by-products (round logs, degrees, selected ids) are confidential
(docs/design/bounding.md#confidential): they are logged as counts only, never with ids.

Skew (docs/design/bounding.md#skew): users with more records than the skew threshold are ranked in
two stages, first within (user, salt) buckets, salt = pmod(xxhash64(rec), S), keeping ≤ resid rows
per bucket, then per user. The top resid of a user are among the union of each bucket's top resid,
so the result is unchanged.

A round maps a :class:`RoundState` (eligible incidences, unsaturated users, their counts) to
the next; :func:`initial_state` is the state before round 1. The loop over rounds (resume,
finish modes, round logs) is :mod:`.passes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from spark_dp.contribution_bounding.columns import (
    ACCEPTED,
    CAPACITY,
    DEAD,
    DEGREE,
    FIRST,
    HEAVY,
    LEAD,
    NEWLY_SATURATED,
    PROPOSED,
    REC,
    SIZE,
    URANK,
    USER_ID,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_dp.contribution_bounding.state_store import StateStore

__all__ = [
    "BASE_COLUMNS",
    "RoundState",
    "accepted_records",
    "commit_round",
    "eligible_incidences",
    "initial_state",
    "next_users",
    "proposal_round",
    "round_table",
    "state_after",
    "state_with_counts",
]

BASE_COLUMNS = (REC, USER_ID, SIZE, LEAD, URANK)
"""Columns of the eligible-incidence table (``urank`` only for per-user orders)."""


@dataclass
class RoundState:
    """Eligible incidences and unsaturated users, plus the eligible counts."""

    inc: DataFrame
    users: DataFrame
    records: int
    incidences: int


def initial_state(
    inc: DataFrame,
    users: DataFrame,
    store: StateStore,
    *,
    known: tuple[int, int, int] | None = None,
) -> RoundState:
    """Round-0 state: users with cap ≤ 0 start saturated and their records leave
    (docs/design/bounding.md#zero-capacity).

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

    active = users.where(F.col(CAPACITY) > 0).withColumn(DEGREE, F.lit(0).cast("long"))
    # -> (user_id, cap, heavy, d)
    if known is not None and known[2] == 0:
        return RoundState(inc, active, known[0], known[1])
    zero = users.where(F.col(CAPACITY) <= 0).select(USER_ID)
    dead = inc.join(zero, USER_ID, "left_semi").select(REC).distinct()
    # -> (rec): records of a user with capacity 0
    eligible = store.save("round-0000/inc", inc.join(dead, REC, "left_anti"))
    # -> (rec, user_id, size, lead[, urank])
    return state_with_counts(eligible, active)


def state_with_counts(inc: DataFrame, users: DataFrame) -> RoundState:
    """Wrap a materialized eligible table with its counts (records via Σ lead)."""
    from pyspark.sql import functions as F

    row = inc.agg(
        F.count(F.lit(1)).alias("n"), F.sum(F.col(LEAD).cast("long")).alias("r")
    ).collect()[0]
    return RoundState(inc, users, int(row["r"] or 0), int(row["n"]))


def round_table(r: int, what: str) -> str:
    """Store name of a table of round ``r`` (``round-0003/flagged``)."""
    return f"round-{r:04d}/{what}"


def proposal_round(
    state: RoundState, order_col: str, *, salted: bool, salt_buckets: int
) -> DataFrame:
    """One round (docs/design/bounding.md#round-plan, rows 1–6) as one table of flagged eligible
    incidences.

    Every eligible incidence (rec, u) gets, with window functions rather than joins so that a
    round is a handful of shuffles (by user, by record, by user, by record):

    * ``proposed``: h is among u's best cap(u) − d(u) eligible records (rank per user);
      ``first``: h is u's best one (one row per proposing user);
    * ``acc``: all users of h proposed it (proposals over the record = |h|; every user of an
      eligible record is unsaturated, so this is "proposed by all its users");
    * ``d``: u's degree after the round (d + records of u accepted now), and ``newly``: u
      reached cap(u) in this round;
    * ``dead``: some user of h saturated in this round (h leaves unless accepted).

    Args:
        state: eligible incidences (rec, user_id, size, lead[, urank]) and unsaturated users
            (user_id, cap, heavy, d).
        order_col: ``rec`` (shared order position) or ``urank`` (per-user rank).
        salted: rank heavy users in salted buckets first (docs/design/bounding.md#skew).
        salt_buckets: S.

    Returns:
        (rec, user_id, size, lead[, urank], cap, heavy, d, proposed, first, acc, newly, dead),
        unmaterialized.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    base = [c for c in state.inc.columns if c in BASE_COLUMNS]
    cand = state.inc.join(state.users.select(USER_ID, CAPACITY, HEAVY, DEGREE), USER_ID)
    resid = F.col(CAPACITY) - F.col(DEGREE)
    # -> (user_id, rec, size, lead[, urank], cap, heavy, d): eligible incidences of users
    #    still proposing (the inner join drops users without eligible records)
    by_user = Window.partitionBy(USER_ID)
    if salted:
        # Two-stage top-k: the best resid rows of each (user, bucket) contain the user's best
        # resid rows; only those survivors are ranked per user.
        salt = F.when(F.col(HEAVY), F.pmod(F.xxhash64(REC), F.lit(salt_buckets))).otherwise(0)
        bucket = Window.partitionBy(USER_ID, "_salt").orderBy(order_col)
        survivors = (
            cand.withColumn("_salt", salt)
            .withColumn("_rk1", F.row_number().over(bucket))
            .where(F.col("_rk1") <= resid)
        )
        ranked = survivors.withColumn("_rk", F.row_number().over(by_user.orderBy(order_col)))
        ranked = ranked.where(F.col("_rk") <= resid).select(REC, USER_ID, "_rk")
        # -> (rec, user_id, _rk): the proposals, ≤ S·resid rows sorted per heavy user
        cand = cand.join(ranked, [REC, USER_ID], "left")
    else:
        cand = cand.withColumn("_rk", F.row_number().over(by_user.orderBy(order_col)))
    proposed = F.coalesce(F.col("_rk") <= resid, F.lit(False))
    flagged = cand.select(
        *base,
        CAPACITY,
        HEAVY,
        DEGREE,
        proposed.alias(PROPOSED),
        (F.col("_rk") == 1).alias(FIRST),
    ).fillna(False, subset=[FIRST])
    # -> (base..., cap, heavy, d, proposed, first)
    by_rec = Window.partitionBy(REC)
    votes = F.sum(F.col(PROPOSED).cast("int")).over(by_rec)
    flagged = flagged.withColumn(ACCEPTED, votes == F.col(SIZE))
    gained = F.sum((F.col(ACCEPTED) & F.col(PROPOSED)).cast("long")).over(by_user)
    flagged = flagged.withColumn("_gained", gained)
    flagged = flagged.withColumn(DEGREE, F.col(DEGREE) + F.col("_gained")).withColumn(
        NEWLY_SATURATED, (F.col(DEGREE) >= F.col(CAPACITY)) & (F.col("_gained") > 0)
    )
    dead = F.max(F.col(NEWLY_SATURATED).cast("int")).over(by_rec) > 0
    flagged = flagged.withColumn(DEAD, dead).drop("_gained")
    # -> (base..., cap, heavy, d, proposed, first, acc, newly, dead)
    return flagged


def next_users(flagged: DataFrame) -> DataFrame:
    """Users that still propose after a round: those that proposed (one ``first`` row each)
    and stay below capacity. Users without eligible records never reach the flagged table."""
    from pyspark.sql import functions as F

    users = flagged.where(F.col(FIRST) & (F.col(DEGREE) < F.col(CAPACITY))).select(
        USER_ID, CAPACITY, HEAVY, DEGREE
    )
    # -> (user_id, cap, heavy, d)
    return users


def accepted_records(flagged: DataFrame) -> DataFrame:
    """The records a round accepted (one row each, via the lead incidence)."""
    from pyspark.sql import functions as F

    accepted = flagged.where(F.col(LEAD) & F.col(ACCEPTED)).select(REC)
    # -> (rec)
    return accepted


def eligible_incidences(flagged: DataFrame) -> DataFrame:
    """The eligible incidences after a round: neither accepted nor killed by a saturation."""
    from pyspark.sql import functions as F

    base = [c for c in flagged.columns if c in BASE_COLUMNS]
    eligible = flagged.where(~F.col(ACCEPTED) & ~F.col(DEAD)).select(*base)
    # -> (rec, user_id, size, lead[, urank])
    return eligible


def state_after(flagged: DataFrame, records: int, incidences: int) -> RoundState:
    """The state after a round, from its (saved) flagged table and the eligible counts."""
    return RoundState(eligible_incidences(flagged), next_users(flagged), records, incidences)


def commit_round(
    flagged: DataFrame, store: StateStore, r: int
) -> tuple[RoundState, dict[str, int]]:
    """Materialize round r and read its counts (one aggregation).

    Returns:
        (next state, counts for the round log: proposals, proposers, accepted, newly
        saturated). Every round's flagged table is kept (it is
        the record of what the round accepted; the work directory goes after success).
    """
    from pyspark.sql import functions as F

    flagged = store.save(round_table(r, "flagged"), flagged)
    lead = F.col(LEAD)
    left = ~F.col(ACCEPTED) & ~F.col(DEAD)
    s = flagged.agg(
        F.sum(F.col(PROPOSED).cast("long")).alias("proposals"),
        F.sum(F.col(FIRST).cast("long")).alias("proposers"),
        F.sum((lead & F.col(ACCEPTED)).cast("long")).alias("accepted"),
        F.sum((F.col(FIRST) & F.col(NEWLY_SATURATED)).cast("long")).alias("newly"),
        F.sum(left.cast("long")).alias("incidences"),
        F.sum((lead & left).cast("long")).alias("records"),
    ).collect()[0]
    counts = {k: int(s[k] or 0) for k in ("proposals", "proposers", "accepted", "newly")}
    state = state_after(flagged, int(s["records"] or 0), int(s["incidences"] or 0))
    return state, counts
