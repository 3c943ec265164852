"""The system-level broken variants: a key reused on neighbouring data, and an accountant that
composes a Gaussian step as if it were pure ε.

Each passes :mod:`spark_dp.audit.system`'s real audit the one part it breaks (the audit's
``keys`` or ``accounted`` argument) and names the result; the audit must fail both
(docs/privacy/audit.md#self-test).
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from spark_dp.audit.runner import AuditResult
from spark_dp.audit.system import accountant_audit, key_binding_audit, separate_keys
from spark_dp.dp.protocol import pure_dp_event
from spark_dp.partition_selection.calibration import WeightAndThreshold
from spark_dp.partition_selection.result import SelectionPlan
from spark_dp.randomness import Randomness, ReleaseKey
from spark_dp.report import Step

if TYPE_CHECKING:
    from dp_accounting import DpEvent
    from pyspark.sql import SparkSession

__all__ = ["SYSTEM_BROKEN", "PureGaussianRound"]


def one_id(material: ReleaseKey) -> list[Randomness]:
    """Both releases bound to one id: the same noise on the same item names."""
    key = separate_keys(material)[0].bind("one id for every release")
    return [key, key]


class PureGaussianRound(WeightAndThreshold):
    """A Gaussian round that describes its noise to the accountant as a pure-ε step."""

    def dp_event(self) -> DpEvent:
        """The randomized-response pair of ε: what an ε-DP step is, a Gaussian one is not."""
        return pure_dp_event(self.epsilon)


def as_pure(plan: SelectionPlan) -> SelectionPlan:
    """``plan`` with every Gaussian round described to the accountant as pure ε."""
    cals = (plan.calibration(k, WeightAndThreshold) for k in range(len(plan.steps)))
    steps = tuple(
        Step(s.label, PureGaussianRound(**asdict(c))) for s, c in zip(plan.steps, cals, strict=True)
    )
    return replace(plan, steps=steps)


def _key_reuse(*, runs: int, seed: int | None, alpha: float, spark: SparkSession) -> AuditResult:
    result = key_binding_audit(runs=runs, seed=seed, alpha=alpha, spark=spark, keys=one_id)
    change = "both releases bound to one id (the same noise)"
    return replace(result, mechanism="broken-key-reuse", change=change)


def _pure_accountant(**_: Any) -> AuditResult:
    result = accountant_audit(accounted=as_pure)
    change = "a Gaussian step composed as a pure-ε step"
    return replace(result, mechanism="broken-accountant-pure-gaussian", change=change)


SYSTEM_BROKEN = {
    "broken-key-reuse": _key_reuse,
    "broken-accountant-pure-gaussian": _pure_accountant,
}
"""The system checks' broken variants (name → runner, as :data:`spark_dp.audit.system.SYSTEM`)."""
