"""What a run asks for, decided before it reads any data: :class:`Settings`, :class:`Request`
and the release's :class:`Identity` (the line: docs/design/job-line.md).

* :func:`read_settings` (no Spark): the unsafe flags, the config file, Spark's settings
  (``--spark-conf``, ``--private-spark-ui``, Delta's extension), the books (a budget store, the
  default ledger or none);
* :func:`prepare` (Spark only for a config file only Spark can read, or a catalog table): the
  parameters (defaults < config file < command line), the algorithm's data-free plan, once,
  every path checked (:class:`~spark_dp.io.paths.PathPlan`) and every column flag against the
  local tables' schemas. ``--dry-run`` prints this (:func:`print_dry_run`);
* :func:`identify` (metadata only; Spark only to list a Hadoop input or a Delta log): the key,
  unbound, and the request's identity: its effective arguments (:func:`release_arguments`), the
  key's fingerprint and every input's location and listing
  (:func:`spark_dp.release_ids.run_identity`).

A failure here is one line on stderr and exit code 2 (:mod:`spark_dp.jobs.runner`).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import logging
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from spark_dp.checks import check_delta_confirmed, check_finite_plan, privacy_warnings
from spark_dp.config import params_to_dict, parse_spark_conf_overrides, resolve_params
from spark_dp.config_flags import cli_overrides, deprecation_warnings
from spark_dp.errors import ConfigError, ParameterError
from spark_dp.io.columns import ITEM, RECORD_ID, USER_ID
from spark_dp.io.delta import DELTA_EXTENSION, DELTA_SESSION_CONF
from spark_dp.io.paths import (
    APPEND,
    READ,
    WRITE,
    PathPlan,
    PathSpec,
    confidential_path,
    default_report_path,
)
from spark_dp.io.probe import input_format
from spark_dp.io.schema_peek import ColumnRule, check_columns, peek_schema
from spark_dp.jobs.config_source import ConfigSource, locate_config
from spark_dp.jobs.monitoring import private_spark_conf
from spark_dp.jobs.report_pairs import check_reports_beside
from spark_dp.jobs.spec import JobSpec
from spark_dp.randomness import Randomness

if TYPE_CHECKING:
    from spark_dp.budget.ledger import Ledger
    from spark_dp.jobs.run_session import RunSession

__all__ = [
    "NOT_IN_RELEASE",
    "Books",
    "Identity",
    "Request",
    "Settings",
    "identify",
    "prepare",
    "print_dry_run",
    "read_settings",
    "release_arguments",
    "report_path",
    "resolve_run_params",
]


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Books:
    """Where the run's release is charged: a budget store (``--budget-store``), else the
    default ledger (unless ``--no-ledger``: none), and the dataset it is charged to."""

    store: str | None = None
    ledger: Ledger | None = None
    dataset_id: str | None = None

    @property
    def kept(self) -> bool:
        """Whether the release is recorded anywhere."""
        return bool(self.store) or self.ledger is not None


@dataclass(frozen=True)
class Settings:
    """The command line, the config file and Spark's settings, read without Spark.

    Attributes:
        file_conf: the config file's parameters (its ``spark`` section and budget keys taken
            out); empty for a config file only Spark can read (``config.deferred``).
        spark_conf: Spark's settings for the session the run starts.
        spark_conf_given: the keys of ``spark_conf`` given with ``--spark-conf``.
    """

    spec: JobSpec
    parser: argparse.ArgumentParser
    args: argparse.Namespace
    log: logging.Logger
    config: ConfigSource | None
    file_conf: Mapping[str, Any]
    spark_conf: Mapping[str, str]
    spark_conf_given: frozenset[str]
    books: Books


def read_settings(
    spec: JobSpec, parser: argparse.ArgumentParser, args: argparse.Namespace, log: logging.Logger
) -> Settings:
    """The run's settings, checked in the order a user meets them (each refusal is one line):
    unsafe flags, the config file, ``--spark-conf``, ``--private-spark-ui``, Delta, the
    settings Spark would refuse with a trace, the books."""
    _check_unsafe_flags(spec, args)
    config = None if args.config is None else locate_config(args.config)
    file_conf = config.load() if config is not None and not config.deferred else {}
    section = file_conf.pop("spark", {}) or {}
    if not isinstance(section, dict):
        raise ConfigError("the 'spark' section of the config file must be a mapping")
    given = parse_spark_conf_overrides(args.spark_conf)
    spark_conf = {str(k): str(v) for k, v in section.items()} | given
    private_spark_conf(args, spark_conf, log)  # --private-spark-ui: UI and event log off
    _delta_spark_conf(args, spark_conf)
    _check_spark_conf(args, spark_conf, set(given))
    books = _books(spec, args, file_conf)
    return Settings(spec, parser, args, log, config, file_conf, spark_conf, frozenset(given), books)


def _check_unsafe_flags(spec: JobSpec, args: argparse.Namespace) -> None:
    used = [f for dest, f in spec.unsafe_flags if getattr(args, dest, None)]
    if getattr(args, "unsafe_debug_logs", False):
        used.insert(0, "--unsafe-debug-logs")
    if used and not getattr(args, "allow_unsafe_debug", False):
        raise ConfigError(
            f"{used[0]} exposes private data: add --allow-unsafe-debug to confirm (test data "
            "only; the report marks the run as not a normal release)"
        )


def delta_flag(args: argparse.Namespace) -> str | None:
    """The flag that makes this run read or write Delta Lake, or None."""
    if getattr(args, "input_format", None) == "delta":
        return "--input-format delta"
    if getattr(args, "output_format", None) == "delta":
        return "--output-format delta"
    return None


def _delta_spark_conf(args: argparse.Namespace, spark_conf: dict[str, str]) -> None:
    """A run that reads or writes Delta starts its session with Delta's extension and catalog
    (:data:`~spark_dp.io.delta.DELTA_SESSION_CONF`), unless given: an extension list given
    gets Delta's appended. ``--input-version`` without a Delta input is refused."""
    if getattr(args, "input_version", None) is not None and args.input_format != "delta":
        raise ConfigError(
            "--input-version reads a version of a Delta table: add --input-format delta, or "
            "drop --input-version"
        )
    if delta_flag(args) is None:
        return
    for key, value in DELTA_SESSION_CONF.items():
        given = spark_conf.get(key)
        if not given:
            spark_conf[key] = value
        elif key == "spark.sql.extensions" and DELTA_EXTENSION not in given:
            spark_conf[key] = f"{given},{value}"


_MASTER = re.compile(
    r"^(local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|spark://\S+|yarn|"
    r"k8s://\S+|sc://\S+)$"
)
_SIZE = re.compile(r"^\s*(\d+)\s*(b|kb?|mb?|gb?|tb?|pb?)?\s*$", re.I)
_UNIT = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
DRIVER_MEMORY_MIN = 512 << 20
"""The smallest ``spark.driver.memory`` a plain run starts with: Spark reserves 300 MiB of the
heap and refuses to start with less than 1.5 times that (a JVM's usable heap is a little below
its ``-Xmx``)."""


def _check_spark_conf(
    args: argparse.Namespace, spark_conf: Mapping[str, str], given: set[str]
) -> None:
    """Settings Spark would refuse at start-up with a Java trace, refused here in one line:
    ``--master`` that is no master URL, and (for a plain run, whose driver JVM starts here) a
    driver or executor memory that is not a size, or a driver memory below
    :data:`DRIVER_MEMORY_MIN`."""
    from spark_dp.session import launched_by_spark_submit

    if launched_by_spark_submit():
        return  # spark-submit has started the driver with its own settings

    def shown(key: str) -> str:
        value = spark_conf[key]
        if key in given:
            return f"--spark-conf {key}={value}"
        return f"{key}: {value} (the config file's spark: section)"

    master = args.master if args.master is not None else spark_conf.get("spark.master")
    if master is not None and not _MASTER.match(master):
        shown_master = master or "''"
        where = f"--master {shown_master}" if args.master is not None else shown("spark.master")
        raise ConfigError(
            f"{where} is not a Spark master URL; use local[N], local[*], spark://host:port, "
            "yarn, k8s://https://host:port or sc://host:port"
        )
    for key in ("spark.driver.memory", "spark.executor.memory"):
        if key not in spark_conf:
            continue
        m = _SIZE.match(spark_conf[key])
        if not m:
            raise ConfigError(f"{shown(key)} is not a size; write it like 2g or 512m")
        unit = (m.group(2) or "m")[0].lower()  # Spark reads a bare number as MiB
        if key == "spark.driver.memory" and int(m.group(1)) * _UNIT[unit] < DRIVER_MEMORY_MIN:
            raise ConfigError(
                f"{shown(key)} is too small: Spark needs at least 512m for the driver (it "
                "reserves 300 MiB and wants 1.5 times that)"
            )


_BOOK_KEYS = {"budget_store": "budget_store", "budget-store": "budget_store"}
_BOOK_KEYS |= {"dataset_id": "dataset_id", "dataset-id": "dataset_id"}


def _books(spec: JobSpec, args: argparse.Namespace, file_conf: dict[str, Any]) -> Books:
    """The store and dataset id from the flags, else from the config file's top level (taken
    out of it); without a store, the default ledger (checked writable now: one line if not)."""
    from_file = {_BOOK_KEYS[k]: file_conf.pop(k) for k in list(file_conf) if k in _BOOK_KEYS}
    if not spec.spends_budget:
        if from_file:
            raise ConfigError(
                f"config key {next(iter(from_file))!r}: job {spec.command} spends no privacy budget"
            )
        return Books()
    store = _first(args.budget_store, from_file.get("budget_store"))
    dataset_id = _first(args.dataset_id, from_file.get("dataset_id"))
    if dataset_id is not None and not dataset_id.strip():
        raise ConfigError("--dataset-id is an empty string; pass a stable name of the users")
    if store is not None and not store.strip():
        raise ConfigError("--budget-store is an empty string; pass a URL such as sqlite:///b.db")
    if store and getattr(args, "debug_report", None):
        raise ConfigError(
            "--debug-report writes the private curve: it is refused with a budget store "
            "(--budget-store); run it on test data without a store"
        )
    if store and getattr(args, "unsafe_debug_logs", False):
        raise ConfigError(
            "--unsafe-debug-logs writes private counts to the log: it is refused with a budget "
            "store (--budget-store); run it on test data without a store"
        )
    if store and args.seed is not None and not args.allow_test_seed_with_budget_store:
        raise ConfigError(
            "--seed derives the key from a seed anyone can guess: it is refused with a budget "
            "store (a charged release must have secret noise); use --noise-key-file, or add "
            "--allow-test-seed-with-budget-store for a test store (the store marks the release)"
        )
    return Books(store, _ledger(args, store), dataset_id)


def _ledger(args: argparse.Namespace, store: str | None) -> Ledger | None:
    """The default ledger of a run without a store (``--no-ledger``: none)."""
    from spark_dp.budget.ledger import Ledger

    if store:
        given = "--no-ledger" if args.no_ledger else "--ledger-file" if args.ledger_file else ""
        if given:
            raise ConfigError(
                f"{given}: this run is charged to the budget store {store!r}; "
                f"{given} only applies to a run without a store"
            )
        return None
    if args.no_ledger:
        return None
    ledger = Ledger.resolve(args.ledger_file)
    ledger.check()
    return ledger


def _first(flag: str | None, from_file: Any) -> str | None:
    """The flag's value if given (even empty: refused by the caller), else the config file's."""
    if flag is not None:
        return flag
    return None if from_file is None else str(from_file)


# --------------------------------------------------------------------------- the request


@dataclass(frozen=True)
class Request:
    """What the run asks for, checked, before any data is read.

    Attributes:
        flags: the arguments, with a catalog table's location and format in place of its name
            (a copy: the parsed arguments are never changed).
        params: the checked parameters (defaults < config file < command line).
        plan: the algorithm's data-free plan (``spec.plan(params)``), computed once; the same
            plan is reserved and executed. ``None`` for a job without one.
        paths: every path of the run, checked (:class:`~spark_dp.io.paths.PathPlan`).
        report: where the report goes (``None``: stdout).
        output_table: ``--output-table``'s (name, format, location, existed), registered in
            the catalog after the commit.
    """

    settings: Settings
    flags: argparse.Namespace
    params: Any
    plan: Any
    paths: PathPlan
    report: str | None
    output_table: tuple[str, str, str, bool] | None = None

    @property
    def spec(self) -> JobSpec:
        return self.settings.spec

    @property
    def log(self) -> logging.Logger:
        return self.settings.log

    @property
    def algorithm(self) -> str | None:
        """The algorithm the run's plan runs (the ids and the books name it)."""
        if self.spec.spends_budget:
            return self.plan.algorithm
        return self.chosen

    @property
    def chosen(self) -> str | None:
        """The ``algorithm`` (or ``method``) parameter, as given (the Spark UI's label)."""
        return getattr(self.params, "algorithm", None) or getattr(self.params, "method", None)


def report_path(args: argparse.Namespace, confidential: bool = False) -> str | None:
    """``--report``, else ``<output>.report.json``, else ``None`` (the report goes to stdout).

    A ``confidential`` report (a job whose report holds private values: contribution bounding's
    counts) is named ``*.confidential.json`` (:func:`~spark_dp.io.paths.confidential_path`)."""
    if args.report is None:
        out = getattr(args, "output", None)
        return default_report_path(out, confidential) if out else None
    path = str(args.report)  # an empty one is refused by the path plan
    return confidential_path(path) if confidential and path.strip() else path


def prepare(settings: Settings, session: RunSession) -> Request:
    """The request: catalog tables located, parameters resolved, the plan made once, every
    path and column checked. Spark starts here only for a config file only Spark can read or
    a catalog table (``session.get()``; no row is read)."""
    spec, flags = settings.spec, copy.copy(settings.args)
    file_conf = dict(settings.file_conf)
    if settings.config is not None and settings.config.deferred:
        file_conf = session.read_deferred_config(settings.config)
    output_table = None
    if getattr(flags, "input_table", None) or getattr(flags, "output_table", None):
        output_table = _locate_tables(flags, session.get())
    params = resolve_run_params(settings, flags, file_conf)
    plan = _plan(spec, params)
    report = report_path(flags, spec.confidential)
    paths = PathPlan(
        _path_specs(settings, flags, params, plan, report),
        plain_is_local=session.plain_paths_local(),
    )
    paths.check_conflicts()
    paths.prepare_local(overwrite=flags.overwrite, recover_commits=not flags.dry_run)
    check_reports_beside(paths, report, flags, spec.confidential)
    request = Request(settings, flags, params, plan, paths, report, output_table)
    _check_schemas(request)
    return request


def _locate_tables(flags: argparse.Namespace, spark: Any) -> tuple[str, str, str, bool] | None:
    """``--input-table`` and ``--output-table``: their locations (and the input's format) from
    the session's catalog, metadata only (:mod:`spark_dp.io.catalog`), written into ``flags``;
    the run then reads and writes those locations as paths, under every rule a path has."""
    from spark_dp.io.catalog import resolve_input, resolve_output

    name = getattr(flags, "input_table", None)
    if name:
        flags.input, flags.input_format = resolve_input(spark, name, flags.input_format)
    out = getattr(flags, "output_table", None)
    if not out:
        return None
    flags.output, exists = resolve_output(
        spark, out, flags.output_format, overwrite=flags.overwrite, input_table=name
    )
    return (out, flags.output_format, flags.output, exists)


def resolve_run_params(
    settings: Settings, flags: argparse.Namespace, file_conf: dict[str, Any]
) -> Any:
    """Defaults < config file < command line, validated; required values present."""
    spec = settings.spec
    given = cli_overrides(flags, spec.params_cls)
    for name in spec.required:
        flag_key = _flag_of(spec, name).lstrip("-").replace("-", "_")
        in_file = any(str(k).replace("-", "_") in (name, flag_key) for k in file_conf)
        if given.get(name) is None and not in_file:
            raise ConfigError(
                f"{_flag_of(spec, name)} is required: pass it on the command line or set "
                f"{name} in the config file (no default is assumed for it)"
            )
    for sentence in deprecation_warnings(flags):
        settings.log.warning("%s", sentence)
    allowed = _large_delta_allowed(flags, file_conf)
    params: Any = resolve_params(spec.params_cls, file_conf, given)
    delta = getattr(params, "delta", None)
    shown = f"--delta {delta!r}" if given.get("delta") is not None else f"delta {delta!r} (config)"
    check_delta_confirmed(delta, shown, allowed=allowed)
    for sentence in privacy_warnings(getattr(params, "epsilon", None), delta):
        settings.log.warning("%s", sentence)
    return params


def _large_delta_allowed(flags: argparse.Namespace, file_conf: dict[str, Any]) -> bool:
    """``--allow-large-delta``, or ``allow_large_delta: true`` in the config file (taken out of
    it here; a job without the flag leaves the key to be refused as unknown)."""
    if not hasattr(flags, "allow_large_delta"):
        return False
    keys = [k for k in list(file_conf) if str(k) in ("allow_large_delta", "allow-large-delta")]
    from_file = [file_conf.pop(k) for k in keys]
    if any(not isinstance(v, bool) for v in from_file):
        raise ConfigError("config key allow_large_delta must be true or false")
    return bool(flags.allow_large_delta) or any(from_file)


def _plan(spec: JobSpec, p: Any) -> Any:
    """The job's data-free plan, once, from the checked parameters. The algorithm's own checks
    (an unknown name, a split it cannot use) fail here, before any path or key; so does an ε
    so small that a noise scale overflows (refused naming the values given)."""
    if spec.plan is None:
        return None
    given = f"--epsilon {p.epsilon!r}" if getattr(p, "epsilon", None) is not None else ""
    if getattr(p, "delta", None) is not None:
        given += f" (with --delta {p.delta!r})"
    try:
        with np.errstate(all="ignore"):  # an overflow becomes inf: refused by the check below
            plan = spec.plan(p)
            reports = [s.to_report() for s in (plan.steps if spec.spends_budget else ())]
    except (ZeroDivisionError, OverflowError) as exc:
        raise ParameterError(
            f"{given} is too small: the noise calibration overflows ({type(exc).__name__}); "
            "choose a larger value (typical ε: 0.1 to 10)"
        ) from None
    if reports:
        check_finite_plan(reports, given)
    return plan


def _flag_of(spec: JobSpec, name: str) -> str:
    for f in dataclasses.fields(spec.params_cls):
        if f.name == name:
            return str(f.metadata.get("flag") or "--" + name.replace("_", "-"))
    return "--" + name.replace("_", "-")


def _path_specs(
    settings: Settings, flags: argparse.Namespace, params: Any, plan: Any, report: str | None
) -> list[PathSpec]:
    spec, out = settings.spec, []
    if spec.needs_input:
        flag = f"--input-table {flags.input_table} at" if flags.input_table else "--input"
        out.append(PathSpec("input", flag, flags.input, READ, fmt=flags.input_format, table=True))
    if settings.config is not None and settings.config.local is not None:
        out.append(PathSpec("config", "--config", settings.config.local, READ, file=True))
    if getattr(flags, "noise_key_file", None) is not None:
        out.append(PathSpec("key", "--noise-key-file", flags.noise_key_file, READ, file=True))
    if getattr(flags, "output", None) is not None:
        table = getattr(flags, "output_table", None)
        flag = f"--output-table {table} at" if table else "--output"
        out.append(PathSpec("output", flag, flags.output, WRITE))
    if spec.paths is not None:
        out += spec.paths(flags, params, plan)
    if report is not None:
        flag = "--report" if flags.report is not None else "--report (default)"
        out.append(PathSpec("report", flag, report, WRITE, file=True))
    return out + _books_path_spec(settings.books)


def _books_path_spec(books: Books) -> list[PathSpec]:
    """The SQLite file of a store or of the ledger, as a path the job writes (never inside its
    input)."""
    if books.ledger is not None:
        flag = "--ledger-file" if not books.ledger.default else "the default ledger"
        return [PathSpec("ledger", flag, str(books.ledger.path), APPEND, file=True)]
    url = books.store
    if not url or not url.lower().startswith("sqlite:"):
        return []
    path = url.split(":///", 1)[1] if ":///" in url else ""
    if not path or path.startswith(":memory:"):
        return []  # BudgetStore.open refuses it with a clear message
    return [PathSpec("budget_store", "--budget-store", path.split("?", 1)[0], APPEND, file=True)]


_ID_COLUMNS = {
    "user": ("--user-col", USER_ID),
    "item": ("--item-col", ITEM),
    "record": ("--record-col", RECORD_ID),
}


def _check_schemas(request: Request) -> None:
    """Every column flag against the schema of each local table the run reads, from metadata
    only (a Parquet footer, a CSV header, a Delta log: no row, no Spark;
    :mod:`spark_dp.io.schema_peek`), so a wrong ``--user-col`` fails in one line before Spark
    starts, with ``--dry-run`` too. Catalog tables and Hadoop URIs are checked by Spark when it
    reads them, with the same rules."""
    spec, flags, paths = request.spec, request.flags, request.paths
    rules: dict[str, list[ColumnRule]] = {}
    if spec.needs_input and not getattr(flags, "input_table", None):
        rules["input"] = [
            ColumnRule(_ID_COLUMNS[c][0], getattr(flags, f"{c}_col"), _ID_COLUMNS[c][1])
            for c in spec.columns
        ]
    if spec.columns_read is not None:
        rules.update(spec.columns_read(flags, request.params, request.plan))
    for s in paths.specs:
        if s.role not in rules or s.access != READ or not s.table or not paths.is_local(s):
            continue
        version = getattr(flags, "input_version", None) if s.role == "input" else None
        schema = peek_schema(s.path, s.fmt, version=version)
        if schema is not None:
            check_columns(s.shown(), schema, rules[s.role])


def print_dry_run(request: Request) -> int:
    """``--dry-run``: the request as JSON on stdout (parameters, paths, Spark's settings, the
    calibration); exit code 0."""
    doc: dict[str, Any] = {
        "job": request.spec.name,
        "parameters": params_to_dict(request.params),
        "paths": request.paths.to_dict(),
        "spark_conf": dict(request.settings.spark_conf),
    }
    if request.spec.describe is not None:
        doc["calibration"] = request.spec.describe(request.plan)
    sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    sys.stdout.flush()
    return 0


# --------------------------------------------------------------------------- the identity


@dataclass(frozen=True)
class Identity:
    """The release's identity before any data is read.

    Attributes:
        key: the release key, unbound (bound once every table is read: :mod:`.lease`).
        arguments: the effective arguments that enter the ids (:func:`release_arguments`).
        inputs: role -> the input's identity (location and listing, never rows).
        input_versions: role -> the version of a Delta table read, pinned.
        request_id: :func:`spark_dp.release_ids.run_identity` of all the above.
    """

    key: Randomness
    arguments: Mapping[str, Any]
    inputs: Mapping[str, str]
    input_versions: Mapping[str, int]
    request_id: str


def identify(request: Request, session: RunSession) -> Identity:
    """The key (never logged: its fingerprint only, and not even that for a test seed, whose
    fingerprint would give the seed away) and the run's request: its effective arguments, key
    and the metadata identity of every table it reads (location and listing: names, sizes,
    times; a Delta table's location and the version read). A table read from a Hadoop URI is
    listed through Spark when the books need its identity, and a Delta table's version is
    always read from its log there (``session.get()``: still no row is read)."""
    from spark_dp.release_ids import input_identity, run_identity

    key = _make_key(request)
    paths = request.paths
    tables = [s for s in paths.specs if s.access == READ and s.table]
    remote = [s for s in tables if not paths.is_local(s)]
    if any(request.settings.books.kept or s.fmt == "delta" for s in remote):
        session.get()
    spark = session.classic()  # lists a Hadoop URI through Spark (no row is read)
    inputs: dict[str, str] = {}
    versions: dict[str, int] = {}
    for s in tables:
        if s.fmt == "delta":  # its version, pinned: the run reads that version
            inputs[s.role], versions[s.role] = _delta_input(request, s, spark)
        else:
            inputs[s.role] = input_identity(s.path, spark=spark)
    arguments = release_arguments(request)
    identity = run_identity(
        job=request.spec.name,
        algorithm=request.algorithm,
        arguments=arguments,
        key_fingerprint=key.fingerprint,
        inputs=inputs,
    )
    return Identity(key, arguments, inputs, versions, identity)


def _make_key(request: Request) -> Randomness:
    flags, log = request.flags, request.log
    if not request.spec.uses_key:
        return Randomness.create()
    if getattr(flags, "noise_key_file", None):
        request.paths.refuse_read_as_data("--noise-key-file", flags.noise_key_file)
        key = Randomness.from_key_file(flags.noise_key_file)
    else:
        key = Randomness.create(flags.seed)
    if key.seeded:
        log.warning("key derived from a seed: reproducible noise, NOT for production")
    else:
        log.info("release key %s, fingerprint %s", key.mode, key.fingerprint)
    return key


def _delta_input(request: Request, spec: PathSpec, spark: Any) -> tuple[str, int]:
    """The identity of the version of a Delta input the run reads (``--input-version``, else
    the latest now), and that version, so that the read is of that version."""
    from spark_dp.io.delta import check_version, delta_identity
    from spark_dp.io.fs import filesystem

    paths = request.paths
    fs = filesystem(spec.path, spark, plain_is_local=paths.plain_is_local)
    given = getattr(request.flags, "input_version", None) if spec.role == "input" else None
    version = check_version(fs, spec.path, given, flag=spec.flag)
    return delta_identity(fs, paths.resolved[spec], spec.path, version), version


NOT_IN_RELEASE: dict[str, str] = {
    "help": "prints the usage; no run",
    # where the run reads: each table enters the request and the release id through its input
    # identity (location and listing) and the release id through its content digest
    "input": "a table: its input identity and content digest are in the ids",
    "capacities": "a table: its input identity and content digest are in the ids",
    "record_weights": "a table: its input identity and content digest are in the ids",
    "config": "a path; the values it sets are in the resolved parameters",
    "input_table": "a table: its location's input identity and content digest are in the ids",
    "input_version": "the Delta version read (given or the latest) is in the input identity",
    # where the run writes: the same release may be written anywhere
    "output": "where the release is written, not what it is",
    "output_table": "where the release is written, not what it is",
    "output_format": "how the release is written (Parquet or Delta files), not what it is",
    "report": "where the report is written",
    "user_state": "where the user state is written",
    "work_dir": "where the resumable state is kept",
    "keep_work_dir": "whether the work directory is kept after the commit",
    "debug_report": "an extra NON-PRIVATE file beside the release; the release is the same",
    "overwrite": "whether an existing output may be replaced",
    # the key: it enters through its fingerprint
    "noise_key_file": "the key's path; the key enters through its fingerprint",
    "seed": "the test key's seed; the key enters through its fingerprint (a job without a key, "
    "generate, keeps its public data seed in)",
    "allow_test_seed_with_budget_store": "confirms --seed with a store; the seed's key is in",
    # how Spark runs: a release is a function of (key, rows, arguments), whatever the plan
    "spark_conf": "Spark settings: the noise is keyed by each row, never by the partitioning",
    "master": "where Spark runs: the same release on local[1] and a cluster",
    "private_spark_ui": "turns Spark's UI and event log off; the computation is the same",
    "log_level": "what the log shows",
    "allow_unsafe_debug": "confirms an unsafe debugging flag (the flags it confirms are in)",
    "allow_large_delta": "confirms a δ above 1e-3 (the δ it confirms is in)",
    "dry_run": "prints the plan; no release",
    "json": "how the answer (the preview: its predictions) is printed; the release is the same",
    # the budget: where the release is charged, not what it is
    "budget_store": "where the release is charged",
    "dataset_id": "which budget the release is charged to",
    "ledger": "replaced by --budget-store; refused",
    "ledger_file": "where the release is recorded",
    "no_ledger": "whether the release is recorded",
}
"""The arguments left out of the release id, each with its reason. A release id must change
with every argument that can change the output (a column name, null handling, the input
format, a component method, a capacity column, ...), so it is derived from the **effective**
arguments of the run: every parameter as resolved from defaults, the config file and the
command line, and every other flag of the job's parser, minus these. A flag added later is
therefore covered by default; ``tests/privacy/test_release_binding.py`` checks both ways."""


def release_arguments(request: Request) -> dict[str, Any]:
    """The effective arguments of ``request`` that enter its ids (:data:`NOT_IN_RELEASE`), from
    the parser the run was parsed with."""
    flags, spec = request.flags, request.spec
    params = request.params
    out = params_to_dict(params) if dataclasses.is_dataclass(params) else {}
    for action in request.settings.parser._actions:
        dest = action.dest
        if dest not in out and dest != argparse.SUPPRESS:
            out[dest] = getattr(flags, dest, None)
    if "input_format" in out:  # the format the input is read as (the name's, by default)
        out["input_format"] = input_format(str(flags.input), flags.input_format)
    for dest in NOT_IN_RELEASE:
        if dest == "seed" and not spec.uses_key:
            continue  # generate's --seed is its public data seed, not a key
        out.pop(dest, None)
    return out
