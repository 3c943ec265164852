"""The bytes of a Parquet or CSV input's files: what a key file's release binds to, without a
pass over its rows.

A Parquet or CSV table read by path with the readers' fixed options (:func:`~.read.read_table`)
holds exactly the rows its data files decode to, so the format, the columns read and, for each
data file Spark lists (``DataFrame.inputFiles()``), its name, size and SHA-256 fix the rows
read, given the Spark version and the session settings that change what a scan of the same
bytes returns (:data:`SCAN_SETTINGS`), which the description holds too. :func:`snapshot`
returns that description as a function, which the read's gate calls after the budget charge
(:meth:`spark_dp.io.digest.ReadGate.snapshot_read`): the files are hashed on the driver, a
stream of their bytes with no Parquet decoding, no Spark job and no row, and the release binds
to the keyed digest of the description (:func:`spark_dp.io.digest.snapshot_digest`;
docs/privacy/keys.md#files).

Two kinds of files get one, in a classic session (Spark Connect's client may not see the
server's files, so it gets None):

* **Local files** (a plain path or a ``file:`` URI, which Spark's executors read at the same
  path): each file's URI, size and SHA-256.
* **Files on HDFS** (``hdfs://``): each file's URI, length, modification time and inode id from
  the namenode, and its HDFS file checksum (an MD5 of its blocks' MD5s of the CRC32C of each
  512-byte chunk, as the client's ``dfs.checksum.combine.mode`` says), which the datanodes
  combine from the checksums they keep beside each block: no read of the data. HDFS writes a
  file once (a rewrite is a new inode), and the checksum follows every byte, so this fixes the
  bytes as a Delta version's log does; it is a CRC, not a cryptographic hash, and the guard is
  the same: against reusing a key on other data by accident, not against someone with write
  access to the input who forges a file to the same length, time, inode and CRCs.

A DataFrame handed to the library whose plan only reads such files (:func:`frame_snapshot`)
gets the same, with its reader's options and schemas in the description
(docs/privacy/keys.md#frames). Any other input (an object store, a mix of file systems, a
DataFrame of another plan) gets None, and its rows are digested in validation's aggregation.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote, urlsplit

from spark_dp.errors import InputContractError
from spark_dp.io.digest import columns_line
from spark_dp.io.fs import HadoopFS, is_connect

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SCAN_SETTINGS", "file_hashes", "frame_snapshot", "snapshot"]

SCAN_SETTINGS = (
    "spark.sql.caseSensitive",
    "spark.sql.files.ignoreCorruptFiles",
    "spark.sql.files.ignoreMissingFiles",
    "spark.sql.csv.parser.columnPruning.enabled",
)
"""Session settings under which the same files can read as other rows (which column a name
picks; a corrupt or vanished file skipped instead of failing the read; a malformed CSV line
parsed in the columns read only or in all of them)."""

T = TypeVar("T")

_FORMATS = {"ParquetFileFormat": "parquet", "CSVFileFormat": "csv"}

_BLOCK = 1 << 20
_THREADS = 4


def snapshot(
    df: DataFrame, fmt: str, columns: dict[str, str], *, reader: str | None = None
) -> Callable[[], str] | None:
    """What fixes the rows of ``df``, a ``fmt`` (``parquet`` or ``csv``) table read by path:
    a function giving the format, the columns read (canonical name = source column), the Spark
    version and :data:`SCAN_SETTINGS`, then one line per data file in URI order: its URI, size
    and SHA-256 (local files), or its URI, length, modification time, inode id and HDFS file
    checksum (files on HDFS); None when the files are neither all local nor all on HDFS, or the
    session is Spark Connect (module docstring). ``reader``: a line naming the reader's
    options and schemas, where they are not the fixed ones of :func:`~.read.read_table`.

    Listing the files reads metadata only (Spark lists them for the read anyway); the bytes (or
    the datanodes' checksums) are read when the function is called, after the charge.
    """
    spark = df.sparkSession
    if fmt not in ("parquet", "csv") or is_connect(spark):
        return None
    uris = sorted(df.inputFiles())
    files = _fingerprints(spark, uris)
    if files is None:
        return None
    kind, fingerprints = files
    settings = ",".join(f"{k}={_setting(spark, k)}" for k in SCAN_SETTINGS)
    head = [f"{fmt} files {kind}", columns_line(columns), f"spark {spark.version} {settings}"]
    head += [reader] if reader is not None else []

    def describe() -> str:
        try:
            lines = fingerprints()
        except OSError as exc:  # removed or made unreadable after Spark listed it
            raise InputContractError(
                f"input file {exc.filename} could not be read for the release's content digest "
                f"({exc.strerror or type(exc).__name__}); make sure the input does not change "
                "while the job runs (or read a pinned Delta version), then run the job again"
            ) from None
        return "\n".join([*head, *lines])

    return describe


def frame_snapshot(df: DataFrame, columns: dict[str, str]) -> Callable[[], str] | None:
    """:func:`snapshot` of a DataFrame handed to the library when it is a plain read of
    Parquet or CSV files: its analyzed plan is one file relation, under at most a choice of its
    columns (``select`` of columns, no expression) and the name of a catalog table; None for
    any other plan (a filter, a join, a rename, rows made in Python, Spark Connect) and for a
    cached one, whose rows may be older than its files' bytes.

    The reader's options and its data and partition schemas join the description: the same
    bytes read with another separator, schema or mode are other rows.
    """
    if is_connect(df.sparkSession) or df.storageLevel.useMemory or df.storageLevel.useDisk:
        return None  # cached: its rows may be older than its files' bytes
    from py4j.protocol import Py4JError

    try:
        relation = _file_relation(df._jdf.queryExecution().analyzed())
        fmt = None if relation is None else _FORMATS.get(_class(relation.fileFormat()))
        if fmt is None:
            return None
        options = relation.options().iterator()
        pairs = []
        while options.hasNext():
            option = options.next()
            pairs.append([str(option._1()), str(option._2())])
        read = {
            "options": sorted(pairs),
            "data": json.loads(str(relation.dataSchema().json())),
            "partitions": json.loads(str(relation.partitionSchema().json())),
            "buckets": str(relation.bucketSpec()),
        }
    except Py4JError:  # a plan of another shape than this Spark's file relations
        return None
    return snapshot(df, fmt, columns, reader="reader " + json.dumps(read, sort_keys=True))


def _file_relation(plan: Any) -> Any:
    """The ``HadoopFsRelation`` of an analyzed plan that only reads one (catalog names and a
    projection of plain columns above it), else None."""
    while _class(plan) == "SubqueryAlias":
        plan = plan.child()
    if _class(plan) == "Project":
        exprs = plan.projectList()
        if any(_class(exprs.apply(i)) != "AttributeReference" for i in range(exprs.size())):
            return None
        plan = plan.child()
        while _class(plan) == "SubqueryAlias":
            plan = plan.child()
    if _class(plan) != "LogicalRelation" or _class(plan.relation()) != "HadoopFsRelation":
        return None
    return plan.relation()


def _class(obj: Any) -> str:
    """The simple name of a JVM object's class."""
    return str(obj.getClass().getSimpleName())


def _fingerprints(
    spark: SparkSession, uris: list[str]
) -> tuple[str, Callable[[], list[str]]] | None:
    """(what the lines hold, a function giving one line per file) for files all local or all
    on HDFS; None for any other mix."""
    paths = [_local(uri) for uri in uris]
    local = [p for p in paths if p is not None]
    if len(local) == len(uris):

        def hashed() -> list[str]:
            sums = file_hashes(local)
            return [f"{uri} {size} {h}" for uri, (size, h) in zip(uris, sums, strict=True)]

        return "sha-256", hashed
    if all(urlsplit(uri).scheme.lower() == "hdfs" for uri in uris):
        hdfs = HadoopFS(spark)

        def checked() -> list[str]:
            sums = _pooled(hdfs.checksum, uris)
            return [" ".join(map(str, (uri, *s))) for uri, s in zip(uris, sums, strict=True)]

        return "hdfs checksum", checked
    return None


def file_hashes(paths: Sequence[str]) -> list[tuple[int, str]]:
    """(size in bytes, SHA-256 hex) of each local file, in order, hashed by a few threads
    (``hashlib`` releases the GIL on large blocks)."""
    return _pooled(_hash_file, paths)


def _pooled(fn: Callable[[str], T], paths: Sequence[str]) -> list[T]:
    """``fn`` of each path, in order, by a few threads."""
    if not paths:
        return []
    with ThreadPoolExecutor(max_workers=min(_THREADS, len(paths))) as pool:
        return list(pool.map(fn, paths))


def _hash_file(path: str) -> tuple[int, str]:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while block := fh.read(_BLOCK):
            h.update(block)
            size += len(block)
    return size, h.hexdigest()


def _setting(spark: SparkSession, key: str) -> str:
    """The value a scan obeys (the default when unset, so unset and the default agree)."""
    return str(spark.conf.get(key)).strip().lower()


def _local(uri: str) -> str | None:
    """The local path of a ``file:`` URI as ``inputFiles`` gives it (percent-decoded), or None
    for any other scheme."""
    parts = urlsplit(uri)
    if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
        return None
    path = unquote(parts.path)
    return path if os.path.isabs(path) else None
