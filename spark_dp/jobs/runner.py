"""The job runner: one run of a job, in explicit phases.

::

    parse → config → params → path plan → key → [budget reserve] → session → execute (staged)
          → commit (outputs, user state, report last) → [budget commit]
    on failure: the staging is removed (or a half-done commit rolled back) → [budget release]

Everything up to the key runs before Spark starts, so a bad flag, value, config file or path is
one line on stderr and exit code 2 without a JVM. The budget hooks (:func:`budget_reserve`,
:func:`budget_commit`, :func:`budget_release`) are where the privacy-budget store reserves the
release's (ε, δ) before any data is read, commits it once the report is in place, and releases
it when nothing was committed; today they keep ``--ledger``'s behaviour (append at commit).

Exit codes: 0 success; 2 bad arguments, configuration, paths or input (one line says what to
fix); 3 privacy budget refused; 1 anything else (the traceback is logged).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from spark_dp.checks import privacy_warnings
from spark_dp.config import (
    cli_overrides,
    deprecation_warnings,
    name_flags,
    params_to_dict,
    parse_spark_conf_overrides,
    resolve_params,
)
from spark_dp.errors import ConfigError, SparkDPUserError
from spark_dp.io.fs import is_connect, is_local
from spark_dp.io.staging import Staging
from spark_dp.io.write import plain_paths_local, session_filesystems
from spark_dp.jobs.cli_args import build_parser
from spark_dp.jobs.config_source import ConfigSource, locate_config, read_deferred
from spark_dp.jobs.paths import APPEND, READ, WRITE, PathPlan, PathSpec
from spark_dp.jobs.spec import JobContext, JobSpec
from spark_dp.logs import StageTimer, configure_logging, get_logger
from spark_dp.randomness import Randomness
from spark_dp.report import PrivacyReport

__all__ = [
    "EXIT_BUDGET",
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_USAGE",
    "budget_commit",
    "budget_release",
    "budget_reserve",
    "last_stage_seconds",
    "report_path",
    "run_job",
]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_BUDGET = 0, 1, 2, 3

_LAST_STAGE_SECONDS: dict[str, float] = {}


def last_stage_seconds() -> dict[str, float]:
    """Wall seconds per stage of the last run in this process (for the benchmark harness;
    timings depend on the data, so they are logged, never written to a report)."""
    return dict(_LAST_STAGE_SECONDS)


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
    after_commit: list[Any] = field(default_factory=list)
    reservation: Any = None  # the budget store's reservation, between reserve and commit


# --------------------------------------------------------------------------- phases


def _load_config(run: Run) -> None:
    """Phase 2: the config file (local now, or through Spark once the session exists)."""
    if run.args.config is None:
        return
    run.config = locate_config(run.args.config)
    if not run.config.deferred:
        run.file_conf = run.config.load()


def _split_spark_conf(run: Run) -> None:
    spark_conf = run.file_conf.pop("spark", {}) or {}
    if not isinstance(spark_conf, dict):
        raise ConfigError("the 'spark' section of the config file must be a mapping")
    run.spark_conf = {str(k): str(v) for k, v in spark_conf.items()}
    run.spark_conf.update(parse_spark_conf_overrides(run.args.spark_conf))


def _resolve_params(run: Run) -> None:
    """Phase 3: defaults < config file < command line, validated; required values present."""
    spec, args = run.spec, run.args
    given = cli_overrides(args, spec.params_cls)
    for name in spec.required:
        flag_key = _flag_of(spec, name).lstrip("-").replace("-", "_")
        in_file = any(str(k).replace("-", "_") in (name, flag_key) for k in run.file_conf)
        if given.get(name) is None and not in_file:
            raise ConfigError(
                f"{_flag_of(spec, name)} is required: pass it on the command line or set "
                f"{name} in the config file (no default is assumed for it)"
            )
    for sentence in deprecation_warnings(args):
        run.log.warning("%s", sentence)
    run.params = resolve_params(spec.params_cls, run.file_conf, given)
    for sentence in privacy_warnings(
        getattr(run.params, "epsilon", None), getattr(run.params, "delta", None)
    ):
        run.log.warning("%s", sentence)


def _flag_of(spec: JobSpec, name: str) -> str:
    import dataclasses

    for f in dataclasses.fields(spec.params_cls):
        if f.name == name:
            return str(f.metadata.get("flag") or "--" + name.replace("_", "-"))
    return "--" + name.replace("_", "-")


def _check_unsafe_flags(spec: JobSpec, args: argparse.Namespace) -> None:
    used = [f for dest, f in spec.unsafe_flags if getattr(args, dest, None)]
    if getattr(args, "unsafe_debug_logs", False):
        used.insert(0, "--unsafe-debug-logs")
    if used and not getattr(args, "allow_unsafe_debug", False):
        raise ConfigError(
            f"{used[0]} exposes private data: add --allow-unsafe-debug to confirm (test data "
            "only; the report marks the run as not a normal release)"
        )


def _plain_paths_local_before_spark(run: Run) -> bool:
    """Whether plain paths are on the local disk, judged before Spark starts: a local master
    and no Hadoop configuration (else they are resolved by Hadoop once the session exists)."""
    if run.spark is not None:
        return plain_paths_local(run.spark)
    if os.environ.get("SPARK_REMOTE") or "spark.remote" in run.spark_conf:
        remote = os.environ.get("SPARK_REMOTE") or run.spark_conf["spark.remote"]
        return remote.startswith("local") or "://localhost" in remote or "127.0.0.1" in remote
    if os.environ.get("HADOOP_CONF_DIR") or os.environ.get("YARN_CONF_DIR"):
        return False
    master = run.args.master or run.spark_conf.get("spark.master") or "local[*]"
    from spark_dp.session import launched_by_spark_submit

    if launched_by_spark_submit():
        try:
            from pyspark import SparkConf, SparkContext

            SparkContext._ensure_initialized()
            master = SparkConf().get("spark.master", "local[*]") or "local[*]"
        except Exception:
            return False
    return bool(master.startswith(("local", "spark://")))


def _path_specs(run: Run) -> list[PathSpec]:
    spec, args = run.spec, run.args
    out = []
    if spec.needs_input:
        fmt = args.input_format
        out.append(PathSpec("input", "--input", args.input, READ, fmt=fmt, table=True))
    if run.config is not None and run.config.local is not None:
        out.append(PathSpec("config", "--config", run.config.local, READ, file=True))
    if getattr(args, "noise_key_file", None) is not None:
        out.append(PathSpec("key", "--noise-key-file", args.noise_key_file, READ, file=True))
    if getattr(args, "output", None) is not None:
        out.append(PathSpec("output", "--output", args.output, WRITE))
    if spec.paths is not None:
        out += spec.paths(args, run.params)
    report = report_path(args)
    if report is not None:
        flag = "--report" if args.report is not None else "--report (default)"
        out.append(PathSpec("report", flag, report, WRITE, file=True))
    if getattr(args, "ledger", None) is not None:
        out.append(PathSpec("ledger", "--ledger", args.ledger, APPEND, file=True))
    return out


def _plan_paths(run: Run) -> None:
    """Phase 4: every path resolved and checked (local ones completely) before Spark."""
    run.plan = PathPlan(_path_specs(run), plain_is_local=_plain_paths_local_before_spark(run))
    run.plan.check_conflicts()
    args = run.args
    notes = run.plan.prepare_local(overwrite=args.overwrite, recover_commits=not args.dry_run)
    for note in notes:
        run.log.warning("%s", note)


def _dry_run(run: Run) -> int:
    assert run.plan is not None
    doc: dict[str, Any] = {
        "job": run.spec.name,
        "parameters": params_to_dict(run.params),
        "paths": run.plan.to_dict(),
        "spark_conf": run.spark_conf,
    }
    if run.spec.describe is not None:
        doc["calibration"] = run.spec.describe(run.params)
    sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    sys.stdout.flush()
    return EXIT_OK


def _make_key(run: Run) -> None:
    """Phase 5: the release key (never logged: its fingerprint only)."""
    args = run.args
    if not run.spec.uses_key:
        run.randomness = Randomness.create()
        return
    if getattr(args, "noise_key_file", None):
        run.randomness = Randomness.from_key_file(args.noise_key_file)
    else:
        run.randomness = Randomness.create(args.seed)
    if run.randomness.seeded:
        run.log.warning("key derived from a seed: reproducible noise, NOT for production")
    run.log.info("release key %s, fingerprint %s", run.randomness.mode, run.randomness.fingerprint)


def _start_session(run: Run) -> None:
    """Phase 6: the SparkSession (and a config file only Spark can read)."""
    if run.spark is not None:
        return
    from pyspark.sql import SparkSession

    from spark_dp.session import get_session

    run.created_session = SparkSession.getActiveSession() is None
    run.spark = get_session(f"spark_dp.{run.spec.name}", run.spark_conf, master=run.args.master)


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
    report.parameters = params_to_dict(run.params)
    report.randomness = run.randomness.to_report()
    report.spark = {"version": run.spark.version, "master": run.spark.conf.get("spark.master", "")}
    if getattr(run.args, "unsafe_debug_logs", False):
        report.mark_unsafe("--unsafe-debug-logs: private counts were written to the logs")
    return report


def _execute(run: Run) -> str:
    """Phase 7: the job, writing into the staging."""
    assert run.plan is not None and run.randomness is not None
    notes = run.plan.check_with_session(run.spark, overwrite=run.args.overwrite)
    for note in notes:
        run.log.warning("%s", note)
    fs_for = session_filesystems(run.spark)
    plain = plain_paths_local(run.spark)
    direct = is_connect(run.spark) and any(
        not is_local(s.path, plain_is_local=plain) for s in run.plan.committed
    )
    run.staging = Staging(fs_for, overwrite=run.args.overwrite, direct=direct)
    run.report = _new_report(run)
    timer = StageTimer(run.log)
    ctx = JobContext(
        spec=run.spec,
        args=run.args,
        params=run.params,
        spark=run.spark,
        randomness=run.randomness,
        report=run.report,
        timer=timer,
        log=run.log,
        plan=run.plan,
        staging=run.staging,
    )
    summary = run.spec.execute(ctx)
    _LAST_STAGE_SECONDS.clear()
    _LAST_STAGE_SECONDS.update(timer.seconds)
    run.after_commit = ctx.after_commit
    return summary


def _commit(run: Run) -> None:
    """Phase 8: outputs into place, the report last (its presence marks the release)."""
    assert run.staging is not None and run.report is not None
    path = report_path(run.args)
    run.staging.commit(path, run.report.to_json() if path is not None else None)
    run.committed = True
    if path is None:
        sys.stdout.write(run.report.to_json())
        sys.stdout.flush()
    for hook in run.after_commit:
        hook()


# --------------------------------------------------------------------------- budget hooks


def budget_reserve(run: Run) -> None:
    """Reserve the release's (ε, δ) before any data is read (the budget store's ``reserve``;
    a refusal is a :class:`~spark_dp.errors.SparkDPUserError` with exit code 3)."""
    run.reservation = None


def budget_commit(run: Run) -> None:
    """Book the reservation once the report is in place; today: append to ``--ledger``."""
    args, report = run.args, run.report
    if not getattr(args, "ledger", None) or report is None or not report.budget:
        return
    from spark_dp.ledger import LedgerEntry, append_entry, dataset_id

    source = args.dataset_id or (dataset_id(args.input) if getattr(args, "input", None) else "")
    append_entry(
        args.ledger,
        LedgerEntry(
            dataset=source,
            job=run.spec.name,
            algorithm=report.algorithm,
            epsilon=report.epsilon_spent,
            delta=report.delta_spent,
            output=getattr(args, "output", None),
            report=report_path(args),
            seed_mode=report.randomness.get("mode", "unknown"),
        ),
    )


def budget_release(run: Run) -> None:
    """Give the reservation back when nothing was committed (the store's ``release``)."""
    run.reservation = None


# --------------------------------------------------------------------------- the run


def run_job(spec: JobSpec, argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    """Run ``spec`` with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    parser = build_parser(spec, prog)
    try:
        args = parser.parse_args(argv)  # phase 1
    except SystemExit as exc:  # --help (0) or a one-line usage error (2)
        return int(exc.code or 0)
    configure_logging(args.log_level, unsafe_debug=getattr(args, "unsafe_debug_logs", False))
    run = Run(spec, args, get_logger(f"spark_dp.jobs.{spec.name}"))
    t0 = time.perf_counter()
    try:
        _check_unsafe_flags(spec, args)
        _load_config(run)
        _split_spark_conf(run)
        if run.config is not None and run.config.deferred:
            _start_session(run)  # the config file is where only Spark can read it
            _apply_deferred_config(run)
        _resolve_params(run)
        _plan_paths(run)
        if args.dry_run:
            return _dry_run(run)
        _make_key(run)
        budget_reserve(run)  # before any data is read
        _start_session(run)
        summary = _execute(run)
        _commit(run)
        budget_commit(run)
        run.log.info("%s done in %.1f s: %s", spec.name, time.perf_counter() - t0, summary)
        return EXIT_OK
    except SparkDPUserError as exc:
        message = name_flags(_one_line(exc), spec.params_cls)
        print(f"{parser.prog}: error: {message}", file=sys.stderr)
        return int(getattr(exc, "exit_code", EXIT_USAGE))
    except BrokenPipeError:
        _silence_stdout()
        message = "stdout was closed before the report was written"
        print(f"{parser.prog}: error: {message}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        run.log.error("interrupted")
        return EXIT_FAILURE
    except Exception:
        run.log.exception("%s failed", spec.name)
        return EXIT_FAILURE
    finally:
        _finish(run)


def _finish(run: Run) -> None:
    if not run.committed:
        if run.staging is not None:
            run.staging.abort()
        budget_release(run)
    if run.created_session and run.spark is not None:
        run.spark.stop()


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _silence_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null so the interpreter's exit flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
