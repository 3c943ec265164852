"""Atomic writers: Parquet and JSON outputs written to a hidden sibling and moved into place."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spark_dp.errors import OutputExistsError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["check_output_path", "output_exists", "write_json_atomic", "write_parquet_atomic"]


def _hadoop_fs(spark: SparkSession, path: str) -> tuple[Any, Any, Any]:
    jvm: Any = spark.sparkContext._jvm  # a classic session's gateway (None under Connect)
    jpath = jvm.org.apache.hadoop.fs.Path(str(path))
    fs = jpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return fs, jpath, jvm


def output_exists(spark: SparkSession, path: str) -> bool:
    """True if ``path`` exists (local, HDFS or object store paths)."""
    fs, jpath, _ = _hadoop_fs(spark, path)
    return bool(fs.exists(jpath))


def check_output_path(path: str | None, overwrite: bool) -> None:
    """Fail fast, before any Spark work, if a local output exists and may not be replaced."""
    if path and not overwrite and "://" not in str(path) and Path(path).exists():
        raise OutputExistsError(
            f"output {str(path)!r} already exists; pass --overwrite to replace it, or choose "
            "another path"
        )


def _tmp_sibling(jvm: Any, jpath: Any) -> Any:
    return jvm.org.apache.hadoop.fs.Path(
        jpath.getParent(), f".{jpath.getName()}.tmp-{uuid.uuid4().hex[:12]}"
    )


def _move_into_place(spark: SparkSession, tmp_path: str, path: str, overwrite: bool) -> None:
    fs, jpath, jvm = _hadoop_fs(spark, path)
    jtmp = jvm.org.apache.hadoop.fs.Path(tmp_path)
    if fs.exists(jpath):
        if not overwrite:
            fs.delete(jtmp, True)
            raise OutputExistsError(
                f"output {path!r} already exists; pass --overwrite to replace it"
            )
        backup = jvm.org.apache.hadoop.fs.Path(
            jpath.getParent(), f".{jpath.getName()}.old-{uuid.uuid4().hex[:12]}"
        )
        if not fs.rename(jpath, backup):
            raise OSError(f"could not move the old output {path!r} aside")
        if not fs.rename(jtmp, jpath):
            fs.rename(backup, jpath)
            raise OSError(f"could not move the new output into {path!r}")
        fs.delete(backup, True)
    elif not fs.rename(jtmp, jpath):
        raise OSError(f"could not move the new output into {path!r}")


def write_parquet_atomic(df: DataFrame, path: str, *, overwrite: bool = False) -> None:
    """Write ``df`` as Parquet at ``path``, all or nothing.

    Writes to a hidden temporary sibling, then renames it into place. With ``overwrite`` an
    existing output is moved aside, replaced, then deleted; without it an existing output is
    an :class:`OutputExistsError` (raised before writing when possible).
    """
    spark = df.sparkSession
    fs, jpath, jvm = _hadoop_fs(spark, path)
    if fs.exists(jpath) and not overwrite:
        raise OutputExistsError(f"output {path!r} already exists; pass --overwrite to replace it")
    parent = jpath.getParent()
    if parent is not None and not fs.exists(parent):
        fs.mkdirs(parent)
    tmp = _tmp_sibling(jvm, jpath)
    try:
        df.write.mode("error").parquet(tmp.toString())
    except BaseException:
        fs.delete(tmp, True)
        raise
    _move_into_place(spark, tmp.toString(), path, overwrite)


def write_json_atomic(
    obj: Any, path: str, *, overwrite: bool = True, spark: SparkSession | None = None
) -> None:
    """Write ``obj`` as indented JSON at ``path`` atomically (temp file + rename).

    Local paths use ``os.replace``; other filesystems go through Hadoop when ``spark`` is given.
    """
    text = json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n"
    if "://" in str(path) and not str(path).startswith("file://"):
        if spark is None:
            raise ValueError(f"writing {path!r} needs a Spark session for its filesystem")
        fs, jpath, jvm = _hadoop_fs(spark, path)
        tmp = _tmp_sibling(jvm, jpath)
        out = fs.create(tmp, True)
        out.write(bytearray(text.encode("utf-8")))
        out.close()
        _move_into_place(spark, tmp.toString(), path, overwrite)
        return
    import os

    p = Path(str(path).removeprefix("file://"))
    if p.exists() and not overwrite:
        raise OutputExistsError(f"{str(p)!r} already exists; pass --overwrite to replace it")
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp-{uuid.uuid4().hex[:12]}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, p)


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
