"""One entry point for every contribution-bounding algorithm: :func:`bound_contributions`.

It decides the order of steps: validate the inputs, plan the algorithm from its parameters
(:mod:`.registry`), claim the work directory (:func:`~.state_store.claim_store`: resume
fingerprint and order seed), prepare the working tables in the planned order (order
positions, capacities), and hand them to the algorithm's run, which maps positions back to
record ids, recomputes per-user degrees from the input and checks feasibility. Algorithms:

==================  ========================================================================
``proposal``        [A]'s distributed rounds with any order and finish mode
``greedy``          [B] Alg. 2 = ``proposal`` with a shared order run to exhaustion (P4);
                    small inputs run entirely on the driver (P6), identical result
``greedy-dup``      [B] Alg. 3 as passes of rounds on the previous pass's additions
``bias-mitigating`` Alg. 2 over the small/large interleave, as a shared order
``ilp``/``ilp-dup`` exact optimum with HiGHS, small inputs only
``dp-mf``           [B] Alg. 4: T batches of B with min-separation, driver side
``bias-sweep``      the 76-setting Pareto sweep, driver side
==================  ========================================================================

Privacy: selection reads ids only (fixed-graph DP, docs/design/bounding.md#fixed-graph-dp); it
spends no budget. The bound to use in accounting is ``max_degree`` k = max_u Σ_{h∋u} mult(h) of the
result. All outputs and the summary are confidential (docs/design/bounding.md#confidential).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from spark_dp.caching import CacheScope
from spark_dp.contribution_bounding.columns import RECORD_ID, USER_ID
from spark_dp.contribution_bounding.outputs import BoundingResult
from spark_dp.contribution_bounding.params import BoundingParams
from spark_dp.contribution_bounding.passes import RoundLog
from spark_dp.contribution_bounding.plan import (
    BoundingPlan,
    RunContext,
    check_max_contributions_given,
)
from spark_dp.contribution_bounding.prepare import prepare
from spark_dp.contribution_bounding.record_weights import check_weights
from spark_dp.contribution_bounding.registry import REGISTRY
from spark_dp.contribution_bounding.state_store import StateStore, claim_store
from spark_dp.io import ContentDigest, InputSummary, ReadGate, validate_edges
from spark_dp.logs import StageTimer, get_logger
from spark_dp.randomness import Randomness
from spark_dp.release_ids import bind_release, digests_of
from spark_dp.session import sql_defaults
from spark_dp.tracking import labels

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_dp.dp.registry import Algorithm

__all__ = ["SPARK_SQL_DEFAULTS", "bound_contributions", "plan_bounding"]

SPARK_SQL_DEFAULTS: dict[str, str] = {
    # The size adaptive execution merges small shuffle partitions up to (Spark's default:
    # 64 MB). Spark 3.5 in a small driver can fail to acquire execution memory in such merged
    # partitions (UNABLE_TO_ACQUIRE_MEMORY in a hash aggregation or a window's sort by record);
    # 16 MB partitions avoid it. Applied only while bound_contributions runs and only if the
    # session leaves it unset.
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": "16m",
}


def plan_bounding(params: BoundingParams) -> BoundingPlan:
    """The data-free plan of ``params.algorithm`` (order, round settings, output shape).

    Raises:
        ParameterError: an unknown algorithm, or parameters it cannot use (dp-mf's T and B,
            an order or finish mode the algorithm does not define).
    """
    return REGISTRY[params.algorithm].plan(params)


def bound_contributions(
    incidences: DataFrame,
    plan: BoundingPlan | BoundingParams,
    *,
    capacities: DataFrame | None = None,
    record_weights: DataFrame | None = None,
    randomness: Randomness | None = None,
    work_dir: str | None = None,
    work_dir_owner: str | None = None,
    restart: bool = False,
    validate: bool = True,
    timer: StageTimer | None = None,
    on_round: Callable[[RoundLog], None] | None = None,
    digest: Sequence[InputSummary | ContentDigest | None] = (),
    weights_checked: bool = False,
) -> BoundingResult:
    """Select records so that no user is in more than cap(u) of them.

    Args:
        incidences: (record_id, user_id) table (other columns are never read).
        plan: the data-free plan (:func:`plan_bounding`; the job computes it once), or the
            parameters, planned here once before any data is touched.
        capacities: optional (user_id, cap) table; users missing from it get
            ``params.max_contributions``.
        record_weights: content-free weights, (record_id, weight) for ``weighted-global`` or
            (record_id, user_id, weight) for ``per-user`` (missing keys weigh 0).
        randomness: where the seed of the order's hash (docs/design/bounding.md#orders) comes from.
            Seeded: that seed. Entropy mode or ``None``: the seed stored in ``work_dir`` when
            resuming, else a fresh one from OS entropy. Not sensitive under fixed-graph DP
            (docs/design/bounding.md#seed); reported for reproducibility. An unbound one is bound
            here to the release of (``params``, the content digests of the incidences, capacities
            and weights, key), as :func:`spark_dp.release_ids.bind_release` says; a bound one is
            used as is.
        work_dir: keep per-round state here and resume from it (``None``: in memory). An
            existing directory is used only if it holds the state of a run (it has the
            ``meta.json`` a run writes); a folder without one is refused.
        work_dir_owner: who the work directory belongs to (a job and its inputs), recorded in
            it and checked before a resume (:func:`~.state_store.check_work_dir`).
        restart: discard a work directory that belongs to another run instead of failing.
        validate: validate ``incidences``: types, rows with a null id dropped (an empty
            input selects nothing, docs/privacy/caveats.md#bad-rows); skip when already done
            by :func:`spark_dp.io.load_incidences`. Repeated pairs need no separate pass: the
            first step of every algorithm drops them (a pair counts once,
            docs/design/bounding.md#inputs).
        timer: stage timer for per-round logging (default: a new one).
        on_round: callback after each saved round (tests use it to simulate a crash).
        digest: the summaries (or digests) of tables validated by the caller with
            ``gate=ReadGate.keyed_by(randomness)``: the incidences when ``validate`` is off, and
            the capacities (:func:`spark_dp.io.load_capacities`' digest); needed to bind an
            unbound key-file or seeded ``randomness``.
        weights_checked: ``record_weights`` come from
            :func:`~spark_dp.contribution_bounding.record_weights.check_weights` already (the job's
            read, which digests them): they are not checked again.

    Returns:
        The selection, the per-user state and the summary; ``fill_report`` writes its account
        into a privacy report. Its tables are the only thing the run leaves in the session:
        read or write them, then release them (``with bound_contributions(...) as result:``,
        or ``result.release()``).

    Raises:
        ParameterError, InputContractError: bad parameters or inputs.
        WorkDirMismatchError: ``work_dir`` holds another run's state and ``restart`` is off.
        MinSepInfeasibleError: dp-mf failed for these T, B, min_sep.
    """
    log = get_logger("spark_dp.contribution_bounding")
    timer = timer or StageTimer(log)
    if not isinstance(plan, BoundingPlan):
        plan = plan_bounding(plan)
    check_max_contributions_given(plan, table=capacities is not None)
    params = plan.params
    randomness = randomness if randomness is not None else Randomness.create()
    algorithm = REGISTRY[params.algorithm]
    spark = incidences.sparkSession
    cache = CacheScope()
    # the number of rounds depends on the graph: the UI shows "round #", not its number
    with (
        labels(
            spark, family="contribution_bounding", algorithm=params.algorithm, hide_numbers=True
        ),
        sql_defaults(spark, SPARK_SQL_DEFAULTS),
    ):
        try:
            incidences, weights, randomness = _checked_and_bound(
                incidences,
                plan,
                capacities=capacities,
                record_weights=record_weights,
                randomness=randomness,
                validate=validate,
                digests=digests_of(*digest),
                weights_checked=weights_checked,
                cache=cache,
                log=log,
            )
            result = _run(
                algorithm,
                plan,
                incidences,
                params,
                capacities=capacities,
                weights=weights,
                randomness=randomness,
                restart=restart,
                ctx=RunContext(
                    StateStore(spark, work_dir, cache=cache, owner=work_dir_owner),
                    timer,
                    log,
                    on_round,
                ),
            )
            result.keep_only_outputs(cache)
        except BaseException:
            cache.release()
            raise
    return result


def _checked_and_bound(
    incidences: DataFrame,
    plan: BoundingPlan,
    *,
    capacities: DataFrame | None,
    record_weights: DataFrame | None,
    randomness: Randomness,
    validate: bool,
    digests: list[ContentDigest],
    weights_checked: bool,
    cache: CacheScope,
    log: logging.Logger,
) -> tuple[DataFrame, DataFrame | None, Randomness]:
    """The incidences (validated unless the caller did) and the record weights (checked unless
    the caller did), each digested in its validation pass, and the key bound to the release
    of every table read (:func:`spark_dp.release_ids.bind_release`): (incidences, weights,
    bound key)."""
    params = plan.params
    gate = None if randomness.bound else ReadGate.keyed_by(randomness)
    if validate:
        incidences, summary = validate_edges(
            incidences,
            {RECORD_ID: RECORD_ID, USER_ID: USER_ID},
            path="<incidences>",
            dedupe=False,  # prepare's window over each record's users drops them
            gate=gate,
            table="incidences",
        )
        summary.log(log)  # counts: unsafe debug only
        cache.adopt(incidences)  # persisted by validate_edges: released with the run
        digests = [*digests, *digests_of(summary)]
    else:
        incidences = incidences.select(RECORD_ID, USER_ID)
    # -> (record_id, user_id)
    weights = record_weights
    if record_weights is not None and not weights_checked:
        weights, weights_digest = check_weights(record_weights, per_user=plan.per_user, gate=gate)
        digests = [*digests, *digests_of(weights_digest)]
    tables = ["incidences"]
    tables += ["capacities"] if capacities is not None else []
    tables += ["record weights"] if record_weights is not None else []
    bound = bind_release(
        randomness,
        family="contribution_bounding",
        algorithm=params.algorithm,
        parameters={f.name: getattr(params, f.name) for f in dataclasses.fields(BoundingParams)},
        digests=digests,
        tables=tables,
    )
    return incidences, weights, bound


def _run(
    algorithm: Algorithm[BoundingParams, BoundingPlan],
    plan: BoundingPlan,
    incidences: DataFrame,
    params: BoundingParams,
    *,
    capacities: DataFrame | None,
    weights: DataFrame | None,
    randomness: Randomness,
    restart: bool,
    ctx: RunContext,
) -> BoundingResult:
    """Claim the store, prepare the tables in the planned order and run the algorithm."""
    with ctx.timer.stage("fingerprint"):
        seed = claim_store(
            ctx.store,
            incidences=incidences,
            capacities=capacities,
            weights=weights,
            params=params,
            randomness=randomness,
            restart=restart,
            log=ctx.log,
        )
    order = plan.order_plan(seed)
    max_contributions = params.max_contributions
    if max_contributions is None and capacities is None and not plan.max_contributions_required:
        max_contributions = 0  # Alg. 4 has no capacities (docs/design/bounding.md#min-sep)
    with ctx.timer.stage("prepare") as info:
        prep = prepare(
            incidences,
            plan=order,
            max_contributions=max_contributions,
            capacities=capacities,
            weights=weights,
            skew_threshold=params.skew_threshold,
            store=ctx.store.child("prepared"),
            log=ctx.log,
        )
        info.update(records=prep.n_records, incidences=prep.n_incidences, users=prep.n_users)
    result: BoundingResult = algorithm.run(prep, plan, ctx)
    result.summary = {
        "algorithm": params.algorithm,
        "order": order.to_dict(),
        "input": prep.counts(),
        **result.summary,
        "seed": seed,
    }
    result.description = f"{algorithm.summary}; order {order.order}; finish {params.finish}"
    return result
