"""The distributed algorithms: passes of proposal rounds on Spark
(docs/design/bounding.md#proposal-rounds, #greedy, #bias-mitigating).

* :func:`run_single_pass` (``proposal``, ``greedy``, ``bias-mitigating``): one pass of
  rounds in the plan's order. With a shared order run to exhaustion the result is exactly
  [B] Alg. 2 in that order (docs/design/bounding.md#greedy-equivalence); the bias-mitigating variant
  is Alg. 2 over the small/large interleave, which :func:`~.prepare.prepare` turned into the order
  positions.
* :func:`run_passes` (``greedy-dup``): [B] Alg. 3 as passes of rounds
  (docs/design/bounding.md#duplicates).

Both read the prepared tables, keep their state in the run's store (resumable), and end with
:func:`~.outputs.finish_outputs`, which recomputes the degrees from the input and checks
feasibility. Selection reads ids only and spends no budget (fixed-graph DP,
docs/design/bounding.md#fixed-graph-dp).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import reduce
from typing import TYPE_CHECKING, Any

from spark_dp.contribution_bounding.columns import (
    CAPACITY,
    COPIES,
    MULTIPLICITY,
    REC,
    RECORD_ID,
    ROUND,
    USER_ID,
)
from spark_dp.contribution_bounding.outputs import BoundingResult, finish_outputs
from spark_dp.contribution_bounding.passes import RoundSettings, run_pass
from spark_dp.contribution_bounding.prepare import Prepared
from spark_dp.contribution_bounding.proposal_rounds import RoundState, initial_state

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_dp.contribution_bounding.plan import BoundingPlan, RunContext
    from spark_dp.contribution_bounding.state_store import StateStore

__all__ = ["run_passes", "run_single_pass"]


def _settings(plan: BoundingPlan) -> RoundSettings:
    if plan.rounds is None:
        raise ValueError(f"{plan.algorithm} is planned on the driver, not as rounds")
    return plan.rounds


def _known(prep: Prepared) -> tuple[int, int, int]:
    return (prep.n_records, prep.n_incidences, prep.zero_cap_users)


def run_single_pass(prep: Prepared, plan: BoundingPlan, ctx: RunContext) -> BoundingResult:
    """One pass of rounds in the plan's order, then the outputs (``proposal``, ``greedy``,
    ``bias-mitigating``)."""
    from pyspark.sql import functions as F

    settings = _settings(plan)
    with ctx.timer.stage("rounds"):  # how many: private (the rounds' own stages are)
        out = run_pass(
            lambda s: initial_state(prep.inc, prep.users, s, known=_known(prep)),
            settings=settings,
            per_user=plan.per_user,
            salted=prep.heavy_users > 0,
            store=ctx.store.child("pass-1"),
            timer=ctx.timer,
            log=ctx.log,
            on_round=ctx.on_round,
        )
    summary: dict[str, Any] = {
        "rounds": out.rounds,
        "round_log": [dataclasses.asdict(e) for e in out.log],
        "finish": out.finish,
        "resumed_from_round": out.resumed_from,
        "settings": dataclasses.asdict(settings),
    }
    chosen = out.selected.select(REC, F.lit(1).cast("long").alias(MULTIPLICITY))
    # -> (rec, multiplicity)
    by_round = ctx.store.cache.persist(
        out.selected.join(prep.records, REC).select(RECORD_ID, ROUND)
    )
    # -> (record_id, round): the id mapping joined once, for both output tables (the result
    #    keeps each of them computed; the persisted join is released once both are)
    one = F.lit(1).cast("long").alias(MULTIPLICITY)
    selected = by_round.select(RECORD_ID, one) if plan.duplicates else by_round.select(RECORD_ID)
    remaining = out.remaining if out.finish.get("stopped") == "max_rounds" else None
    result = finish_outputs(
        prep,
        chosen,
        remaining,
        duplicates=plan.duplicates,
        totals=(out.n_selected, out.n_selected),
        summary=summary,
        timer=ctx.timer,
        cache=ctx.store.cache,
        selected=selected,
    )
    result.selected_by_round = by_round
    return result


def run_passes(prep: Prepared, plan: BoundingPlan, ctx: RunContext) -> BoundingResult:
    """[B] Alg. 3 by passes (docs/design/bounding.md#duplicates): pass 1 is Alg. 2; pass p ≥ 2 runs
    the rounds on the records pass p − 1 added (D3), with capacities cap − count, in the same order
    (D2)."""
    from pyspark.sql import functions as F

    settings = _settings(plan)
    passes: list[DataFrame] = []
    logs: list[list[dict[str, Any]]] = []
    finishes: list[dict[str, Any]] = []
    sizes: list[int] = []
    counts: DataFrame | None = None
    prev: DataFrame | None = None
    p = 1
    with ctx.timer.stage("passes"):  # how many passes and rounds: private
        while True:
            out = run_pass(
                _pass_start(prep, prev, counts),
                settings=settings,
                per_user=False,
                salted=prep.heavy_users > 0,
                store=ctx.store.child(f"pass-{p}"),
                timer=ctx.timer,
                log=ctx.log,
                label=f"pass {p} round",
                on_round=ctx.on_round,
            )
            logs.append([dataclasses.asdict(e) for e in out.log])
            finishes.append(out.finish)
            if out.n_selected == 0:
                break
            sizes.append(out.n_selected)
            prev = out.selected.select(REC)
            passes.append(prev)
            union = reduce(lambda a, b: a.unionByName(b), passes)
            counts = prep.inc.join(union, REC).groupBy(USER_ID).agg(F.count(F.lit(1)).alias(COPIES))
            # -> (user_id, count): copies so far per user
            p += 1
    summary: dict[str, Any] = {
        "passes": len(passes),
        "rounds": sum(len(x) for x in logs),
        "round_log": logs,
        "finish": finishes,
        "settings": dataclasses.asdict(settings),
    }
    return finish_outputs(
        prep,
        _multiset(prep, passes),
        None,
        duplicates=plan.duplicates,
        totals=(sum(sizes), sizes[0]) if sizes else (0, 0),
        summary=summary,
        timer=ctx.timer,
        cache=ctx.store.cache,
    )


def _pass_start(
    prep: Prepared, prev: DataFrame | None, counts: DataFrame | None
) -> Callable[[StateStore], RoundState]:
    """The state before a pass's first round: pass 1 starts from every record; pass p ≥ 2 from
    the incidences of the records pass p − 1 added (``prev``, (rec)), with capacities cap −
    ``counts`` (user_id, count: copies so far per user) for the users of those records."""
    from pyspark.sql import functions as F

    def make_initial(s: StateStore) -> RoundState:
        if prev is None or counts is None:  # pass 1
            return initial_state(prep.inc, prep.users, s, known=_known(prep))
        inc = prep.inc.join(prev, REC, "left_semi")
        # -> (rec, user_id, size, lead): incidences of the records pass p − 1 added
        users = (
            prep.users.join(counts, USER_ID, "left")
            .withColumn(CAPACITY, F.col(CAPACITY) - F.coalesce(F.col(COPIES), F.lit(0)))
            .drop(COPIES)
            .join(inc.select(USER_ID), USER_ID, "left_semi")
        )
        # -> (user_id, cap − count, heavy) for users of this pass
        return initial_state(inc, users, s)

    return make_initial


def _multiset(prep: Prepared, passes: list[DataFrame]) -> DataFrame:
    """(rec, multiplicity) over the passes' selections; the distinct records are pass 1's
    (D1). Empty when no pass selected anything."""
    from pyspark.sql import functions as F

    if not passes:
        return prep.inc.sparkSession.createDataFrame([], f"{REC} long, {MULTIPLICITY} long")
    return (
        reduce(lambda a, b: a.unionByName(b), passes)
        .groupBy(REC)
        .agg(F.count(F.lit(1)).cast("long").alias(MULTIPLICITY))
    )  # -> (rec, multiplicity)
