"""The audit's library functions: :func:`audit` one mechanism, :func:`self_test` them all."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spark_dp.audit.broken import BROKEN, UNDERPOWERED, build_broken
from spark_dp.audit.runner import AuditResult, audit_session, run_audit
from spark_dp.audit.statistics import Confidence
from spark_dp.audit.system import SYSTEM, SYSTEM_BROKEN
from spark_dp.audit.targets import (
    AUTO_CHOICE,
    DISTINCT_COUNT,
    MECHANISMS,
    Settings,
    Target,
    build_target,
)
from spark_dp.errors import ParameterError
from spark_dp.randomness import Randomness

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "AUDITED",
    "DEFAULT_RUNS",
    "SelfTestResult",
    "audit",
    "default_runs",
    "self_test",
    "self_test_plan",
]

AUDITED: tuple[str, ...] = (*MECHANISMS, *SYSTEM, *BROKEN, *SYSTEM_BROKEN)
"""Every name :func:`audit` accepts: the real mechanisms and system checks, then the broken
variants."""

SYSTEM_RUNS = 2000
"""Runs per world of the key-binding audit (its broken variant's effect is large)."""

DEFAULT_RUNS = 20_000
"""Runs per dataset of a selection audit's main probes (copies in one Spark job)."""

COUNT_RUNS = 3000
"""Runs per dataset of a distinct-count or Δ0-choice audit (driver-side releases, about 1 ms
each)."""


def default_runs(name: str) -> int:
    """The default number of runs per dataset for mechanism ``name``."""
    if name in SYSTEM or name in SYSTEM_BROKEN:
        return SYSTEM_RUNS
    base = BROKEN[name].base if name in BROKEN else name
    return COUNT_RUNS if base in (DISTINCT_COUNT, AUTO_CHOICE) else DEFAULT_RUNS


def _target(name: str, settings: Settings) -> Target:
    if name in BROKEN:
        return build_broken(name, settings)
    if name in MECHANISMS:
        return build_target(name, settings)
    raise ParameterError(
        f"unknown mechanism {name!r} for the audit; choose one of: {', '.join(AUDITED)}"
    )


def audit(
    mechanism: str,
    *,
    fast: bool = True,
    runs: int | None = None,
    alpha: float = 1e-3,
    seed: int | None = None,
    spark: SparkSession | None = None,
    **parameters: Any,
) -> AuditResult:
    """Audit one mechanism (or broken variant) through its real code path.

    Args:
        mechanism: a name of :data:`AUDITED`.
        fast: start from the ``--fast`` parameters (large δ, tiny data); otherwise from the
            family's defaults. A broken variant's own parameters come next, then
            ``parameters``.
        runs: runs per dataset (default :func:`default_runs`).
        alpha: family-wise error: a correct mechanism fails with probability at most α.
        seed: test-only key seed (reproducible audit); by default a fresh key from the OS.
        spark: the session for Spark mechanisms (default: the active one or a local one).
        **parameters: mechanism parameters (``epsilon``, ``delta``, ``max_contributions``,
            ``split``, ``beta``, ...).

    Returns:
        the :class:`AuditResult` (``passed``, ``to_dict()``).
    """
    system = {**SYSTEM, **SYSTEM_BROKEN}.get(mechanism)
    if system is not None:  # the checks of spark_dp.audit.system take no parameters
        runs = runs or default_runs(mechanism)
        return system(runs=runs, seed=seed, alpha=alpha, spark=audit_session(spark))
    target = _target(mechanism, Settings(fast=fast, overrides=parameters))
    return run_audit(
        target,
        runs=runs or default_runs(mechanism),
        randomness=Randomness.create(seed),
        confidence=Confidence(alpha),
        spark=spark,
    )


@dataclass(frozen=True)
class Planned:
    """One audit of the self-test: a name, the parameters it runs at, the verdict expected."""

    name: str
    parameters: Mapping[str, Any]

    @property
    def broken(self) -> bool:
        """A broken variant (must fail)."""
        return self.name in BROKEN or self.name in SYSTEM_BROKEN


def self_test_plan(names: Sequence[str] | None = None) -> list[Planned]:
    """The audits of the self-test: every real mechanism at the fast parameters and at the
    parameters of each broken variant that moves (so a variant's failure is compared with the
    real mechanism at the same place), then every broken variant."""
    chosen = list(names or AUDITED)
    real = [Planned(n, {}) for n in chosen if not Planned(n, {}).broken]
    moved = {
        (v.base, tuple(sorted(v.parameters.items())))
        for n in chosen
        if n in BROKEN and (v := BROKEN[n]).parameters
    }
    real += [Planned(base, dict(params)) for base, params in sorted(moved, key=str)]
    return real + [p for n in chosen if (p := Planned(n, {})).broken]


@dataclass
class SelfTestResult:
    """Every real mechanism must pass its fast audit and every broken variant must fail it
    (but the documented blind spots of :data:`~.broken.UNDERPOWERED`, which may pass)."""

    results: list[AuditResult]

    @property
    def unexpected(self) -> list[AuditResult]:
        """Real mechanisms that failed and broken variants that passed (blind spots aside)."""
        return [
            r
            for r in self.results
            if r.passed == (r.change is not None) and not (r.passed and r.mechanism in UNDERPOWERED)
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
    """Fast audits of :func:`self_test_plan` (default: every real mechanism and variant)."""
    results = [
        audit(p.name, fast=True, alpha=alpha, seed=seed, spark=spark, **p.parameters)
        for p in self_test_plan(names)
    ]
    return SelfTestResult(results)
