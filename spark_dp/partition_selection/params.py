"""Parameters of private partition selection, shared by the library API and the job.

One frozen dataclass declares every parameter once: its default, its ``--help`` sentence and
its check. The ``partition_selection`` job and ``spark-dp calibrate`` derive their command-line
flags and config keys from it (see :mod:`spark_dp.config`). It checks its own fields only; the
algorithm's plan (:func:`~spark_dp.partition_selection.select.plan_selection`, computed once
from the checked parameters) refuses what the chosen algorithm cannot use (an unknown name, a
three-share split for MAD2R, a b_max above its threshold's h_scale), still before any data is
read. Defaults follow the paper's experiments (Chen et al. 2025, Sec. 6 ICML / Sec. 7 arXiv;
docs/design/selection.md#paper-parameters).
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_dp.checks import (
    check_at_most,
    check_fractions,
    check_int_at_least,
    check_nonnegative,
    check_release_delta,
    check_release_epsilon,
)
from spark_dp.config import param
from spark_dp.partition_selection.mad_constants import check_bias_bounds

__all__ = ["MAX_CONTRIBUTIONS_LIMIT", "PartitionSelectionParams"]

MAX_CONTRIBUTIONS_LIMIT = 1_000_000
"""Largest Δ0: the calibrations hold arrays of Δ0 floats (memory and time grow linearly with
Δ0: megabytes and seconds at this limit)."""


@dataclass(frozen=True)
class PartitionSelectionParams:
    """Parameters of :func:`spark_dp.partition_selection.select_partitions`.

    Every value here is a public constant chosen before seeing the data
    (docs/design/selection.md#public-constants): tuning any of them on the private data voids the
    guarantee.
    """

    algorithm: str = param("mad2r", "selection algorithm (one of the registry's)")
    epsilon: float = param(1.0, "total privacy loss ε of the selection (at most 100)")
    delta: float = param(1e-5, "total δ; keep it well below 1/(number of users)")
    max_contributions: int = param(
        100,
        "the per-user bound Δ0: each user keeps a uniform random subset of at most this many "
        "items (k of the classic strategies); larger values raise the threshold, smaller ones "
        f"drop data (at most {MAX_CONTRIBUTIONS_LIMIT})",
        aliases=("--max-items-per-user",),
    )
    max_adaptive_degree: int = param(
        50, "d_max of MAD/MAD2R: users with more items do not reroute excess weight (>= 4)"
    )
    beta: float = param(
        2.0,
        "β of MAD/MAD2R: truncation level τ = ρ + β·σ in noise standard deviations",
        flag="--truncation-beta",
        aliases=("--beta",),
    )
    split: tuple[float, ...] = param(
        (0.1, 0.9),
        "budget shares of the rounds, applied to ε and δ alike: two shares for mad2r, any "
        "number for dp-sips (the paper also uses 0.05,0.15,0.8)",
    )
    b_min: float = param(0.5, "minimum bias multiplier of MAD2R round 2, in [0.5, 1]")
    b_max: float = param(
        2.0, "maximum bias multiplier of MAD2R round 2 (>= 1); raises round 2's threshold"
    )
    c_lb: float = param(
        1.0, "C_lb of MAD2R: round-2 biases use the lower bound w̃1 − C_lb·σ1 (>= 0)"
    )
    c_ub: float = param(
        3.0, "C_ub of MAD2R: items with w̃1 + C_ub·σ1 < ρ2 are dropped from round 2 (>= 0)"
    )
    recap_each_round: bool = param(
        True, "dp-sips: re-cap each round from the user's remaining uncapped items"
    )

    def __post_init__(self) -> None:
        check_release_epsilon(self.epsilon)
        check_release_delta(self.delta)
        check_int_at_least("max_contributions", self.max_contributions, 1)
        check_at_most(
            "max_contributions",
            self.max_contributions,
            MAX_CONTRIBUTIONS_LIMIT,
            "the calibration would hold arrays of that many floats",
        )
        check_int_at_least("max_adaptive_degree", self.max_adaptive_degree, 4)
        check_nonnegative("beta", self.beta)
        split = check_fractions("split", self.split)
        object.__setattr__(self, "split", split)
        check_bias_bounds(self.b_min, self.b_max)
        check_nonnegative("c_lb", self.c_lb)
        check_nonnegative("c_ub", self.c_ub)
