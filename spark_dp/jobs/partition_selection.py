"""Job ``partition_selection``: privately select items from (user_id, item) pairs.

Releases as many items as possible under user-level (ε, δ)-DP (add or remove one user) and
writes them as Parquet with the single column ``item``. Algorithms: the weight-and-threshold
family of Chen et al. 2025 (basic, basic-laplace, dp-sips, mad, mad2r) and classic count
thresholding as Google's DP library and PipelineDP offer it (truncated-geometric,
laplace-thresholding, gaussian-thresholding). The JSON report holds the parameters, the
per-round σ, ρ, τ, α and (ε, δ) spent, and the number of released items; never weights,
per-item counts, the union of items or input sizes.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from spark_dp.jobs.publish import write_rows
from spark_dp.jobs.runner import run_job
from spark_dp.jobs.spec import Answer, JobContext, JobSpec
from spark_dp.partition_selection import (
    PartitionSelectionParams,
    SelectionPlan,
    calibration_rows,
    plan_selection,
    select_partitions,
)
from spark_dp.partition_selection.registry import REGISTRY
from spark_dp.report import PrivacyReport

__all__ = ["SPEC", "main"]


def _execute(ctx: JobContext) -> str:
    plan: SelectionPlan = ctx.algorithm_plan  # the plan the budget store reserved
    pairs = ctx.load_pairs(dedupe=False, persist=False)
    # -> validated (user_id, item); the cap of every algorithm drops repeated pairs in its
    #    per-user window, so a separate deduplication (a full shuffle) would be wasted
    with select_partitions(
        pairs, plan, ctx.randomness, timer=ctx.timer, validate=False
    ) as selection:
        rows = write_rows(ctx, selection.items)  # from the cache the selection holds
        selection.fill_report(ctx.report)
    ctx.report.outputs["items"] = ctx.args.output
    return f"{rows} items selected by {plan.algorithm}, written to {ctx.args.output}"


def _answer(report: PrivacyReport, args: argparse.Namespace) -> Answer:
    """The released number of items and where they are (public: the release's size)."""
    p = report.parameters
    items, where = report.outputs["output_items"], args.output_table or args.output
    bound = p.get("max_contributions_chosen", p["max_contributions"])
    return Answer(
        f"released {items} items to {where} (ε={p['epsilon']:g}, δ={p['delta']:g}, "
        f"{report.algorithm}, Δ0={bound})",
        {
            "job": "partition_selection",
            "released_items": items,
            "output": where,
            "epsilon": p["epsilon"],
            "delta": p["delta"],
            "algorithm": report.algorithm,
            "max_contributions": bound,
        },
    )


def _describe(plan: SelectionPlan) -> dict[str, Any]:
    return {"rounds": calibration_rows(plan)}


SPEC = JobSpec(
    name="partition_selection",
    description=__doc__.split("\n\n")[0],
    params_cls=PartitionSelectionParams,
    execute=_execute,
    guarantee="user-level (epsilon, delta)-differential privacy; neighbouring datasets add or "
    "remove one user with all of their items",
    examples=(
        "spark-submit --py-files dist/spark_dp.zip jobs/partition_selection.py "
        "--input data/zipf --output out/items --algorithm mad2r --epsilon 1 --delta 1e-5",
        "python jobs/partition_selection.py --config conf/partition_selection.yaml "
        "--input data/zipf --output out/items --algorithm dp-sips --split 0.05,0.15,0.8",
        "spark-dp partition-selection --input data/zipf --output out/items --epsilon 1 "
        "--max-contributions 50 --dry-run",
    ),
    spends_budget=True,
    required=("epsilon",),
    describe=_describe,
    answer=_answer,
    plan=plan_selection,
    registries={"algorithm": REGISTRY},
)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``jobs/partition_selection.py``."""
    return run_job(SPEC, argv)


if __name__ == "__main__":
    sys.exit(main())
