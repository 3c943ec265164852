"""The job contract every spark_dp job follows.

Command line (common flags, then the job's own parameters from its parameter dataclass)::

    --input PATH          Parquet file or directory (or .csv with a header row)
    --input-format F      parquet | csv (default: from the file name)
    --output PATH         where the job writes its Parquet result, if it has one
    --report PATH         JSON report (default <output>.report.json, or stdout)
    --overwrite           replace an existing output (otherwise: exit 2, nothing touched)
    --noise-key-file PATH the release key: a file of at least 32 random bytes (default: a
                          fresh key from OS entropy); the same key, input and parameters
                          give the same release
    --seed INT            a key derived from a seed, for tests; flagged "not for production"
    --config FILE         YAML/JSON defaults (e.g. conf/<job>.yaml)
    --user-col/--item-col/--record-col NAME   input column names
    --drop-nulls          drop rows with null ids instead of failing
    --spark-conf K=V      extra Spark settings (never override spark-submit's)
    --master URL          master for a plain `python jobs/...` run (default local[*])
    --log-level LEVEL     spark_dp log level (default INFO)
    --ledger PATH         append (dataset, ε, δ) of this release to a budget ledger
    --dataset-id ID       dataset name in the ledger (default: the resolved input path)

Exit codes: 0 success; 2 bad arguments, configuration or input (one line says what to fix);
1 anything else (the traceback is logged).

Config files hold the job's parameters at the top level plus an optional ``spark:`` mapping
of Spark settings.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spark_dp.config import (
    add_param_arguments,
    cli_overrides,
    load_config_file,
    params_to_dict,
    parse_spark_conf_overrides,
    resolve_params,
)
from spark_dp.errors import ConfigError, SparkDPUserError
from spark_dp.io import (
    ITEM,
    RECORD_ID,
    USER_ID,
    check_output_path,
    load_incidences,
    load_pairs,
    write_parquet_atomic,
)
from spark_dp.logs import StageTimer, configure_logging, get_logger
from spark_dp.randomness import Randomness
from spark_dp.report import PrivacyReport

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["JobContext", "JobSpec", "build_parser", "run_job"]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


@dataclass
class JobSpec:
    """What a job is: its name, parameters, and the function that runs it.

    Attributes:
        name: job name (``jobs/<name>.py``).
        description: first paragraph of ``--help``.
        params_cls: parameter dataclass (see :mod:`spark_dp.config`).
        execute: ``execute(ctx) -> one-line summary``; writes outputs through ``ctx``.
        needs_input: the job reads ``--input``.
        output: ``"required"``, ``"optional"`` or ``"none"``.
        guarantee: DP guarantee sentence for the report.
        examples: lines shown at the end of ``--help``.
    """

    name: str
    description: str
    params_cls: type
    execute: Callable[[JobContext], str]
    needs_input: bool = True
    output: str = "required"
    guarantee: str = ""
    examples: Sequence[str] = ()


@dataclass
class JobContext:
    """Everything a running job needs; built by :func:`run_job`."""

    spec: JobSpec
    args: argparse.Namespace
    params: Any
    spark: Any
    randomness: Randomness
    report: PrivacyReport
    timer: StageTimer
    log: logging.Logger
    outputs: dict[str, str] = field(default_factory=dict)

    # ---------------------------------------------------------------- input helpers
    def load_pairs(self, *, dedupe: bool = True, persist: bool = True) -> DataFrame:
        """(user_id, item) pairs from ``--input``: validated; deduplicated and cached unless
        the job's first step does that itself (see :func:`spark_dp.io.validate_edges`)."""
        with self.timer.stage("read"):
            df, summary = load_pairs(
                self.spark,
                self.args.input,
                user_col=self.args.user_col,
                item_col=self.args.item_col,
                fmt=self.args.input_format,
                drop_nulls=self.args.drop_nulls,
                dedupe=dedupe,
                persist=persist,
            )
        summary.log(self.log)
        return df

    def load_incidences(self) -> DataFrame:
        """(record_id, user_id) incidences from ``--input`` (validated, deduplicated, cached)."""
        with self.timer.stage("read"):
            df, summary = load_incidences(
                self.spark,
                self.args.input,
                record_col=self.args.record_col,
                user_col=self.args.user_col,
                fmt=self.args.input_format,
                drop_nulls=self.args.drop_nulls,
            )
        summary.log(self.log)
        return df

    # ---------------------------------------------------------------- output helpers
    def write_output(self, df: DataFrame, path: str | None = None, *, name: str = "output") -> int:
        """Write ``df`` atomically (``--output`` by default) and return its row count.

        The count is read back from the written files, so the DataFrame is computed exactly
        once (a second computation could draw fresh noise).
        """
        target = path or self.args.output
        with self.timer.stage(f"write {name}") as info:
            write_parquet_atomic(df, target, overwrite=self.args.overwrite)
            rows = self.spark.read.parquet(target).count()
            info["rows"] = rows
        self.outputs[name] = target
        return rows


def build_parser(spec: JobSpec) -> argparse.ArgumentParser:
    """The argparse parser of a job: common flags plus the job's parameters."""
    epilog = ""
    if spec.examples:
        epilog = "examples:\n" + "\n".join(f"  {e}" for e in spec.examples)
    parser = argparse.ArgumentParser(
        prog=f"jobs/{spec.name}.py",
        description=spec.description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g = parser.add_argument_group("common job flags")
    if spec.needs_input:
        g.add_argument("--input", required=True, metavar="PATH", help="input Parquet or CSV")
        g.add_argument("--input-format", choices=["parquet", "csv"], default=None)
    if spec.output != "none":
        g.add_argument(
            "--output",
            required=spec.output == "required",
            metavar="PATH",
            help="output Parquet path (written atomically)",
        )
    g.add_argument(
        "--report",
        metavar="PATH",
        help="JSON report path (default: <output>.report.json, or stdout without --output)",
    )
    g.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    keys = g.add_mutually_exclusive_group()
    keys.add_argument(
        "--noise-key-file",
        metavar="PATH",
        help="file with the release's secret key (>= 32 random bytes, e.g. from a secret "
        "store); a re-run with the same key, input and parameters is the same release "
        "(default: a fresh key from OS entropy)",
    )
    keys.add_argument(
        "--seed", type=int, default=None, help="derive the key from a seed: NOT for production"
    )
    g.add_argument("--config", metavar="FILE", help="YAML/JSON defaults, e.g. conf/<job>.yaml")
    g.add_argument("--user-col", default=USER_ID, help="user/person id column (default user_id)")
    g.add_argument("--item-col", default=ITEM, help="item column (default item)")
    g.add_argument("--record-col", default=RECORD_ID, help="record id column (default record_id)")
    g.add_argument("--drop-nulls", action="store_true", help="drop rows with null ids")
    g.add_argument(
        "--spark-conf",
        action="append",
        metavar="KEY=VALUE",
        help="extra Spark setting (repeatable); spark-submit's own settings win",
    )
    g.add_argument("--master", default=None, help="master for a plain python run (local[*])")
    g.add_argument("--log-level", default="INFO", help="spark_dp log level (default INFO)")
    g.add_argument("--ledger", metavar="PATH", help="append this release to a budget ledger")
    g.add_argument("--dataset-id", metavar="ID", help="dataset name in the ledger")
    add_param_arguments(parser, spec.params_cls)
    return parser


def _report_path(args: argparse.Namespace) -> str | None:
    if args.report:
        return args.report
    out = getattr(args, "output", None)
    return f"{out.rstrip('/')}.report.json" if out else None


def _append_ledger(args: argparse.Namespace, spec: JobSpec, report: PrivacyReport) -> None:
    from spark_dp.ledger import LedgerEntry, append_entry, dataset_id

    source = args.dataset_id or (dataset_id(args.input) if getattr(args, "input", None) else "")
    append_entry(
        args.ledger,
        LedgerEntry(
            dataset=source,
            job=spec.name,
            algorithm=report.algorithm,
            epsilon=report.epsilon_spent,
            delta=report.delta_spent,
            output=getattr(args, "output", None),
            report=_report_path(args),
            seed_mode=report.randomness.get("mode", "unknown"),
        ),
    )


def run_job(spec: JobSpec, argv: Sequence[str] | None = None) -> int:
    """Run ``spec`` with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    parser = build_parser(spec)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2)
        return int(exc.code or 0)
    configure_logging(args.log_level)
    log = get_logger(f"spark_dp.jobs.{spec.name}")
    t0 = time.perf_counter()
    created_session = False
    spark = None
    try:
        file_conf = load_config_file(args.config) if args.config else {}
        spark_conf = file_conf.pop("spark", {}) or {}
        if not isinstance(spark_conf, dict):
            raise ConfigError("the 'spark' section of the config file must be a mapping")
        spark_conf.update(parse_spark_conf_overrides(args.spark_conf))
        params: Any = resolve_params(
            spec.params_cls, file_conf, cli_overrides(args, spec.params_cls)
        )
        check_output_path(getattr(args, "output", None), args.overwrite)
        if getattr(args, "noise_key_file", None):
            randomness = Randomness.from_key_file(args.noise_key_file)
        else:
            randomness = Randomness.create(args.seed)
        if randomness.seeded:
            log.warning("key derived from a seed: reproducible noise, NOT for production")
        log.info("release key %s, fingerprint %s", randomness.mode, randomness.fingerprint)

        from pyspark.sql import SparkSession

        created_session = SparkSession.getActiveSession() is None
        from spark_dp.session import get_session

        spark = get_session(f"spark_dp.{spec.name}", spark_conf, master=args.master)
        report = PrivacyReport(spec.name, spec.guarantee)
        report.parameters = params_to_dict(params)
        report.randomness = randomness.to_report()
        report.spark = {"version": spark.version, "master": spark.sparkContext.master}
        ctx = JobContext(
            spec=spec,
            args=args,
            params=params,
            spark=spark,
            randomness=randomness,
            report=report,
            timer=StageTimer(log),
            log=log,
        )
        summary = spec.execute(ctx)
        report.timings = dict(ctx.timer.seconds, total=round(time.perf_counter() - t0, 3))
        report.write(_report_path(args), spark=spark)
        if args.ledger and report.budget:
            _append_ledger(args, spec, report)
        log.info("%s done in %.1f s: %s", spec.name, time.perf_counter() - t0, summary)
        return EXIT_OK
    except SparkDPUserError as exc:
        log.error("%s", exc)
        print(f"spark_dp {spec.name}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        log.error("interrupted")
        return EXIT_FAILURE
    except Exception:
        log.exception("%s failed", spec.name)
        return EXIT_FAILURE
    finally:
        if created_session and spark is not None:
            spark.stop()
