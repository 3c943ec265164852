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
from dataclasses import dataclass

from spark_dp.checks import check_choice, check_epsilon, check_int_at_least, check_probability
from spark_dp.config import param
from spark_dp.distinct_count.components import METHODS as COMPONENT_METHODS
from spark_dp.distinct_count.mechanism import METHODS
from spark_dp.errors import ParameterError
from spark_dp.jobs.common import JobContext, JobSpec, run_job

__all__ = ["NONPRIVATE_SUFFIX", "DistinctCountParams", "debug_report_path", "main"]

NONPRIVATE_SUFFIX = ".NONPRIVATE.json"


@dataclass(frozen=True)
class DistinctCountParams:
    """Parameters of the ``distinct_count`` job."""

    epsilon: float | None = param(None, "total privacy budget ε (required): ε/2 GEM + ε/2 Laplace")
    beta: float = param(0.05, "failure probability of the lower bound, in (0, 0.5)")
    method: str = param(
        "exact", "curve: exact max-flow DC(D; ℓ) or the faster greedy (≥ ½ exact)", choices=METHODS
    )
    max_contribution: int = param(
        100, "ℓ_max: largest per-person bound considered; choose it without looking at the data"
    )
    debug_report: str | None = param(
        None, "also write the NON-PRIVATE curve and true count here (*.NONPRIVATE.json)"
    )
    components: str = param(
        "auto",
        "connected components: GraphFrames when its jar is present (auto) or DataFrames",
        choices=COMPONENT_METHODS,
    )
    spark_rounds: int = param(8, "cap on per-ℓ peeling rounds run in Spark (exact)")
    spark_rounds_min_rows: int = param(
        20_000_000, "run the Spark peeling rounds only for cores with at least this many edges"
    )
    components_min_rows: int = param(
        5_000_000, "split the core into components only when it has at least this many edges"
    )
    ell_blocks: int = param(2, "deal each component's ℓ values round-robin to this many tasks")

    def __post_init__(self) -> None:
        if self.epsilon is None:
            raise ParameterError(
                "epsilon is required: pass --epsilon (the total ε of the release, e.g. 1)"
            )
        check_epsilon(self.epsilon)
        check_probability("beta", self.beta, low=0.0, high=0.5)
        check_choice("method", self.method, METHODS)
        check_int_at_least("max_contribution", self.max_contribution, 1)
        check_choice("components", self.components, COMPONENT_METHODS)
        check_int_at_least("spark_rounds", self.spark_rounds, 0)
        check_int_at_least("spark_rounds_min_rows", self.spark_rounds_min_rows, 0)
        check_int_at_least("components_min_rows", self.components_min_rows, 0)
        check_int_at_least("ell_blocks", self.ell_blocks, 1)
        if self.debug_report is not None and not str(self.debug_report).strip():
            raise ParameterError("debug_report must be a file path or omitted")


def debug_report_path(path: str) -> str:
    """``path`` ending in ``.NONPRIVATE.json`` (a trailing ``.json`` is replaced)."""
    path = str(path)
    if path.endswith(NONPRIVATE_SUFFIX):
        return path
    if path.lower().endswith(".json"):
        path = path[: -len(".json")]
    return path + NONPRIVATE_SUFFIX


def _execute(ctx: JobContext) -> str:
    from spark_dp.distinct_count import dp_distinct_count
    from spark_dp.distinct_count.mechanism import (
        ALGORITHMS,
        budget_steps,
        contribution_curve,
        debug_payload,
        mechanism_summary,
        released_values,
    )
    from spark_dp.io import ITEM, write_json_atomic

    p: DistinctCountParams = ctx.params
    pairs = ctx.load_pairs()
    with ctx.timer.stage(f"{p.method} curve"):
        curve = contribution_curve(
            pairs,
            p.method,
            p.max_contribution,
            components=p.components,
            spark_rounds=p.spark_rounds,
            spark_rounds_min_rows=p.spark_rounds_min_rows,
            components_min_rows=p.components_min_rows,
            ell_blocks=p.ell_blocks,
            timer=ctx.timer,
        )
    with ctx.timer.stage("release"):
        release = dp_distinct_count(
            curve,
            epsilon=p.epsilon,
            beta=p.beta,
            randomness=ctx.randomness.child("distinct_count"),
            method=p.method,
        )

    r = ctx.report
    r.algorithm = ALGORITHMS[p.method]
    for label, epsilon, details in budget_steps(release):
        r.spend(label, epsilon, **details)
    r.mechanism = mechanism_summary(release)
    r.extra.update(released_values(release))
    r.note(
        "lower_bound is ν̂ (P[ν̂ ≤ true count] ≥ 1 − β); lower_bound_clamped = max(0, ν̂); "
        "estimate = ν̂ + shift is the un-shifted noisy count c(D; ℓ̂) + Lap, not a lower bound."
    )
    if p.debug_report:
        path = debug_report_path(p.debug_report)
        true_count = pairs.select(ITEM).distinct().count()
        write_json_atomic(
            debug_payload(curve, release, true_count), path, overwrite=True, spark=ctx.spark
        )
        ctx.log.warning("wrote a NON-PRIVATE debug report to %s", path)
        r.outputs["debug_report_NONPRIVATE"] = path
    return f"ε={p.epsilon} release with ℓ̂={release.ell} ({p.method})"


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
