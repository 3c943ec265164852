"""Job ``preview``: predicted released items per algorithm and Δ0, from a small DP release.

Spends ``--epsilon`` (pure ε-DP, charged to ``--budget-store`` like any release, refused with
exit 3 over a cap before any data is read) on one statistic per candidate Δ0: Basic's expected
number of released items at the previewed release's (``--release-epsilon``,
``--release-delta``), with exact discrete Laplace noise. Prints each algorithm's best candidate
(the whole grid with ``--all``) with its predicted items and an interval, and the recommended
(algorithm, Δ0) with the rule that chose it; ``--json`` prints the same rows as JSON. The
privacy report holds the whole grid and goes to ``--report`` when given
(docs/design/tuning.md#preview).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from spark_dp.jobs.runner import run_job
from spark_dp.jobs.spec import JobContext, JobSpec
from spark_dp.partition_selection import PreviewParams, preview_partitions
from spark_dp.partition_selection.preview import (
    PreviewPlan,
    plan_preview,
    preview_table,
    preview_view,
)
from spark_dp.report import PrivacyReport

__all__ = ["SPEC", "main"]


def _execute(ctx: JobContext) -> str:
    plan: PreviewPlan = ctx.algorithm_plan  # the plan the budget store reserved
    pairs = ctx.load_pairs(dedupe=False, persist=False)
    result = preview_partitions(pairs, plan, ctx.randomness, timer=ctx.timer, validate=False)
    result.fill_report(ctx.report)
    best = result.recommended
    return f"preview: recommended {best.algorithm} at Δ0 = {best.max_contributions}"


def _stdout(report: PrivacyReport, args: argparse.Namespace) -> str:
    """What the preview prints: its table, or its JSON with ``--json``; each algorithm's best
    row, or every row with ``--all``."""
    doc = report.outputs["preview"]
    if args.json:
        return json.dumps(preview_view(doc, all_rows=args.all), indent=2) + "\n"
    return preview_table(doc, all_rows=args.all)


def _add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument_group("output").add_argument(
        "--all",
        action="store_true",
        help="print every (algorithm, Δ0) of the grid, not only each algorithm's best row",
    )


def _describe(plan: PreviewPlan) -> dict[str, Any]:
    return {"statistics": plan.to_report(), "algorithms": list(plan.algorithms)}


SPEC = JobSpec(
    name="preview",
    description=__doc__.split("\n\n")[0],
    params_cls=PreviewParams,
    execute=_execute,
    output="none",
    guarantee="user-level pure ε-differential privacy; neighbouring datasets add or remove one "
    "user with all of their items",
    examples=(
        "spark-dp preview --input data/zipf --epsilon 0.2 --release-epsilon 1",
        "spark-dp preview --input data/zipf --epsilon 0.2 --all",
        "spark-dp preview --input data/zipf --epsilon 0.2 --json --budget-store "
        "sqlite:///budget.db",
    ),
    spends_budget=True,
    required=("epsilon",),
    add_flags=_add_flags,
    describe=_describe,
    plan=plan_preview,
    stdout=_stdout,
)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``jobs/preview.py``."""
    return run_job(SPEC, argv)


if __name__ == "__main__":
    sys.exit(main())
