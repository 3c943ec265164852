"""The audit's library functions: :func:`audit` one mechanism, :func:`self_test` them all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spark_dp.audit.broken import BROKEN, build_broken
from spark_dp.audit.runner import AuditResult, run_audit
from spark_dp.audit.statistics import Confidence
from spark_dp.audit.targets import DISTINCT_COUNT, MECHANISMS, Settings, Target, build_target
from spark_dp.errors import ParameterError
from spark_dp.randomness import Randomness

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["AUDITED", "DEFAULT_RUNS", "SelfTestResult", "audit", "default_runs", "self_test"]

AUDITED: tuple[str, ...] = (*MECHANISMS, *BROKEN)
"""Every name :func:`audit` accepts: the real mechanisms, then the broken variants."""

DEFAULT_RUNS = 2000
"""Runs per dataset of a selection audit (copies in one Spark job; see ``--fast`` power)."""

COUNT_RUNS = 3000
"""Runs per dataset of a distinct-count audit (driver-side releases, about 2 ms each)."""


def default_runs(name: str) -> int:
    """The default number of runs per dataset for mechanism ``name``."""
    base = BROKEN[name].base if name in BROKEN else name
    return COUNT_RUNS if base == DISTINCT_COUNT else DEFAULT_RUNS


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
            family's defaults. ``parameters`` override either.
        runs: runs per dataset (default :func:`default_runs`).
        alpha: family-wise error: a correct mechanism fails with probability at most α.
        seed: test-only key seed (reproducible audit); by default a fresh key from the OS.
        spark: the session for Spark mechanisms (default: the active one or a local one).
        **parameters: mechanism parameters (``epsilon``, ``delta``, ``max_contributions``,
            ``split``, ``beta``, ...).

    Returns:
        the :class:`AuditResult` (``passed``, ``to_dict()``).
    """
    target = _target(mechanism, Settings(fast=fast, overrides=parameters))
    return run_audit(
        target,
        runs=runs or default_runs(mechanism),
        randomness=Randomness.create(seed),
        confidence=Confidence(alpha),
        spark=spark,
    )


@dataclass
class SelfTestResult:
    """Every real mechanism must pass its fast audit and every broken variant must fail it."""

    results: list[AuditResult]

    @property
    def unexpected(self) -> list[AuditResult]:
        """Real mechanisms that failed and broken variants that passed."""
        return [r for r in self.results if r.passed == (r.change is not None)]

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
    """Fast audits of ``names`` (default: every real mechanism and every broken variant)."""
    chosen = list(names or AUDITED)
    results = [audit(n, fast=True, alpha=alpha, seed=seed, spark=spark) for n in chosen]
    return SelfTestResult(results)
