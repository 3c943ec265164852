"""Contribution bounding for multi-owner records (hypergraph b-matching).

Records (hyperedges) belong to several users (vertices); select as many records as possible
so that no user is in more than cap(u) of them. Spec ``contribution_bounding.md``; papers
[A] (distributed proposal rounds) and [B] Ganesh et al. 2025 (greedy Alg. 2–4, ILP,
bias-mitigating variant).

Modules:

* :mod:`.api`: :func:`bound_contributions`, the one entry point (Spark).
* :mod:`.params`: :class:`BoundingParams` (validated parameters) and the job's
  :class:`ContributionBoundingParams` (plus paths).
* :mod:`.registry`: :data:`REGISTRY`, name → (plan, run) for every algorithm.
* :mod:`.plan`: :class:`BoundingPlan`, what a run does, from the parameters alone.
* :mod:`.columns`: names of the working tables' columns.
* :mod:`.orders`: the preference orders of docs/design/bounding.md#orders (SHA-256 keys, Spark
  columns).
* :mod:`.prepare`: order positions, capacities, heavy users (Spark).
* :mod:`.proposal_rounds`: one proposal round as a DataFrame step.
* :mod:`.passes`: a pass of rounds until the finish mode stops it, resumable.
* :mod:`.distributed`: the algorithms run as passes of rounds (proposal, greedy, greedy-dup,
  bias-mitigating).
* :mod:`.driver_algorithms`: the algorithms run on the driver (ILP, dp-mf, bias sweep).
* :mod:`.driver`: every move of data between Spark and the driver (collect, driver finish).
* :mod:`.state_store`: where round state lives (Parquet work directory or checkpoints) and
  the claim of a work directory (resume fingerprint, order seed).
* :mod:`.outputs`: :class:`BoundingResult`, selected ids, per-user final degrees, the
  feasibility check, the report.
* :mod:`.hypergraph`: :class:`CompactHypergraph`, the driver-side CSR form.
* :mod:`.greedy`: Alg. 2, Alg. 3, Alg. 4 on the driver.
* :mod:`.driver_rounds`: the rounds simulated with numpy.
* :mod:`.ilp`: exact optimum with HiGHS (``scipy.optimize.milp``).
* :mod:`.bias_mitigating`: the small/large interleave and its Pareto sweep.

Privacy: bounding reads ids only (fixed-graph DP) and spends no budget; downstream training
must account with k = ``max_degree`` of the result. The hypergraph and every by-product
(selected ids, degrees, round logs) are confidential (docs/design/bounding.md#confidential).
"""

from spark_dp.contribution_bounding.api import bound_contributions, plan_bounding
from spark_dp.contribution_bounding.bias_mitigating import (
    SweepPoint,
    bias_grid,
    bias_mitigated_greedy,
    interleave_sequence,
    pareto_front,
    pareto_sweep,
)
from spark_dp.contribution_bounding.driver_algorithms import MinSepInfeasibleError
from spark_dp.contribution_bounding.driver_rounds import simulate_rounds
from spark_dp.contribution_bounding.greedy import (
    DuplicateSelection,
    MinSepBatches,
    greedy,
    greedy_with_duplicates,
    largest_feasible_min_sep,
    min_sep_batches,
)
from spark_dp.contribution_bounding.hypergraph import CompactHypergraph
from spark_dp.contribution_bounding.ilp import (
    IlpSolution,
    ProblemTooLargeError,
    lp_upper_bound,
    solve_ilp,
)
from spark_dp.contribution_bounding.orders import ORDERS, prio_hex, shared_sequence
from spark_dp.contribution_bounding.outputs import BoundingResult
from spark_dp.contribution_bounding.params import BoundingParams, ContributionBoundingParams
from spark_dp.contribution_bounding.plan import BoundingPlan
from spark_dp.contribution_bounding.registry import ALGORITHMS, REGISTRY
from spark_dp.contribution_bounding.state_store import WorkDirMismatchError

__all__ = [
    "ALGORITHMS",
    "ORDERS",
    "REGISTRY",
    "BoundingParams",
    "BoundingPlan",
    "BoundingResult",
    "CompactHypergraph",
    "ContributionBoundingParams",
    "DuplicateSelection",
    "IlpSolution",
    "MinSepBatches",
    "MinSepInfeasibleError",
    "ProblemTooLargeError",
    "SweepPoint",
    "WorkDirMismatchError",
    "bias_grid",
    "bias_mitigated_greedy",
    "bound_contributions",
    "greedy",
    "greedy_with_duplicates",
    "interleave_sequence",
    "largest_feasible_min_sep",
    "lp_upper_bound",
    "min_sep_batches",
    "pareto_front",
    "pareto_sweep",
    "plan_bounding",
    "prio_hex",
    "shared_sequence",
    "simulate_rounds",
    "solve_ilp",
]
