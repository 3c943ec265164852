"""Job ``contribution_bounding``: keep as many multi-owner records as possible, ≤ cap(u) per user.

Reads (record_id, user_id) incidences (ids only: selection never reads record content, so it
is fixed-graph DP pre-processing and spends no privacy budget; spec contribution_bounding.md
§1.5) and writes:

* ``--output``: the selected records, ``record_id`` (plus ``multiplicity`` for ``greedy-dup``
  and ``ilp-dup``; ``batch_index, position, record_id`` for ``dp-mf``, to be consumed in that
  order; one row per setting for ``bias-sweep``);
* ``--user-state`` (default ``<output>_user_state``): ``user_id, cap, d, status`` with the
  final degree of every user and SATURATED / EXHAUSTED / OPEN (spec §2.3);
* the report: ``selected`` (|S| with multiplicity), ``rounds``, ``max_degree`` (the bound k to
  use in DP-SGD / DP-MF accounting), the per-round log, the order and the finish mode.

All of them are **confidential** (spec A36): with the hypergraph they reveal who shares
records with whom. Per-round state lives in ``--work-dir`` (default ``<output>_work``); a job
that fails resumes from its last finished round when rerun with the same arguments, and the
directory is removed after success.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from spark_dp.config import param
from spark_dp.contribution_bounding.params import BoundingParams
from spark_dp.errors import InputContractError, ParameterError
from spark_dp.jobs.common import JobContext, JobSpec, run_job

__all__ = ["ContributionBoundingParams", "main"]


@dataclass(frozen=True)
class ContributionBoundingParams(BoundingParams):
    """Parameters of the ``contribution_bounding`` job: the algorithm's plus input/output paths."""

    capacities: str | None = param(
        None, "per-user capacities table (user_id, cap); users missing from it get --capacity"
    )
    capacity_col: str = param("cap", "capacity column of --capacities")
    record_weights: str | None = param(
        None,
        "content-free record weights for --order weighted-global (record_id, weight) or "
        "per-user (record_id, user_id, weight); never derive them from record content",
    )
    user_state: str | None = param(
        None, "per-user final degrees (default <output>_user_state); confidential"
    )
    work_dir: str | None = param(
        None, "per-round state for resuming a failed run (default <output>_work)"
    )
    keep_work_dir: bool = param(False, "keep --work-dir after success (it is confidential)")

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("capacities", "record_weights", "user_state", "work_dir", "capacity_col"):
            value = getattr(self, name)
            if value is not None and not str(value).strip():
                raise ParameterError(f"{name} must be a path or omitted, got an empty string")


def _algorithm_name(p: ContributionBoundingParams, summary: dict) -> str:
    names = {
        "proposal": "DistributedContributionBounding (proposal rounds, [A] Alg. 1)",
        "greedy": "Greedy contribution bounding ([B] Alg. 2) via proposal rounds (= Alg. 2, P4)",
        "greedy-dup": "Greedy with duplicates ([B] Alg. 3) as passes of proposal rounds",
        "bias-mitigating": "Bias-mitigating variant of [B] Alg. 2 (small/large interleave)",
        "ilp": "Exact ILP (1) of [B] App. C.4, HiGHS",
        "ilp-dup": "Exact ILP (2) with duplicates of [B] App. C.4, HiGHS",
        "dp-mf": "DP-MF min-separation batching ([B] Alg. 4)",
        "bias-sweep": "Pareto sweep of the bias-mitigating variant ([B] App. C.5)",
    }
    order = summary["order"]["order"]
    return f"{names[p.algorithm]}; order {order}; finish {p.finish}"


def _read_weights(ctx: JobContext, path: str):
    from pyspark.sql import functions as F

    from spark_dp.io import RECORD_ID, USER_ID, read_table

    df = read_table(ctx.spark, path)
    rename = {ctx.args.record_col: RECORD_ID, ctx.args.user_col: USER_ID}
    if ctx.args.record_col not in df.columns:
        raise InputContractError(
            f"record weights {path!r} have no column {ctx.args.record_col!r}; columns: {df.columns}"
        )
    return df.select(*[F.col(c).alias(rename.get(c, c)) for c in df.columns])


def _execute(ctx: JobContext) -> str:
    from spark_dp.contribution_bounding import bound_contributions
    from spark_dp.contribution_bounding.state_store import StateStore
    from spark_dp.io import check_output_path, load_capacities

    p: ContributionBoundingParams = ctx.params
    out = ctx.args.output.rstrip("/")
    user_state_path = p.user_state or f"{out}_user_state"
    work_dir = p.work_dir or f"{out}_work"
    writes_state = p.algorithm not in ("dp-mf", "bias-sweep")
    if writes_state:
        check_output_path(user_state_path, ctx.args.overwrite)
    if p.capacity is None and p.capacities is None and p.algorithm != "dp-mf":
        raise ParameterError(
            "pass the contribution bound: --capacity B, and/or --capacities PATH with a "
            "(user_id, cap) table"
        )
    incidences = ctx.load_incidences()
    capacities = None
    if p.capacities:
        with ctx.timer.stage("read capacities"):
            capacities = load_capacities(
                ctx.spark, p.capacities, user_col=ctx.args.user_col, cap_col=p.capacity_col
            )
    weights = _read_weights(ctx, p.record_weights) if p.record_weights else None
    result = bound_contributions(
        incidences,
        p,
        capacities=capacities,
        record_weights=weights,
        seed=ctx.args.seed,
        work_dir=work_dir,
        restart=ctx.args.overwrite,
        validate=False,
        timer=ctx.timer,
    )
    s = result.summary
    rows = ctx.write_output(result.selected)
    outputs = {"selected": {"path": ctx.args.output, "rows": rows}}
    if result.user_state is not None:
        n_users = ctx.write_output(result.user_state, user_state_path, name="user_state")
        outputs["user_state"] = {"path": user_state_path, "rows": n_users}
    if not p.keep_work_dir:
        StateStore(ctx.spark, work_dir).clear()

    r = ctx.report
    r.algorithm = _algorithm_name(p, s)
    r.outputs = outputs
    r.extra["selected"] = s.get("selected")
    r.extra["rounds"] = s.get("rounds", 0)
    r.extra["max_degree"] = s.get("max_degree")
    r.extra["contribution_bounding"] = s
    r.mechanism = {
        "privacy_unit": "user (fixed-graph DP, [B] Def. 2.1)",
        "contribution_bound_k": s.get("max_degree"),
        "dataset_size": s.get("selected"),
        "accounting": "DP-SGD: Poisson-subsampled Gaussian with group size k (mixture of "
        "Gaussians PLD, spec §6.2); DP-MF with these min-sep batches: one Gaussian with noise "
        "multiplier σ/√k (spec §6.3)",
    }
    r.note(
        "Selection read record and user ids only, never record content (fixed-graph DP); it "
        "spends no privacy budget. Account for the training run with k = max_degree."
    )
    r.note(
        "CONFIDENTIAL: the selected ids, per-user degrees, round log and counts in this report "
        "reveal the hypergraph; store them with the same access controls as the raw graph "
        "(spec A36)."
    )
    r.note(
        f"Order seed {s['seed']}: it only breaks ties in the preference order; it is not "
        "sensitive under fixed-graph DP and is recorded for reproducibility (spec A37)."
    )
    if s.get("resumed_from_round") is not None:
        r.note(f"Resumed from the saved state after round {s['resumed_from_round']}.")
    return (
        f"{s.get('selected')} records selected ({p.algorithm}), max degree "
        f"{s.get('max_degree')}, {s.get('rounds', 0)} rounds"
    )


SPEC = JobSpec(
    name="contribution_bounding",
    description=__doc__.split("\n\n")[0],
    params_cls=ContributionBoundingParams,
    execute=_execute,
    guarantee="none by itself: fixed-graph DP pre-processing ([B] §2, §4) that reads only the "
    "hypergraph and spends no budget; the bound k = max_degree feeds the training's accounting",
    examples=(
        "python jobs/contribution_bounding.py --input data/graph --output out/records --capacity 4",
        "spark-submit --py-files dist/spark_dp.zip jobs/contribution_bounding.py --input "
        "data/graph --output out/records --capacities data/caps --capacity 2 --order hash",
        "python jobs/contribution_bounding.py --input data/graph --output out/dup "
        "--capacity 3 --algorithm greedy-dup",
    ),
)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``jobs/contribution_bounding.py``."""
    return run_job(SPEC, argv)


if __name__ == "__main__":
    sys.exit(main())
