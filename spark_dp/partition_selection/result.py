"""What a selection plans and what it returns.

* :class:`SelectionPlan`: everything an algorithm calibrates from its public parameters, before
  any data is read (one :class:`~spark_dp.report.Step` per round, each holding the calibration
  object that spends its (ε, δ)); ``spark-dp calibrate`` prints it.
* :class:`RoundResult` and :class:`Selection`: the released items and the public account of
  each round; :meth:`Selection.fill_report` writes it into a privacy report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from spark_dp.caching import CacheScope, HoldsCache
from spark_dp.dp.protocol import RoundCalibration
from spark_dp.report import Step, StepTotals

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_dp.partition_selection.auto.scores import Tuning
    from spark_dp.report import PrivacyReport

__all__ = ["RoundResult", "Selection", "SelectionPlan"]

C = TypeVar("C")


@dataclass(frozen=True)
class SelectionPlan(StepTotals):
    """The data-free calibration of one partition-selection run (its total (ε, δ): the sum over
    the rounds, :class:`~spark_dp.report.StepTotals`).

    Attributes:
        algorithm: registry name (``mad2r``, ...).
        steps: one step per round, in order; each step's calibration states its sensitivity,
            its constants, its (ε, δ) and the per-user cap Δ0 it is calibrated for (the one
            stored copy of Δ0: :attr:`max_contributions` reads it).
        weighting: one sentence naming the weighting.
        reference: the paper sections and design note the algorithm follows.
        options: public algorithm options that shape the run (split, recap_each_round, ...).
    """

    algorithm: str
    steps: tuple[Step[RoundCalibration], ...]
    weighting: str
    reference: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        caps = {s.calibration.max_contributions for s in self.steps}
        if len(caps) != 1:
            raise ValueError(f"{self.algorithm}: every round must be calibrated for one cap Δ0")

    @property
    def max_contributions(self) -> int:
        """Δ0, the per-user cap the run applies (k of the classic strategies): the one every
        round's calibration is built for."""
        return self.steps[0].calibration.max_contributions

    def calibration(self, index: int, kind: type[C]) -> C:
        """The calibration of round ``index`` (0-based), checked to be a ``kind``."""
        calibration = self.steps[index].calibration
        if not isinstance(calibration, kind):
            raise TypeError(
                f"{self.algorithm}: round {index + 1} is calibrated by "
                f"{type(calibration).__name__}, not {kind.__name__}"
            )
        return calibration

    def mechanism(self) -> dict[str, Any]:
        """Public description of the algorithm (the rounds describe their own noise)."""
        return {
            "algorithm": self.algorithm,
            "weighting": self.weighting,
            **{k: list(v) if isinstance(v, tuple) else v for k, v in self.options.items()},
            "reference": self.reference,
        }

    def to_report(self) -> list[dict[str, Any]]:
        """One row per round: label, (ε, δ) and the calibration's constants."""
        return [s.to_report() for s in self.steps]


@dataclass
class RoundResult:
    """One round that ran.

    Attributes:
        step: the planned step (label and calibration) the round spent.
        items: (item), the round's selected items.
        output_items: number of selected items (released, so public).
    """

    step: Step[RoundCalibration]
    items: DataFrame
    output_items: int

    @property
    def label(self) -> str:
        """The round's label (``round 1``, ...)."""
        return self.step.label

    @property
    def epsilon(self) -> float:
        """ε spent by the round."""
        return self.step.epsilon

    @property
    def delta(self) -> float:
        """δ spent by the round."""
        return self.step.delta

    @property
    def calibration(self) -> dict[str, Any]:
        """The round's public constants (σ, ρ, τ, α, thresholds, ...)."""
        return self.step.calibration.to_report()

    def to_report(self) -> dict[str, Any]:
        """Public description of the round (no private statistic)."""
        return {**self.step.to_report(), "output_items": self.output_items}


@dataclass
class Selection(HoldsCache):
    """The result of a private partition selection.

    Its rounds' items are the only tables the run leaves cached (they are computed once, then
    written or shown from the cache); use the selection as a context manager, or call
    :meth:`release`, to unpersist them: after that the session holds nothing the run persisted.
    Reading the items after that recomputes them with the same values (the noise is keyed).

    Attributes:
        plan: the calibration the run used.
        items: (item), the released items (the disjoint union of the rounds' items).
        rounds: one entry per round, in order.
        notes: plain sentences for the privacy report.
        cache: what the run cached.
        tuning: with ``max_contributions='auto'``, the private choice of Δ0 that ran first
            (its budget is part of the release's; :attr:`plan` is the plan at the chosen Δ0).
    """

    plan: SelectionPlan
    items: DataFrame
    rounds: list[RoundResult]
    notes: list[str] = field(default_factory=list)
    cache: CacheScope = field(default_factory=CacheScope, repr=False)
    tuning: Tuning | None = None

    @property
    def algorithm(self) -> str:
        """The algorithm's registry name."""
        return self.plan.algorithm

    @property
    def mechanism(self) -> dict[str, Any]:
        """Public description of the algorithm."""
        return self.plan.mechanism()

    @property
    def output_items(self) -> int:
        """Number of released items (the rounds select disjoint items)."""
        return sum(r.output_items for r in self.rounds)

    @property
    def max_contributions(self) -> int:
        """The Δ0 the run capped at (the chosen one with ``auto``; released either way)."""
        return self.plan.max_contributions

    @property
    def epsilon(self) -> float:
        """Total ε: the PLD certificate's with ``auto`` when there is one, else basic
        composition over the choice of Δ0, if any, and the rounds."""
        if self.tuning is not None and self.tuning.composition is not None:
            return self.tuning.composition.epsilon
        return sum(s.epsilon for s in self._steps())

    @property
    def delta(self) -> float:
        """Total δ, as :attr:`epsilon`."""
        if self.tuning is not None and self.tuning.composition is not None:
            return self.tuning.composition.delta
        return sum(s.delta for s in self._steps())

    def _steps(self) -> list[Step[Any]]:
        first = [] if self.tuning is None else [self.tuning.step]
        return first + [r.step for r in self.rounds]

    def report_info(self) -> dict[str, Any]:
        """Public account: algorithm, per-round calibration and budget, released item counts.
        Never weights, counts per item, or the union."""
        out = {
            "algorithm": self.algorithm,
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "rounds": [r.to_report() for r in self.rounds],
            "output_items": self.output_items,
            "notes": list(self.notes),
        }
        if self.tuning is not None:
            out["max_contributions_choice"] = self.tuning.to_report()
        return out

    def fill_report(self, report: PrivacyReport) -> None:
        """Book the choice of Δ0 (with ``auto``), every round's budget and constants, the
        mechanism and the released count."""
        report.algorithm = self.algorithm
        report.mechanism = self.mechanism
        if self.tuning is not None:
            report.spend_step(self.tuning.step, chosen_max_contributions=self.max_contributions)
            report.parameters["max_contributions_chosen"] = self.max_contributions
            candidates = list(self.tuning.choice.candidates)
            report.mechanism["max_contributions"] = (
                f"chosen privately: {self.max_contributions} among {candidates}"
                " (docs/design/tuning.md)"
            )
        for r in self.rounds:
            report.spend_step(r.step, output_items=r.output_items)
        if self.tuning is not None and self.tuning.composition is not None:
            c = self.tuning.composition.to_report()
            report.certify(c.pop("epsilon"), c.pop("delta"), **c)
        report.outputs["output_items"] = self.output_items
        for note in self.notes:
            report.note(note)
        report.note(
            f"{self.algorithm}: {len(self.rounds)} round(s); only the selected items were "
            "written (their number: outputs.output_items)."
        )
