"""The job contract every spark_dp job follows (the names jobs import).

* :mod:`.spec`: :class:`JobSpec` (what a job is) and :class:`JobContext` (what it sees);
* :mod:`.cli_args`: the shared command-line vocabulary and each job's parser;
* :mod:`.paths`: the path plan checked before Spark starts;
* :mod:`.runner`: :func:`run_job`, the phases of a run;
* :mod:`.publish`: the boundary of a run: :func:`write_rows` (a job's tables), the commit of
  outputs and report, stdout, the exit codes (docs/privacy/boundary.md).

Config files hold the job's parameters at the top level plus an optional ``spark:`` mapping
of Spark settings.
"""

from __future__ import annotations

from spark_dp.jobs.cli_args import build_parser
from spark_dp.jobs.paths import APPEND, READ, STATE, WRITE, PathPlan, PathSpec
from spark_dp.jobs.publish import EXIT_BUDGET, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, write_rows
from spark_dp.jobs.runner import report_path, run_job
from spark_dp.jobs.spec import Answer, JobContext, JobSpec

__all__ = [
    "APPEND",
    "EXIT_BUDGET",
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_USAGE",
    "READ",
    "STATE",
    "WRITE",
    "Answer",
    "JobContext",
    "JobSpec",
    "PathPlan",
    "PathSpec",
    "build_parser",
    "report_path",
    "run_job",
    "write_rows",
]
