"""The self-test: every real mechanism must pass its fast audit, every broken variant fail it.

The broken variants are not in spark_dp: they live in the ``spark_dp_selftest`` package
(``selftest/`` of a clone, installed by ``make setup``), which
:func:`~spark_dp.audit.api.variants` loads when it is installed, so a user install holds no
deliberately broken mechanism (docs/privacy/audit.md#self-test).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spark_dp.audit.api import AUDITED, BROKEN_PREFIX, audit, variants
from spark_dp.errors import ParameterError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from spark_dp.audit.runner import AuditResult

__all__ = ["Planned", "SelfTestResult", "self_test", "self_test_plan"]


@dataclass(frozen=True)
class Planned:
    """One audit of the self-test: a name, the parameters it runs at, the verdict expected."""

    name: str
    parameters: Mapping[str, Any]

    @property
    def broken(self) -> bool:
        """A broken variant (must fail)."""
        return self.name.startswith(BROKEN_PREFIX)


def self_test_plan(names: Sequence[str] | None = None) -> list[Planned]:
    """The audits of the self-test: every real mechanism at the fast parameters and at the
    parameters of each broken variant that moves (so a variant's failure is compared with the
    real mechanism at the same place), then every broken variant.

    Raises:
        ConfigError: the broken variants are not installed.
        ParameterError: a name that is neither a mechanism nor a variant.
    """
    v = variants()
    every = (*AUDITED, *v.BROKEN, *v.SYSTEM_BROKEN)
    chosen = list(names or every)
    unknown = sorted(set(chosen) - set(every))
    if unknown:
        raise ParameterError(f"--only: unknown names {unknown}; choose from: {', '.join(every)}")
    real = [Planned(n, {}) for n in chosen if not Planned(n, {}).broken]
    moved = {
        (b.base, tuple(sorted(b.parameters.items())))
        for n in chosen
        if n in v.BROKEN and (b := v.BROKEN[n]).parameters
    }
    real += [Planned(base, dict(params)) for base, params in sorted(moved, key=str)]
    return real + [p for n in chosen if (p := Planned(n, {})).broken]


@dataclass
class SelfTestResult:
    """Every real mechanism must pass its fast audit and every broken variant must fail it
    (but the documented blind spots of the variants' ``UNDERPOWERED``, which may pass)."""

    results: list[AuditResult]
    underpowered: frozenset[str] = frozenset()

    @property
    def unexpected(self) -> list[AuditResult]:
        """Real mechanisms that failed and broken variants that passed (blind spots aside)."""
        return [
            r
            for r in self.results
            if r.passed == (r.change is not None)
            and not (r.passed and r.mechanism in self.underpowered)
        ]

    @property
    def ok(self) -> bool:
        """True when every verdict is the expected one."""
        return not self.unexpected


def self_test(
    names: Sequence[str] | None = None,
    *,
    alpha: float = 1e-3,
    seed: int | None = None,
    spark: SparkSession | None = None,
) -> SelfTestResult:
    """Fast audits of :func:`self_test_plan` (default: every real mechanism and variant).

    Raises:
        ConfigError: the broken variants are not installed (before any audit runs).
    """
    plan = self_test_plan(names)
    results = [
        audit(p.name, fast=True, alpha=alpha, seed=seed, spark=spark, **p.parameters) for p in plan
    ]
    return SelfTestResult(results, frozenset(variants().UNDERPOWERED))
