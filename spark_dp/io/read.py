"""Readers and validation of the input tables (id columns canonicalized to strings).

Bad rows never decide the exit code (docs/privacy/caveats.md#bad-rows): by default a row with a
null id is dropped, an empty input (or one of null ids only) is an empty table, and an invalid
capacity row has a fixed reading (:mod:`spark_dp.io.capacities`), so a job ends the same way
whatever the rows hold, and how many rows were dropped is logged only through the unsafe-debug
gate.
``strict=True`` (a job's ``--strict-input``) fails on them instead: the failure then tells one
bit about the data, which is why it is not the default. Checks that read the schema only (a
missing column, a type that is not an id) fail in both modes: they reveal no row.
"""

from __future__ import annotations

import difflib
import logging
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spark_dp.errors import InputContractError
from spark_dp.io.columns import ITEM, RECORD_ID, USER_ID, quoted
from spark_dp.io.delta import read_delta, snapshot
from spark_dp.io.digest import ContentDigest, ReadGate, digested, finish_digest
from spark_dp.io.file_snapshot import frame_snapshot
from spark_dp.io.file_snapshot import snapshot as file_snapshot
from spark_dp.io.probe import input_format, spark_read_error
from spark_dp.logs import log_private, private, unsafe_debug_enabled

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "InputSummary",
    "id_column",
    "id_type_problem",
    "load_incidences",
    "load_pairs",
    "missing_column",
    "read_table",
    "validate_edges",
]

log = logging.getLogger(__name__)

_ID_TYPES_OK = ("string", "int", "bigint", "smallint", "tinyint")
_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")
_COLUMN_FLAGS = {USER_ID: "--user-col", ITEM: "--item-col", RECORD_ID: "--record-col"}
"""The flag that names each canonical id column (the jobs' ``--<col>-col``)."""
_SHOWN_COLUMNS = 20


@dataclass(frozen=True)
class InputSummary:
    """Private diagnostics of an input table: never logged at INFO, never released.

    |D| has unbounded sensitivity, so these counts are logged only through the unsafe-debug
    gate of :mod:`spark_dp.logs` (a job's ``--unsafe-debug-logs``). ``digest`` is the keyed
    content digest of the rows read (:mod:`spark_dp.io.digest`) when validation was given a
    :class:`~spark_dp.io.digest.ReadGate`; ``repr`` shows neither counts nor digest.
    """

    path: str
    rows_read: int | None = field(repr=False)
    null_rows_dropped: int | None = field(repr=False)
    duplicates_dropped: int | None = field(repr=False)
    rows: int | None = field(repr=False)
    digest: ContentDigest | None = field(default=None, repr=False)

    def log(self, logger: logging.Logger = log) -> None:
        """Log that the input was read (path only); the counts only with unsafe debug on."""
        logger.info("input %s: read and validated (its counts are private)", self.path)
        if self.rows_read is None:  # nothing was counted (no digest, no check needed one)
            return
        if self.rows is None:
            log_private(
                logger,
                "input %s: %d rows read, %d with null ids dropped (repeated pairs are dropped "
                "by the algorithm's first step)",
                self.path,
                self.rows_read,
                self.null_rows_dropped,
            )
            return
        log_private(
            logger,
            "input %s: %d rows read, %d with null ids dropped, %d duplicate pairs dropped, "
            "%d distinct pairs kept",
            self.path,
            self.rows_read,
            self.null_rows_dropped,
            self.duplicates_dropped,
            self.rows,
        )


def read_table(
    spark: SparkSession,
    path: str,
    fmt: str | None = None,
    *,
    flag: str = "--input",
    version: int | None = None,
) -> DataFrame:
    """Read a Parquet file or directory (or a CSV file with a header row, or a Delta table).

    CSV columns are read as strings (no type inference), so ids keep their exact spelling.
    Parquet directories are read with schema merging, so part files whose columns disagree in
    type are reported as an input error instead of failing later. A Delta table is read at
    ``version`` (time travel), else at its latest version (:mod:`spark_dp.io.delta`).

    Raises:
        InputContractError: the path does not exist, is not Parquet (or CSV), or its files
            disagree on column types; the message names ``flag``.
    """
    fmt = input_format(str(path), fmt)
    try:
        if fmt == "csv":
            return spark.read.option("header", True).option("inferSchema", False).csv(str(path))
        if fmt == "delta":
            return read_delta(spark, str(path), version)
        return spark.read.option("mergeSchema", True).parquet(str(path))
    except Exception as exc:
        message = spark_read_error(exc, str(path), fmt, flag)
        if message is None:
            raise
        raise InputContractError(message) from None


def missing_column(
    where: str, col: str, columns: Sequence[str], flag: str | None, taken: Sequence[str] = ()
) -> str:
    """One line for a column ``col`` that the table ``where`` lacks: the columns it has, the
    closest name (the same up to case, else one that starts with the other, else
    :func:`difflib.get_close_matches`) and the ``flag`` to pass it with (or, for a fixed name,
    to rename the column upstream); a column ``taken`` by another flag is never suggested."""
    shown = ", ".join(columns[:_SHOWN_COLUMNS]) or "none"
    if len(columns) > _SHOWN_COLUMNS:
        shown += f", ... ({len(columns) - _SHOWN_COLUMNS} more)"
    low, free = col.lower(), [c for c in columns if c not in taken]
    same_case = [c for c in free if c.lower() == low]
    prefix = [c for c in free if min(len(c), len(low)) >= 3 and _prefix(c.lower(), low)]
    close = same_case or prefix[:1] or difflib.get_close_matches(col, free, n=1)
    line = f"{where} has no column {col!r} (columns: {shown})"
    if close and flag:
        return f"{line}; did you mean `{close[0]}`? pass {flag} {shlex.quote(close[0])}"
    if close:
        return f"{line}; did you mean `{close[0]}`? rename it to {col!r} upstream"
    if flag:
        return f"{line}; pass the right column name with {flag} NAME"
    return f"{line}; add it (or rename one to {col!r}) upstream"


def _prefix(a: str, b: str) -> bool:
    return a.startswith(b) or b.startswith(a)


def id_type_problem(col: str, role: str, type_name: str) -> str | None:
    """Why a column ``col`` of Spark type ``type_name`` (its ``simpleString``) is not an id, or
    None: ids are strings or integers (decimals of scale 0 included); floating point, boolean,
    date, timestamp, binary and nested types are not."""
    decimal = _DECIMAL.match(type_name)
    if decimal and decimal.group(2) == "0":
        return None
    if type_name in ("float", "double") or decimal:
        return (
            f"column {col!r} ({role}) has floating-point type {type_name}; "
            "ids must be strings or integers (cast them upstream, e.g. to bigint or string)"
        )
    if type_name not in _ID_TYPES_OK:
        return (
            f"column {col!r} ({role}) has unsupported type {type_name}; "
            "ids must be strings or integers (cast them upstream)"
        )
    return None


def id_column(
    df: DataFrame,
    col: str,
    role: str,
    path: str,
    *,
    flag: str | None = None,
    taken: Sequence[str] = (),
) -> Column:
    """Column ``col`` of ``df`` as a string id: integers in base 10, strings as they are.

    ``flag`` names the column's flag in messages (default: the one of a canonical ``role``);
    ``taken``: the columns other flags name (never suggested for this one).
    The same rules run before Spark starts on the schema alone (:mod:`spark_dp.io.schema_peek`).

    Raises:
        InputContractError: no such column, or a type that is not an id (floating point,
            boolean, date, timestamp, binary, nested).
    """
    from pyspark.sql import functions as F

    if col not in df.columns:
        flag = flag or _COLUMN_FLAGS.get(role)
        line = missing_column(f"input {path!r}", col, df.columns, flag, taken)
        raise InputContractError(line)
    problem = id_type_problem(col, role, df.schema[col].dataType.simpleString())
    if problem:
        raise InputContractError(problem)
    return F.col(quoted(col)).cast("string")


def validate_edges(
    df: DataFrame,
    columns: dict[str, str],
    *,
    path: str = "<DataFrame>",
    strict: bool = False,
    dedupe: bool = True,
    persist: bool = True,
    gate: ReadGate | None = None,
    table: str = "pairs",
) -> tuple[DataFrame, InputSummary]:
    """Check and normalize a two-column id table (and digest it, given a ``gate``).

    Args:
        df: the raw table.
        columns: canonical name -> column in ``df``, e.g. ``{USER_ID: "uid", ITEM: "word"}``.
        path: shown in messages.
        strict: fail on a null id or an empty input (``--strict-input``: the exit code then
            depends on the rows) instead of dropping null rows and returning an empty table.
        dedupe: drop repeated rows here. An algorithm whose first step groups each user's rows
            anyway (the partition-selection cap) passes False and drops them there, which saves
            a full shuffle; the summary then has ``rows`` and ``duplicates_dropped`` None.
        persist: cache the normalized table (the algorithms read it several times).
        gate: digest every row read (before null handling) in the same aggregation as the
            checks, calling ``gate.before_read`` right before it runs and ``gate.on_digest``
            before its results are checked (:mod:`spark_dp.io.digest`). That aggregation is
            a pass over the rows of its own: with a gate that asks for no digest (an entropy
            key's, ``ReadGate.digest``), and neither ``strict`` nor the unsafe-debug counts, it
            does not run. Nothing is counted then (the summary's counts are None), the null
            rows are dropped by a filter in the plan, and the gate is charged right away
            (``ReadGate.read_without_pass``): the rows are read once, by the algorithm. A gate
            of a snapshot (a Delta version: ``ReadGate.snapshot``) digests the snapshot's
            description, not the rows, so it needs no pass either; a ``df`` that only reads
            Parquet or CSV files gets its files' snapshot here
            (:func:`~spark_dp.io.file_snapshot.frame_snapshot`). Without a gate the rows are
            counted, for the summary.
        table: the digest's table name (``pairs`` or ``incidences``).

    Returns:
        (normalized DataFrame with exactly the canonical columns as strings, deduplicated
        unless ``dedupe`` is False; :class:`InputSummary`).

    Raises:
        InputContractError: missing column, wrong type; with ``strict``, null ids or an empty
            input.
    """
    from pyspark.sql import functions as F

    from spark_dp.caching import storage_level

    if gate is not None and gate.digests_rows:
        fixed = frame_snapshot(df, columns)  # a plain read of files: their snapshot
        gate = gate if fixed is None else gate.of_snapshot(fixed)
    sources = list(columns.values())
    exprs = [
        id_column(df, src, canon, path, taken=[s for s in sources if s != src]).alias(canon)
        for canon, src in columns.items()
    ]
    typed = df.select(*exprs)
    null_any = F.lit(False)
    for canon in columns:
        null_any = null_any | F.col(canon).isNull()
    if gate is not None and not (gate.digests_rows or strict or unsafe_debug_enabled()):
        digest = gate.read_without_pass(table)  # charged now; read once, by the algorithm
        clean = typed.where(~null_any)
        return _normalized(clean, list(columns), dedupe, persist, path, digest)
    aggs = [F.count(F.lit(1)).alias("_rows")]
    aggs += [F.sum(F.col(c).isNull().cast("long")).alias(f"_null_{c}") for c in columns]
    aggs.append(F.sum(null_any.cast("long")).alias("_null_any"))
    checked = typed
    if gate is not None and gate.snapshot is None:
        checked, sums = digested(typed, [F.col(c) for c in columns], gate)
        aggs += sums
    if gate is not None:
        gate.before_read()
    stats = checked.agg(*aggs).collect()[0]
    rows_read = int(stats["_rows"])
    digest = None
    if gate is not None and gate.snapshot is not None:
        digest = gate.snapshot_read(table)  # the snapshot's digest, not the rows'
    elif gate is not None:
        digest = finish_digest(table, rows_read, stats, gate)
    null_rows = int(stats["_null_any"] or 0)
    if strict:
        _strict_edges(path, columns, rows_read, null_rows, stats)
    clean = typed.where(~null_any)  # always: the plan does not depend on whether nulls exist
    if not dedupe:
        clean = clean.persist(storage_level()) if persist else clean
        return clean, InputSummary(path, rows_read, null_rows, None, None, digest)
    deduped = clean.dropDuplicates(list(columns))
    if persist:
        deduped = deduped.persist(storage_level())
    rows = deduped.count()
    summary = InputSummary(
        path=path,
        rows_read=rows_read,
        null_rows_dropped=null_rows,
        duplicates_dropped=rows_read - null_rows - rows,
        rows=rows,
        digest=digest,
    )
    if summary.duplicates_dropped:
        log_private(
            log,
            "input %s: dropped %d duplicate pairs (each pair counts once)",
            path,
            summary.duplicates_dropped,
            level=logging.WARNING,
        )
    return deduped, summary


def _normalized(
    clean: DataFrame,
    columns: list[str],
    dedupe: bool,
    persist: bool,
    path: str,
    digest: ContentDigest | None,
) -> tuple[DataFrame, InputSummary]:
    """:func:`validate_edges` when nothing is counted: deduplicated and cached as asked (a
    snapshot's ``digest`` kept in the summary)."""
    from spark_dp.caching import fill, storage_level

    out = clean.dropDuplicates(columns) if dedupe else clean
    if persist:
        out = out.persist(storage_level())
        fill(out)  # computed now, as the counted path computes it, without reading a count
    return out, InputSummary(path, None, None, None, None, digest)


def _strict_edges(
    path: str, columns: dict[str, str], rows_read: int, null_rows: int, stats: Any
) -> None:
    """``--strict-input``: an empty input or a null id fails (one bit about the data)."""
    if rows_read == 0:
        raise InputContractError(
            f"input {path!r} is empty (0 rows) and --strict-input is set; check the path and "
            "any upstream filter, or run without --strict-input (an empty release)"
        )
    if null_rows:
        detail = ", ".join(
            f"{columns[c]!r}: {private(int(stats[f'_null_{c}'] or 0))}"
            for c in columns
            if stats[f"_null_{c}"]
        )
        raise InputContractError(
            f"input {path!r} has null ids ({detail} rows) and --strict-input is set; remove "
            "them upstream, or run without --strict-input to drop them (the default)"
        )


def _read_edges(
    spark: SparkSession,
    path: str,
    columns: dict[str, str],
    fmt: str | None,
    version: int | None,
    **options: Any,
) -> tuple[DataFrame, InputSummary]:
    """:func:`read_table` (a Delta table at ``version``) then :func:`validate_edges` with
    ``options`` (strict, dedupe, persist, gate, table). A gate that wants a digest digests a
    snapshot, not the rows, where one fixes them: a Delta table read at a pinned version
    (:func:`spark_dp.io.delta.snapshot`), a Parquet or CSV input of local files or files on
    HDFS (:func:`spark_dp.io.file_snapshot.snapshot`)."""
    df = read_table(spark, path, fmt, version=version)
    gate = options.get("gate")
    if gate is not None and gate.digest:
        fmt = input_format(str(path), fmt)
        fixed: str | Callable[[], str] | None = None
        if fmt == "delta":
            fixed = None if version is None else snapshot(df, str(path), version, columns)
        else:
            fixed = file_snapshot(df, fmt, columns)
        if fixed is not None:
            options["gate"] = gate.of_snapshot(fixed)
    return validate_edges(df, columns, path=str(path), **options)


def load_pairs(
    spark: SparkSession,
    path: str,
    *,
    user_col: str = USER_ID,
    item_col: str = ITEM,
    fmt: str | None = None,
    strict: bool = False,
    dedupe: bool = True,
    persist: bool = True,
    gate: ReadGate | None = None,
    version: int | None = None,
) -> tuple[DataFrame, InputSummary]:
    """Read (user, item) pairs for partition selection and distinct count.

    ``strict``, ``dedupe``, ``persist`` and ``gate`` (the keyed content digest, e.g.
    ``ReadGate.keyed_by(randomness)``) as in :func:`validate_edges`; ``version``: the version of
    a Delta input (``fmt="delta"``). A key-file or seeded gate digests no rows for a Delta
    version or for Parquet or CSV files local or on HDFS (their snapshot), else the rows (a
    pass).

    Returns:
        ((user_id, item) strings, deduplicated and cached by default; :class:`InputSummary`).
    """
    columns = {USER_ID: user_col, ITEM: item_col}
    options = {"strict": strict, "dedupe": dedupe, "persist": persist, "gate": gate}
    return _read_edges(spark, path, columns, fmt, version, table="pairs", **options)


def load_incidences(
    spark: SparkSession,
    path: str,
    *,
    record_col: str = RECORD_ID,
    user_col: str = USER_ID,
    fmt: str | None = None,
    strict: bool = False,
    dedupe: bool = True,
    persist: bool = True,
    gate: ReadGate | None = None,
    version: int | None = None,
) -> tuple[DataFrame, InputSummary]:
    """Read (record, user) incidences of a hypergraph for contribution bounding (``version``
    as in :func:`load_pairs`).

    Only the id columns are read: bounding must never depend on record content
    (fixed-graph DP, docs/design/bounding.md#fixed-graph-dp). ``strict``, ``dedupe``,
    ``persist`` and ``gate`` as in :func:`validate_edges` (the bounding's first step, a window
    over each record's users, drops repeated pairs itself).

    Returns:
        ((record_id, user_id) strings, deduplicated and cached by default;
        :class:`InputSummary`).
    """
    columns = {RECORD_ID: record_col, USER_ID: user_col}
    options = {"strict": strict, "dedupe": dedupe, "persist": persist, "gate": gate}
    return _read_edges(spark, path, columns, fmt, version, table="incidences", **options)
