"""The phases of a job run that come before Spark starts: config, parameters, path plan, key.

A failure here is one line on stderr and exit code 2, without a JVM (see
:mod:`spark_dp.jobs.runner` for the whole sequence).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
from typing import Any

import numpy as np

from spark_dp.checks import check_delta_confirmed, check_finite_plan, privacy_warnings
from spark_dp.config import params_to_dict, parse_spark_conf_overrides, resolve_params
from spark_dp.config_flags import cli_overrides, deprecation_warnings
from spark_dp.errors import ConfigError, ParameterError
from spark_dp.io.catalog import register_output, resolve_input, resolve_output
from spark_dp.io.columns import ITEM, RECORD_ID, USER_ID
from spark_dp.io.delta import DELTA_EXTENSION, DELTA_SESSION_CONF
from spark_dp.io.fs import local_path
from spark_dp.io.paths import READ, WRITE, PathPlan, PathSpec
from spark_dp.io.schema_peek import ColumnRule, check_columns, peek_schema
from spark_dp.io.write import plain_paths_local
from spark_dp.jobs.budget_hooks import budget_path_spec
from spark_dp.jobs.config_source import locate_config
from spark_dp.jobs.report_pairs import check_reports_beside
from spark_dp.jobs.run import Run, report_path
from spark_dp.jobs.spec import JobSpec
from spark_dp.randomness import Randomness

__all__ = [
    "check_schemas",
    "check_spark_conf",
    "check_unsafe_flags",
    "delta_flag",
    "delta_spark_conf",
    "dry_run",
    "load_config",
    "make_key",
    "plain_paths_local_before_spark",
    "plan_algorithm",
    "plan_paths",
    "register_tables",
    "resolve_run_params",
    "resolve_tables",
    "split_spark_conf",
    "uses_tables",
]


def load_config(run: Run) -> None:
    """Phase 2: the config file (local now, or through Spark once the session exists)."""
    if run.args.config is None:
        return
    run.config = locate_config(run.args.config)
    if not run.config.deferred:
        run.file_conf = run.config.load()


def split_spark_conf(run: Run) -> None:
    spark_conf = run.file_conf.pop("spark", {}) or {}
    if not isinstance(spark_conf, dict):
        raise ConfigError("the 'spark' section of the config file must be a mapping")
    run.spark_conf = {str(k): str(v) for k, v in spark_conf.items()}
    run.spark_conf.update(parse_spark_conf_overrides(run.args.spark_conf))


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


def delta_flag(args: argparse.Namespace) -> str | None:
    """The flag that makes this run read or write Delta Lake, or None."""
    if getattr(args, "input_format", None) == "delta":
        return "--input-format delta"
    if getattr(args, "output_format", None) == "delta":
        return "--output-format delta"
    return None


def delta_spark_conf(run: Run) -> None:
    """A run that reads or writes Delta starts its session with Delta's extension and catalog
    (:data:`~spark_dp.io.delta.DELTA_SESSION_CONF`), unless given: an extension list given
    gets Delta's appended. ``--input-version`` without a Delta input is refused."""
    args = run.args
    if getattr(args, "input_version", None) is not None and args.input_format != "delta":
        raise ConfigError(
            "--input-version reads a version of a Delta table: add --input-format delta, or "
            "drop --input-version"
        )
    if delta_flag(args) is None:
        return
    for key, value in DELTA_SESSION_CONF.items():
        given = run.spark_conf.get(key)
        if not given:
            run.spark_conf[key] = value
        elif key == "spark.sql.extensions" and DELTA_EXTENSION not in given:
            run.spark_conf[key] = f"{given},{value}"


def uses_tables(args: argparse.Namespace) -> bool:
    """Whether the run reads or writes a table of the session's catalog."""
    return bool(getattr(args, "input_table", None) or getattr(args, "output_table", None))


def resolve_tables(run: Run) -> None:
    """``--input-table`` and ``--output-table``: their locations (and the input's format)
    from the session's catalog, metadata only (:mod:`spark_dp.io.catalog`); the run then reads
    and writes those locations as paths, under every rule a path has."""
    args = run.args
    name = getattr(args, "input_table", None)
    if name:
        args.input, args.input_format = resolve_input(run.spark, name, args.input_format)
    out = getattr(args, "output_table", None)
    if out:
        args.output, exists = resolve_output(
            run.spark, out, args.output_format, overwrite=args.overwrite, input_table=name
        )
        run.output_table = (out, args.output_format, args.output, exists)


def register_tables(run: Run) -> None:
    """After the commit: the output table registered in (or refreshed by) the catalog."""
    if run.output_table is not None:
        register_output(run.spark, *run.output_table)


def check_spark_conf(run: Run) -> None:
    """Settings Spark would refuse at start-up with a Java trace, refused here in one line:
    ``--master`` that is no master URL, and (for a plain run, whose driver JVM starts here) a
    driver or executor memory that is not a size, or a driver memory below
    :data:`DRIVER_MEMORY_MIN`."""
    from spark_dp.session import launched_by_spark_submit

    if launched_by_spark_submit():
        return  # spark-submit has started the driver with its own settings
    given = set(parse_spark_conf_overrides(run.args.spark_conf))

    def shown(key: str) -> str:
        value = run.spark_conf[key]
        if key in given:
            return f"--spark-conf {key}={value}"
        return f"{key}: {value} (the config file's spark: section)"

    master = run.args.master if run.args.master is not None else run.spark_conf.get("spark.master")
    if master is not None and not _MASTER.match(master):
        shown_master = master or "''"
        where = f"--master {shown_master}" if run.args.master is not None else shown("spark.master")
        raise ConfigError(
            f"{where} is not a Spark master URL; use local[N], local[*], spark://host:port, "
            "yarn, k8s://https://host:port or sc://host:port"
        )
    for key in ("spark.driver.memory", "spark.executor.memory"):
        if key not in run.spark_conf:
            continue
        m = _SIZE.match(run.spark_conf[key])
        if not m:
            raise ConfigError(f"{shown(key)} is not a size; write it like 2g or 512m")
        unit = (m.group(2) or "m")[0].lower()  # Spark reads a bare number as MiB
        if key == "spark.driver.memory" and int(m.group(1)) * _UNIT[unit] < DRIVER_MEMORY_MIN:
            raise ConfigError(
                f"{shown(key)} is too small: Spark needs at least 512m for the driver (it "
                "reserves 300 MiB and wants 1.5 times that)"
            )


def resolve_run_params(run: Run) -> None:
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
    allowed = _large_delta_allowed(run)
    run.params = resolve_params(spec.params_cls, run.file_conf, given)
    delta = getattr(run.params, "delta", None)
    shown = f"--delta {delta!r}" if given.get("delta") is not None else f"delta {delta!r} (config)"
    check_delta_confirmed(delta, shown, allowed=allowed)
    for sentence in privacy_warnings(getattr(run.params, "epsilon", None), delta):
        run.log.warning("%s", sentence)


def _large_delta_allowed(run: Run) -> bool:
    """``--allow-large-delta``, or ``allow_large_delta: true`` in the config file (taken out of
    it here; a job without the flag leaves the key to be refused as unknown)."""
    if not hasattr(run.args, "allow_large_delta"):
        return False
    keys = [k for k in list(run.file_conf) if str(k) in ("allow_large_delta", "allow-large-delta")]
    from_file = [run.file_conf.pop(k) for k in keys]
    if any(not isinstance(v, bool) for v in from_file):
        raise ConfigError("config key allow_large_delta must be true or false")
    return bool(run.args.allow_large_delta) or any(from_file)


def plan_algorithm(run: Run) -> None:
    """Phase 3b: the job's data-free plan, once, from the checked parameters. The algorithm's
    own checks (an unknown name, a split it cannot use) fail here, before any path or key; so
    does an ε so small that a noise scale overflows (refused naming the values given)."""
    if run.spec.plan is None:
        return
    p = run.params
    given = f"--epsilon {p.epsilon!r}" if getattr(p, "epsilon", None) is not None else ""
    if getattr(p, "delta", None) is not None:
        given += f" (with --delta {p.delta!r})"
    try:
        with np.errstate(all="ignore"):  # an overflow becomes inf: refused by the check below
            run.algorithm_plan = run.spec.plan(p)
            steps = run.algorithm_plan.steps if run.spec.spends_budget else ()
            reports = [s.to_report() for s in steps]
    except (ZeroDivisionError, OverflowError) as exc:
        raise ParameterError(
            f"{given} is too small: the noise calibration overflows ({type(exc).__name__}); "
            "choose a larger value (typical ε: 0.1 to 10)"
        ) from None
    if reports:
        check_finite_plan(reports, given)


def _flag_of(spec: JobSpec, name: str) -> str:

    for f in dataclasses.fields(spec.params_cls):
        if f.name == name:
            return str(f.metadata.get("flag") or "--" + name.replace("_", "-"))
    return "--" + name.replace("_", "-")


def check_unsafe_flags(spec: JobSpec, args: argparse.Namespace) -> None:
    used = [f for dest, f in spec.unsafe_flags if getattr(args, dest, None)]
    if getattr(args, "unsafe_debug_logs", False):
        used.insert(0, "--unsafe-debug-logs")
    if used and not getattr(args, "allow_unsafe_debug", False):
        raise ConfigError(
            f"{used[0]} exposes private data: add --allow-unsafe-debug to confirm (test data "
            "only; the report marks the run as not a normal release)"
        )


def plain_paths_local_before_spark(run: Run) -> bool:
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
        flag = f"--input-table {args.input_table} at" if args.input_table else "--input"
        out.append(PathSpec("input", flag, args.input, READ, fmt=fmt, table=True))
    if run.config is not None and run.config.local is not None:
        out.append(PathSpec("config", "--config", run.config.local, READ, file=True))
    if getattr(args, "noise_key_file", None) is not None:
        out.append(PathSpec("key", "--noise-key-file", args.noise_key_file, READ, file=True))
    if getattr(args, "output", None) is not None:
        table = getattr(args, "output_table", None)
        flag = f"--output-table {table} at" if table else "--output"
        out.append(PathSpec("output", flag, args.output, WRITE))
    if spec.paths is not None:
        out += spec.paths(args, run.params, run.algorithm_plan)
    report = report_path(args, spec.confidential)
    if report is not None:
        flag = "--report" if args.report is not None else "--report (default)"
        out.append(PathSpec("report", flag, report, WRITE, file=True))
    return out + budget_path_spec(run)


def plan_paths(run: Run) -> None:
    """Phase 4: every path resolved and checked (local ones completely) before Spark."""
    run.plan = PathPlan(_path_specs(run), plain_is_local=plain_paths_local_before_spark(run))
    run.plan.check_conflicts()
    args = run.args
    run.plan.prepare_local(overwrite=args.overwrite, recover_commits=not args.dry_run)
    check_reports_beside(run)  # no report beside an output it does not describe


_ID_COLUMNS = {
    "user": ("--user-col", USER_ID),
    "item": ("--item-col", ITEM),
    "record": ("--record-col", RECORD_ID),
}


def check_schemas(run: Run) -> None:
    """Phase 4b: every column flag against the schema of each local table the run reads, from
    metadata only (a Parquet footer, a CSV header, a Delta log: no row, no Spark;
    :mod:`spark_dp.io.schema_peek`), so a wrong ``--user-col`` fails in one line before Spark
    starts, with ``--dry-run`` too. Catalog tables and Hadoop URIs are checked by Spark when it
    reads them, with the same rules."""
    assert run.plan is not None
    spec, args = run.spec, run.args
    rules: dict[str, list[ColumnRule]] = {}
    if spec.needs_input and not getattr(args, "input_table", None):
        rules["input"] = [
            ColumnRule(_ID_COLUMNS[c][0], getattr(args, f"{c}_col"), _ID_COLUMNS[c][1])
            for c in spec.columns
        ]
    if spec.columns_read is not None:
        rules.update(spec.columns_read(args, run.params, run.algorithm_plan))
    for s in run.plan.specs:
        if s.role not in rules or s.access != READ or not s.table or not run.plan.is_local(s):
            continue
        version = getattr(args, "input_version", None) if s.role == "input" else None
        schema = peek_schema(s.path, s.fmt, version=version)
        if schema is not None:
            check_columns(s.shown(), schema, rules[s.role])


def dry_run(run: Run) -> int:
    assert run.plan is not None
    doc: dict[str, Any] = {
        "job": run.spec.name,
        "parameters": params_to_dict(run.params),
        "paths": run.plan.to_dict(),
        "spark_conf": run.spark_conf,
    }
    if run.spec.describe is not None:
        doc["calibration"] = run.spec.describe(run.algorithm_plan)
    sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    sys.stdout.flush()
    return 0


def make_key(run: Run) -> None:
    """Phase 5: the release key, unbound (never logged: its fingerprint only, and not even
    that for a test seed, whose fingerprint would give the seed away)."""
    args = run.args
    if not run.spec.uses_key:
        run.randomness = Randomness.create()
        return
    if getattr(args, "noise_key_file", None):
        _refuse_key_in_an_input(run)
        run.randomness = Randomness.from_key_file(args.noise_key_file)
    else:
        run.randomness = Randomness.create(args.seed)
    if run.randomness.seeded:
        run.log.warning("key derived from a seed: reproducible noise, NOT for production")
        return
    run.log.info("release key %s, fingerprint %s", run.randomness.mode, run.randomness.fingerprint)


def _refuse_key_in_an_input(run: Run) -> None:
    """A key file that is an input, or lies inside one, would be read as data (issue 39)."""
    assert run.plan is not None
    key = os.path.realpath(local_path(run.args.noise_key_file))
    for s in run.plan.specs:
        if s.access != READ or not s.table or not run.plan.is_local(s):
            continue
        table = os.path.realpath(local_path(s.path))
        if key == table or key.startswith(table.rstrip("/") + "/"):
            where = "is" if key == table else "lies inside"
            raise ConfigError(
                f"--noise-key-file {run.args.noise_key_file} {where} {s.shown()}: a key must "
                "never be read as data; keep it outside every input (e.g. in a secret store)"
            )
