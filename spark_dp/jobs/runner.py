"""The job runner: one run of a job as one straight line (docs/design/job-line.md).

::

    read_settings (flags, config file, Spark settings, books: no Spark)
      → prepare → Request (params, the plan once, paths, schemas)        [--dry-run stops here]
      → identify → Identity (the key, unbound; the request's id)
      → with BudgetLease: reserve (exit 3 if refused)
          → Spark ready (the session starts in one place: RunSession.get)
          → with open_staging:
              → execute → Release: [charge durable → validation pass reads + digests every
                 table → release id recorded → key bound → algorithm] (staged)
              → publish (:mod:`.publish`: budget commit → commit (outputs, report last) → stdout)
    on failure: the staging is removed (or a half-done commit rolled back); the run's budget
    is freed if it read no data, else it stays charged (failed); Spark stops if the run
    started it; one line on stderr (:class:`Exits`)

Everything up to the reservation runs before Spark starts (:mod:`.request`), so a bad flag,
value, config file, key file, path or column name (read from the table's schema) is one line
on stderr and exit code 2 without a JVM, and a refused budget is exit code 3 before any data is
read. The job's data-free plan is computed once, from the checked parameters, and the same plan
is reserved and executed. The run's :class:`~.lease.BudgetLease` reserves the plan's (ε, δ) in
the books (the budget store of ``--budget-store``, else the default ledger, unless
``--no-ledger``) under the run's request (arguments, key, input locations and listings: a
request committed before is not run again, exit 0 or 2 without reading anything; a run of a
request that ended after its charge and before it recorded a release id is taken over by its
retry; one of it still in flight refuses this one, exit 3), makes the charge durable right
before the first read of input rows (from then on it is never refunded), records the release
id before the key is bound to it, and commits it right before the outputs go into place.
Nothing derived from the data is computed, let alone logged, before the charge is durable.
(Spark starts before the reservation only for a config file only Spark can read, a catalog
table, or to list a table read from a Hadoop URI.)

Tests hold a run at each of its moments with ``run_job(..., hooks=RunHooks(moments=f))``:
``f`` is called with ``"reserved"``, ``"charged"``, ``"bound"`` (the release id recorded, nothing
drawn), ``"staged"`` (every output staged, the budget not committed), ``"booked"`` (the budget
committed, nothing moved) and ``"commit k"`` at each change on disk of the commit
(:class:`~spark_dp.io.staging.Staging`), and may raise, wait or kill the process there.

Exit codes: 0 success; 2 bad arguments, configuration, settings, paths or input (one line says
what to fix); 3 privacy budget refused; 1 a failure of the environment (a full disk, an
unreachable host or Spark master: one line naming the cause and the path or setting), or
anything else (a bug: the traceback is logged); 130 after SIGINT and 143 after SIGTERM (staged
files removed: :mod:`.signals`). Every one-line error keeps its trace in the log at DEBUG
(:mod:`.failures`).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from spark_dp.config import params_to_dict
from spark_dp.config_flags import name_flags
from spark_dp.errors import AlreadyReleased, SparkDPUserError
from spark_dp.io.delta import check_delta_session
from spark_dp.io.staging import Staging
from spark_dp.jobs.cli_args import build_parser
from spark_dp.jobs.failures import (
    known_failure,
    say,
)
from spark_dp.jobs.lease import BudgetLease
from spark_dp.jobs.monitoring import check_monitoring, monitoring_info
from spark_dp.jobs.publish import EXIT_BUDGET, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, publish
from spark_dp.jobs.report_pairs import retire_old_report
from spark_dp.jobs.request import (
    Identity,
    Request,
    Settings,
    delta_flag,
    identify,
    prepare,
    print_dry_run,
    read_settings,
    report_path,
)
from spark_dp.jobs.run_session import RunSession, interrupted, open_staging
from spark_dp.jobs.signals import (
    Interrupted,
    raise_pending,
    signals_raise,
)
from spark_dp.jobs.spec import JobContext, JobSpec, Release, RunHooks
from spark_dp.logs import (
    StageTimer,
    configure_logging,
    get_logger,
    unsafe_debug,
    unsafe_debug_enabled,
)
from spark_dp.report import PrivacyReport
from spark_dp.session import spark_info
from spark_dp.tracking import labels

__all__ = [
    "EXIT_BUDGET",
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_USAGE",
    "Outcome",
    "Release",
    "RunHooks",
    "report_path",
    "run_job",
    "run_outcome",
]


@dataclass(frozen=True)
class Outcome:
    """What a run returns: its exit code, and the wall seconds of each stage of the job (for
    the benchmark harness; timings depend on the data, so they are logged, never written to a
    report). Only a run that ended by publishing its release has stage seconds."""

    exit_code: int
    stage_seconds: Mapping[str, float] = field(default_factory=dict)


# --------------------------------------------------------------------------- the line


def run_job(
    spec: JobSpec,
    argv: Sequence[str] | None = None,
    *,
    prog: str | None = None,
    hooks: RunHooks | None = None,
) -> int:
    """Run ``spec`` with ``argv`` (default ``sys.argv[1:]``) and return the exit code
    (:func:`run_outcome`'s, which also returns the stages' seconds).

    ``hooks``: a caller's seams into the run (:class:`RunHooks`; tests). A run's
    ``--unsafe-debug-logs`` ends with the run: a notebook or a test that calls a job's ``main``
    keeps its own setting afterwards. SIGTERM ends the run as SIGINT does (in the main thread):
    the staged files are removed and the exit code is 143 (SIGINT: 130).
    """
    return run_outcome(spec, argv, prog=prog, hooks=hooks).exit_code


def run_outcome(
    spec: JobSpec,
    argv: Sequence[str] | None = None,
    *,
    prog: str | None = None,
    hooks: RunHooks | None = None,
) -> Outcome:
    """:func:`run_job`, returning its :class:`Outcome`: the line of the module docstring."""
    hooks = hooks or RunHooks()
    with unsafe_debug(unsafe_debug_enabled()), signals_raise():
        parser = build_parser(spec, prog)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help (0) or a one-line usage error (2)
            return Outcome(int(exc.code or 0))
        configure_logging(args.log_level, unsafe_debug=getattr(args, "unsafe_debug_logs", False))
        log = get_logger(f"spark_dp.jobs.{spec.name}")
        started = time.perf_counter()
        with Exits(spec, parser.prog, log) as exits:
            exits.settings = settings = read_settings(spec, parser, args, log)
            with RunSession(
                spec.name,
                settings.spark_conf,
                given=settings.spark_conf_given,
                master=args.master,
                startup_notices=args.log_level == "DEBUG",
                log=log,
            ) as session:
                exits.request = request = prepare(settings, session)
                if args.dry_run:
                    return Outcome(print_dry_run(request))
                identity = identify(request, session)
                with BudgetLease(request, identity, hooks) as lease:
                    spark = ready_spark(request, session)
                    with open_staging(
                        session,
                        request.paths,
                        overwrite=args.overwrite,
                        spark_conf=settings.spark_conf,
                        hooks=hooks,
                    ) as staging:
                        exits.staging = staging
                        release = execute(request, identity, spark, lease, staging)
                        raise_pending()  # a signal Python swallowed: stop before the commit
                        code = publish(
                            request, release, lease, staging, hooks=hooks, started=started
                        )
                        return Outcome(code, release.stage_seconds)
        return Outcome(exits.code)


def ready_spark(request: Request, session: RunSession) -> Any:
    """The session, checked before any read: ``--private-spark-ui`` against a session started
    with its UI on, Delta's jars and settings, and every remote path through Hadoop."""
    spark = session.get()
    flags = request.flags
    check_monitoring(flags, spark)
    if delta_flag(flags) is not None:  # no Delta jars or settings: one line, nothing read
        check_delta_session(spark, str(delta_flag(flags)))
    request.paths.check_with_session(spark, overwrite=flags.overwrite)
    return spark


def execute(
    request: Request, identity: Identity, spark: Any, lease: BudgetLease, staging: Staging
) -> Release:
    """The job, writing into ``staging``: its :class:`Release`."""
    spec, flags, log = request.spec, request.flags, request.log
    retire_old_report(  # the report beside --output leaves with it
        request.paths,
        request.report,
        staging,
        overwrite=flags.overwrite,
        confidential=spec.confidential,
        log=log,
    )
    report = _new_report(request, identity, spark)
    timer = StageTimer(log)
    ctx = JobContext(
        spec=spec,
        args=flags,
        params=request.params,
        spark=spark,
        binding=lease.binding(report),
        report=report,
        timer=timer,
        log=log,
        plan=request.paths,
        staging=staging,
        algorithm_plan=request.plan,
        input_versions=dict(identity.input_versions),
    )
    with labels(spark, job=spec.name, algorithm=request.chosen):  # the Spark UI's names
        summary = spec.execute(ctx)
    ctx.randomness  # noqa: B018 - every table was read: bound (a job without tables binds now)
    after_commit = list(ctx.after_commit)
    if request.output_table is not None:  # one catalog operation, after the commit
        from spark_dp.io.catalog import register_output

        table = request.output_table
        after_commit.append(lambda: register_output(spark, *table))
    return Release(report, summary, tuple(after_commit), dict(timer.seconds))


def _new_report(request: Request, identity: Identity, spark: Any) -> PrivacyReport:
    report = PrivacyReport(request.spec.name, request.spec.guarantee)
    report.release_id = ""  # recorded when the key is bound (BudgetLease.bind)
    report.parameters = params_to_dict(request.params)
    report.randomness = identity.key.to_report()
    report.spark = {**spark_info(spark), **monitoring_info(spark)}  # classic or Connect
    if getattr(request.flags, "unsafe_debug_logs", False):
        report.mark_unsafe("--unsafe-debug-logs: private counts were written to the logs")
    return report


# --------------------------------------------------------------------------- the exits


class Exits:
    """The one place a failed run becomes its exit code and one line on stderr (after the
    clean-up of every inner ``with`` block, so the line is true when printed).

    Attributes:
        code: the exit code of a run that failed.
        settings, request, staging: as far as the run got (for the message).
    """

    def __init__(self, spec: JobSpec, prog: str, log: logging.Logger) -> None:
        self._spec, self._prog, self._log = spec, prog, log
        self.code = EXIT_FAILURE
        self.settings: Settings | None = None
        self.request: Request | None = None
        self.staging: Staging | None = None

    def __enter__(self) -> Exits:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if exc is None or not isinstance(exc, (Exception, KeyboardInterrupt, Interrupted)):
            return False
        self.code = self._code(exc)
        return True

    def _code(self, exc: BaseException) -> int:
        if isinstance(exc, AlreadyReleased):
            if exc.exit_code == EXIT_OK:  # the same request's release is where this run asks
                self._log.warning("budget: %s", _one_line(exc))
                return EXIT_OK
            say(f"{self._prog}: error: {_one_line(exc)}")
            return exc.exit_code
        if isinstance(exc, SparkDPUserError):
            return self._fail(exc, exc)
        if isinstance(exc, BrokenPipeError):
            _silence_stdout()
            say(f"{self._prog}: error: stdout was closed before the report was written")
            return EXIT_FAILURE
        if interrupted(exc):
            interrupt = exc if isinstance(exc, Interrupted) else Interrupted(signal.SIGINT)
            committed = self.staging is not None and self.staging.committed
            what = "after its release was committed" if committed else "staged files removed"
            say(f"{self._prog}: error: interrupted by {interrupt}: {what}")
            return interrupt.exit_code
        settings = self.settings
        paths = self.request.paths if self.request is not None else None
        conf = settings.spark_conf if settings is not None else {}
        given = settings.spark_conf_given if settings is not None else frozenset()
        known = known_failure(exc, paths, conf, given)
        if known is None:
            self._log.error("%s failed", self._spec.name, exc_info=exc)
            return EXIT_FAILURE
        return self._fail(known, exc)

    def _fail(self, error: SparkDPUserError, raised: BaseException) -> int:
        """One line on stderr (the trace in the log at DEBUG only); the error's exit code."""
        self._log.debug("%s failed", self._spec.name, exc_info=raised)
        say(f"{self._prog}: error: {name_flags(_one_line(error), self._spec.params_cls)}")
        return int(getattr(error, "exit_code", EXIT_USAGE))


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _silence_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null so the interpreter's exit flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
