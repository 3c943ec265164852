"""One entry point for every contribution-bounding algorithm: :func:`bound_contributions`.

It decides the order of steps: validate and fingerprint the inputs, prepare the working
tables (order positions, capacities), run the chosen algorithm, map positions back to record
ids, recompute per-user degrees from the input and check feasibility. Algorithms:

==================  ========================================================================
``proposal``        [A]'s distributed rounds with any order and finish mode (spec §3)
``greedy``          [B] Alg. 2 = ``proposal`` with a shared order run to exhaustion (P4);
                    small inputs run entirely on the driver (P6), identical result
``greedy-dup``      [B] Alg. 3 as passes of rounds on the previous pass's additions (§4.3)
``bias-mitigating`` Alg. 2 over the small/large interleave, as a shared order (§4.6)
``ilp``/``ilp-dup`` exact optimum with HiGHS (§4.5), small inputs only
``dp-mf``           [B] Alg. 4: T batches of B with min-separation (§4.4), driver side
``bias-sweep``      the 76-setting Pareto sweep of §4.6, driver side
==================  ========================================================================

Privacy: selection reads ids only (fixed-graph DP, spec §1.5); it spends no budget. The
bound to use in accounting is ``max_degree`` k = max_u Σ_{h∋u} mult(h) of the result. All
outputs and the summary are confidential (spec A36).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any

import numpy as np

from spark_dp.contribution_bounding.bias_mitigating import pareto_sweep
from spark_dp.contribution_bounding.greedy import min_sep_batches
from spark_dp.contribution_bounding.hypergraph import CompactHypergraph
from spark_dp.contribution_bounding.ilp import ProblemTooLargeError, solve_ilp
from spark_dp.contribution_bounding.outputs import check_feasible, selected_records, user_state
from spark_dp.contribution_bounding.params import DRIVER_ALGORITHMS, BoundingParams
from spark_dp.contribution_bounding.prepare import (
    OrderPlan,
    Prepared,
    check_weights,
    initial_state,
    input_fingerprint,
    prepare,
)
from spark_dp.contribution_bounding.proposal_rounds import RoundLog, RoundSettings, run_pass
from spark_dp.contribution_bounding.state_store import StateStore
from spark_dp.errors import SparkDPUserError
from spark_dp.io import CAPACITY, RECORD_ID, USER_ID, validate_edges
from spark_dp.logs import StageTimer, get_logger
from spark_dp.randomness import Randomness

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["BoundingResult", "MinSepInfeasibleError", "WorkDirMismatchError", "bound_contributions"]

# Parameters that change speed but never the answer (excluded from the resume fingerprint).
_PERFORMANCE_ONLY = (
    "driver_threshold_rows",
    "driver_max_rows",
    "skew_threshold",
    "salt_buckets",
    "ilp_time_limit",
    "ilp_max_records",
)


class WorkDirMismatchError(SparkDPUserError):
    """The work directory holds the state of a run with other inputs or parameters."""


class MinSepInfeasibleError(SparkDPUserError):
    """Alg. 4 found no min-separated batching (FAIL)."""


@dataclass
class BoundingResult:
    """What a bounding run produced.

    Attributes:
        selected: (record_id) or (record_id, multiplicity); dp-mf: (batch_index, position,
            record_id); bias-sweep: one row per setting. Confidential.
        user_state: (user_id, cap, d, status), or ``None`` (dp-mf, bias-sweep). Confidential.
        summary: counts for the report: selected, distinct_selected, rounds, max_degree,
            round_log, finish, order, seed, ... (confidential aggregates).
        selected_by_round: (record_id, round) for the single-pass round algorithms (round 0 =
            driver finish), else ``None``. Confidential.
    """

    selected: Any
    user_state: Any
    summary: dict[str, Any] = field(default_factory=dict)
    selected_by_round: Any = None


def bound_contributions(
    incidences: DataFrame,
    params: BoundingParams,
    *,
    capacities: DataFrame | None = None,
    record_weights: DataFrame | None = None,
    seed: int | None = None,
    work_dir: str | None = None,
    restart: bool = False,
    validate: bool = True,
    timer: StageTimer | None = None,
    on_round: Callable[[RoundLog], None] | None = None,
) -> BoundingResult:
    """Select records so that no user is in more than cap(u) of them.

    Args:
        incidences: (record_id, user_id) table (other columns are never read).
        params: the algorithm and its parameters.
        capacities: optional (user_id, cap) table; users missing from it get
            ``params.capacity``.
        record_weights: content-free weights, (record_id, weight) for ``weighted-global`` or
            (record_id, user_id, weight) for ``per-user`` (missing keys weigh 0).
        seed: seed of the order's hash (spec §3.3). ``None``: reuse the seed stored in
            ``work_dir`` when resuming, else draw one from OS entropy. Not sensitive under
            fixed-graph DP (spec A37); reported for reproducibility.
        work_dir: keep per-round state here and resume from it (``None``: in memory).
        restart: discard a work directory that belongs to another run instead of failing.
        validate: validate and deduplicate ``incidences`` (skip when already done by
            :func:`spark_dp.io.load_incidences`).
        timer: stage timer for per-round logging (default: a new one).
        on_round: callback after each saved round (tests use it to simulate a crash).

    Raises:
        ParameterError, InputContractError: bad parameters or inputs.
        WorkDirMismatchError: ``work_dir`` holds another run's state and ``restart`` is off.
        MinSepInfeasibleError: dp-mf failed for these T, B, min_sep.
    """
    log = get_logger("spark_dp.contribution_bounding")
    timer = timer or StageTimer(log)
    spark = incidences.sparkSession
    if validate:
        incidences, _ = validate_edges(
            incidences, {RECORD_ID: RECORD_ID, USER_ID: USER_ID}, path="<incidences>"
        )
    else:
        incidences = incidences.select(RECORD_ID, USER_ID)
    per_user = params.order == "per-user"
    weights = None
    if record_weights is not None:
        weights = check_weights(record_weights, per_user=per_user)
    store = StateStore(spark, work_dir)
    with timer.stage("fingerprint"):
        seed = _claim_store(store, incidences, capacities, weights, params, seed, restart, log)
    interleave = None
    if params.algorithm == "bias-mitigating":
        interleave = (params.size_threshold, params.small_block, params.large_block)
    order = "size-hash" if params.algorithm in DRIVER_ALGORITHMS else params.order
    plan = OrderPlan(order, seed, interleave)
    capacity = params.capacity
    if params.algorithm == "dp-mf" and capacity is None and capacities is None:
        capacity = 0  # Alg. 4 has no capacities (spec A15)
    with timer.stage("prepare") as info:
        prep = prepare(
            incidences,
            plan=plan,
            capacity=capacity,
            capacities=capacities,
            weights=weights,
            skew_threshold=params.skew_threshold,
            store=store.child("prepared"),
            log=log,
        )
        info.update(records=prep.n_records, incidences=prep.n_incidences, users=prep.n_users)
    summary: dict[str, Any] = {
        "algorithm": params.algorithm,
        "order": plan.to_dict(),
        "input": prep.counts(),
    }
    if params.algorithm in DRIVER_ALGORITHMS:
        result = _run_driver(prep, params, summary, timer)
    else:
        settings = RoundSettings(
            max_rounds=params.max_rounds,
            finish=params.finish,
            driver_threshold_rows=params.driver_threshold_rows,
            driver_max_rows=params.driver_max_rows,
            salt_buckets=params.salt_buckets,
        )
        run = dict(settings=settings, timer=timer, log=log, on_round=on_round)
        by_round = None
        if params.algorithm == "greedy-dup":
            chosen, remaining, totals = _run_duplicates(prep, store, summary, run)
        else:
            chosen, remaining, by_round, totals = _run_single(prep, store, summary, run, per_user)
        result = _finish_outputs(prep, chosen, remaining, params, summary, timer, totals)
        if by_round is not None:
            result.selected_by_round = by_round.join(prep.records, "rec").select(RECORD_ID, "round")
    result.summary["seed"] = seed
    return result


# --------------------------------------------------------------------------- work dir


def _fingerprint_params(params: BoundingParams) -> dict[str, Any]:
    out = {
        f.name: getattr(params, f.name)
        for f in dataclasses.fields(BoundingParams)
        if f.name not in _PERFORMANCE_ONLY
    }
    if params.finish != "none":  # at exhaustion the answer does not depend on R (P4, P6)
        out.pop("max_rounds")
        out.pop("finish")
    return out


def _claim_store(store, incidences, capacities, weights, params, seed, restart, log) -> int:
    """Check that ``store`` is fresh or belongs to this very run; return the order seed."""
    meta = store.read_json("meta.json")
    if seed is None:
        if meta is not None and "seed" in meta:
            seed = int(meta["seed"])
        else:
            seed = Randomness.create(None).child("contribution_bounding").key64("order-seed")
            seed >>= 1  # a non-negative 63-bit integer
    if not store.persistent:
        return seed
    doc = {
        "inputs": input_fingerprint(incidences, capacities, weights),
        "params": _fingerprint_params(params),
        "seed": seed,
        "format": 1,
    }
    if meta is not None and meta != doc:
        if not restart:
            raise WorkDirMismatchError(
                f"work directory {store.work_dir!r} holds the state of a run with other inputs "
                "or parameters; remove it, choose another --work-dir, or pass --overwrite to "
                "start over"
            )
        log.warning("discarding the state of another run in %s", store.work_dir)
        store.clear()
        meta = None
    if meta is None:
        store.write_json("meta.json", doc)
    elif store.persistent:
        log.info("work directory %s belongs to this run: resuming", store.work_dir)
    return seed


# --------------------------------------------------------------------------- distributed


def _known(prep: Prepared) -> tuple[int, int, int]:
    return (prep.n_records, prep.n_incidences, prep.zero_cap_users)


def _run_single(prep: Prepared, store, summary, run, per_user: bool):
    settings = run["settings"]
    out = run_pass(
        lambda s: initial_state(prep.inc, prep.users, s, known=_known(prep)),
        per_user=per_user,
        salted=prep.heavy_users > 0,
        store=store.child("pass-1"),
        **run,
    )
    summary.update(
        rounds=out.rounds,
        round_log=[dataclasses.asdict(e) for e in out.log],
        finish=out.finish,
        resumed_from_round=out.resumed_from,
        settings=dataclasses.asdict(settings),
    )
    from pyspark.sql import functions as F

    chosen = out.selected.select("rec", F.lit(1).cast("long").alias("multiplicity"))
    remaining = out.remaining if out.finish.get("stopped") == "max_rounds" else None
    return chosen, remaining, out.selected, (out.n_selected, out.n_selected)


def _run_duplicates(prep: Prepared, store, summary, run):
    """[B] Alg. 3 by passes (spec §4.3): pass 1 is Alg. 2; pass p ≥ 2 runs the rounds on the
    records pass p − 1 added (D3), with capacities cap − count, in the same order (D2)."""
    from pyspark.sql import functions as F

    passes, logs, finishes, sizes = [], [], [], []
    counts = prev = None
    p = 1
    while True:

        def make_initial(s, prev=prev, counts=counts, p=p):
            if p == 1:
                return initial_state(prep.inc, prep.users, s, known=_known(prep))
            inc = prep.inc.join(prev, "rec", "left_semi")
            users = (
                prep.users.join(counts, USER_ID, "left")
                .withColumn(CAPACITY, F.col(CAPACITY) - F.coalesce(F.col("count"), F.lit(0)))
                .drop("count")
                .join(inc.select(USER_ID), USER_ID, "left_semi")
            )
            # -> (user_id, cap − count, heavy) for users of this pass
            return initial_state(inc, users, s)

        out = run_pass(
            make_initial,
            per_user=False,
            salted=prep.heavy_users > 0,
            store=store.child(f"pass-{p}"),
            label=f"pass {p} round",
            **run,
        )
        logs.append([dataclasses.asdict(e) for e in out.log])
        finishes.append(out.finish)
        if out.n_selected == 0:
            break
        sizes.append(out.n_selected)
        prev = out.selected.select("rec")
        passes.append(prev)
        union = reduce(lambda a, b: a.unionByName(b), passes)
        counts = prep.inc.join(union, "rec").groupBy(USER_ID).agg(F.count(F.lit(1)).alias("count"))
        # -> (user_id, count): copies so far per user
        p += 1
    summary.update(
        passes=len(passes),
        rounds=sum(len(x) for x in logs),
        round_log=logs,
        finish=finishes,
        settings=dataclasses.asdict(run["settings"]),
    )
    if not passes:
        empty = prep.inc.sparkSession.createDataFrame([], "rec long, multiplicity long")
        return empty, None, (0, 0)
    chosen = (
        reduce(lambda a, b: a.unionByName(b), passes)
        .groupBy("rec")
        .agg(F.count(F.lit(1)).cast("long").alias("multiplicity"))
    )
    # -> (rec, multiplicity); the distinct records are pass 1's (D1)
    return chosen, None, (sum(sizes), sizes[0])


def _finish_outputs(
    prep, chosen, remaining, params, summary, timer, totals: tuple[int, int]
) -> BoundingResult:
    """Degrees from the input and the selection, the feasibility check, the id mapping.

    ``totals`` = (|S| with multiplicity, distinct records), known from the run's own counts.
    """
    with timer.stage("outputs") as info:
        state = user_state(prep.inc, prep.users, chosen, remaining).localCheckpoint(eager=True)
        degrees = check_feasible(state)
        summary.update(selected=totals[0], distinct_selected=totals[1], **degrees)
        info.update(selected=totals[0], max_degree=degrees["max_degree"])
    selected = selected_records(chosen, prep.records, with_multiplicity=params.duplicates)
    return BoundingResult(selected, state, summary)


# --------------------------------------------------------------------------- driver side


def _collect(prep: Prepared, limit: int, what: str):
    """The whole hypergraph on the driver, records in rec order (the shared order)."""
    if prep.n_incidences > limit:
        raise ProblemTooLargeError(
            f"{what} runs on the driver and would collect {prep.n_incidences} incidences, "
            f"above driver_max_rows={limit}; raise --driver-max-rows if the driver has the "
            "memory, or use a distributed algorithm"
        )
    import pandas as pd

    inc = prep.inc.select("rec", USER_ID).toPandas().sort_values(["rec", USER_ID])
    users = prep.users.select(USER_ID, CAPACITY).toPandas()
    rec_values, rec_codes = np.unique(inc["rec"].to_numpy(np.int64), return_inverse=True)
    user_codes = pd.Index(users[USER_ID]).get_indexer(inc[USER_ID])
    return CompactHypergraph.from_codes(
        rec_codes, user_codes, rec_values, users[USER_ID].to_numpy(), users[CAPACITY].to_numpy()
    )


def _run_driver(prep: Prepared, params: BoundingParams, summary, timer) -> BoundingResult:
    import pandas as pd

    spark = prep.inc.sparkSession
    alg = params.algorithm
    if alg in ("ilp", "ilp-dup") and prep.n_records > params.ilp_max_records:
        raise ProblemTooLargeError(
            f"the ILP would have {prep.n_records} record variables, above ilp_max_records="
            f"{params.ilp_max_records}; use greedy/proposal or raise --ilp-max-records"
        )
    with timer.stage("collect to driver") as info:
        graph = _collect(prep, params.driver_max_rows, alg)
        info.update(records=graph.n_records, incidences=len(graph.users))
    summary["rounds"] = 0
    if alg in ("ilp", "ilp-dup"):
        with timer.stage("ilp") as info:
            sol = solve_ilp(
                graph,
                duplicates=alg == "ilp-dup",
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
        chosen = spark.createDataFrame(
            pd.DataFrame(
                {
                    "rec": graph.record_ids[keep].astype(np.int64),
                    "multiplicity": sol.multiplicity[keep],
                }
            ),
            "rec long, multiplicity long",
        )
        totals = (sol.objective, int(np.count_nonzero(sol.multiplicity)))
        return _finish_outputs(prep, chosen, None, params, summary, timer, totals)
    if alg == "dp-mf":
        with timer.stage("min-sep batches") as info:
            res = min_sep_batches(graph, params.iterations, params.batch_size, params.min_sep)
            info.update(failed=res.failed, k=res.k)
        if res.failed:
            raise MinSepInfeasibleError(
                f"Alg. 4 found no batching with min_sep={params.min_sep}, T={params.iterations},"
                f" B={params.batch_size} (a full pass added nothing after {res.filled} of "
                f"{params.iterations * params.batch_size} entries); lower --min-sep or "
                "--batch-size"
            )
        t, b = res.batches.shape
        batches = pd.DataFrame(
            {
                "batch_index": np.repeat(np.arange(t, dtype=np.int64), b),
                "position": np.tile(np.arange(b, dtype=np.int64), t),
                "rec": graph.record_ids[res.batches.ravel()].astype(np.int64),
            }
        )
        df = spark.createDataFrame(batches, "batch_index long, position long, rec long")
        selected = df.join(prep.records, "rec").select("batch_index", "position", RECORD_ID)
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
    # bias-sweep
    with timer.stage("bias sweep") as info:
        points = pareto_sweep(graph, base_sequence=np.arange(graph.n_records))
        info.update(settings=len(points), front=sum(p.pareto for p in points))
    rows = [p.to_dict() for p in points]
    df = spark.createDataFrame(
        pd.DataFrame(rows),
        "u_thr long, c1 long, c2 long, selected long, mean_size double, pareto boolean",
    )
    summary.update(settings=len(rows), pareto_front=[r for r in rows if r["pareto"]])
    return BoundingResult(df, None, summary)
