"""The audit's library functions: :func:`audit` one mechanism (or a broken variant of the
self-test package, :func:`variants`); :mod:`.selftest` runs them all."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

from spark_dp.audit.runner import AuditResult, audit_session, run_audit
from spark_dp.audit.statistics import Confidence
from spark_dp.audit.system import SYSTEM
from spark_dp.audit.targets import (
    AUTO_CHOICE,
    DISTINCT_COUNT,
    MECHANISMS,
    Settings,
    Target,
    build_target,
)
from spark_dp.errors import ConfigError, ParameterError
from spark_dp.randomness import Randomness

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "AUDITED",
    "BROKEN_PREFIX",
    "DEFAULT_RUNS",
    "PACKAGE",
    "audit",
    "default_runs",
    "variants",
]

AUDITED: tuple[str, ...] = (*MECHANISMS, *SYSTEM)
"""The real mechanisms and system checks: what spark_dp audits on its own. :func:`audit` also
accepts the broken variants of the self-test package when it is installed."""

PACKAGE = "spark_dp_selftest"
"""The package of the broken variants (``selftest/`` of a clone; not part of spark_dp)."""

BROKEN_PREFIX = "broken-"
"""Every broken variant's name starts with it."""

SYSTEM_RUNS = 2000
"""Runs per world of the key-binding audit (its broken variant's effect is large)."""

DEFAULT_RUNS = 20_000
"""Runs per dataset of a selection audit's main probes (copies in one Spark job)."""

COUNT_RUNS = 3000
"""Runs per dataset of a distinct-count or Δ0-choice audit (driver-side releases, about 1 ms
each)."""


def variants() -> ModuleType:
    """The self-test package of broken variants (``BROKEN``, ``SYSTEM_BROKEN``,
    ``UNDERPOWERED``, ``build_broken``; docs/privacy/audit.md#self-test).

    Raises:
        ConfigError: it is not installed (one line: how to install it).
    """
    try:
        return importlib.import_module(PACKAGE)
    except ModuleNotFoundError as exc:
        if exc.name != PACKAGE:
            raise
        raise ConfigError(
            "the self-test's broken variants are not installed (they are not part of "
            "spark_dp): from a clone, run `make setup` or `pip install -e selftest`"
        ) from None


def _unknown(name: str) -> ParameterError:
    return ParameterError(
        f"unknown mechanism {name!r} for the audit; choose one of: {', '.join(AUDITED)} "
        f"(or a {BROKEN_PREFIX}* variant of the self-test package)"
    )


def _variants_for(name: str) -> ModuleType:
    """The self-test package, for a name that is not spark_dp's own: a broken variant's name
    needs it, any other name is unknown (refused without looking for the package)."""
    if not name.startswith(BROKEN_PREFIX):
        raise _unknown(name)
    return variants()


def default_runs(name: str) -> int:
    """The default number of runs per dataset for mechanism (or broken variant) ``name``."""
    if name in SYSTEM:
        return SYSTEM_RUNS
    base = name
    if name not in MECHANISMS:
        v = _variants_for(name)
        if name in v.SYSTEM_BROKEN:
            return SYSTEM_RUNS
        if name not in v.BROKEN:
            raise _unknown(name)
        base = v.BROKEN[name].base
    return COUNT_RUNS if base in (DISTINCT_COUNT, AUTO_CHOICE) else DEFAULT_RUNS


def _target(name: str, settings: Settings) -> Target:
    if name in MECHANISMS:
        return build_target(name, settings)
    v = _variants_for(name)
    if name not in v.BROKEN:
        raise _unknown(name)
    target: Target = v.build_broken(name, settings)
    return target


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
        mechanism: a name of :data:`AUDITED`, or of a broken variant (:func:`variants`).
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

    Raises:
        ParameterError: an unknown name.
        ConfigError: a broken variant's name, and the self-test package is not installed.
    """
    system = SYSTEM.get(mechanism)
    if system is None and mechanism not in MECHANISMS:
        system = _variants_for(mechanism).SYSTEM_BROKEN.get(mechanism)
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
