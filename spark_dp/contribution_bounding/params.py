"""Parameters of contribution bounding, declared once and checked when built.

:class:`BoundingParams` holds the algorithm's parameters (what library callers build);
:class:`ContributionBoundingParams` adds the job's paths. The job ``contribution_bounding``
derives its command-line flags from these fields (see :mod:`spark_dp.config`).
docs/design/bounding.md#inputs lists the parameters; the defaults follow its recommendations
(docs/design/bounding.md#finish, #orders).

Each class checks its own fields only. The algorithm names are the registry's (:mod:`.registry`:
the parser takes its choices from there), and the checks that depend on the algorithm are its
data-free plan's (:func:`~.api.plan_bounding`, computed once before any data is read).
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_dp.checks import check_at_most, check_choice, check_int_at_least, check_positive
from spark_dp.config import param
from spark_dp.contribution_bounding.orders import ORDERS, canonical_order
from spark_dp.errors import ParameterError

__all__ = [
    "FINISH_MODES",
    "MAX_CONTRIBUTIONS_LIMIT",
    "BoundingParams",
    "ContributionBoundingParams",
]

FINISH_MODES = ("driver-greedy", "continue", "none")

MAX_CONTRIBUTIONS_LIMIT = 10**9
"""Largest per-user bound b: beyond it the bound constrains no real user, and capacities are
added and compared as 64-bit integers."""


@dataclass(frozen=True)
class BoundingParams:
    """Algorithmic parameters of contribution bounding (no paths).

    Selection reads record and user ids only: fixed-graph DP
    (docs/design/bounding.md#fixed-graph-dp).
    """

    algorithm: str = param("proposal", "the bounding algorithm")
    max_contributions: int | None = param(
        None,
        "the per-user bound b: records per user; users missing from --capacities get it "
        f"(at most {MAX_CONTRIBUTIONS_LIMIT}); required unless --capacities is given (dp-mf: "
        "measured, not given)",
        aliases=("--capacity",),
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
    iterations: int | None = param(None, "dp-mf: training iterations T (required with dp-mf)")
    batch_size: int | None = param(None, "dp-mf: batch size B (required with dp-mf)")
    min_sep: int = param(2, "dp-mf: minimum batch distance between a user's records")
    size_threshold: int = param(
        2, "bias-mitigating: records with at most this many users are small"
    )
    small_block: int = param(1, "bias-mitigating: small records per block (c1)")
    large_block: int = param(1, "bias-mitigating: large records per block (c2)")

    def __post_init__(self) -> None:
        object.__setattr__(self, "order", canonical_order(self.order))
        finish = str(self.finish).replace("_", "-")
        object.__setattr__(self, "finish", check_choice("finish", finish, FINISH_MODES))
        if self.max_contributions is not None:
            bound = check_int_at_least("max_contributions", self.max_contributions, 0)
            why = "it would bound nothing"
            check_at_most("max_contributions", bound, MAX_CONTRIBUTIONS_LIMIT, why)
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


@dataclass(frozen=True)
class ContributionBoundingParams(BoundingParams):
    """Parameters of the ``contribution_bounding`` job: the algorithm's plus input/output paths."""

    capacities: str | None = param(
        None,
        "per-user capacities table (user_id, cap); users missing from it get --max-contributions",
        metavar="PATH",
    )
    capacity_col: str = param("cap", "capacity column of --capacities", metavar="NAME")
    record_weights: str | None = param(
        None,
        "content-free record weights for --order weighted-global (record_id, weight) or "
        "per-user (record_id, user_id, weight); never derive them from record content",
        metavar="PATH",
    )
    user_state: str | None = param(
        None, "per-user final degrees (default <output>_user_state); confidential", metavar="PATH"
    )
    work_dir: str | None = param(
        None,
        "per-round state for resuming a failed run (default <output>_work)",
        metavar="PATH",
    )
    keep_work_dir: bool = param(False, "keep --work-dir after success (it is confidential)")

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("capacities", "record_weights", "user_state", "work_dir", "capacity_col"):
            value = getattr(self, name)
            if value is not None and not str(value).strip():
                raise ParameterError(f"{name} must be a path or omitted, got an empty string")
        if self.order == "weighted-global" and self.record_weights is None:
            raise ParameterError(
                "--order weighted-global needs --record-weights PATH (record_id, weight): "
                "pass the weights table, or choose another --order"
            )
