"""Parameters of a distinct-count release (the ``distinct_count`` job, ``spark-dp distinct-count``).

Declared once here: the command-line flags, the config-file keys (``conf/distinct_count.yaml``)
and the checks of each field all come from :class:`DistinctCountParams`. The method names are
the registry's (:data:`spark_dp.distinct_count.registry.METHODS`): the parser takes its
choices from there, and the plan (:func:`~spark_dp.distinct_count.registry.plan_distinct_count`)
refuses an unknown one.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_dp.checks import (
    check_at_most,
    check_choice,
    check_int_at_least,
    check_probability,
    check_release_epsilon,
)
from spark_dp.config import param
from spark_dp.distinct_count.components import METHODS as COMPONENT_METHODS
from spark_dp.distinct_count.plan import require_epsilon

__all__ = ["MAX_CONTRIBUTIONS_LIMIT", "DistinctCountParams"]

MAX_CONTRIBUTIONS_LIMIT = 100_000
"""Largest ℓ_max: GEM scores every ℓ in 1..ℓ_max with exact rationals on the driver, a cost that
grows with ℓ_max (seconds at this limit), and the curve keeps ℓ_max values per component."""


@dataclass(frozen=True)
class DistinctCountParams:
    """Parameters of the ``distinct_count`` job."""

    epsilon: float | None = param(
        None, "total privacy budget ε (at most 100): ε/2 GEM + ε/2 Laplace"
    )
    beta: float = param(
        0.05,
        "β, the failure probability of the lower bound, in (0, 0.5)",
        flag="--failure-probability",
        aliases=("--beta",),
    )
    method: str = param("exact", "curve: exact max-flow DC(D; ℓ) or the faster greedy (≥ ½ exact)")
    max_contributions: int = param(
        100,
        "the per-user bound ℓ_max: the largest per-person bound GEM considers; choose it "
        f"without looking at the data (at most {MAX_CONTRIBUTIONS_LIMIT})",
        aliases=("--max-contribution",),
    )
    components: str = param(
        "auto",
        "connected components of a split core: DataFrames (auto: as fast as measured, no jar) "
        "or GraphFrames two_phase (graphframes: needs its jar); the values are the same",
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
        check_release_epsilon(require_epsilon(self.epsilon))
        check_probability("beta", self.beta, low=0.0, high=0.5)
        check_int_at_least("max_contributions", self.max_contributions, 1)
        check_at_most(
            "max_contributions",
            self.max_contributions,
            MAX_CONTRIBUTIONS_LIMIT,
            "GEM would score that many candidates on the driver",
        )
        check_choice("components", self.components, COMPONENT_METHODS)
        check_int_at_least("spark_rounds", self.spark_rounds, 0)
        check_int_at_least("spark_rounds_min_rows", self.spark_rounds_min_rows, 0)
        check_int_at_least("components_min_rows", self.components_min_rows, 0)
        check_int_at_least("ell_blocks", self.ell_blocks, 1)
