"""The guarantee an audited mechanism claims, and its calibration's statement checked against it.

:class:`Claim` holds the claimed (ε, δ) and the proof's δ shares (read by
:mod:`.targets` from the calibration objects); :func:`step_problems` checks, before any run,
that what the steps state fits the claim. Both are re-exported by :mod:`.targets`; they live
here so that the targets of :mod:`.choice` can use them without an import cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spark_dp.report import Step

__all__ = ["Claim", "plan_problems", "step_problems"]


@dataclass(frozen=True)
class Claim:
    """The guarantee a mechanism claims, as the audit tests it.

    Attributes:
        epsilon: the claimed total ε: the parameters', never the calibration's sum.
        delta: the claimed total δ (the parameters').
        delta_novel: the proof's share of δ for an event on novel items only (the rounds'
            ``delta_threshold`` summed; None for the distinct count, which has no such event).
        delta_event: the proof's share for an event on shared items only (the rounds'
            ``delta_noise`` summed).
    """

    epsilon: float
    delta: float
    delta_novel: float | None
    delta_event: float

    def delta_for(self, kind: str) -> float:
        """The δ an event of ``kind`` (``novel``, ``shared``, ``mixed``) is held to:
        min(claimed δ, the proof's share for it)."""
        novel = self.delta_novel or 0.0
        share = {"novel": novel, "shared": self.delta_event}.get(kind, novel + self.delta_event)
        return min(self.delta, share)


def step_problems(steps: Sequence[Step[Any]], epsilon: float, delta: float) -> list[str]:
    """What the calibration states against the claim, before any run: the steps' ε and δ
    must add up to at most the claimed (ε, δ), and neither share a round states (its noise's,
    its threshold's) may exceed the round's δ. A mechanism whose own statement exceeds its
    claim fails without a run. (The shares are not always a split of δ: truncated-geometric
    selection states δ' per item for its noise and the whole δ for its threshold.)"""
    tol = 1.0 + 1e-9
    problems = []
    total_eps = sum(s.epsilon for s in steps)
    total_delta = sum(s.delta for s in steps)
    if total_eps > epsilon * tol:
        problems.append(f"the steps spend ε = {total_eps:g}, more than the claimed {epsilon:g}")
    if total_delta > delta * tol:
        problems.append(f"the steps spend δ = {total_delta:g}, more than the claimed {delta:g}")
    for s in steps:
        cal = s.calibration
        for name in ("delta_noise", "delta_threshold"):
            share = getattr(cal, name, 0.0)
            if share > s.delta * tol:
                problems.append(f"{s.label}: {name} = {share:g} > its δ {s.delta:g}")
    return problems


def plan_problems(plan: Any, epsilon: float, delta: float) -> list[str]:
    """:func:`step_problems` for a plan, except that a plan with a tight certificate
    (``composition``: ``--max-contributions auto``) is held to its certificate instead of the
    sum of its steps: the PLD bound of all its steps, computed again here, must be at most the
    claimed δ at the claimed ε, and each step's own shares still within its δ."""
    composition = getattr(plan, "composition", None)
    if composition is None:
        return step_problems(plan.steps, epsilon, delta)
    from spark_dp.partition_selection.auto.composition import certified_delta

    tol = 1.0 + 1e-9
    problems = step_problems(plan.steps, float("inf"), float("inf"))
    if composition.epsilon > epsilon * tol:
        problems.append(f"the certificate is for ε = {composition.epsilon:g} > {epsilon:g}")
    found = certified_delta(plan.steps, epsilon, delta)
    if found > delta * tol:
        problems.append(f"the PLD bound of the steps is δ = {found:g} at ε = {epsilon:g}, "
                        f"more than the claimed {delta:g}")  # fmt: skip
    return problems
