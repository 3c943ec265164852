"""The job runner: one run of a job, in explicit phases.

::

    parse → config → params → plan → path plan → schemas → key (unbound) → request identity
          → budget reserve → session → execute: [charge durable → validation pass reads +
             digests every table → release id recorded → key bound → algorithm] (staged)
             → publish (:mod:`.publish`: budget commit → commit (outputs, report last) → stdout)
    on failure: the staging is removed (or a half-done commit rolled back); the run's budget
    is freed if it read no data, else it stays charged (failed)

Everything up to the reservation runs before Spark starts (:mod:`.phases`), so a bad flag,
value, config file, key file, path or column name (read from the table's schema) is one line
on stderr and exit code 2 without a JVM, and a refused budget is exit code 3 before any data is
read. The job's data-free plan is computed once, from the checked parameters, and the same plan
is reserved and executed. The run's
:class:`~.budget_lease.BudgetLease` reserves the plan's (ε, δ) in the books (the budget store
of ``--budget-store``, else the default ledger, unless ``--no-ledger``) under the run's request
(arguments, key, input locations and listings: a request committed before is not run again,
exit 0 or 2 without reading anything; a run of a request that ended after its charge and before
it recorded a release id is taken over by its retry; one of it still in flight refuses this
one, exit 3), makes the charge durable right before the first read of input rows (from then on
it is never refunded), records the release id before the key is bound to it, and commits it
right before the outputs go into place. Nothing derived from the data is computed, let alone
logged, before the charge is durable. (When a table is read from a Hadoop URI the session
starts before the reservation, to list it.)

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

import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from spark_dp.config import params_to_dict, parse_spark_conf_overrides
from spark_dp.config_flags import name_flags
from spark_dp.errors import AlreadyReleased, SparkDPUserError
from spark_dp.io.delta import check_delta_session
from spark_dp.io.fs import is_connect, is_local
from spark_dp.io.staging import Staging
from spark_dp.io.write import plain_paths_local, session_filesystems
from spark_dp.jobs.budget_hooks import (
    needs_session_for_identity,
    request_identity,
    split_budget_conf,
)
from spark_dp.jobs.budget_lease import BudgetLease
from spark_dp.jobs.cli_args import build_parser
from spark_dp.jobs.config_source import read_deferred
from spark_dp.jobs.failures import (
    existing_ancestor,
    fullest,
    known_failure,
    no_space,
    say,
    session_failure,
)
from spark_dp.jobs.monitoring import check_monitoring, monitoring_info, private_spark_conf
from spark_dp.jobs.phases import (
    check_schemas,
    check_spark_conf,
    check_unsafe_flags,
    delta_flag,
    delta_spark_conf,
    dry_run,
    load_config,
    make_key,
    plan_algorithm,
    plan_paths,
    resolve_run_params,
    resolve_tables,
    split_spark_conf,
    uses_tables,
)
from spark_dp.jobs.publish import EXIT_BUDGET, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, publish
from spark_dp.jobs.report_pairs import retire_old_report
from spark_dp.jobs.run import Run, RunHooks, report_path
from spark_dp.jobs.signals import (
    Interrupted,
    cancel_after_interrupt,
    ignored_signals,
    own_sigint,
    raise_pending,
    signals_raise,
    stop_after_interrupt,
)
from spark_dp.jobs.spec import JobContext, JobSpec
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


def _start_session(run: Run) -> None:
    """Phase 6: the SparkSession (and a config file only Spark can read)."""
    if run.spark is not None:
        return
    from pyspark.sql import SparkSession

    from spark_dp.session import get_session

    run.created_session = SparkSession.getActiveSession() is None
    try:
        spark = get_session(
            f"spark_dp.{run.spec.name}",
            run.spark_conf,
            master=run.args.master,
            startup_notices=run.args.log_level == "DEBUG",
        )
        spark.conf.get("spark.sql.shuffle.partitions", None)  # its SQL settings, checked now
    except Exception as exc:
        raise session_failure(exc, run.args.master, run.spark_conf, _given(run)) from exc
    run.spark = spark
    own_sigint()  # pyspark's SIGINT handler would call Spark through a busy connection


def _given(run: Run) -> set[str]:
    """The Spark settings given with ``--spark-conf`` (the others came from the config file)."""
    return set(parse_spark_conf_overrides(run.args.spark_conf))


def _apply_deferred_config(run: Run) -> None:
    assert run.config is not None
    run.file_conf = read_deferred(run.config, run.spark)
    section = run.file_conf.pop("spark", {}) or {}
    for key, value in dict(section).items():
        if str(key) in run.spark_conf:
            continue  # --spark-conf wins
        try:
            run.spark.conf.set(str(key), str(value))
        except Exception:
            run.log.warning("config: Spark setting %s applies only at start-up", key)


def _new_report(run: Run) -> PrivacyReport:
    assert run.randomness is not None and run.spark is not None
    report = PrivacyReport(run.spec.name, run.spec.guarantee)
    report.release_id = run.release_id  # set when the key is bound (budget_hooks)
    report.parameters = params_to_dict(run.params)
    report.randomness = run.randomness.to_report()
    report.spark = {**spark_info(run.spark), **monitoring_info(run.spark)}  # classic or Connect
    if getattr(run.args, "unsafe_debug_logs", False):
        report.mark_unsafe("--unsafe-debug-logs: private counts were written to the logs")
    return report


def _execute(run: Run) -> tuple[str, dict[str, float]]:
    """Phase 7: the job, writing into the staging; its summary and its stages' seconds."""
    assert run.plan is not None and run.randomness is not None
    if delta_flag(run.args) is not None:  # no Delta jars or settings: one line, nothing read
        check_delta_session(run.spark, str(delta_flag(run.args)))
    run.plan.check_with_session(run.spark, overwrite=run.args.overwrite)
    fs_for = session_filesystems(run.spark)
    plain = plain_paths_local(run.spark)
    direct = is_connect(run.spark) and any(
        not is_local(s.path, plain_is_local=plain) for s in run.plan.committed
    )
    on_step = None if run.hooks.moments is None else (lambda k: run.moment(f"commit {k}"))
    run.staging = Staging(fs_for, overwrite=run.args.overwrite, direct=direct, on_step=on_step)
    retire_old_report(run)  # the report beside --output leaves with it
    run.report = _new_report(run)
    timer = StageTimer(run.log)
    ctx = JobContext(
        spec=run.spec,
        args=run.args,
        params=run.params,
        spark=run.spark,
        binding=run.lease.binding(run.moment),
        report=run.report,
        timer=timer,
        log=run.log,
        plan=run.plan,
        staging=run.staging,
        algorithm_plan=run.algorithm_plan,
        input_versions=dict(run.input_versions),
    )
    algorithm = getattr(run.params, "algorithm", None) or getattr(run.params, "method", None)
    with labels(run.spark, job=run.spec.name, algorithm=algorithm):  # the Spark UI's names
        summary = run.spec.execute(ctx)
    ctx.randomness  # noqa: B018 - every table was read: bound (a job without tables binds now)
    run.after_commit = ctx.after_commit
    return summary, dict(timer.seconds)


# --------------------------------------------------------------------------- the run


def run_job(
    spec: JobSpec,
    argv: Sequence[str] | None = None,
    *,
    prog: str | None = None,
    hooks: RunHooks | None = None,
) -> int:
    """Run ``spec`` with ``argv`` (default ``sys.argv[1:]``) and return the exit code
    (:func:`run_outcome`'s, which also returns the stages' seconds).

    ``hooks``: a caller's seams into the run (:class:`~spark_dp.jobs.run.RunHooks`; tests).
    A run's ``--unsafe-debug-logs`` ends with the run: a notebook or a test that calls a job's
    ``main`` keeps its own setting afterwards. SIGTERM ends the run as SIGINT does (in the main
    thread): the staged files are removed and the exit code is 143 (SIGINT: 130).
    """
    return run_outcome(spec, argv, prog=prog, hooks=hooks).exit_code


def run_outcome(
    spec: JobSpec,
    argv: Sequence[str] | None = None,
    *,
    prog: str | None = None,
    hooks: RunHooks | None = None,
) -> Outcome:
    """:func:`run_job`, returning its :class:`Outcome`."""
    with unsafe_debug(unsafe_debug_enabled()), signals_raise():
        return _run_job(spec, argv, prog, hooks or RunHooks())


def _run_job(
    spec: JobSpec, argv: Sequence[str] | None, prog: str | None, hooks: RunHooks
) -> Outcome:
    parser = build_parser(spec, prog)
    try:
        args = parser.parse_args(argv)  # phase 1
    except SystemExit as exc:  # --help (0) or a one-line usage error (2)
        return Outcome(int(exc.code or 0))
    configure_logging(args.log_level, unsafe_debug=getattr(args, "unsafe_debug_logs", False))
    run = Run(spec, args, get_logger(f"spark_dp.jobs.{spec.name}"), hooks=hooks)
    t0 = time.perf_counter()
    try:
        check_unsafe_flags(spec, args)
        load_config(run)
        split_spark_conf(run)
        private_spark_conf(run)  # --private-spark-ui: UI and event log off
        delta_spark_conf(run)  # Delta's extension and catalog, for a run that uses Delta
        check_spark_conf(run)
        split_budget_conf(run)
        if run.config is not None and run.config.deferred:
            _start_session(run)  # the config file is where only Spark can read it
            _apply_deferred_config(run)
        if uses_tables(args):
            _start_session(run)  # the catalog says where its tables are (no row is read)
            resolve_tables(run)
        resolve_run_params(run)
        plan_algorithm(run)
        plan_paths(run)
        check_schemas(run)  # each column flag against the tables' schemas: metadata only
        if args.dry_run:
            return Outcome(dry_run(run))
        make_key(run)
        if needs_session_for_identity(run):
            _start_session(run)  # lists a Hadoop input for its identity; reads no data
        request_identity(run)  # the request: arguments, key, input locations and listings
        BudgetLease.reserve(run)  # before any data is read (exit 3 if refused): run.lease
        run.moment("reserved")
        _start_session(run)
        check_monitoring(run)  # --private-spark-ui: refused if Spark started with its UI on
        summary, stage_seconds = _execute(run)
        raise_pending()  # a signal whose exception Python swallowed: stop before the commit
        return Outcome(publish(run, summary, t0), stage_seconds)
    except AlreadyReleased as exc:
        if exc.exit_code == EXIT_OK:  # the same request's release is where this run asks for it
            run.log.warning("budget: %s", _one_line(exc))
            return Outcome(EXIT_OK)
        say(f"{parser.prog}: error: {_one_line(exc)}")
        return Outcome(exc.exit_code)
    except SparkDPUserError as exc:
        run.failed = exc
        return Outcome(_fail(run, parser.prog, exc))
    except BrokenPipeError:
        _silence_stdout()
        say(f"{parser.prog}: error: stdout was closed before the report was written")
        return Outcome(EXIT_FAILURE)
    except (KeyboardInterrupt, Interrupted) as exc:
        interrupt = exc if isinstance(exc, Interrupted) else Interrupted(signal.SIGINT)
        run.failed = interrupt
        what = "after its release was committed" if run.committed else "staged files removed"
        say(f"{parser.prog}: error: interrupted by {interrupt}: {what}")
        return Outcome(interrupt.exit_code)
    except Exception as exc:
        run.failed = exc
        known = known_failure(exc, run.plan, run.spark_conf, _given(run))
        if known is None:
            run.log.exception("%s failed", spec.name)
            return Outcome(EXIT_FAILURE)
        return Outcome(_fail(run, parser.prog, known))
    finally:
        with ignored_signals():
            _finish(run)


def _fail(run: Run, prog: str, exc: SparkDPUserError) -> int:
    """One line on stderr (the trace in the log at DEBUG only); the error's exit code."""
    run.log.debug("%s failed", run.spec.name, exc_info=True)
    say(f"{prog}: error: {name_flags(_one_line(exc), run.spec.params_cls)}")
    return int(getattr(exc, "exit_code", EXIT_USAGE))


def _finish(run: Run) -> None:
    interrupted = run.spark is not None and isinstance(run.failed, Interrupted)
    if interrupted:  # the abandoned write first: its tasks would recreate what abort removes
        cancel_after_interrupt(run.spark)
    if not run.committed and run.staging is not None:
        run.staging.abort()
    if run.failed is not None and no_space(run.failed) and run.plan is not None:
        _, path = fullest(run.plan, run.spark_conf)  # its work directories go too
        run.plan.remove_state(os.stat(existing_ancestor(path)).st_dev)
    if run.lease is not None:  # freed if no data was read, else charged (failed); closed
        run.lease.end()
    if interrupted:
        if run.created_session:
            stop_after_interrupt(run.spark)
    elif run.created_session and run.spark is not None:
        try:
            run.spark.stop()
        except Exception:  # a JVM that is gone already (a signal to the process group)
            run.log.debug("stopping the Spark session failed", exc_info=True)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _silence_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null so the interpreter's exit flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
