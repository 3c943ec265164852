"""The plan of ``--max-contributions auto``: a private choice of Δ0, then the algorithm at ĉ.

docs/design/tuning.md. From the public parameters only, before any data is read:

* the choice spends ε_t = share·ε (:class:`~.plan.calibration.DeltaChoice`, pure ε_t-DP);
* the algorithm is planned at (ε_s, δ) once per candidate c ∈ C (its own plan function, with
  Δ0 = c), so the run picks the plan of ĉ and nothing is calibrated after the data is read;
  ε_s is the largest budget with which the choice and the rounds are (ε, δ)-DP by the PLD
  accountant (:mod:`.composition`), at least ε − ε_t;
* the release's steps, which the budget store reserves, are the choice and, for each round, the
  round at whichever candidate is chosen (:class:`~.plan.calibration.AnyCandidate`).

With the PLD certificate (:class:`~.plan.composition.TightComposition`) the release's (ε, δ)
is the certified one, below the sum of its steps. Without it (the PLD bound proves nothing
better, e.g. pure-ε Laplace rounds), ε_s = ε − ε_t and sequential composition gives the sum:
the choice is ε_t-DP and for every ĉ the selection at ĉ is (ε − ε_t, δ)-DP, so the release
(ĉ, items) is (ε, δ)-DP (Dwork & Roth 2014, Thm. 3.16, which allows the second mechanism to
depend on the first's output).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from spark_dp.dp.calibration import Budget
from spark_dp.dp.protocol import Calibration
from spark_dp.errors import ParameterError
from spark_dp.partition_selection.auto.calibration import AnyCandidate, DeltaChoice
from spark_dp.partition_selection.auto.composition import (
    TightComposition,
    certified_delta,
    selection_budget,
)
from spark_dp.partition_selection.auto.scores import CHOICE_LABEL
from spark_dp.partition_selection.params import AUTO
from spark_dp.partition_selection.result import SelectionPlan
from spark_dp.report import Step, StepTotals

if TYPE_CHECKING:
    from spark_dp.partition_selection.params import PartitionSelectionParams

__all__ = ["AutoPlan", "plan_auto"]


@dataclass(frozen=True)
class AutoPlan(StepTotals):
    """The data-free plan of a release whose Δ0 is chosen privately. Its total (ε, δ) is the
    PLD certificate's when there is one, else the choice's plus the selection's
    (:class:`~spark_dp.report.StepTotals`).

    Attributes:
        algorithm: the registry name of the algorithm run at ĉ.
        choice: the GEM choice of ĉ (ε_t).
        plans: the algorithm's plan at each candidate, in grid order, at (ε_s, δ).
        composition: the PLD certificate of the whole release, or ``None`` (basic
            composition: ε_s = ε − ε_t).
    """

    algorithm: str
    choice: DeltaChoice
    plans: tuple[SelectionPlan, ...]
    composition: TightComposition | None = None

    @property
    def epsilon(self) -> float:
        """Total ε: the certificate's, or the steps' sum."""
        if self.composition is not None:
            return self.composition.epsilon
        return StepTotals.epsilon.fget(self)  # type: ignore[attr-defined]

    @property
    def delta(self) -> float:
        """Total δ: the certificate's, or the steps' sum."""
        if self.composition is not None:
            return self.composition.delta
        return StepTotals.delta.fget(self)  # type: ignore[attr-defined]

    def __post_init__(self) -> None:
        if tuple(p.max_contributions for p in self.plans) != self.choice.candidates:
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

    def plan_for(self, max_contributions: int) -> SelectionPlan:
        """The algorithm's plan at the chosen Δ0."""
        for plan in self.plans:
            if plan.max_contributions == max_contributions:
                return plan
        raise ValueError(
            f"{max_contributions} is not a candidate Δ0 of this plan ({self.candidates})"
        )

    def to_report(self) -> list[dict[str, Any]]:
        """One row per step: the choice, then each round at any candidate."""
        return [s.to_report() for s in self.steps]


def plan_auto(
    params: PartitionSelectionParams,
    planner: Callable[[PartitionSelectionParams], SelectionPlan],
) -> AutoPlan:
    """ε_t = share·ε on the choice; the algorithm planned at (ε_s, δ) for every candidate, ε_s
    the largest budget the PLD certificate allows (:func:`~.plan.composition.selection_budget`),
    else ε − ε_t.

    Args:
        params: checked parameters with ``max_contributions='auto'``.
        planner: the algorithm's plan function (its registry entry's ``plan``).

    Raises:
        ParameterError: parameters the algorithm cannot use at some candidate.
    """
    if not params.auto:
        raise ParameterError("plan_auto needs max_contributions='auto'")
    epsilon_choice = params.epsilon * params.tuning_share
    selection, composition = selection_budget(params, planner)
    if composition is not None:
        plan = _plan_at(params, planner, epsilon_choice, selection, composition)
        if certified_delta(plan.steps, params.epsilon, params.delta) <= params.delta:
            return plan
    basic = Budget(params.epsilon - epsilon_choice, params.delta)
    return _plan_at(params, planner, epsilon_choice, basic, None)


def _plan_at(
    params: PartitionSelectionParams,
    planner: Callable[[PartitionSelectionParams], SelectionPlan],
    epsilon_choice: float,
    selection: Budget,
    composition: TightComposition | None,
) -> AutoPlan:
    plans = tuple(
        planner(replace(params, epsilon=selection.epsilon, max_contributions=c))
        for c in params.tuning_candidates
    )
    choice = DeltaChoice.for_budget(epsilon_choice, selection, params.tuning_candidates)
    return AutoPlan(plans[0].algorithm, choice, plans, composition)
