"""Exact contribution bounding by integer linear programming (small inputs only).

[B] App. C.4, ILPs (1) and (2); docs/design/bounding.md#ilp. With x_i the copies of
record i and b(j) the capacity of user j:

    maximize Σ_i x_i   subject to   Σ_{i : j ∈ e_i} x_i ≤ b(j) for every user j,
    x_i ∈ {0, 1} (no duplicates)   or   x_i ∈ Z≥0 (duplicates; x_i ≤ min_{j ∈ e_i} b(j)).

Solved exactly with HiGHS through ``scipy.optimize.milp``. [B] reports using GLOP, an LP
solver that does not enforce integrality (docs/design/bounding.md#ilp); the LP relaxation is offered
separately as an upper bound (:func:`lp_upper_bound`). The problem is NP-hard
(docs/design/bounding.md#hardness), so a size limit guards the driver; a time limit returns the best
solution found with its MIP gap. Records without users cannot occur here (the incidence form has
none), which keeps ILP (2) bounded (docs/design/bounding.md#generators).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from spark_dp.contribution_bounding.hypergraph import CompactHypergraph
from spark_dp.errors import ParameterError
from spark_dp.logs import private

__all__ = [
    "DEFAULT_MAX_RECORDS",
    "IlpSolution",
    "ProblemTooLargeError",
    "lp_upper_bound",
    "solve_ilp",
]

DEFAULT_MAX_RECORDS = 20_000


class ProblemTooLargeError(ParameterError):
    """An exact solver was asked to solve an instance above its size limit."""


@dataclass(frozen=True)
class IlpSolution:
    """Result of :func:`solve_ilp`.

    Attributes:
        multiplicity: x_i per record (0/1 without duplicates).
        objective: Σ_i x_i of the returned solution.
        optimal: True when HiGHS proved optimality.
        status: solver message.
        dual_bound: the solver's upper bound on the optimum (= objective when optimal).
    """

    multiplicity: np.ndarray
    objective: int
    optimal: bool
    status: str
    dual_bound: float

    @property
    def gap(self) -> float:
        """Relative gap (dual_bound − objective) / dual_bound (0 when optimal)."""
        if self.dual_bound <= 0:
            return 0.0
        return max(0.0, (self.dual_bound - self.objective) / self.dual_bound)


def _check_size(graph: CompactHypergraph, max_records: int | None) -> None:
    if max_records is not None and graph.n_records > max_records:
        raise ProblemTooLargeError(
            f"the ILP would have {private(graph.n_records)} record variables, more than the "
            f"limit {max_records} (ilp_max_records); exact solving is NP-hard and may not finish. "
            "Use the greedy or proposal algorithm (≥ OPT / max record size, ≈98% of OPT in "
            "practice) or raise --ilp-max-records"
        )


def _model(graph: CompactHypergraph, duplicates: bool) -> tuple[Any, Any]:
    """(LinearConstraint Σ_{i ∋ j} x_i ≤ b(j), Bounds 0 ≤ x_i ≤ upper) of ILP (1) or (2)."""
    from scipy.optimize import Bounds, LinearConstraint
    from scipy.sparse import csr_array

    n = graph.n_records
    a = csr_array(
        (np.ones(len(graph.users)), (graph.users, graph.record_of_incidence)),
        shape=(graph.n_users, n),
    )
    if duplicates:
        upper = np.minimum.reduceat(graph.cap[graph.users], graph.ptr[:-1]).astype(float)
    else:
        upper = np.ones(n)
    constraint = LinearConstraint(a, -np.inf, graph.cap.astype(float))
    return constraint, Bounds(np.zeros(n), upper)


def solve_ilp(
    graph: CompactHypergraph,
    *,
    duplicates: bool = False,
    time_limit: float | None = None,
    max_records: int | None = DEFAULT_MAX_RECORDS,
) -> IlpSolution:
    """Maximum b-matching (or duplicate b-matching) by HiGHS MIP.

    Args:
        graph: records with per-user capacities.
        duplicates: ILP (2) (integer copies) instead of ILP (1) (0/1).
        time_limit: seconds before HiGHS stops with its best solution (``optimal=False``).
        max_records: refuse larger instances (``None``: no limit).

    Raises:
        ProblemTooLargeError: more than ``max_records`` records.
        RuntimeError: the solver returned no usable solution.
    """
    from scipy.optimize import milp

    _check_size(graph, max_records)
    n = graph.n_records
    if n == 0:
        return IlpSolution(np.zeros(0, dtype=np.int64), 0, True, "empty instance", 0.0)
    constraint, bounds = _model(graph, duplicates)
    options: dict[str, Any] = {"disp": False, "mip_rel_gap": 0.0}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    res = milp(
        -np.ones(n), constraints=constraint, integrality=np.ones(n), bounds=bounds, options=options
    )
    if res.x is None:
        raise RuntimeError(f"HiGHS returned no solution: {res.message}")
    x = np.rint(res.x).astype(np.int64)
    if not graph.is_feasible(x):
        raise RuntimeError("HiGHS solution violates a capacity after rounding")
    bound = getattr(res, "mip_dual_bound", None)
    dual = float(-bound) if bound is not None and np.isfinite(bound) else float(x.sum())
    return IlpSolution(x, int(x.sum()), res.status == 0, str(res.message), max(dual, x.sum()))


def lp_upper_bound(
    graph: CompactHypergraph,
    *,
    duplicates: bool = False,
    max_records: int | None = 10 * DEFAULT_MAX_RECORDS,
) -> float:
    """Optimum of the LP relaxation: an upper bound on the ILP optimum
    (docs/design/bounding.md#ilp)."""
    from scipy.optimize import milp

    _check_size(graph, max_records)
    if graph.n_records == 0:
        return 0.0
    constraint, bounds = _model(graph, duplicates)
    res = milp(-np.ones(graph.n_records), constraints=constraint, bounds=bounds)
    if res.x is None:
        raise RuntimeError(f"HiGHS returned no LP solution: {res.message}")
    return float(-res.fun)
