"""The contribution-bounding algorithms: the one list of their names, plans and runs.

Every entry pairs a data-free ``plan(params) -> BoundingPlan`` (:mod:`.plan`: the order, the
round settings, what runs and what it outputs; it also checks the parameters the algorithm
depends on) with ``run(prep, plan, context) -> BoundingResult`` (:mod:`.distributed` on
Spark, :mod:`.driver_algorithms` on the driver). :func:`~.api.bound_contributions`, the job,
:data:`ALGORITHMS` and the ``--algorithm`` help all read this list; the summaries
name the algorithms in the privacy report.

Adding an algorithm: one :class:`~spark_dp.dp.registry.Algorithm` entry below, its plan in
:mod:`.plan` and its run function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_dp.contribution_bounding.distributed import run_passes, run_single_pass
from spark_dp.contribution_bounding.driver_algorithms import (
    run_bias_sweep,
    run_dp_mf,
    run_ilp,
)
from spark_dp.contribution_bounding.plan import (
    BoundingPlan,
    plan_bias_mitigating,
    plan_bias_sweep,
    plan_dp_mf,
    plan_greedy,
    plan_greedy_dup,
    plan_ilp,
    plan_ilp_dup,
    plan_proposal,
)
from spark_dp.dp.registry import Algorithm, Registry

if TYPE_CHECKING:
    from spark_dp.contribution_bounding.params import BoundingParams

__all__ = ["ALGORITHMS", "REGISTRY"]

REGISTRY: Registry[BoundingParams, BoundingPlan] = Registry(
    "contribution bounding",
    [
        Algorithm(
            "proposal",
            "DistributedContributionBounding (proposal rounds, [A] Alg. 1)",
            plan_proposal,
            run_single_pass,
        ),
        Algorithm(
            "greedy",
            "Greedy contribution bounding ([B] Alg. 2) via proposal rounds (= Alg. 2, P4)",
            plan_greedy,
            run_single_pass,
        ),
        Algorithm(
            "greedy-dup",
            "Greedy with duplicates ([B] Alg. 3) as passes of proposal rounds",
            plan_greedy_dup,
            run_passes,
        ),
        Algorithm(
            "bias-mitigating",
            "Bias-mitigating variant of [B] Alg. 2 (small/large interleave)",
            plan_bias_mitigating,
            run_single_pass,
        ),
        Algorithm("ilp", "Exact ILP (1) of [B] App. C.4, HiGHS", plan_ilp, run_ilp),
        Algorithm(
            "ilp-dup",
            "Exact ILP (2) with duplicates of [B] App. C.4, HiGHS",
            plan_ilp_dup,
            run_ilp,
        ),
        Algorithm("dp-mf", "DP-MF min-separation batching ([B] Alg. 4)", plan_dp_mf, run_dp_mf),
        Algorithm(
            "bias-sweep",
            "Pareto sweep of the bias-mitigating variant ([B] App. C.5)",
            plan_bias_sweep,
            run_bias_sweep,
        ),
    ],
)
"""name → (plan, run), in the order of ``--help`` and the docs."""

ALGORITHMS: tuple[str, ...] = REGISTRY.names
"""The algorithm names, in registry order (``--algorithm`` choices)."""
