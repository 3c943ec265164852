"""Job ``contribution_bounding``: keep as many multi-owner records as possible, ≤ cap(u) per user.

Reads (record_id, user_id) incidences (ids only: selection never reads record content, so it
is fixed-graph DP pre-processing and spends no privacy budget;
docs/design/bounding.md#fixed-graph-dp) and writes:

* ``--output``: the selected records, ``record_id`` (plus ``multiplicity`` for ``greedy-dup``
  and ``ilp-dup``; ``batch_index, position, record_id`` for ``dp-mf``, to be consumed in that
  order; one row per setting for ``bias-sweep``);
* ``--user-state`` (default ``<output>_user_state``): ``user_id, cap, d, status`` with the
  final degree of every user and SATURATED / EXHAUSTED / OPEN (docs/design/bounding.md#outputs);
* the report, named ``*.confidential.json`` (default ``<output>.report.confidential.json``)
  and created with mode 0600: ``selected`` (|S| with multiplicity), ``rounds``, ``max_degree``
  (the bound k to use in DP-SGD / DP-MF accounting), the per-round log, the order and the
  finish mode.

All of them are **confidential** (docs/design/bounding.md#confidential): with the hypergraph they
reveal who shares records with whom. Per-round state lives in ``--work-dir`` (default
``<output>_work``); a job that fails (or is killed) resumes from its last finished round when rerun
with the same arguments, and the directory is removed once the outputs and the report are committed.
An existing work directory that is not this job's own state for the same input (recognised by the
``meta.json`` the job writes there) is refused before Spark starts: never adopted, never
deleted.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from spark_dp.contribution_bounding.api import plan_bounding
from spark_dp.contribution_bounding.columns import RECORD_ID, USER_ID, WEIGHT
from spark_dp.contribution_bounding.params import ContributionBoundingParams
from spark_dp.contribution_bounding.plan import BoundingPlan, check_max_contributions_given
from spark_dp.contribution_bounding.registry import REGISTRY
from spark_dp.errors import InputContractError
from spark_dp.io.fs import FileSystem
from spark_dp.io.paths import READ, STATE, WRITE, PathSpec
from spark_dp.io.schema_peek import CAPACITY, ID, NUMBER, ColumnRule
from spark_dp.jobs.publish import write_rows
from spark_dp.jobs.runner import run_job
from spark_dp.jobs.spec import Answer, JobContext, JobSpec
from spark_dp.report import PrivacyReport

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["SPEC", "main"]


def _read_weights(ctx: JobContext, per_user: bool) -> DataFrame:
    """The record-weights table with the job's id columns renamed to record_id, user_id,
    checked (and digested: it is one of the tables the release is bound to)."""
    from pyspark.sql import functions as F

    from spark_dp.contribution_bounding.record_weights import check_weights
    from spark_dp.io.columns import quoted

    df = ctx.read_table("record_weights", "--record-weights")
    rename = {ctx.args.record_col: RECORD_ID, ctx.args.user_col: USER_ID}
    if ctx.args.record_col not in df.columns:
        raise InputContractError(
            f"--record-weights {ctx.params.record_weights} has no column "
            f"{ctx.args.record_col!r}; columns: {df.columns}"
        )
    weights = df.select(*[F.col(quoted(c)).alias(rename.get(c, c)) for c in df.columns])
    # -> (record_id[, user_id], weight, ...)
    checked, _ = check_weights(
        weights,
        per_user=per_user,
        gate=ctx.gate("record_weights"),
        strict=ctx.args.strict_input,
    )
    return checked


def _strict_every_user_listed(incidences: DataFrame, capacities: DataFrame) -> None:
    """``--strict-input`` without ``--max-contributions``: every user of the incidences must be
    listed in the capacities (by default an unlisted user gets capacity 0)."""
    from spark_dp.io.columns import USER_ID

    unlisted = incidences.select(USER_ID).join(capacities.select(USER_ID), USER_ID, "left_anti")
    if unlisted.limit(1).count():
        raise InputContractError(
            "users of the incidences are missing from the capacities table and no default "
            "capacity was given (--strict-input); pass --max-contributions B for them, list "
            "every user, or run without --strict-input (an unlisted user gets capacity 0)"
        )


def _owner(inputs: str) -> str:
    """Who a work directory belongs to: this job and the tables it reads."""
    return f"contribution_bounding {inputs}"


def _claim(fs: FileSystem, path: str, inputs: str) -> None:
    """An existing ``--work-dir`` must hold this job's own state for the same inputs."""
    from spark_dp.contribution_bounding.state_store import check_work_dir

    check_work_dir(fs, path, _owner(inputs))


def _execute(ctx: JobContext) -> str:
    from spark_dp.contribution_bounding import bound_contributions
    from spark_dp.contribution_bounding.state_store import StateStore
    from spark_dp.io import load_capacities

    p: ContributionBoundingParams = ctx.params
    plan: BoundingPlan = ctx.algorithm_plan
    work_dir = ctx.path("work_dir")
    user_state_path = ctx.path("user_state") if plan.user_state else None
    incidences = ctx.load_incidences()
    capacities = None
    if p.capacities:
        with ctx.timer.stage("read capacities"):
            capacities, _ = load_capacities(
                ctx.spark,
                ctx.path("capacities"),
                user_col=ctx.args.user_col,
                cap_col=p.capacity_col,
                gate=ctx.gate("capacities"),
                strict=ctx.args.strict_input,
            )
    weights = _read_weights(ctx, plan.per_user) if p.record_weights else None
    if ctx.args.strict_input and capacities is not None and p.max_contributions is None:
        _strict_every_user_listed(incidences, capacities)
    result = bound_contributions(
        incidences,
        plan,
        capacities=capacities,
        record_weights=weights,
        randomness=ctx.randomness,
        work_dir=work_dir,
        work_dir_owner=_owner(ctx.plan.inputs()),
        restart=ctx.args.overwrite,
        validate=False,
        timer=ctx.timer,
        weights_checked=True,
    )
    rows = write_rows(ctx, result.selected)
    outputs: dict[str, Any] = {"selected": {"path": ctx.args.output, "rows": rows}}
    if result.user_state is not None and user_state_path is not None:
        n_users = write_rows(ctx, result.user_state, user_state_path, name="user_state")
        outputs["user_state"] = {"path": user_state_path, "rows": n_users}
    if not p.keep_work_dir:  # only once the outputs and the report are in place
        ctx.after_commit.append(StateStore(ctx.spark, work_dir).clear)
    else:  # kept: confidential like every output (until then, its parent directory protects it)
        ctx.after_commit.append(lambda: ctx.staging.fs_for(work_dir).make_private(work_dir))
    result.fill_report(ctx.report)
    ctx.report.outputs = outputs
    return result.headline()


def _plan(p: ContributionBoundingParams) -> BoundingPlan:
    """The algorithm's plan; a bound is required unless the algorithm measures it (dp-mf)."""
    plan = plan_bounding(p)
    check_max_contributions_given(plan, table=p.capacities is not None)
    return plan


def _paths(
    args: argparse.Namespace, p: ContributionBoundingParams, plan: BoundingPlan
) -> list[PathSpec]:
    out = str(args.output).rstrip("/")
    paths = [
        PathSpec("work_dir", "--work-dir", p.work_dir or f"{out}_work", STATE, claim=_claim),
    ]
    if plan.user_state:
        paths.append(
            PathSpec("user_state", "--user-state", p.user_state or f"{out}_user_state", WRITE)
        )
    if p.capacities is not None:
        paths.append(PathSpec("capacities", "--capacities", p.capacities, READ, table=True))
    if p.record_weights is not None:
        paths.append(
            PathSpec("record_weights", "--record-weights", p.record_weights, READ, table=True)
        )
    return paths


def _columns_read(
    args: argparse.Namespace, p: ContributionBoundingParams, plan: BoundingPlan
) -> dict[str, list[ColumnRule]]:
    """The columns read from the capacities and record-weights tables (their schemas are
    checked before Spark starts)."""
    weights = [ColumnRule("--record-col", args.record_col, RECORD_ID, ID)]
    if plan.per_user:
        weights.append(ColumnRule("--user-col", args.user_col, USER_ID, ID))
    weights.append(ColumnRule(None, WEIGHT, "record weights", NUMBER))
    return {
        "capacities": [
            ColumnRule("--user-col", args.user_col, "user id of the capacities table", ID),
            ColumnRule("--capacity-col", p.capacity_col, "capacity", CAPACITY),
        ],
        "record_weights": weights,
    }


def _answer(report: PrivacyReport, args: argparse.Namespace) -> Answer:
    """The public summary: the parameters and where the confidential outputs are; never how
    many records were selected, the degrees or the rounds (confidential like the outputs)."""
    p = report.parameters
    b, caps, where = p["max_contributions"], p["capacities"], args.output_table or args.output
    if caps is not None:
        bound = f"per-user caps from {caps}" + (f", {b} for users it omits" if b else "")
    else:
        bound = f"at most {b} records per user" if b else "the bound it measures (confidential)"
    return Answer(
        f"bounded contributions ({p['algorithm']}): {bound}; the selected records in {where} "
        "and the report are confidential (owner-only), not a release",
        {
            "job": "contribution_bounding",
            "algorithm": p["algorithm"],
            "max_contributions": b,
            "capacities": caps,
            "output": where,
            "confidential": True,
        },
    )


def _describe(plan: BoundingPlan) -> dict[str, Any]:
    return {
        "algorithm": plan.algorithm,
        "order": plan.order,
        "on_driver": plan.on_driver,
        "duplicates": plan.duplicates,
        "user_state": plan.user_state,
        "privacy": "none spent: fixed-graph pre-processing",
    }


SPEC = JobSpec(
    name="contribution_bounding",
    description=__doc__.split("\n\n")[0],
    params_cls=ContributionBoundingParams,
    execute=_execute,
    guarantee="none by itself: fixed-graph DP pre-processing ([B] §2, §4) that reads only the "
    "hypergraph and spends no budget; the bound k = max_degree feeds the training's accounting",
    examples=(
        "python jobs/contribution_bounding.py --input data/graph --output out/records "
        "--max-contributions 4",
        "spark-submit --py-files dist/spark_dp.zip jobs/contribution_bounding.py --input "
        "data/graph --output out/records --capacities data/caps --max-contributions 2 "
        "--order hash",
        "python jobs/contribution_bounding.py --input data/graph --output out/dup "
        "--max-contributions 3 --algorithm greedy-dup",
    ),
    columns=("record", "user"),
    columns_read=_columns_read,
    paths=_paths,
    describe=_describe,
    answer=_answer,
    plan=_plan,
    registries={"algorithm": REGISTRY},
    confidential=True,
)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``jobs/contribution_bounding.py``."""
    return run_job(SPEC, argv)


if __name__ == "__main__":
    sys.exit(main())
