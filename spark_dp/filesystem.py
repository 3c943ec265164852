"""Small filesystem operations on the paths Spark reads and writes, for either kind of session.

* A classic session goes through Hadoop's ``FileSystem`` in the driver's JVM, so every URI the
  cluster can read (``hdfs://``, ``s3a://``, ``abfss://``, local paths) works with the cluster's
  own credentials and settings.
* A Spark Connect session has no JVM on the client: the same operations run on the client with
  ``pyarrow.fs`` (local paths, ``file://``, ``s3://``, ``gs://``, ``hdfs://`` where libhdfs is
  installed). A scheme pyarrow cannot reach is a :class:`~spark_dp.errors.ConfigError` naming the
  path and the way out (a classic session, or a path the client can reach).

What spark_dp's state and atomic outputs need: :func:`exists`, :func:`delete`,
:func:`read_text`, :func:`makedirs` and :func:`rename` (on object stores a rename is a copy, as
with Hadoop's own S3 connectors).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from spark_dp.errors import ConfigError
from spark_dp.session import is_classic

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["delete", "exists", "makedirs", "read_text", "rename"]


def _hadoop(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """(Hadoop FileSystem, Hadoop Path) of ``path`` through a classic session's gateway."""
    sc: Any = spark.sparkContext
    jpath = sc._jvm.org.apache.hadoop.fs.Path(path)
    return jpath.getFileSystem(sc._jsc.hadoopConfiguration()), jpath


def _arrow(path: str) -> tuple[Any, str]:
    """(pyarrow FileSystem, path inside it) of ``path``, for a client without a JVM."""
    import pyarrow.fs as pafs

    uri = path if "://" in path else os.path.abspath(path)
    try:
        return pafs.FileSystem.from_uri(uri)
    except (ValueError, NotImplementedError, OSError) as exc:  # pyarrow's invalid/unsupported URI
        raise ConfigError(
            f"path {path!r} cannot be reached from this Spark Connect client ({exc}); use a "
            "path the client can reach (local, s3://, gs://, hdfs:// with libhdfs) or a "
            "classic Spark session"
        ) from exc


def exists(spark: SparkSession, path: str) -> bool:
    """True if ``path`` (a file or a directory) exists."""
    if is_classic(spark):
        fs, jpath = _hadoop(spark, path)
        return bool(fs.exists(jpath))
    import pyarrow.fs as pafs

    fs, inner = _arrow(path)
    return bool(fs.get_file_info(inner).type != pafs.FileType.NotFound)


def delete(spark: SparkSession, path: str) -> None:
    """Remove ``path`` and everything under it, if present."""
    if is_classic(spark):
        fs, jpath = _hadoop(spark, path)
        if fs.exists(jpath):
            fs.delete(jpath, True)
        return
    import pyarrow.fs as pafs

    fs, inner = _arrow(path)
    kind = fs.get_file_info(inner).type
    if kind == pafs.FileType.Directory:
        fs.delete_dir(inner)
    elif kind != pafs.FileType.NotFound:
        fs.delete_file(inner)


def read_text(spark: SparkSession, path: str) -> str:
    """The UTF-8 text of the file ``path``."""
    if is_classic(spark):
        fs, jpath = _hadoop(spark, path)
        sc: Any = spark.sparkContext
        stream = fs.open(jpath)
        try:
            data = sc._jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
        finally:
            stream.close()
        return bytes(data).decode("utf-8")
    fs, inner = _arrow(path)
    with fs.open_input_stream(inner) as f:
        return bytes(f.read()).decode("utf-8")


def makedirs(spark: SparkSession, path: str) -> None:
    """Create the directory ``path`` and its parents (no error when it exists)."""
    if is_classic(spark):
        fs, jpath = _hadoop(spark, path)
        fs.mkdirs(jpath)
        return
    fs, inner = _arrow(path)
    fs.create_dir(inner, recursive=True)


def rename(spark: SparkSession, source: str, target: str) -> None:
    """Move ``source`` (a file or a directory) to ``target``, which must not exist.

    Raises:
        OSError: the move failed (``target`` exists, or the filesystem refused).
    """
    if exists(spark, target):
        raise OSError(f"cannot move {source!r} to {target!r}: the target exists")
    if is_classic(spark):
        fs, jsource = _hadoop(spark, source)
        _, jtarget = _hadoop(spark, target)
        if not fs.rename(jsource, jtarget):
            raise OSError(f"could not move {source!r} to {target!r}")
        return
    fs, inner_source = _arrow(source)
    _, inner_target = _arrow(target)
    fs.move(inner_source, inner_target)
