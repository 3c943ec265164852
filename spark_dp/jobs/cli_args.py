"""The command-line vocabulary every job shares, and each job's parser.

Common flags (a job gets only those it uses: :class:`~spark_dp.jobs.spec.JobSpec` says which)::

    --input PATH          Parquet file or directory (or CSV with --input-format csv)
    --input-format F      parquet | csv | delta (default: from the file name)
    --input-version N     with delta: the version read (default: the latest at the start)
    --input-table NAME    instead of --input: a table of the session's catalog
    --output PATH         the job's Parquet result (staged, moved into place at the commit)
    --output-table NAME   instead of --output: a table of the session's catalog
    --output-format F     parquet | delta (a Delta table, one commit, moved into place)
    --report PATH         JSON report (default <output>.report.json, or stdout)
    --overwrite           replace existing outputs (never a path the job also reads)
    --json                print the answer as one JSON object instead of one line
    --noise-key-file PATH the release key: a key file from `spark-dp keygen --out PATH`
    --seed INT            a key derived from a seed: tests only (generate: the data seed)
    --config FILE         YAML/JSON defaults: a local file, a Hadoop URI, or a file shipped
                          with spark-submit --files (give its name)
    --user-col/--item-col/--record-col NAME   input column names (the job's id columns only)
    --strict-input        fail on a null id, an empty input or an invalid capacity row
                          instead of dropping them (the exit code then tells one bit)
    --spark-conf K=V      extra Spark settings (never override spark-submit's)
    --master URL          master for a plain `python jobs/...` run (default local[*])
    --log-level LEVEL     DEBUG | INFO | WARNING | ERROR (default INFO)
    --dry-run             print the resolved configuration, paths and calibration; no Spark
    --budget-store URL    the privacy-budget store (sqlite:///budget.db, postgresql://...):
                          (ε, δ) reserved before any data is read, refused with exit 3,
                          charged for good once data is read
    --dataset-id ID       the privacy unit charged (default: the resolved --input)
    --allow-test-seed-with-budget-store   --seed with a store (test stores only; marked)
    --allow-large-delta   accept a --delta above 1e-3 (refused otherwise, exit 2; config key
                          allow_large_delta)
    --ledger-file PATH    without a store: the ledger the run is recorded in (default
                          $SPARK_DP_LEDGER, else $XDG_STATE_HOME/spark-dp/ledger.db)
    --no-ledger           without a store: run without any record of the ε spent
    --private-spark-ui    Spark's UI, console progress and event log off (they show row counts)
    --unsafe-debug-logs   log private counts (needs --allow-unsafe-debug; in the report)
    --allow-unsafe-debug  confirm an unsafe debugging flag (never on production data)

The per-user bound is ``--max-contributions`` in every job, the parameter ``max_contributions``
of every family (``--max-items-per-user``, ``--max-contribution`` and ``--capacity``, and the
same names as config keys, are deprecated aliases for one release; docs/design/naming.md); the
two betas are ``--truncation-beta`` (partition selection) and ``--failure-probability``
(distinct count); ``--epsilon`` is required by every job that spends budget (from the command
line or the config file). Usage errors print one line and exit 2.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, NoReturn

from spark_dp.checks import DELTA_CONFIRM
from spark_dp.config_flags import add_param_arguments
from spark_dp.io import ITEM, RECORD_ID, USER_ID
from spark_dp.io.probe import INPUT_FORMATS
from spark_dp.jobs.failures import say

if TYPE_CHECKING:
    from spark_dp.jobs.spec import JobSpec

__all__ = ["LOG_LEVELS", "OUTPUT_FORMATS", "OneLineParser", "build_parser"]

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
OUTPUT_FORMATS = ("parquet", "delta")

_COLUMNS = {
    "user": ("--user-col", USER_ID, "user/person id column"),
    "item": ("--item-col", ITEM, "item column"),
    "record": ("--record-col", RECORD_ID, "record id column"),
}


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (the full usage is ``--help``)."""

    def error(self, message: str) -> NoReturn:
        say(f"{self.prog}: error: {message} (see {self.prog} --help)")
        raise SystemExit(2)


class _NoLongerNeeded(argparse.Action):
    """``--drop-nulls``: what it asked for is the default now; a deprecated no-op (one warning,
    removed in :data:`spark_dp.config.ALIASES_REMOVED_IN`; no dest, so not in the release id)."""

    def __init__(self, option_strings: list[str], dest: str, **kw: object) -> None:
        super().__init__(option_strings, argparse.SUPPRESS, nargs=0, **kw)  # type: ignore[arg-type]

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        notes = list(getattr(namespace, "deprecated_flags", None) or [])
        why = "it does nothing: rows with a null id are dropped by default (--strict-input fails)"
        namespace.deprecated_flags = [*notes, (option_string or self.option_strings[0], why)]


class _Replaced(argparse.Action):
    """``--ledger``: the JSONL ledger was replaced (one clear error)."""

    def __init__(self, option_strings: list[str], dest: str, **kw: object) -> None:
        super().__init__(option_strings, dest, nargs=1, **kw)  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        parser.error(
            "--ledger (a JSONL file) was replaced: every run is recorded in the default ledger "
            "(--ledger-file PATH to choose its SQLite file), or pass --budget-store URL"
        )


def _version(value: str) -> int:
    try:
        version = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a version number: {value!r}") from None
    if version < 0:
        raise argparse.ArgumentTypeError(f"a Delta version is >= 0, got {version}")
    return version


def _log_level(value: str) -> str:
    level = value.strip().upper()
    if level == "WARN":
        level = "WARNING"
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"choose one of {', '.join(LOG_LEVELS)}")
    return level


def build_parser(spec: JobSpec, prog: str | None = None) -> argparse.ArgumentParser:
    """The parser of a job: the common flags it uses, then its parameters."""
    epilog = ""
    if spec.examples:
        epilog = "examples:\n" + "\n".join(f"  {e}" for e in spec.examples)
    parser = OneLineParser(
        prog=prog or f"spark-dp {spec.command}",
        description=spec.description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    _io_flags(parser, spec)
    _key_flags(parser, spec)
    _run_flags(parser)
    if spec.spends_budget:
        _budget_flags(parser, spec)
    if spec.needs_input:
        _debug_flags(parser)
    if spec.add_flags is not None:
        spec.add_flags(parser)
    add_param_arguments(parser, spec.params_cls, spec.registries, spec.required)
    return parser


def _io_flags(parser: argparse.ArgumentParser, spec: JobSpec) -> None:
    """Input, output, report, overwrite and the job's id columns."""
    files = parser.add_argument_group("input and output")
    if spec.needs_input:
        _input_flags(files)
    if spec.output != "none":
        _output_flags(files, required=spec.output == "required")
    files.add_argument(
        "--report",
        metavar="PATH",
        help="JSON report, written last: its presence marks a complete release "
        "(default: <output>.report.json, or stdout without --output)",
    )
    files.add_argument(
        "--overwrite",
        action="store_true",
        help="replace existing outputs (never a path the job also reads)",
    )
    files.add_argument(
        "--json",
        action="store_true",
        help="print the job's answer (its last line on stdout; the preview's predictions) as "
        "one JSON object, for scripts",
    )
    for col in spec.columns:
        flag, default, what = _COLUMNS[col]
        files.add_argument(flag, default=default, help=f"{what} (default {default})")
    if spec.needs_input:
        files.add_argument(
            "--strict-input",
            action="store_true",
            help="fail (exit 2) on a row with a null id, an empty input or an invalid capacity "
            "row instead of dropping it (the default): the exit code then tells one bit about "
            "the data (docs/privacy/caveats.md#bad-rows)",
        )
        files.add_argument("--drop-nulls", action=_NoLongerNeeded, help=argparse.SUPPRESS)


def _input_flags(files: argparse._ArgumentGroup) -> None:
    """``--input`` or ``--input-table``, its format and Delta version."""
    source = files.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", metavar="PATH", help="input Parquet (or CSV, or Delta)")
    source.add_argument(
        "--input-table",
        metavar="NAME",
        help="instead of --input: a table of the session's catalog ([DATABASE.]TABLE, "
        "Parquet, or Delta with --input-format delta), read at its location",
    )
    files.add_argument(
        "--input-format",
        choices=list(INPUT_FORMATS),
        default=None,
        help="input format (default: csv for *.csv, else parquet); delta: a Delta Lake "
        "table (the job sets Delta's session settings; its jars: --packages)",
    )
    files.add_argument(
        "--input-version",
        type=_version,
        default=None,
        metavar="N",
        help="with --input-format delta: read version N of the table (time travel; "
        "default: its latest version when the run starts)",
    )


def _output_flags(files: argparse._ArgumentGroup, *, required: bool) -> None:
    """``--output`` or ``--output-table``, and its format."""
    target = files.add_mutually_exclusive_group(required=required)
    target.add_argument(
        "--output",
        metavar="PATH",
        help="output Parquet path (staged, moved into place with the report)",
    )
    target.add_argument(
        "--output-table",
        metavar="NAME",
        help="instead of --output: a table of the session's catalog ([DATABASE.]TABLE), "
        "written at its location (staged, moved into place with the report, then "
        "registered)",
    )
    files.add_argument(
        "--output-format",
        choices=list(OUTPUT_FORMATS),
        default="parquet",
        help="output format (default parquet); delta: a Delta Lake table written in one "
        "commit and moved into place with the report",
    )


def _key_flags(parser: argparse.ArgumentParser, spec: JobSpec) -> None:
    """The release key (``--noise-key-file`` or a test seed), or the generator's public seed."""
    if not spec.uses_key:
        parser.add_argument(
            "--seed",
            type=int,
            default=None,
            help="seed of the synthetic data (public; default: drawn and written to the report)",
        )
        return
    keys = parser.add_argument_group("release key").add_mutually_exclusive_group()
    keys.add_argument(
        "--noise-key-file",
        metavar="PATH",
        help="the release's secret key, a file written by `spark-dp keygen --out PATH` (kept "
        "in a secret store, mode 0600); a re-run with the same key, input and parameters is "
        "the same release (default: a fresh key from OS entropy)",
    )
    keys.add_argument(
        "--seed", type=int, default=None, help="derive the key from a seed: NOT for production"
    )


def _run_flags(parser: argparse.ArgumentParser) -> None:
    """Configuration file, Spark settings, master, log level and the dry run."""
    run = parser.add_argument_group("configuration and run")
    run.add_argument(
        "--config",
        metavar="FILE",
        help="YAML/JSON defaults: a local file (e.g. conf/<job>.yaml), a Hadoop URI, or the "
        "name of a file shipped with spark-submit --files",
    )
    run.add_argument(
        "--spark-conf",
        action="append",
        metavar="KEY=VALUE",
        help="extra Spark setting (repeatable); spark-submit's own settings win",
    )
    run.add_argument("--master", default=None, help="master for a plain python run (local[*])")
    run.add_argument(
        "--log-level",
        type=_log_level,
        default="INFO",
        metavar="{" + ",".join(LOG_LEVELS) + "}",
        help="spark_dp log level (default INFO)",
    )
    run.add_argument(
        "--private-spark-ui",
        action="store_true",
        help="start Spark with its UI, console progress bar and event log off (they show exact "
        "row counts of the input; see conf/private-spark.conf); refused if Spark already runs "
        "with its UI on",
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="check everything, print the resolved configuration, paths and calibration as "
        "JSON, and exit without starting Spark",
    )


def _budget_flags(parser: argparse.ArgumentParser, spec: JobSpec) -> None:
    """The budget store and the dataset charged (jobs that spend budget); the confirmation of
    a large δ (jobs with ``--delta``)."""
    budget = parser.add_argument_group("privacy budget")
    budget.add_argument(
        "--budget-store",
        metavar="URL",
        help="budget store (sqlite:///path/budget.db or any SQLAlchemy URL): reserve this "
        "release's (ε, δ) before reading data, refuse with exit 3 over the dataset's cap "
        "(default: the config file's budget_store, else the default ledger)",
    )
    ledger = budget.add_mutually_exclusive_group()
    ledger.add_argument(
        "--ledger-file",
        metavar="PATH",
        help="without a store, the SQLite file this run is recorded in (default: "
        "$SPARK_DP_LEDGER, else $XDG_STATE_HOME/spark-dp/ledger.db); no cap unless one is set "
        "(spark-dp budget set-cap)",
    )
    ledger.add_argument(
        "--no-ledger",
        action="store_true",
        help="without a store, keep no record of the ε this run spends (on a cluster, prefer "
        "a shared --budget-store)",
    )
    budget.add_argument(
        "--dataset-id",
        metavar="ID",
        help="the privacy unit charged in the store: one stable id for the same users "
        "across runs and dates (default: the resolved --input)",
    )
    budget.add_argument(
        "--allow-test-seed-with-budget-store",
        action="store_true",
        help="allow --seed with --budget-store (a test store only: anyone who guesses the "
        "seed has the noise; the store and the report mark the release)",
    )
    budget.add_argument("--ledger", action=_Replaced, help=argparse.SUPPRESS)
    if any(f.name == "delta" for f in dataclasses.fields(spec.params_cls)):
        budget.add_argument(
            "--allow-large-delta",
            action="store_true",
            help=f"accept a --delta above {DELTA_CONFIRM:g}, refused otherwise (exit 2): δ is the "
            "probability that the guarantee fails outright, typically below 1/(number of "
            "users); config key allow_large_delta",
        )


def _debug_flags(parser: argparse.ArgumentParser) -> None:
    """The unsafe debugging switches (jobs with input)."""
    debug = parser.add_argument_group("unsafe debugging (never on production data)")
    debug.add_argument(
        "--unsafe-debug-logs",
        action="store_true",
        help="also log private counts of the input and intermediate data; the report and the "
        "release id record it (needs --allow-unsafe-debug; refused with a budget store)",
    )
    debug.add_argument(
        "--allow-unsafe-debug",
        action="store_true",
        help="confirm an unsafe debugging flag; a config file cannot set either",
    )
