"""Atomic writers of single tables and files (the state store's, a library caller's).

Each write is a one-entry :class:`~spark_dp.io.staging.Staging`: written to a hidden sibling and
moved into place, so a reader never sees half a table; a journal left by a killed writer is
recovered (:func:`~spark_dp.io.staging.recover`) and stale siblings removed before the next
write to the same path. Jobs stage all their outputs together instead (see
:mod:`spark_dp.jobs.runner`). Local paths use Python's ``os`` (no JVM, fine under Spark
Connect); other filesystems go through :mod:`spark_dp.io.fs`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from spark_dp.errors import OutputExistsError
from spark_dp.io.fs import FileSystem, LocalFS, filesystem, is_connect, is_local
from spark_dp.io.staging import Staging, clean_stale, journal_path, recover

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "check_output_path",
    "json_text",
    "output_exists",
    "plain_paths_local",
    "session_filesystems",
    "write_json_atomic",
    "write_parquet_atomic",
]

_PLAIN_LOCAL: dict[int, bool] = {}


def plain_paths_local(spark: SparkSession | None) -> bool:
    """True when a path without a scheme is on the local disk for ``spark`` (a local master,
    or Hadoop's default filesystem is ``file:``)."""
    if spark is None:
        return True
    key = id(spark)
    if key not in _PLAIN_LOCAL:
        if is_connect(spark):
            master = str(spark.conf.get("spark.master", "local") or "local")
            _PLAIN_LOCAL[key] = master.startswith("local")
        else:
            sc: Any = spark.sparkContext
            uri = sc._jvm.org.apache.hadoop.fs.FileSystem.getDefaultUri(
                sc._jsc.hadoopConfiguration()
            )
            _PLAIN_LOCAL[key] = str(uri.getScheme() or "file") == "file"
    return _PLAIN_LOCAL[key]


def session_filesystems(spark: SparkSession | None) -> Callable[[str], FileSystem]:
    """``path -> FileSystem`` for this session (local disk without a session)."""
    if spark is None:
        return lambda path: filesystem(path, None)
    plain = plain_paths_local(spark)
    return lambda path: filesystem(path, spark, plain_is_local=plain)


def _direct(spark: SparkSession | None, path: str) -> bool:
    return is_connect(spark) and not is_local(path, plain_is_local=plain_paths_local(spark))


def output_exists(spark: SparkSession | None, path: str) -> bool:
    """True if ``path`` exists (local, HDFS or object store paths)."""
    return session_filesystems(spark)(path).exists(path)


def check_output_path(path: str | None, overwrite: bool) -> None:
    """Fail fast, before any Spark work, if a local output exists and may not be replaced."""
    if path and not overwrite and is_local(str(path)) and LocalFS().exists(str(path)):
        raise OutputExistsError(
            f"output {str(path)!r} already exists; pass --overwrite to replace it, or choose "
            "another path"
        )


def _single_staging(spark: SparkSession | None, path: str, overwrite: bool) -> Staging:
    """A one-entry staging for ``path``, after recovering what a killed writer left there.

    Raises:
        OutputExistsError: ``path`` exists and ``overwrite`` is off.
    """
    fs_for = session_filesystems(spark)
    fs = fs_for(path)
    direct = _direct(spark, path)
    if not direct:
        recover(journal_path(path), fs_for)
        clean_stale(path, fs)
    if fs.exists(path) and not overwrite:
        raise OutputExistsError(f"{path!r} already exists; pass --overwrite to replace it")
    return Staging(fs_for, overwrite=overwrite, direct=direct)


def write_parquet_atomic(df: DataFrame, path: str, *, overwrite: bool = False) -> None:
    """Write ``df`` as Parquet at ``path``, all or nothing.

    Writes to a hidden temporary sibling, then renames it into place. With ``overwrite`` an
    existing output is moved aside, replaced, then deleted; without it an existing output is
    an :class:`OutputExistsError` (raised before writing).
    """
    staging = _single_staging(df.sparkSession, path, overwrite)
    target = staging.stage("table", path)
    try:
        df.write.mode("overwrite" if staging.direct else "error").parquet(target)
        staging.commit()
    finally:
        staging.abort()


def json_text(obj: Any) -> str:
    """``obj`` as indented JSON text (numpy scalars and arrays, sets and tuples as lists)."""
    return json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n"


def write_json_atomic(
    obj: Any, path: str, *, overwrite: bool = True, spark: SparkSession | None = None
) -> None:
    """Write ``obj`` as indented JSON at ``path`` atomically (staged file + rename).

    Local paths need no session; other filesystems go through ``spark``'s.
    """
    staging = _single_staging(spark, path, overwrite)
    try:
        staging.stage_text("file", path, json_text(obj))
        staging.commit()
    finally:
        staging.abort()


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    raise TypeError(f"not JSON serializable: {type(o).__name__}")
