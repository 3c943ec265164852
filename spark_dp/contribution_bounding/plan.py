"""What a bounding run will do, decided from the parameters alone (no data, no seed).

Each algorithm of the registry (:mod:`.registry`) has a ``plan(params)`` here that checks the
parameters it depends on and returns a :class:`BoundingPlan`: the preference order it scans,
the round settings of its distributed passes (or none: the whole run is on the driver), and
the shape of its output. :func:`~.api.bound_contributions` prepares the working tables in the
plan's order and hands them to the algorithm's ``run(prep, plan, context)``.

Which order each algorithm scans (docs/design/bounding.md#orders, #greedy-order): the distributed
algorithms use
``params.order``; the driver-side ones (ILP, Alg. 4, the bias sweep) always collect the
records in the ``size-hash`` order, [B]'s sort.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spark_dp.checks import check_int_at_least
from spark_dp.contribution_bounding.orders import SHARED_ORDERS, OrderPlan
from spark_dp.contribution_bounding.passes import RoundLog, RoundSettings
from spark_dp.errors import ParameterError
from spark_dp.logs import StageTimer

if TYPE_CHECKING:
    from spark_dp.contribution_bounding.params import BoundingParams
    from spark_dp.contribution_bounding.state_store import StateStore

__all__ = [
    "BoundingPlan",
    "RunContext",
    "check_max_contributions_given",
    "plan_bias_mitigating",
    "plan_bias_sweep",
    "plan_dp_mf",
    "plan_greedy",
    "plan_greedy_dup",
    "plan_ilp",
    "plan_ilp_dup",
    "plan_proposal",
]

DRIVER_ORDER = "size-hash"
"""The order the driver-side algorithms collect the records in ([B]'s sort,
docs/design/bounding.md#greedy-order)."""


@dataclass(frozen=True)
class BoundingPlan:
    """A run decided from the parameters alone.

    Attributes:
        params: the parameters planned from (the algorithm's own knobs: T, B, ILP limits).
        order: the preference order scanned (docs/design/bounding.md#orders).
        interleave: (u_thr, c1, c2) of the bias-mitigating order
            (docs/design/bounding.md#bias-mitigating), else ``None``.
        rounds: settings of the distributed passes; ``None`` when the whole hypergraph is
            collected to the driver instead.
        duplicates: the output is a multiset (a ``multiplicity`` column).
        user_state: the run produces the per-user state table (user_id, cap, d, status).
        max_contributions_required: the run needs a bound b or a capacities table (Alg. 4 does not:
            its bound k is measured afterwards, docs/design/bounding.md#min-sep).
    """

    params: BoundingParams
    order: str
    interleave: tuple[int, int, int] | None = None
    rounds: RoundSettings | None = None
    duplicates: bool = False
    user_state: bool = True
    max_contributions_required: bool = True

    @property
    def algorithm(self) -> str:
        """The registry name of the algorithm."""
        return self.params.algorithm

    @property
    def per_user(self) -> bool:
        """True for per-user orders (no shared order; docs/design/bounding.md#per-user-orders
        applies)."""
        return self.order == "per-user"

    @property
    def on_driver(self) -> bool:
        """True when the whole hypergraph is collected to the driver (size-limited)."""
        return self.rounds is None

    @property
    def steps(self) -> tuple[()]:
        """No budget-spending step: selection reads ids only (fixed-graph DP,
        docs/design/bounding.md#fixed-graph-dp)."""
        return ()

    def order_plan(self, seed: int) -> OrderPlan:
        """The order with its seed (known once the work directory is claimed)."""
        return OrderPlan(self.order, seed, self.interleave)


def check_max_contributions_given(plan: BoundingPlan, *, table: bool) -> None:
    """Refuse a run without a bound: no ``max_contributions`` and no capacities ``table``,
    unless the algorithm measures its bound afterwards (dp-mf, docs/design/bounding.md#min-sep).
    Before any data.

    Raises:
        ParameterError: saying what to pass.
    """
    if plan.params.max_contributions is None and not table and plan.max_contributions_required:
        raise ParameterError(
            "pass the contribution bound: --max-contributions B, and/or --capacities PATH "
            "with a (user_id, cap) table"
        )


@dataclass(frozen=True)
class RunContext:
    """Where a run keeps its state and reports its progress.

    Attributes:
        store: the run's :class:`~.state_store.StateStore` (work directory or memory).
        timer: stage timer (one stage per round, collect, solve, outputs).
        log: logger (counts only, never ids).
        on_round: called after each saved round (tests use it to simulate a crash).
    """

    store: StateStore
    timer: StageTimer
    log: logging.Logger
    on_round: Callable[[RoundLog], None] | None = None


# --------------------------------------------------------------------------- checks


def _round_settings(params: BoundingParams) -> RoundSettings:
    return RoundSettings(
        max_rounds=params.max_rounds,
        finish=params.finish,
        driver_threshold_rows=params.driver_threshold_rows,
        driver_max_rows=params.driver_max_rows,
        salt_buckets=params.salt_buckets,
    )


def _check_shared_at_exhaustion(params: BoundingParams) -> None:
    """Every algorithm but ``proposal`` scans one shared order to exhaustion."""
    if params.order == "per-user":
        raise ParameterError(
            f"order 'per-user' is only defined for algorithm 'proposal' (the greedy "
            f"algorithms scan one shared order); got algorithm {params.algorithm!r}. "
            f"Use one of {list(SHARED_ORDERS)}"
        )
    if params.finish == "none":
        raise ParameterError(
            f"finish 'none' stops before exhaustion, which only algorithm 'proposal' "
            f"allows; {params.algorithm!r} is defined at exhaustion. Use --finish "
            "driver-greedy or continue"
        )


# --------------------------------------------------------------------------- plans


def plan_proposal(params: BoundingParams) -> BoundingPlan:
    """[A]'s rounds with any order and finish mode (docs/design/bounding.md#proposal-rounds)."""
    return BoundingPlan(params, params.order, rounds=_round_settings(params))


def plan_greedy(params: BoundingParams) -> BoundingPlan:
    """Alg. 2 = the rounds with a shared order run to exhaustion
    (docs/design/bounding.md#greedy-equivalence)."""
    _check_shared_at_exhaustion(params)
    return BoundingPlan(params, params.order, rounds=_round_settings(params))


def plan_greedy_dup(params: BoundingParams) -> BoundingPlan:
    """Alg. 3 = passes of rounds, each on the records the previous pass added
    (docs/design/bounding.md#duplicates)."""
    _check_shared_at_exhaustion(params)
    return BoundingPlan(params, params.order, rounds=_round_settings(params), duplicates=True)


def plan_bias_mitigating(params: BoundingParams) -> BoundingPlan:
    """Alg. 2 over the small/large interleave of two size-hash lists
    (docs/design/bounding.md#bias-mitigating)."""
    _check_shared_at_exhaustion(params)
    if params.order != "size-hash":
        raise ParameterError(
            "bias-mitigating interleaves two size-hash lists "
            "(docs/design/bounding.md#bias-mitigating); pass --order size-hash"
        )
    interleave = (params.size_threshold, params.small_block, params.large_block)
    return BoundingPlan(params, params.order, interleave=interleave, rounds=_round_settings(params))


def plan_ilp(params: BoundingParams) -> BoundingPlan:
    """ILP (1) on the driver (docs/design/bounding.md#ilp)."""
    _check_shared_at_exhaustion(params)
    return BoundingPlan(params, DRIVER_ORDER)


def plan_ilp_dup(params: BoundingParams) -> BoundingPlan:
    """ILP (2), with duplicates, on the driver (docs/design/bounding.md#ilp)."""
    _check_shared_at_exhaustion(params)
    return BoundingPlan(params, DRIVER_ORDER, duplicates=True)


def plan_dp_mf(params: BoundingParams) -> BoundingPlan:
    """Alg. 4 on the driver: needs the schedule T, B; no capacities
    (docs/design/bounding.md#min-sep)."""
    _check_shared_at_exhaustion(params)
    if params.iterations is None or params.batch_size is None:
        raise ParameterError(
            "dp-mf needs --iterations T and --batch-size B (the training schedule)"
        )
    check_int_at_least("iterations", params.iterations, 1)
    check_int_at_least("batch_size", params.batch_size, 1)
    return BoundingPlan(params, DRIVER_ORDER, user_state=False, max_contributions_required=False)


def plan_bias_sweep(params: BoundingParams) -> BoundingPlan:
    """The 76-setting Pareto sweep (docs/design/bounding.md#bias-mitigating), on the driver."""
    _check_shared_at_exhaustion(params)
    return BoundingPlan(params, DRIVER_ORDER, user_state=False)
