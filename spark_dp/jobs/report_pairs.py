"""An output and the report that describes it (``<output>.report.json``, which a reader of the
output takes for its report) are replaced together or not at all: no report is left beside an
output it does not describe (docs/privacy/budget.md).

* :func:`check_reports_beside` (the path plan, before Spark; local paths): a ``--report`` named
  as the report of another existing path is refused, and so is a run whose ``--output`` has an
  old report beside it that this run would leave there, unless ``--overwrite``;
* :func:`retire_old_report` (the staging): with ``--overwrite``, that old report is moved aside
  with the output it describes in the same commit (:meth:`spark_dp.io.staging.Staging.retire`).
"""

from __future__ import annotations

import argparse
import logging
import os

from spark_dp.errors import OutputExistsError, PathConflictError
from spark_dp.io.fs import local_path
from spark_dp.io.paths import PathPlan, default_report_path
from spark_dp.io.staging import Staging

__all__ = ["check_reports_beside", "retire_old_report"]


def check_reports_beside(
    plan: PathPlan, report: str | None, args: argparse.Namespace, confidential: bool
) -> None:
    """No report is left beside an output it does not describe (local paths; a reader of
    ``X`` takes ``X.report.json`` for the report of ``X``):

    * a ``--report`` named as the report of another existing path (``--output out2 --report
      out.report.json`` while ``out`` exists) is refused: exit 2, nothing read or charged;
    * the report beside ``--output`` (``out.report.json``), when this run's report goes
      elsewhere, leaves with the output it describes: in the same commit with ``--overwrite``
      (:meth:`spark_dp.io.staging.Staging.retire`), refused without it.

    Raises:
        PathConflictError: the first case.
        OutputExistsError: the second, without ``--overwrite``.
    """
    output = plan.get("output")
    if output is None or report is None:
        return
    suffix = default_report_path("", confidential)
    described = report[: -len(suffix)] if report.endswith(suffix) else ""
    if (
        args.report is not None
        and described
        and plan.is_local_path(report)
        and os.path.exists(local_path(described))
        and not plan.same_path(described, output)
    ):
        raise PathConflictError(
            f"--report {report} is the report of {described}, which exists: a reader of "
            f"{described} would take this run's report for its own; pass another --report "
            f"(the default is {default_report_path(output, confidential)})"
        )
    beside = default_report_path(output, confidential)
    if (
        plan.is_local_path(beside)
        and not plan.same_path(beside, report)
        and os.path.isfile(local_path(beside))
        and not args.overwrite
    ):
        raise OutputExistsError(
            f"{beside}, the report of an earlier release at {output}, would be left beside this "
            "run's output, which it does not describe; pass --overwrite to replace both, or "
            "remove it"
        )


def retire_old_report(
    plan: PathPlan,
    report: str | None,
    staging: Staging,
    *,
    overwrite: bool,
    confidential: bool,
    log: logging.Logger,
) -> None:
    """The report beside ``--output`` (``<output>.report.json``) when this run's ``report``
    goes elsewhere: it describes the output this run replaces (the path plan refused it without
    ``--overwrite``), so it leaves with that output, in the same ``staging`` commit."""
    output = plan.get("output")
    if output is None or report is None or not overwrite:
        return
    beside = default_report_path(output, confidential)
    fs = staging.fs_for(beside)
    if plan.same_path(beside, report) or not fs.exists(beside) or fs.is_dir(beside):
        return
    staging.retire("report of the replaced output", beside)
    log.warning("%s describes the output this run replaces: it goes with it", beside)
