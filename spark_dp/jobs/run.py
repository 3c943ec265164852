"""The state of one job run, carried from phase to phase (see :mod:`spark_dp.jobs.runner`)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spark_dp.io.paths import PathPlan, confidential_path, default_report_path
from spark_dp.io.staging import Staging
from spark_dp.jobs.config_source import ConfigSource
from spark_dp.jobs.spec import JobSpec
from spark_dp.randomness import Randomness
from spark_dp.report import PrivacyReport

if TYPE_CHECKING:
    from spark_dp.budget.ledger import Ledger

__all__ = ["Run", "RunHooks", "report_path"]


def report_path(args: argparse.Namespace, confidential: bool = False) -> str | None:
    """``--report``, else ``<output>.report.json``, else ``None`` (the report goes to stdout).

    A ``confidential`` report (a job whose report holds private values: contribution bounding's
    counts) is named ``*.confidential.json`` (:func:`confidential_path`)."""
    if args.report is None:
        out = getattr(args, "output", None)
        return default_report_path(out, confidential) if out else None
    path = str(args.report)  # an empty one is refused by the path plan
    return confidential_path(path) if confidential and path.strip() else path


@dataclass(frozen=True)
class RunHooks:
    """What a caller of :func:`spark_dp.jobs.runner.run_job` may plug into a run (tests; never
    a command line, a config file or the environment).

    Attributes:
        release_id: ``release_id(computed) -> id``: the release id the key is bound to instead
            of the one computed from the request and the rows read. The neighbour test
            (tests/test_neighbour_artefacts.py) binds one key by hand this way, so that two
            runs on neighbouring inputs draw the same noise and every other difference between
            their artefacts is a leak (docs/privacy/boundary.md#neighbour-test).
        moments: ``moments(name)`` at each named moment of the run (:mod:`spark_dp.jobs.runner`),
            where a test may raise, wait or kill the process.
    """

    release_id: Callable[[str], str] | None = None
    moments: Callable[[str], None] | None = None


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
    algorithm_plan: Any = None  # spec.plan(params): computed once, reserved and executed
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
    ledger: Ledger | None = None  # the default ledger, when no store is given (--no-ledger: None)
    dataset_id: str | None = None  # the privacy unit the release is charged to
    inputs: dict[str, str] = field(default_factory=dict)  # role -> input identity (metadata)
    input_versions: dict[str, int] = field(default_factory=dict)  # role -> Delta version read
    output_table: tuple[str, str, str, bool] | None = None  # name, format, location, existed
    identity: str = ""  # the request: job, arguments, key, inputs (ids.run_identity)
    release_id: str = ""  # the request and the content digests of the rows read (ids.release_id)
    planned_spend: tuple[float, float] | None = None  # (ε, δ) reserved from the data-free plan
    lease: Any = None  # the run's BudgetLease (jobs.budget_lease): its books, reserve to end
    hooks: RunHooks = field(default_factory=lambda: RunHooks())  # a caller's seams (tests)

    def moment(self, name: str) -> None:
        """A named moment of the run (:mod:`spark_dp.jobs.runner`): ``hooks.moments(name)``."""
        if self.hooks.moments is not None:
            self.hooks.moments(name)
