"""What a selection returns: the released items and a public account of each round."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame

__all__ = ["RoundResult", "Selection"]


@dataclass
class RoundResult:
    """One mechanism run (a weight-and-threshold round or a count thresholding).

    Attributes:
        label: e.g. ``"round 1"``.
        epsilon: ε spent by the round.
        delta: δ spent by the round.
        calibration: public constants of the round (σ, ρ, τ, α, thresholds, ...).
        items: (item), the round's selected items, materialized.
        output_items: number of selected items (released, so public).
    """

    label: str
    epsilon: float
    delta: float
    calibration: dict[str, Any]
    items: DataFrame
    output_items: int

    @classmethod
    def counted(
        cls,
        label: str,
        epsilon: float,
        delta: float,
        calibration: dict[str, Any],
        items: DataFrame,
    ) -> RoundResult:
        """A round whose output count is read from its (materialized) ``items``."""
        return cls(label, float(epsilon), float(delta), calibration, items, items.count())

    def to_report(self) -> dict[str, Any]:
        """Public description of the round (no private statistic)."""
        return {
            "label": self.label,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "output_items": self.output_items,
            **self.calibration,
        }


@dataclass
class Selection:
    """The result of a private partition selection.

    Attributes:
        algorithm: algorithm name (``mad2r``, ...).
        items: (item), the released items (the union of the rounds' items), materialized.
        rounds: one entry per mechanism run, in order.
        mechanism: public description of the weighting and its sensitivity.
        notes: plain sentences for the privacy report.
    """

    algorithm: str
    items: DataFrame
    rounds: list[RoundResult]
    mechanism: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def output_items(self) -> int:
        """Number of released items (the rounds select disjoint items)."""
        return sum(r.output_items for r in self.rounds)

    @property
    def epsilon(self) -> float:
        """Total ε (basic composition over the rounds)."""
        return sum(r.epsilon for r in self.rounds)

    @property
    def delta(self) -> float:
        """Total δ (basic composition over the rounds)."""
        return sum(r.delta for r in self.rounds)

    def report_info(self) -> dict[str, Any]:
        """Public account for the privacy report: algorithm, per-round calibration and budget,
        released item counts. Never weights, counts per item, or the union."""
        return {
            "algorithm": self.algorithm,
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "rounds": [r.to_report() for r in self.rounds],
            "output_items": self.output_items,
            "notes": list(self.notes),
        }
