"""The plan of ``--max-contributions auto``: a private choice of Δ0, then the algorithm at ĉ.

docs/design/tuning.md. From the public parameters only, before any data is read:

* the choice spends ε_t = share·ε (:class:`~.tuning_calibration.DeltaChoice`, pure ε_t-DP);
* the algorithm is planned at (ε − ε_t, δ) once per candidate c ∈ C (its own plan function,
  with Δ0 = c), so the run picks the plan of ĉ and nothing is calibrated after the data is read;
* the release's steps, which the budget store reserves, are the choice and, for each round, the
  round at whichever candidate is chosen (:class:`~.tuning_calibration.AnyCandidate`): their
  (ε, δ) add up to the release's (ε, δ) exactly, whatever ĉ is.

Sequential composition: the choice is ε_t-DP, and for every ĉ the selection at ĉ is
(ε − ε_t, δ)-DP, so the release (ĉ, items) is (ε, δ)-DP (Dwork & Roth 2014, Thm. 3.16, which
allows the second mechanism to depend on the first's output).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from spark_dp.calibration import Budget
from spark_dp.calibration_protocol import Calibration
from spark_dp.errors import ParameterError
from spark_dp.partition_selection.params import AUTO
from spark_dp.partition_selection.result import SelectionPlan
from spark_dp.partition_selection.tuning import CHOICE_LABEL
from spark_dp.partition_selection.tuning_calibration import AnyCandidate, DeltaChoice
from spark_dp.report import Step, StepTotals

if TYPE_CHECKING:
    from spark_dp.partition_selection.params import PartitionSelectionParams

__all__ = ["AutoPlan", "plan_auto"]


@dataclass(frozen=True)
class AutoPlan(StepTotals):
    """The data-free plan of a release whose Δ0 is chosen privately; its total (ε, δ) is the
    choice's plus the selection's (:class:`~spark_dp.report.StepTotals`).

    Attributes:
        algorithm: the registry name of the algorithm run at ĉ.
        choice: the GEM choice of ĉ (ε_t).
        plans: the algorithm's plan at each candidate, in grid order, at (ε − ε_t, δ).
    """

    algorithm: str
    choice: DeltaChoice
    plans: tuple[SelectionPlan, ...]

    def __post_init__(self) -> None:
        if tuple(p.max_items for p in self.plans) != self.choice.candidates:
            raise ValueError("an auto plan holds one plan per candidate Δ0, in grid order")

    @property
    def candidates(self) -> tuple[int, ...]:
        """The grid C."""
        return self.choice.candidates

    @property
    def steps(self) -> tuple[Step[Calibration], ...]:
        """The choice, then each round at whichever candidate is chosen."""
        rounds = tuple(
            Step(label.label, AnyCandidate(tuple(p.steps[k].calibration for p in self.plans)))
            for k, label in enumerate(self.plans[0].steps)
        )
        return (Step(CHOICE_LABEL, self.choice), *rounds)

    @property
    def options(self) -> Mapping[str, Any]:
        """Public options that shape the run: the algorithm's, and the choice's grid."""
        return {
            **self.plans[0].options,
            "max_contributions": AUTO,
            "tuning_candidates": self.candidates,
        }

    def plan_for(self, max_items: int) -> SelectionPlan:
        """The algorithm's plan at the chosen Δ0."""
        for plan in self.plans:
            if plan.max_items == max_items:
                return plan
        raise ValueError(f"{max_items} is not a candidate Δ0 of this plan ({self.candidates})")

    def to_report(self) -> list[dict[str, Any]]:
        """One row per step: the choice, then each round at any candidate."""
        return [s.to_report() for s in self.steps]


def plan_auto(
    params: PartitionSelectionParams,
    planner: Callable[[PartitionSelectionParams], SelectionPlan],
) -> AutoPlan:
    """ε_t = share·ε on the choice; the algorithm planned at (ε − ε_t, δ) for every candidate.

    Args:
        params: checked parameters with ``max_contributions='auto'``.
        planner: the algorithm's plan function (its registry entry's ``plan``).

    Raises:
        ParameterError: parameters the algorithm cannot use at some candidate.
    """
    if not params.auto:
        raise ParameterError("plan_auto needs max_contributions='auto'")
    epsilon_choice = params.epsilon * params.tuning_share
    selection = Budget(params.epsilon - epsilon_choice, params.delta)
    plans = tuple(
        planner(replace(params, epsilon=selection.epsilon, max_contributions=c))
        for c in params.tuning_candidates
    )
    choice = DeltaChoice.for_budget(epsilon_choice, selection, params.tuning_candidates)
    return AutoPlan(plans[0].algorithm, choice, plans)
