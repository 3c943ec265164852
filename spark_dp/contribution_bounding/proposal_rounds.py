"""DistributedContributionBounding: the multi-round proposal algorithm as DataFrame rounds.

[A] Algorithm 1 and §2; spec contribution_bounding.md §3.2 (semantics), §3.5 (DataFrame
plan), §3.6 (performance). One round:

1. every unsaturated user u with eligible records proposes its best cap(u) − d(u) of them
   (all of them if fewer remain, A4): a window rank per user;
2. a record is accepted iff all its users proposed it (count of proposals = |h|);
3. degrees grow by the accepted records; users reaching d = cap saturate;
4. accepted records and all eligible records of newly saturated users leave the eligible set.

Invariants (spec §3.4): after every round d(u) ≤ cap(u) (P1: a user proposes at most its
residual and accepted records are a subset of its proposals); M only grows (P2); with a shared
order the best eligible record is accepted in every round (P3), the result at exhaustion is
exactly the sequential greedy in that order (P4), and a driver greedy over the remainder gives
the same answer as more rounds (P6). Per-user orders can deadlock (P7); on the first round
that accepts nothing the run switches to the shared hash order (A9).

Sensitivity/privacy: the selection reads only the hypergraph (fixed-graph DP); it spends no
privacy budget. Its by-products (round logs, degrees, selected ids) are confidential (A36):
they are logged as counts only, never with ids.

Skew (spec §3.6): users with more records than the skew threshold are ranked in two stages,
first within (user, salt) buckets, salt = pmod(xxhash64(rec), S), keeping ≤ resid rows per
bucket, then per user. The top resid of a user are among the union of each bucket's top resid,
so the result is unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any

import numpy as np

from spark_dp.contribution_bounding.driver_rounds import simulate_rounds
from spark_dp.contribution_bounding.greedy import greedy
from spark_dp.contribution_bounding.hypergraph import CompactHypergraph
from spark_dp.contribution_bounding.prepare import RoundState
from spark_dp.io import CAPACITY, USER_ID

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["PassOutcome", "RoundLog", "RoundSettings", "proposal_round", "run_pass"]


@dataclass(frozen=True)
class RoundSettings:
    """How a pass runs (spec §3.5 "finish mode"; defaults of A1)."""

    max_rounds: int = 64
    finish: str = "driver-greedy"
    driver_threshold_rows: int = 5_000_000
    driver_max_rows: int = 20_000_000
    salt_buckets: int = 64


@dataclass
class RoundLog:
    """One round's counts (spec §2.3 ``round_log``); confidential, never ids."""

    round: int
    order: str
    eligible_records_start: int
    eligible_incidences_start: int
    active_users: int
    proposals: int
    accepted: int
    newly_saturated: int
    records_removed_by_saturation: int
    selected_cumulative: int
    eligible_records_left: int
    eligible_incidences_left: int
    seconds: float


@dataclass
class PassOutcome:
    """Result of one pass of rounds (plus its finish).

    Attributes:
        selected: (rec, round) of accepted records; round 0 = driver finish.
        n_selected: number of selected records.
        rounds: distributed rounds run (in this process and before a restart).
        log: per-round counts.
        finish: how the pass ended (mode, driver hand-off, order switch, stop reason).
        remaining: (rec, user_id) still eligible at the stop (empty at exhaustion).
        resumed_from: round whose saved state a restart continued from, else ``None``.
    """

    selected: Any
    n_selected: int
    rounds: int
    log: list[RoundLog]
    finish: dict[str, Any]
    remaining: Any
    resumed_from: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _rname(r: int, what: str) -> str:
    return f"round-{r:04d}/{what}"


# --------------------------------------------------------------------------- one round


BASE_COLUMNS = ("rec", USER_ID, "size", "lead", "urank")


def proposal_round(
    state: RoundState, order_col: str, *, salted: bool, salt_buckets: int
) -> DataFrame:
    """One round (spec §3.5 table, rows 1–6) as one table of flagged eligible incidences.

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
        salted: rank heavy users in salted buckets first (spec §3.6).
        salt_buckets: S.

    Returns:
        (rec, user_id, size, lead[, urank], cap, heavy, d, proposed, first, acc, newly, dead),
        unmaterialized.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    base = [c for c in state.inc.columns if c in BASE_COLUMNS]
    cand = state.inc.join(state.users.select(USER_ID, CAPACITY, "heavy", "d"), USER_ID)
    resid = F.col(CAPACITY) - F.col("d")
    # -> (user_id, rec, size, lead[, urank], cap, heavy, d): eligible incidences of users
    #    still proposing (the inner join drops users without eligible records)
    by_user = Window.partitionBy(USER_ID)
    if salted:
        # Two-stage top-k: the best resid rows of each (user, bucket) contain the user's best
        # resid rows; only those survivors are ranked per user.
        salt = F.when(F.col("heavy"), F.pmod(F.xxhash64("rec"), F.lit(salt_buckets))).otherwise(0)
        bucket = Window.partitionBy(USER_ID, "_salt").orderBy(order_col)
        survivors = (
            cand.withColumn("_salt", salt)
            .withColumn("_rk1", F.row_number().over(bucket))
            .where(F.col("_rk1") <= resid)
        )
        ranked = survivors.withColumn("_rk", F.row_number().over(by_user.orderBy(order_col)))
        ranked = ranked.where(F.col("_rk") <= resid).select("rec", USER_ID, "_rk")
        # -> (rec, user_id, _rk): the proposals, ≤ S·resid rows sorted per heavy user
        cand = cand.join(ranked, ["rec", USER_ID], "left")
    else:
        cand = cand.withColumn("_rk", F.row_number().over(by_user.orderBy(order_col)))
    proposed = F.coalesce(F.col("_rk") <= resid, F.lit(False))
    flagged = cand.select(
        *base,
        CAPACITY,
        "heavy",
        "d",
        proposed.alias("proposed"),
        (F.col("_rk") == 1).alias("first"),
    ).fillna(False, subset=["first"])
    # -> (base..., cap, heavy, d, proposed, first)
    by_rec = Window.partitionBy("rec")
    votes = F.sum(F.col("proposed").cast("int")).over(by_rec)
    flagged = flagged.withColumn("acc", votes == F.col("size"))
    gained = F.sum((F.col("acc") & F.col("proposed")).cast("long")).over(by_user)
    flagged = flagged.withColumn("_gained", gained)
    flagged = flagged.withColumn("d", F.col("d") + F.col("_gained")).withColumn(
        "newly", (F.col("d") >= F.col(CAPACITY)) & (F.col("_gained") > 0)
    )
    dead = F.max(F.col("newly").cast("int")).over(by_rec) > 0
    flagged = flagged.withColumn("dead", dead).drop("_gained")
    # -> (base..., cap, heavy, d, proposed, first, acc, newly, dead)
    return flagged


def next_users(flagged: DataFrame) -> DataFrame:
    """Users that still propose after a round: those that proposed (one ``first`` row each)
    and stay below capacity. Users without eligible records never reach the flagged table."""
    from pyspark.sql import functions as F

    users = flagged.where(F.col("first") & (F.col("d") < F.col(CAPACITY)))
    # -> (user_id, cap, heavy, d)
    return users.select(USER_ID, CAPACITY, "heavy", "d")


def _accepted(flagged) -> DataFrame:
    """The records a round accepted (one row each, via the lead incidence)."""
    from pyspark.sql import functions as F

    # -> (rec)
    return flagged.where(F.col("lead") & F.col("acc")).select("rec")


def _eligible(flagged):
    """The eligible incidences after a round: neither accepted nor killed by a saturation."""
    from pyspark.sql import functions as F

    base = [c for c in flagged.columns if c in BASE_COLUMNS]
    # -> (rec, user_id, size, lead[, urank])
    return flagged.where(~F.col("acc") & ~F.col("dead")).select(*base)


def _commit(flagged, store, r: int):
    """Materialize round r and read its counts (one aggregation).

    Returns:
        (next state, counts for the round log). Every round's flagged table is kept (it is
        the record of what the round accepted; the work directory goes after success).
    """
    from pyspark.sql import functions as F

    flagged = store.save(_rname(r, "flagged"), flagged)
    lead = F.col("lead")
    left = ~F.col("acc") & ~F.col("dead")
    s = flagged.agg(
        F.sum(F.col("proposed").cast("long")).alias("proposals"),
        F.sum(F.col("first").cast("long")).alias("proposers"),
        F.sum((lead & F.col("acc")).cast("long")).alias("accepted"),
        F.sum((F.col("first") & F.col("newly")).cast("long")).alias("newly"),
        F.sum(left.cast("long")).alias("incidences"),
        F.sum((lead & left).cast("long")).alias("records"),
    ).collect()[0]
    counts = {k: int(s[k] or 0) for k in ("proposals", "proposers", "accepted", "newly")}
    state = RoundState(
        _eligible(flagged), next_users(flagged), int(s["records"] or 0), int(s["incidences"] or 0)
    )
    return state, counts


# --------------------------------------------------------------------------- driver finish


def _compact_state(inc_pdf, users_pdf, with_rank: bool):
    """Driver arrays of a state: records in rec order, residual capacities cap − d."""
    import pandas as pd

    inc_pdf = inc_pdf.sort_values(["rec", USER_ID], kind="mergesort")
    recs = inc_pdf["rec"].to_numpy(np.int64)
    rec_values, rec_codes = np.unique(recs, return_inverse=True)
    user_index = pd.Index(users_pdf[USER_ID])
    user_codes = user_index.get_indexer(inc_pdf[USER_ID])
    if np.any(user_codes < 0):
        raise RuntimeError("an eligible incidence has no unsaturated user row")
    resid = (users_pdf[CAPACITY] - users_pdf["d"]).to_numpy(np.int64)
    graph = CompactHypergraph.from_codes(
        rec_codes, user_codes, rec_values, users_pdf[USER_ID].to_numpy(), resid
    )
    rank = inc_pdf["urank"].to_numpy(np.int64) if with_rank else None
    return graph, rank


def _driver_finish(state: RoundState, order_col: str, spark) -> tuple[Any, dict]:
    """Finish on the driver: Greedy(π) over the remainder (P6), or, for per-user orders, the
    rounds themselves (P6 does not hold for them) with the hash fallback on a stall (P7)."""
    import pandas as pd

    cols = ["rec", USER_ID] + (["urank"] if order_col == "urank" else [])
    inc_pdf = state.inc.select(*cols).toPandas()
    users_pdf = state.users.select(USER_ID, CAPACITY, "d").toPandas()
    graph, rank = _compact_state(inc_pdf, users_pdf, order_col == "urank")
    info: dict[str, Any] = {"driver_records": graph.n_records, "driver_incidences": len(inc_pdf)}
    if rank is None:
        mask = greedy(graph)
    else:
        sim = simulate_rounds(graph, rank)
        mask = sim.selected.copy()
        info["driver_rounds"] = sim.rounds
        if sim.stalled:
            info["order_switched"] = "on the driver"
            mask |= greedy(graph, np.flatnonzero(sim.eligible), counts=sim.degree)
    chosen = graph.record_ids[mask].astype(np.int64)
    info["driver_accepted"] = len(chosen)
    df = spark.createDataFrame(pd.DataFrame({"rec": chosen}), "rec long")
    return df, info


# --------------------------------------------------------------------------- a pass


def run_pass(
    make_initial: Callable[[Any], RoundState],
    *,
    settings: RoundSettings,
    per_user: bool,
    salted: bool,
    store,
    timer,
    log,
    label: str = "round",
    on_round: Callable[[RoundLog], None] | None = None,
) -> PassOutcome:
    """Run rounds until the finish mode stops them; resume from ``store`` when it holds state.

    Args:
        make_initial: ``store -> RoundState`` building the state before round 1; called
            unless the store holds a finished round of this pass to resume from.
        settings: rounds and finish mode.
        per_user: rank by ``urank`` (per-user orders) until a stall switches to ``rec``.
        salted: use the two-stage salted ranking (some user is heavy).
        store: a :class:`~.state_store.StateStore` for this pass.
        timer: a :class:`spark_dp.logs.StageTimer`; one stage per round.
        log: logger (counts only).
        label: stage name prefix (``round``, or ``pass 2 round`` for Alg. 3).
        on_round: called after a round is fully saved (a crash after it resumes after it).

    Raises:
        RuntimeError: a round accepted nothing under a shared order (impossible by P3).
    """
    spark = store.spark
    doc = store.read_json("pass.json")
    resumed_from = None
    if doc is not None and doc.get("done"):
        return _outcome(doc, store, spark, resumed_from)
    if doc is None:
        doc = {
            "rounds": [],
            "order_col": "urank" if per_user else "rec",
            "done": False,
            "finish": {"mode": settings.finish},
        }
        store.write_json("pass.json", doc)
    if not doc["rounds"]:
        state = make_initial(store)
    else:
        r = len(doc["rounds"])
        resumed_from = r
        flagged = store.load(_rname(r, "flagged"))
        state = RoundState(_eligible(flagged), next_users(flagged), **doc["state"])
        log.info("resuming after round %d from saved state", r)
    order_col = doc["order_col"]
    finish = doc["finish"]
    warned = False
    while True:
        r = len(doc["rounds"])
        if state.records == 0:
            finish["stopped"] = "exhausted"
            break
        if (
            settings.finish == "driver-greedy"
            and state.incidences <= settings.driver_threshold_rows
        ):
            finish["stopped"] = "driver"
            break
        if r >= settings.max_rounds and settings.finish != "continue":
            if settings.finish == "none":
                finish["stopped"] = "max_rounds"
                break
            if state.incidences <= settings.driver_max_rows:
                finish["stopped"] = "driver"
                break
            if not warned:
                log.warning(
                    "max_rounds reached with %d eligible incidences, more than the driver may "
                    "collect (%d); continuing with rounds",
                    state.incidences,
                    settings.driver_max_rows,
                )
                warned = True
        state, entry = _one_round(state, r + 1, order_col, settings, salted, store, timer, label)
        entry.order = "per-user" if order_col == "urank" else "shared"
        if entry.accepted == 0 and state.records > 0:
            if order_col != "urank":
                raise RuntimeError(
                    f"round {r + 1} accepted nothing under a shared order while records are "
                    "eligible; this contradicts spec P3 and is a bug"
                )
            order_col = "rec"
            finish["order_switched_after_round"] = r + 1
            log.warning(
                "per-user orders made no progress in round %d (spec P7); switching to the "
                "shared hash order for the rest of the run",
                r + 1,
            )
        entry.selected_cumulative = sum(e["accepted"] for e in doc["rounds"]) + entry.accepted
        doc["rounds"].append(asdict(entry))
        doc["state"] = _counts(state)
        doc["order_col"] = order_col
        store.write_json("pass.json", doc)
        if on_round is not None:
            on_round(entry)
    if finish["stopped"] == "driver":
        with timer.stage(f"{label} driver finish") as info:
            df, details = _driver_finish(state, order_col, spark)
            store.save("driver/selected", df)
            finish.update(details)
            info.update({k: v for k, v in details.items() if isinstance(v, int)})
    doc["done"] = True
    doc["finish"] = finish
    store.write_json("pass.json", doc)
    return _outcome(doc, store, spark, resumed_from)


def _counts(state: RoundState) -> dict[str, int]:
    return {"records": state.records, "incidences": state.incidences}


def _one_round(state, r, order_col, settings, salted, store, timer, label):
    t0 = time.perf_counter()
    with timer.stage(f"{label} {r}") as info:
        flagged = proposal_round(
            state, order_col, salted=salted, salt_buckets=settings.salt_buckets
        )
        new_state, c = _commit(flagged, store, r)
        entry = RoundLog(
            round=r,
            order="",
            eligible_records_start=state.records,
            eligible_incidences_start=state.incidences,
            active_users=c["proposers"],
            proposals=c["proposals"],
            accepted=c["accepted"],
            newly_saturated=c["newly"],
            records_removed_by_saturation=state.records - c["accepted"] - new_state.records,
            selected_cumulative=0,
            eligible_records_left=new_state.records,
            eligible_incidences_left=new_state.incidences,
            seconds=0.0,
        )
        info.update(
            accepted=c["accepted"],
            newly_saturated=c["newly"],
            eligible_records_left=new_state.records,
            eligible_incidences_left=new_state.incidences,
        )
    entry.seconds = round(time.perf_counter() - t0, 3)
    return new_state, entry


def _outcome(doc: dict, store, spark, resumed_from) -> PassOutcome:
    from pyspark.sql import functions as F

    rounds = [RoundLog(**e) for e in doc["rounds"]]
    parts = [
        _accepted(store.load(_rname(e.round, "flagged"))).withColumn("round", F.lit(e.round))
        for e in rounds
        if e.accepted
    ]
    n_selected = sum(e.accepted for e in rounds)
    finish = doc["finish"]
    if finish.get("stopped") == "driver":
        parts.append(store.load("driver/selected").withColumn("round", F.lit(0)))
        n_selected += int(finish.get("driver_accepted", 0))
    if parts:
        selected = reduce(lambda a, b: a.unionByName(b), parts)
    else:
        selected = spark.createDataFrame([], "rec long, round int")
    # -> (rec, round)
    r = len(rounds)
    if finish.get("stopped") == "max_rounds":
        remaining = _eligible(store.load(_rname(r, "flagged"))).select("rec", USER_ID)
    else:
        remaining = spark.createDataFrame([], f"rec long, {USER_ID} string")
    return PassOutcome(selected, n_selected, r, rounds, finish, remaining, resumed_from)
