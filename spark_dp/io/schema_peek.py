"""The schema of a local input table, read without Spark, and the column flags checked against it.

A wrong ``--user-col`` (or any column flag) is found before Spark starts, with ``--dry-run``
too: one line and exit code 2 in well under a second, no JVM
(docs/operations/configuration.md). The schema comes from metadata only, never from a row, so
this runs before the budget is charged (docs/privacy/caveats.md#bad-rows: checks that read the
schema only reveal no row):

* **Parquet**: the footers' schemas (``pyarrow.parquet.read_schema``), merged over the data
  files as Spark's ``mergeSchema`` does (up to :data:`MAX_FOOTERS` of them; beyond, a name not
  found is left to Spark); ``key=value`` directories add their keys (type left to Spark).
* **CSV**: the first data file's header line (every column a string, as the job reads CSV).
* **Delta**: the newest ``metaData`` action's ``schemaString`` at or before the version read,
  from the JSON commits of ``_delta_log/`` or a single-file checkpoint; a log it cannot read
  that way is left to Spark.

Catalog tables and inputs on other filesystems (``hdfs://``, ``s3a://``, ...) are not peeked:
Spark checks them when it reads them, with the same rules and words
(:func:`spark_dp.io.read.id_column`, :func:`spark_dp.io.read.id_type_problem`,
:func:`spark_dp.io.read.missing_column`).
"""

from __future__ import annotations

import csv
import gzip
import json
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spark_dp.errors import InputContractError
from spark_dp.io.capacities import capacity_type_problem
from spark_dp.io.delta import DELTA_LOG
from spark_dp.io.fs import local_path
from spark_dp.io.probe import data_files, input_format
from spark_dp.io.read import id_type_problem, missing_column

__all__ = [
    "CAPACITY",
    "ID",
    "MAX_FOOTERS",
    "NUMBER",
    "ColumnRule",
    "Schema",
    "check_columns",
    "peek_schema",
]

log = logging.getLogger(__name__)

MAX_FOOTERS = 200
"""At most this many Parquet footers are read to merge a directory's schema."""
MAX_DELTA_COMMITS = 2000
"""At most this many Delta commits are read looking for the table's schema."""

ID, CAPACITY, NUMBER = "id", "capacity", "number"
"""What a column must hold: an id (string or integer), a capacity (integer, or CSV text), a
number (any numeric type)."""

_NUMERIC = re.compile(r"^(tinyint|smallint|int|bigint|float|double|decimal\(\d+,\d+\))$")


@dataclass(frozen=True)
class ColumnRule:
    """A column a job reads from a table.

    Attributes:
        flag: the flag that names it (``--user-col``), or None for a fixed name.
        name: the name given (or fixed).
        role: what it is, in messages (``user_id``, the canonical name of an id).
        kind: :data:`ID`, :data:`CAPACITY` or :data:`NUMBER`.
    """

    flag: str | None
    name: str
    role: str
    kind: str = ID


@dataclass(frozen=True)
class Schema:
    """Column name -> Spark type name (``simpleString``; None when only Spark knows it).
    ``complete``: every column is listed (else a name not found proves nothing)."""

    types: dict[str, str | None]
    complete: bool = True


def peek_schema(path: str, fmt: str | None, *, version: int | None = None) -> Schema | None:
    """The schema of the local table at ``path`` (checked by
    :func:`spark_dp.io.probe.probe_local_input` already), or None when it cannot be read
    without Spark. ``version``: the Delta version read (default the latest)."""
    p = local_path(str(path))
    fmt = input_format(str(path), fmt)
    try:
        if fmt == "delta":
            return _delta_schema(p, version)
        files = data_files(p) if os.path.isdir(p) else [p]
        if not files:
            return None
        if fmt == "csv":
            return _csv_schema(files[0])
        return _parquet_schema(p, files)
    except Exception:  # metadata we cannot read here: Spark reads (and checks) it later
        log.debug("schema of %s not read before Spark", path, exc_info=True)
        return None


def check_columns(where: str, schema: Schema, rules: Sequence[ColumnRule]) -> None:
    """Each of ``rules`` against ``schema`` of the table ``where`` (``--input PATH``).

    Raises:
        InputContractError: one line for the first column missing or of the wrong type.
    """
    names = list(schema.types)
    for rule in rules:
        if rule.name not in schema.types:
            if schema.complete:
                taken = [r.name for r in rules if r is not rule]
                line = missing_column(where, rule.name, names, rule.flag, taken)
                raise InputContractError(line)
            continue
        type_name = schema.types[rule.name]
        if type_name is None:
            continue
        if rule.kind == ID:
            problem = id_type_problem(rule.name, rule.role, type_name)
        elif rule.kind == CAPACITY:
            problem = capacity_type_problem(rule.name, type_name)
        elif _NUMERIC.match(type_name.replace(" ", "")):
            problem = None
        else:
            problem = f"{rule.role} column {rule.name!r} must be numeric, got {type_name}"
        if problem:
            raise InputContractError(f"{where}: {problem}")


# ------------------------------------------------------------------ Parquet


def _arrow_type(t: Any) -> str | None:
    """The Spark type name Spark reads an Arrow (Parquet) type as, or None if not sure."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        return _arrow_type(t.value_type)
    simple = {
        pa.string(): "string",
        pa.large_string(): "string",
        pa.int8(): "tinyint",
        pa.int16(): "smallint",
        pa.int32(): "int",
        pa.int64(): "bigint",
        pa.uint8(): "smallint",
        pa.uint16(): "int",
        pa.uint32(): "bigint",
        pa.uint64(): "decimal(20,0)",
        pa.float16(): "float",
        pa.float32(): "float",
        pa.float64(): "double",
        pa.bool_(): "boolean",
        pa.binary(): "binary",
        pa.large_binary(): "binary",
        pa.date32(): "date",
    }
    if t in simple:
        return simple[t]
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_struct(t):
        return "struct"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = _arrow_type(t.value_type)
        return f"array<{inner}>" if inner else "array"
    if pa.types.is_map(t):
        return "map"
    return None


def _parquet_schema(root: str, files: list[str]) -> Schema:
    import pyarrow.parquet as pq

    types: dict[str, str | None] = {}
    for f in files[:MAX_FOOTERS]:
        schema = pq.read_schema(f)
        for field in schema:
            types.setdefault(field.name, _arrow_type(field.type))
    if os.path.isdir(root):  # key=value directories: Spark infers the keys' types
        for part in os.path.relpath(files[0], root).split(os.sep)[:-1]:
            key, eq, _ = part.partition("=")
            if eq:
                types.setdefault(key, None)
    return Schema(types, complete=len(files) <= MAX_FOOTERS)


# ------------------------------------------------------------------ CSV


def _csv_schema(path: str) -> Schema | None:
    opener: Any = gzip.open if path.lower().endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8-sig", errors="replace", newline="") as fh:
        header = next(csv.reader(fh), None)
    if not header:
        return None
    return Schema({(name or f"_c{i}"): "string" for i, name in enumerate(header)})


# ------------------------------------------------------------------ Delta

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_DELTA_TYPES = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}


def _delta_schema(root: str, version: int | None) -> Schema | None:
    log_dir = os.path.join(root, DELTA_LOG)
    names = os.listdir(log_dir)
    commits = sorted(int(m.group(1)) for n in names if (m := _COMMIT.match(n)))
    if version is None:
        version = commits[-1]
    checkpoints = [int(m.group(1)) for n in names if (m := _CHECKPOINT.match(n))]
    floor = max((c for c in checkpoints if c <= version), default=-1)
    newer = [c for c in reversed(commits) if floor < c <= version][:MAX_DELTA_COMMITS]
    for c in newer:
        with open(os.path.join(log_dir, f"{c:020d}.json"), encoding="utf-8") as fh:
            for line in fh:
                action = json.loads(line) if line.strip() else {}
                if "metaData" in action:
                    return _from_schema_string(action["metaData"]["schemaString"])
    if floor < 0 or len(newer) < version - floor:
        return None  # no checkpoint, or commits cleaned up / too many to read: Spark knows
    import pyarrow.parquet as pq

    table = pq.read_table(
        os.path.join(log_dir, f"{floor:020d}.checkpoint.parquet"), columns=["metaData"]
    )
    for meta in table.column("metaData").to_pylist():
        if meta and meta.get("schemaString"):
            return _from_schema_string(meta["schemaString"])
    return None


def _from_schema_string(text: str) -> Schema:
    types: dict[str, str | None] = {}
    for field in json.loads(text)["fields"]:
        t = field["type"]
        if isinstance(t, dict):
            types[field["name"]] = str(t.get("type"))
        else:
            types[field["name"]] = _DELTA_TYPES.get(t, str(t).replace(" ", ""))
    return Schema(types)
