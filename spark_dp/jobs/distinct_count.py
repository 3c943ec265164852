"""Job ``distinct_count``: a person-level ε-DP lower bound on the number of distinct items.

Reads (user_id, item) pairs, computes the contribution-bounded curve c(D; ℓ) for ℓ = 1..ℓ_max
(``--method exact``: max-flow DC(D; ℓ), Algorithm 1; ``--method greedy``: the linear-time
greedy, Algorithm 2), selects ℓ̂ with GEM at ε/2 and releases ν̂ = c(D; ℓ̂) − (2ℓ̂/ε)·ln(1/(2β))
+ Lap(2ℓ̂/ε) at ε/2 (Knop & Steinke 2023; docs/design/counting.md#mechanism). Pure ε-DP for adding
or removing one person with all their items; P[ν̂ ≤ true count] ≥ 1 − β.

The job writes no Parquet: the JSON report (``--report``, default stdout) holds the release —
``estimate``, ``ell``, ``lower_bound``, ``lower_bound_clamped``, ``epsilon``, ``beta``,
``max_contributions``, ``method`` — and nothing else about the data. ``--debug-report PATH``
(command line only, with ``--allow-unsafe-debug``) additionally writes the private curve and
true count to a file whose name ends in ``.NONPRIVATE.json``: never publish it; the report of
such a run says it is not a normal release.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from spark_dp.distinct_count.params import DistinctCountParams
from spark_dp.distinct_count.plan import DistinctCountPlan
from spark_dp.distinct_count.registry import REGISTRY, curve_method, plan_distinct_count
from spark_dp.distinct_count.result import DistinctCountResult
from spark_dp.io import ITEM, json_text
from spark_dp.io.paths import WRITE, PathSpec, suffixed_path
from spark_dp.jobs.runner import run_job
from spark_dp.jobs.spec import Answer, JobContext, JobSpec
from spark_dp.report import PrivacyReport

__all__ = ["ANSWER", "NONPRIVATE_SUFFIX", "SPEC", "debug_report_path", "main"]

NONPRIVATE_SUFFIX = ".NONPRIVATE.json"

ANSWER = "lower_bound_clamped"
"""The report's field that is the answer: max(0, ν̂), below the true count with probability
≥ 1 − β (``lower_bound`` is ν̂ itself, possibly negative; ``estimate`` is not a bound:
docs/families/distinct-count.md). The report names it in its ``answer`` field."""


def debug_report_path(path: str) -> str:
    """``path`` ending in ``.NONPRIVATE.json`` (a trailing ``.json`` is replaced); the file is
    created with mode 0600, as every confidential file."""
    return suffixed_path(path, NONPRIVATE_SUFFIX)


def _execute(ctx: JobContext) -> str:
    from spark_dp.distinct_count import distinct_count

    p: DistinctCountParams = ctx.params
    plan: DistinctCountPlan = ctx.algorithm_plan  # the plan the budget store reserved
    method = curve_method(plan.method)  # the registry entry's run: summary and curve
    once = method.dedupes  # the curve dedupes and reads the input once
    method.components_method(ctx.spark, p.components)  # GraphFrames missing: exit 2, nothing read
    pairs = ctx.load_pairs(dedupe=not once, persist=not once)
    result: DistinctCountResult = distinct_count(
        pairs, p, ctx.randomness, validate=False, timer=ctx.timer
    )
    ctx.report.algorithm = method.summary
    result.fill_report(ctx.report)
    ctx.report.extra["answer"] = ANSWER
    if ctx.args.debug_report:
        path = debug_report_path(ctx.args.debug_report)
        true_count = pairs.select(ITEM).distinct().count()
        ctx.stage_text(
            "debug_report", path, json_text(result.debug_payload(true_count)), private=True
        )
        ctx.log.warning("writing a NON-PRIVATE debug report to %s (mode 0600)", path)
        ctx.report.outputs["debug_report_NONPRIVATE"] = path
        ctx.report.mark_unsafe(f"--debug-report: the private curve and true count are in {path}")
    return f"ε={p.epsilon} release with ℓ̂={result.release.ell} ({p.method})"


def _answer(report: PrivacyReport, args: argparse.Namespace) -> Answer:
    """The released lower bound, its ε and its confidence 1 − β (public: the release)."""
    r = report.extra
    confidence = 1 - r["beta"]
    return Answer(
        f"distinct count ≥ {r[ANSWER]} (ε={r['epsilon']:g}, 1−β={confidence:g}: a lower bound "
        f"with probability ≥ {confidence:g}; ℓ̂={r['ell']}, {r['method']})",
        {
            "job": "distinct_count",
            "distinct_count_at_least": r[ANSWER],
            "epsilon": r["epsilon"],
            "confidence": confidence,
            "ell": r["ell"],
            "method": r["method"],
        },
    )


def _add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument_group("unsafe debugging (never on production data)").add_argument(
        "--debug-report",
        metavar="PATH",
        help="also write the NON-PRIVATE curve and true count to PATH (*.NONPRIVATE.json); "
        "needs --allow-unsafe-debug; the run is then not a normal release",
    )


def _paths(
    args: argparse.Namespace, params: DistinctCountParams, plan: DistinctCountPlan
) -> list[PathSpec]:
    raw = args.debug_report
    if raw is None:
        return []
    path = debug_report_path(raw) if str(raw).strip() else str(raw)
    return [PathSpec("debug_report", "--debug-report", path, WRITE, file=True)]


def _describe(plan: DistinctCountPlan) -> dict[str, Any]:
    return {**plan.to_report(), "steps": [s.to_report() for s in plan.steps]}


SPEC = JobSpec(
    name="distinct_count",
    description=__doc__.split("\n\n")[0],
    params_cls=DistinctCountParams,
    execute=_execute,
    output="none",
    guarantee="pure ε-DP at the person level (add or remove one person with all their items)",
    examples=(
        "python jobs/distinct_count.py --input data/zipf --epsilon 1 --report out/count.json",
        "spark-submit --py-files dist/spark_dp.zip jobs/distinct_count.py --input data/zipf "
        "--epsilon 1 --failure-probability 0.05 --method exact --max-contributions 100",
    ),
    spends_budget=True,
    required=("epsilon",),
    paths=_paths,
    add_flags=_add_flags,
    describe=_describe,
    answer=_answer,
    plan=plan_distinct_count,
    registries={"method": REGISTRY},
    unsafe_flags=(("debug_report", "--debug-report"),),
)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``jobs/distinct_count.py``."""
    return run_job(SPEC, argv)


if __name__ == "__main__":
    sys.exit(main())
