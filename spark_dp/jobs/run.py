"""The state of one job run, carried from phase to phase (see :mod:`spark_dp.jobs.runner`)."""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass, field
from typing import Any

from spark_dp.io.staging import Staging
from spark_dp.jobs.config_source import ConfigSource
from spark_dp.jobs.paths import PathPlan
from spark_dp.jobs.spec import JobSpec
from spark_dp.randomness import Randomness
from spark_dp.report import PrivacyReport

__all__ = ["Run", "report_path"]


def report_path(args: argparse.Namespace) -> str | None:
    """``--report``, else ``<output>.report.json``, else ``None`` (the report goes to stdout)."""
    if args.report is not None:
        return str(args.report)
    out = getattr(args, "output", None)
    return f"{str(out).rstrip('/')}.report.json" if out else None


@dataclass
class Run:
    """The state one run carries from phase to phase."""

    spec: JobSpec
    args: argparse.Namespace
    log: logging.Logger
    file_conf: dict[str, Any] = field(default_factory=dict)
    spark_conf: dict[str, str] = field(default_factory=dict)
    config: ConfigSource | None = None
    params: Any = None
    plan: PathPlan | None = None
    randomness: Randomness | None = None
    spark: Any = None
    created_session: bool = False
    staging: Staging | None = None
    report: PrivacyReport | None = None
    committed: bool = False
    failed: BaseException | None = None  # what ended the run, when it failed
    after_commit: list[Any] = field(default_factory=list)
    budget_store: str | None = None  # --budget-store URL (or the config file's budget_store)
    dataset_id: str | None = None  # the privacy unit the release is charged to
    release_id: str = ""  # hash of job, algorithm, parameters, input identity, key fingerprint
    planned_spend: tuple[float, float] | None = None  # (ε, δ) reserved from the data-free plan
    store: Any = None  # the open BudgetStore, closed at the end of the run
    reservation: Any = None  # the budget store's reservation, between reserve and commit
