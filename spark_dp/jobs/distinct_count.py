"""Job ``distinct_count``: a person-level ε-DP lower bound on the number of distinct items.

Reads (user_id, item) pairs, computes the contribution-bounded curve c(D; ℓ) for ℓ = 1..ℓ_max
(``--method exact``: max-flow DC(D; ℓ), Algorithm 1; ``--method greedy``: the linear-time
greedy, Algorithm 2), selects ℓ̂ with GEM at ε/2 and releases ν̂ = c(D; ℓ̂) − (2ℓ̂/ε)·ln(1/(2β))
+ Lap(2ℓ̂/ε) at ε/2 (Knop & Steinke 2023; spec distinct_count.md §3.5). Pure ε-DP for adding or
removing one person with all their items; P[ν̂ ≤ true count] ≥ 1 − β.

The job writes no Parquet: the JSON report (``--report``, default stdout) holds the release —
``estimate``, ``ell``, ``lower_bound``, ``lower_bound_clamped``, ``epsilon``, ``beta``,
``max_contribution``, ``method`` — and nothing else about the data. ``--debug-report PATH``
additionally writes the private curve and true count to a file whose name ends in
``.NONPRIVATE.json``: never publish it.
"""

from __future__ import annotations

import sys

from spark_dp.distinct_count.params import DistinctCountParams
from spark_dp.distinct_count.registry import REGISTRY
from spark_dp.distinct_count.result import DistinctCountResult
from spark_dp.io import ITEM, write_json_atomic
from spark_dp.jobs.common import JobContext, JobSpec, run_job

__all__ = ["NONPRIVATE_SUFFIX", "SPEC", "debug_report_path", "main"]

NONPRIVATE_SUFFIX = ".NONPRIVATE.json"


def debug_report_path(path: str) -> str:
    """``path`` ending in ``.NONPRIVATE.json`` (a trailing ``.json`` is replaced)."""
    path = str(path)
    if path.endswith(NONPRIVATE_SUFFIX):
        return path
    if path.lower().endswith(".json"):
        path = path[: -len(".json")]
    return path + NONPRIVATE_SUFFIX


def _execute(ctx: JobContext) -> str:
    p: DistinctCountParams = ctx.params
    algorithm = REGISTRY[p.method]
    plan = algorithm.plan(p)
    pairs = ctx.load_pairs()
    result: DistinctCountResult = algorithm.run(
        pairs,
        plan,
        ctx.randomness.child("distinct_count"),
        timer=ctx.timer,
        components=p.components,
        spark_rounds=p.spark_rounds,
        spark_rounds_min_rows=p.spark_rounds_min_rows,
        components_min_rows=p.components_min_rows,
        ell_blocks=p.ell_blocks,
    )
    ctx.report.algorithm = algorithm.summary
    result.fill_report(ctx.report)
    if p.debug_report:
        path = debug_report_path(p.debug_report)
        true_count = pairs.select(ITEM).distinct().count()
        write_json_atomic(result.debug_payload(true_count), path, overwrite=True, spark=ctx.spark)
        ctx.log.warning("wrote a NON-PRIVATE debug report to %s", path)
        ctx.report.outputs["debug_report_NONPRIVATE"] = path
    return f"ε={p.epsilon} release with ℓ̂={result.release.ell} ({p.method})"


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
        "--epsilon 1 --beta 0.05 --method exact --max-contribution 100",
    ),
)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``jobs/distinct_count.py``."""
    return run_job(SPEC, argv)


if __name__ == "__main__":
    sys.exit(main())
