"""The plan of a distinct-count release: ε split between GEM and the count, before any data.

Knop & Steinke 2023, Algorithm 1 lines 9–15 (Algorithm 2 lines 8–12) and Lemma 3.2;
docs/design/counting.md#mechanism. The release spends ε in two steps, in this order:

    ε_select = ε·SELECT_FRACTION      GEM choice of ℓ̂            (:class:`GemSelection`)
    ε_count  = ε − ε_select           noisy count of c(D; ℓ̂)      (:class:`DiscreteLaplaceRelease`)

so (ℓ̂, ν̂) is ε-DP by sequential composition. This module is the only place that split is
made; everything else (the release, the report) reads it from the plan's calibration objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spark_dp.checks import check_choice, check_epsilon, check_int_at_least, check_probability
from spark_dp.distinct_count.calibration import (
    CountCalibration,
    DiscreteLaplaceRelease,
    GemSelection,
    LaplaceRelease,
)
from spark_dp.dp.calibration import Budget
from spark_dp.errors import ParameterError
from spark_dp.report import Step

__all__ = [
    "NOISES",
    "SELECT_FRACTION",
    "DistinctCountPlan",
    "plan_release",
    "require_epsilon",
]

#: Share of ε spent by GEM on choosing ℓ; the rest goes to the count (Algorithm 1: ½).
SELECT_FRACTION = 0.5

#: The noise kinds of the count: the exact discrete Laplace (the job's, hardened) and the
#: paper's continuous Laplace (floating point; for the paper's figures and comparisons).
NOISES: dict[str, type[DiscreteLaplaceRelease] | type[LaplaceRelease]] = {
    "discrete-laplace": DiscreteLaplaceRelease,
    "laplace": LaplaceRelease,
}

_SELECT_LABEL = "GEM selection of the contribution bound ℓ"


@dataclass(frozen=True)
class DistinctCountPlan:
    """What a release will spend and how, from public parameters only (no data).

    Attributes:
        method: the curve method (``exact`` or ``greedy``; see the registry).
        epsilon: the total ε of the release.
        beta: failure probability of the lower bound.
        max_contributions: ℓ_max; the curve holds c(D; ℓ) for ℓ = 1..ℓ_max.
        select: the GEM choice of ℓ̂ (ε_select).
        count: the noisy release of c(D; ℓ̂) (ε_count).
    """

    method: str
    epsilon: float
    beta: float
    max_contributions: int
    select: GemSelection
    count: CountCalibration

    @property
    def algorithm(self) -> str:
        """The method's registry name (what a release is named after)."""
        return self.method

    @property
    def steps(self) -> tuple[Step[GemSelection], Step[CountCalibration]]:
        """The two budget-spending steps, in the order they run."""
        return (
            Step(_SELECT_LABEL, self.select),
            Step(f"{self.count.mechanism} release of c(D; ℓ̂)", self.count),
        )

    def scores(self, curve: NDArray[np.int64]) -> NDArray[np.float64] | NDArray[np.int64]:
        """q_ℓ = c(D; ℓ) − shift(ℓ), ℓ = 1..len(curve) (Alg. 1 line 11;
        docs/design/counting.md#scores). Private.

        The shift is the count step's, so q_ℓ is the expected lower bound if ℓ were chosen.
        """
        ells = np.arange(1, len(curve) + 1)
        return curve - self.count.shift(ells)

    def to_report(self) -> dict[str, Any]:
        """The data-free part of the mechanism description (the split and the neighbours)."""
        select, count = self.steps
        return {
            "epsilon_total": self.epsilon,
            "epsilon_select": select.epsilon,
            "epsilon_count": count.epsilon,
            "composition": "ε_select + ε_count = ε (sequential composition, Lemma 3.2)",
            "neighbouring": "add or remove one person with all their items",
        }


def require_epsilon(epsilon: float | None) -> float:
    """ε, which has no default: a clear error when it is missing, else :func:`check_epsilon`."""
    if epsilon is None:
        raise ParameterError(
            "epsilon is required: pass --epsilon (the total ε of the release, e.g. 1)"
        )
    return check_epsilon(epsilon)


def plan_release(
    epsilon: float,
    beta: float,
    max_contributions: int,
    *,
    method: str = "exact",
    noise: str = "discrete-laplace",
) -> DistinctCountPlan:
    """Split ε into the GEM choice and the discrete-Laplace count
    (docs/design/counting.md#mechanism, #discrete-laplace).

    Args:
        epsilon: total budget ε > 0.
        beta: failure probability of the lower bound, in (0, ½).
        max_contributions: ℓ_max ≥ 1, public and chosen without looking at the data.
        method: the curve method, recorded in the plan and the release.
        noise: the count's noise (:data:`NOISES`): ``discrete-laplace`` (exact, the default) or
            ``laplace`` (the paper's continuous noise, not hardened).

    Returns:
        :class:`DistinctCountPlan`.
    """
    epsilon = Budget(epsilon).epsilon  # pure ε-DP: the budget has δ = 0
    beta = check_probability("beta", beta, low=0.0, high=0.5)
    check_int_at_least("max_contributions", max_contributions, 1)
    count = NOISES[check_choice("noise", noise, NOISES)]
    epsilon_select = epsilon * SELECT_FRACTION
    epsilon_count = epsilon - epsilon_select
    plan = DistinctCountPlan(
        method=method,
        epsilon=epsilon,
        beta=beta,
        max_contributions=max_contributions,
        select=GemSelection(epsilon_select, beta, max_contributions),
        count=count(epsilon_count, beta),
    )
    try:  # the largest shift the scores use, ℓ = ℓ_max: finite, or refused before any data
        plan.count.shift(max_contributions)
    except (OverflowError, ZeroDivisionError):
        raise ParameterError(
            f"epsilon {epsilon!r} is too small for ℓ_max = {max_contributions}: the lower "
            f"bound's shift (noise scale ℓ/ε_count) overflows; choose a larger ε (typical "
            f"values 0.1 to 10)"
        ) from None
    return plan
