"""A pass of proposal rounds: rounds until the finish mode stops them, resumable.

docs/design/bounding.md#round-plan (finish modes, step 7: resume), #skew. A pass starts from a
:class:`~.prepare.RoundState`, runs :func:`~.proposal_rounds.proposal_round` after
:func:`~.proposal_rounds.proposal_round`, saves every round's flagged table and a small JSON
log (``pass.json``) in its :class:`~.state_store.StateStore`, and stops when

* no record is eligible (``exhausted``);
* ``driver-greedy`` and the eligible incidences fit under ``driver_threshold_rows``, or
  ``max_rounds`` rounds ran and they fit under ``driver_max_rows`` (``driver``): the driver
  finishes the pass (:func:`~.driver.driver_finish`, same answer by P6);
* ``none`` and ``max_rounds`` rounds ran (``max_rounds``: feasible, maybe not maximal).

With ``continue`` the rounds go on to exhaustion. Per-user orders can deadlock (P7): on the
first round that accepts nothing the pass switches to the shared hash order
(docs/design/bounding.md#per-user-orders). How many rounds run, and how a pass ends, depend on
the graph: they are logged through the unsafe-debug gate only, and the confidential report
holds them (``rounds``, ``finish``). A restarted pass continues after its last saved round; a
finished one is only read back.

The round log holds counts only, never ids; it is confidential all the same
(docs/design/bounding.md#confidential).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any

from spark_dp.contribution_bounding.columns import REC, ROUND, URANK, USER_ID
from spark_dp.contribution_bounding.driver import driver_finish
from spark_dp.contribution_bounding.proposal_rounds import (
    RoundState,
    accepted_records,
    commit_round,
    eligible_incidences,
    proposal_round,
    round_table,
    state_after,
)
from spark_dp.logs import StageTimer, log_private

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from spark_dp.contribution_bounding.state_store import StateStore

__all__ = ["PassOutcome", "RoundLog", "RoundSettings", "run_pass"]

_PASS_LOG = "pass.json"
_DRIVER_SELECTED = "driver/selected"


@dataclass(frozen=True)
class RoundSettings:
    """How a pass runs (docs/design/bounding.md#finish; defaults of A1)."""

    max_rounds: int = 64
    finish: str = "driver-greedy"
    driver_threshold_rows: int = 5_000_000
    driver_max_rows: int = 20_000_000
    salt_buckets: int = 64


@dataclass
class RoundLog:
    """One round's counts (docs/design/bounding.md#outputs ``round_log``); confidential, never
    ids."""

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

    selected: DataFrame
    n_selected: int
    rounds: int
    log: list[RoundLog]
    finish: dict[str, Any]
    remaining: DataFrame
    resumed_from: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def run_pass(
    make_initial: Callable[[StateStore], RoundState],
    *,
    settings: RoundSettings,
    per_user: bool,
    salted: bool,
    store: StateStore,
    timer: StageTimer,
    log: logging.Logger,
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
        store: the :class:`~.state_store.StateStore` of this pass.
        timer: a :class:`spark_dp.logs.StageTimer`; one stage per round, data-dependent (the
            number of rounds follows the graph: logged through the unsafe-debug gate only; the
            caller opens the public stage around the pass).
        log: logger (counts, and every fact about the data such as an order switch, go
            through :func:`spark_dp.logs.log_private`; the confidential report's ``finish``
            records them).
        label: stage name prefix (``round``, or ``pass 2 round`` for Alg. 3).
        on_round: called after a round is fully saved (a crash after it resumes after it).

    Raises:
        RuntimeError: a round accepted nothing under a shared order (impossible by P3).
    """
    spark = store.spark
    doc = store.read_json(_PASS_LOG)
    if doc is not None and doc.get("done"):
        return _outcome(doc, store, spark, None)
    doc, state, resumed_from = _start(doc, make_initial, settings, per_user, store, log)
    order_col: str = doc["order_col"]
    finish: dict[str, Any] = doc["finish"]
    warned = False
    while True:
        r = len(doc["rounds"])
        stopped, warned = _stop(state, r, settings, log, warned)
        if warned:
            finish["continued_past_max_rounds"] = True
        if stopped is not None:
            finish["stopped"] = stopped
            break
        state, entry = _one_round(state, r + 1, order_col, settings, salted, store, timer, label)
        order_col = _record_round(doc, state, entry, order_col, finish, store, log)
        if on_round is not None:
            on_round(entry)
    if finish["stopped"] == "driver":
        with timer.stage(f"{label} driver finish", data_dependent=True) as info:
            df, details = driver_finish(state, order_col, spark)
            store.save(_DRIVER_SELECTED, df)
            finish.update(details)
            info.update({k: v for k, v in details.items() if isinstance(v, int)})
    doc["done"] = True
    doc["finish"] = finish
    store.write_json(_PASS_LOG, doc)
    return _outcome(doc, store, spark, resumed_from)


def _start(
    doc: dict[str, Any] | None,
    make_initial: Callable[[StateStore], RoundState],
    settings: RoundSettings,
    per_user: bool,
    store: StateStore,
    log: logging.Logger,
) -> tuple[dict[str, Any], RoundState, int | None]:
    """The pass log (written when new), the state to run from, and the round resumed after
    (``None`` for a fresh pass): before round 1, or the saved state of the last finished
    round."""
    if doc is None:
        doc = {
            "rounds": [],
            "order_col": URANK if per_user else REC,
            "done": False,
            "finish": {"mode": settings.finish},
        }
        store.write_json(_PASS_LOG, doc)
    if not doc["rounds"]:
        return doc, make_initial(store), None
    r = len(doc["rounds"])
    state = state_after(_load(store, round_table(r, "flagged")), **doc["state"])
    log.info("resuming from the saved state of the last finished round")
    log_private(log, "resuming after round %d", r)
    return doc, state, r


def _stop(
    state: RoundState, done: int, settings: RoundSettings, log: logging.Logger, warned: bool
) -> tuple[str | None, bool]:
    """Why the pass stops before round ``done + 1`` (``None``: run it), and whether the
    over-the-driver-limit warning has been given.

    Nothing left: ``exhausted``. Few enough eligible incidences for the driver-greedy finish:
    ``driver``. ``max_rounds`` run: ``max_rounds`` under finish none, else ``driver`` when the
    driver may collect the rest; otherwise the rounds continue (with one warning).
    """
    if state.records == 0:
        return "exhausted", warned
    if settings.finish == "driver-greedy" and state.incidences <= settings.driver_threshold_rows:
        return "driver", warned
    if done < settings.max_rounds or settings.finish == "continue":
        return None, warned
    if settings.finish == "none":
        return "max_rounds", warned
    if state.incidences <= settings.driver_max_rows:
        return "driver", warned
    if not warned:  # a fact about the data: the confidential report's finish holds it
        log_private(
            log,
            "max_rounds reached with more eligible incidences (%d) than the driver may "
            "collect (driver_max_rows=%d); continuing with rounds",
            state.incidences,
            settings.driver_max_rows,
            level=logging.WARNING,
        )
    return None, True


def _record_round(
    doc: dict[str, Any],
    state: RoundState,
    entry: RoundLog,
    order_col: str,
    finish: dict[str, Any],
    store: StateStore,
    log: logging.Logger,
) -> str:
    """Append a finished round to the pass log and save it; the order column of the next
    round (a per-user order that made no progress switches to the shared one,
    docs/design/bounding.md#per-user-orders).

    Raises:
        RuntimeError: a round accepted nothing under a shared order (impossible by P3).
    """
    r = len(doc["rounds"]) + 1
    entry.order = "per-user" if order_col == URANK else "shared"
    if entry.accepted == 0 and state.records > 0:
        if order_col != URANK:
            raise RuntimeError(
                f"round {r} accepted nothing under a shared order while records are "
                "eligible; this contradicts docs/design/bounding.md#progress and is a bug"
            )
        order_col = REC
        finish["order_switched_after_round"] = r  # confidential report; the log: unsafe only
        log_private(
            log,
            "per-user orders made no progress in round %d "
            "(docs/design/bounding.md#per-user-orders); switching to the shared hash order for "
            "the rest of the run",
            r,
            level=logging.WARNING,
        )
    entry.selected_cumulative = sum(e["accepted"] for e in doc["rounds"]) + entry.accepted
    doc["rounds"].append(asdict(entry))
    doc["state"] = {"records": state.records, "incidences": state.incidences}
    doc["order_col"] = order_col
    store.write_json(_PASS_LOG, doc)
    return order_col


def _one_round(
    state: RoundState,
    r: int,
    order_col: str,
    settings: RoundSettings,
    salted: bool,
    store: StateStore,
    timer: StageTimer,
    label: str,
) -> tuple[RoundState, RoundLog]:
    """Run, save and count round ``r``; the log entry's order and cumulative count are left
    to the caller."""
    t0 = time.perf_counter()
    with timer.stage(f"{label} {r}", data_dependent=True) as info:
        flagged = proposal_round(
            state, order_col, salted=salted, salt_buckets=settings.salt_buckets
        )
        new_state, c = commit_round(flagged, store, r)
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


def _load(store: StateStore, name: str) -> DataFrame:
    """A table this pass saved before (it must be there)."""
    df = store.load(name)
    if df is None:
        raise RuntimeError(f"the pass state lists {name!r} but the store does not hold it")
    return df


def _outcome(
    doc: dict[str, Any], store: StateStore, spark: SparkSession, resumed_from: int | None
) -> PassOutcome:
    """The pass's selection, read back from its saved rounds (and driver finish)."""
    from pyspark.sql import functions as F

    rounds = [RoundLog(**e) for e in doc["rounds"]]
    parts = [
        accepted_records(_load(store, round_table(e.round, "flagged"))).withColumn(
            ROUND, F.lit(e.round)
        )
        for e in rounds
        if e.accepted
    ]
    n_selected = sum(e.accepted for e in rounds)
    finish: dict[str, Any] = doc["finish"]
    if finish.get("stopped") == "driver":
        parts.append(_load(store, _DRIVER_SELECTED).withColumn(ROUND, F.lit(0)))
        n_selected += int(finish.get("driver_accepted", 0))
    if parts:
        selected = reduce(lambda a, b: a.unionByName(b), parts)
    else:
        selected = spark.createDataFrame([], f"{REC} long, {ROUND} int")
    # -> (rec, round)
    r = len(rounds)
    if finish.get("stopped") == "max_rounds":
        flagged = _load(store, round_table(r, "flagged"))
        remaining = eligible_incidences(flagged).select(REC, USER_ID)
    else:
        remaining = spark.createDataFrame([], f"{REC} long, {USER_ID} string")
    # -> (rec, user_id)
    return PassOutcome(selected, n_selected, r, rounds, finish, remaining, resumed_from)
