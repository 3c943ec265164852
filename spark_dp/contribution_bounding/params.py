"""Parameters of contribution bounding, declared once and checked when built.

The job ``contribution_bounding`` derives its command-line flags from these fields (see
:mod:`spark_dp.config`); library callers build the same object. Spec contribution_bounding.md
§2.1 lists the parameters; the defaults follow its recommendations (§3.5, A1, A38).
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_dp.checks import check_choice, check_int_at_least, check_positive
from spark_dp.config import param
from spark_dp.contribution_bounding.orders import ORDERS, SHARED_ORDERS, canonical_order
from spark_dp.errors import ParameterError

__all__ = [
    "ALGORITHMS",
    "DRIVER_ALGORITHMS",
    "FINISH_MODES",
    "MULTIPLICITY_ALGORITHMS",
    "BoundingParams",
]

ALGORITHMS = (
    "proposal",
    "greedy",
    "greedy-dup",
    "bias-mitigating",
    "ilp",
    "ilp-dup",
    "dp-mf",
    "bias-sweep",
)
# Algorithms that collect the whole hypergraph to the driver (size-limited).
DRIVER_ALGORITHMS = ("ilp", "ilp-dup", "dp-mf", "bias-sweep")
# Algorithms whose output carries a multiplicity column.
MULTIPLICITY_ALGORITHMS = ("greedy-dup", "ilp-dup")
FINISH_MODES = ("driver-greedy", "continue", "none")


@dataclass(frozen=True)
class BoundingParams:
    """Algorithmic parameters of contribution bounding (no paths).

    Selection reads record and user ids only: fixed-graph DP (spec §1.5).
    """

    algorithm: str = param(
        "proposal",
        "proposal: distributed rounds ([A]); greedy: [B] Alg. 2 (identical to proposal with a "
        "shared order run to exhaustion); greedy-dup: Alg. 3 with multiplicities; "
        "bias-mitigating: Alg. 2 over the small/large interleave; ilp/ilp-dup: exact, small "
        "inputs; dp-mf: Alg. 4 min-sep batches; bias-sweep: the Pareto sweep of §4.6",
        choices=ALGORITHMS,
    )
    capacity: int | None = param(
        None,
        "contribution bound b: records per user; users missing from --capacities get it",
    )
    order: str = param(
        "size-hash",
        "preference order: size-hash (few-owner records first, = [B]'s sort), hash (random), "
        "weighted-global (needs --record-weights), per-user (proposal only)",
        choices=ORDERS,
    )
    max_rounds: int = param(
        64,
        "distributed rounds before the finish mode applies (with a shared order the answer "
        "depends on it only under --finish none)",
    )
    finish: str = param(
        "driver-greedy",
        "after the rounds: driver-greedy (hand a small remainder to the driver, same answer), "
        "continue (rounds until nothing is eligible), none (stop at --max-rounds: feasible "
        "but maybe not maximal)",
        choices=FINISH_MODES,
    )
    driver_threshold_rows: int = param(
        5_000_000, "hand the run to the driver once eligible incidences are at most this"
    )
    driver_max_rows: int = param(
        20_000_000, "largest incidence table any driver-side algorithm may collect"
    )
    skew_threshold: int = param(
        100_000, "users with more records than this are ranked in salted buckets (two stages)"
    )
    salt_buckets: int = param(64, "salt buckets per heavy user")
    ilp_max_records: int = param(20_000, "largest record count the exact ILP accepts")
    ilp_time_limit: float = param(600.0, "seconds before HiGHS returns its best solution")
    iterations: int | None = param(None, "dp-mf: training iterations T")
    batch_size: int | None = param(None, "dp-mf: batch size B")
    min_sep: int = param(2, "dp-mf: minimum batch distance between a user's records")
    size_threshold: int = param(
        2, "bias-mitigating: records with at most this many users are small"
    )
    small_block: int = param(1, "bias-mitigating: small records per block (c1)")
    large_block: int = param(1, "bias-mitigating: large records per block (c2)")

    def __post_init__(self) -> None:
        check_choice("algorithm", self.algorithm, ALGORITHMS)
        object.__setattr__(self, "order", canonical_order(self.order))
        finish = str(self.finish).replace("_", "-")
        object.__setattr__(self, "finish", check_choice("finish", finish, FINISH_MODES))
        if self.capacity is not None:
            check_int_at_least("capacity", self.capacity, 0)
        check_int_at_least("max_rounds", self.max_rounds, 1)
        check_int_at_least("driver_threshold_rows", self.driver_threshold_rows, 0)
        check_int_at_least("driver_max_rows", self.driver_max_rows, 1)
        check_int_at_least("skew_threshold", self.skew_threshold, 1)
        check_int_at_least("salt_buckets", self.salt_buckets, 2)
        check_int_at_least("ilp_max_records", self.ilp_max_records, 1)
        check_positive("ilp_time_limit", self.ilp_time_limit)
        check_int_at_least("min_sep", self.min_sep, 1)
        check_int_at_least("size_threshold", self.size_threshold, 0)
        check_int_at_least("small_block", self.small_block, 1)
        check_int_at_least("large_block", self.large_block, 1)
        if self.order == "per-user" and self.algorithm != "proposal":
            raise ParameterError(
                f"order 'per-user' is only defined for algorithm 'proposal' (the greedy "
                f"algorithms scan one shared order); got algorithm {self.algorithm!r}. "
                f"Use one of {list(SHARED_ORDERS)}"
            )
        if self.finish == "none" and self.algorithm != "proposal":
            raise ParameterError(
                f"finish 'none' stops before exhaustion, which only algorithm 'proposal' "
                f"allows; {self.algorithm!r} is defined at exhaustion. Use --finish "
                "driver-greedy or continue"
            )
        if self.algorithm == "bias-mitigating" and self.order != "size-hash":
            raise ParameterError(
                "bias-mitigating interleaves two size-hash lists (spec §4.6); pass "
                "--order size-hash"
            )
        if self.algorithm == "dp-mf":
            if self.iterations is None or self.batch_size is None:
                raise ParameterError(
                    "dp-mf needs --iterations T and --batch-size B (the training schedule)"
                )
            check_int_at_least("iterations", self.iterations, 1)
            check_int_at_least("batch_size", self.batch_size, 1)

    @property
    def duplicates(self) -> bool:
        """True when the output is a multiset (a ``multiplicity`` column)."""
        return self.algorithm in MULTIPLICITY_ALGORITHMS

    @property
    def exhaustive(self) -> bool:
        """True when the rounds must run to exhaustion (every algorithm but finish=none)."""
        return self.finish != "none"
