"""The driver-side algorithms behind the Spark entry point: ILP, Alg. 4 and the bias sweep.

Each collects the whole prepared hypergraph in the ``size-hash`` order
(:func:`~.driver.collect_graph`, refused above ``driver_max_rows`` incidences), solves on the
driver, and hands the result back to Spark:

* :func:`run_ilp` (``ilp``, ``ilp-dup``): the exact optimum with HiGHS, ILP (1) or (2) of
  [B] App. C.4 (docs/design/bounding.md#ilp); small inputs only (``ilp_max_records``);
* :func:`run_dp_mf` (``dp-mf``): [B] Alg. 4, T batches of B records with min-separation
  (docs/design/bounding.md#min-sep), or :class:`MinSepInfeasibleError`;
* :func:`run_bias_sweep` (``bias-sweep``): the 76 settings of the bias-mitigating variant and
  their Pareto front (docs/design/bounding.md#bias-mitigating).

Selection reads ids only and spends no budget (fixed-graph DP,
docs/design/bounding.md#fixed-graph-dp); every output is confidential
(docs/design/bounding.md#confidential).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from spark_dp.contribution_bounding.bias_mitigating import pareto_sweep
from spark_dp.contribution_bounding.columns import (
    BATCH_INDEX,
    MULTIPLICITY,
    POSITION,
    REC,
    RECORD_ID,
)
from spark_dp.contribution_bounding.driver import collect_graph, to_spark
from spark_dp.contribution_bounding.greedy import min_sep_batches
from spark_dp.contribution_bounding.hypergraph import CompactHypergraph
from spark_dp.contribution_bounding.ilp import ProblemTooLargeError, solve_ilp
from spark_dp.contribution_bounding.outputs import BoundingResult, finish_outputs
from spark_dp.errors import SparkDPUserError
from spark_dp.logs import private

if TYPE_CHECKING:
    from spark_dp.contribution_bounding.plan import BoundingPlan, RunContext
    from spark_dp.contribution_bounding.prepare import Prepared

__all__ = ["MinSepInfeasibleError", "run_bias_sweep", "run_dp_mf", "run_ilp"]

_SWEEP_SCHEMA = "u_thr long, c1 long, c2 long, selected long, mean_size double, pareto boolean"


class MinSepInfeasibleError(SparkDPUserError):
    """Alg. 4 found no min-separated batching (FAIL)."""


def _collect(prep: Prepared, plan: BoundingPlan, ctx: RunContext) -> CompactHypergraph:
    return collect_graph(prep, plan.params.driver_max_rows, plan.algorithm, ctx.timer)


def run_ilp(prep: Prepared, plan: BoundingPlan, ctx: RunContext) -> BoundingResult:
    """The exact optimum of ILP (1), or of ILP (2) when the plan allows duplicates.

    Raises:
        ProblemTooLargeError: more records than ``ilp_max_records`` (checked before the
            collect), or more incidences than ``driver_max_rows``.
    """
    params = plan.params
    if prep.n_records > params.ilp_max_records:
        raise ProblemTooLargeError(
            f"the ILP would have {private(prep.n_records)} record variables, more than "
            f"ilp_max_records="
            f"{params.ilp_max_records}; use greedy/proposal or raise --ilp-max-records"
        )
    graph = _collect(prep, plan, ctx)
    summary: dict[str, Any] = {"rounds": 0}
    with ctx.timer.stage("ilp") as info:
        sol = solve_ilp(
            graph,
            duplicates=plan.duplicates,
            time_limit=params.ilp_time_limit,
            max_records=params.ilp_max_records,
        )
        info.update(objective=sol.objective, optimal=sol.optimal)
    summary["ilp"] = {
        "objective": sol.objective,
        "optimal": sol.optimal,
        "gap": sol.gap,
        "dual_bound": sol.dual_bound,
        "status": sol.status,
    }
    keep = sol.multiplicity > 0
    chosen = to_spark(
        prep.inc.sparkSession,
        {REC: graph.record_ids[keep].astype(np.int64), MULTIPLICITY: sol.multiplicity[keep]},
        f"{REC} long, {MULTIPLICITY} long",
    )
    # -> (rec, multiplicity)
    return finish_outputs(
        prep,
        chosen,
        None,
        duplicates=plan.duplicates,
        totals=(sol.objective, int(np.count_nonzero(sol.multiplicity))),
        summary=summary,
        timer=ctx.timer,
        cache=ctx.store.cache,
    )


def run_dp_mf(prep: Prepared, plan: BoundingPlan, ctx: RunContext) -> BoundingResult:
    """[B] Alg. 4: T batches of B records, a user's records at least min_sep batches apart.

    The bound for accounting is k = max_u appearances of u ≤ ceil(T / min_sep)
    (docs/design/bounding.md#min-sep).

    Raises:
        MinSepInfeasibleError: a full cycle over the records added nothing (FAIL).
    """
    params = plan.params
    iterations, batch_size = params.iterations, params.batch_size
    if iterations is None or batch_size is None:  # refused by the plan already
        raise ValueError("dp-mf needs iterations and batch_size")
    graph = _collect(prep, plan, ctx)
    summary: dict[str, Any] = {"rounds": 0}
    with ctx.timer.stage("min-sep batches") as info:
        res = min_sep_batches(graph, iterations, batch_size, params.min_sep)
        info.update(failed=res.failed, k=res.k)
    if res.failed:
        raise MinSepInfeasibleError(
            f"Alg. 4 found no batching with min_sep={params.min_sep}, T={iterations},"
            f" B={batch_size} (a full pass added nothing after {private(res.filled)} of "
            f"{iterations * batch_size} entries); lower --min-sep or --batch-size"
        )
    t, b = res.batches.shape
    df = to_spark(
        prep.inc.sparkSession,
        {
            BATCH_INDEX: np.repeat(np.arange(t, dtype=np.int64), b),
            POSITION: np.tile(np.arange(b, dtype=np.int64), t),
            REC: graph.record_ids[res.batches.ravel()].astype(np.int64),
        },
        f"{BATCH_INDEX} long, {POSITION} long, {REC} long",
    )
    # -> (batch_index, position, rec)
    selected = df.join(prep.records, REC).select(BATCH_INDEX, POSITION, RECORD_ID)
    # -> (batch_index, position, record_id)
    summary.update(
        selected=t * b,
        distinct_selected=int(np.unique(res.batches).size),
        max_degree=res.k,
        min_sep=params.min_sep,
        iterations=t,
        batch_size=b,
        bound_ceil_t_over_min_sep=-(-t // params.min_sep),
    )
    return BoundingResult(selected, None, summary)


def run_bias_sweep(prep: Prepared, plan: BoundingPlan, ctx: RunContext) -> BoundingResult:
    """Every setting of [B]'s grid (u_thr, c1, c2) with its |S| and mean record size; the
    Pareto front is flagged (docs/design/bounding.md#bias-mitigating). The bound k comes from the
    capacities."""
    graph = _collect(prep, plan, ctx)
    summary: dict[str, Any] = {"rounds": 0}
    with ctx.timer.stage("bias sweep") as info:
        points = pareto_sweep(graph, base_sequence=np.arange(graph.n_records))
        info.update(settings=len(points), front=sum(p.pareto for p in points))
    rows = [p.to_dict() for p in points]
    df = to_spark(prep.inc.sparkSession, rows, _SWEEP_SCHEMA)
    # -> (u_thr, c1, c2, selected, mean_size, pareto)
    summary.update(settings=len(rows), pareto_front=[r for r in rows if r["pareto"]])
    return BoundingResult(df, None, summary)
