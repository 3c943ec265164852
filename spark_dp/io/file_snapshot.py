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

Local files only (a plain path or a ``file:`` URI, which Spark's executors read at the same
path): a classic session with every listed file local gets a snapshot; any other input (an
``hdfs://`` or object-store URI, Spark Connect, whose client may not see the server's disk) gets
None, and its rows are digested in validation's aggregation, as before.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from spark_dp.errors import InputContractError
from spark_dp.io.digest import columns_line
from spark_dp.io.fs import is_connect

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SCAN_SETTINGS", "file_hashes", "snapshot"]

SCAN_SETTINGS = (
    "spark.sql.caseSensitive",
    "spark.sql.files.ignoreCorruptFiles",
    "spark.sql.files.ignoreMissingFiles",
    "spark.sql.csv.parser.columnPruning.enabled",
)
"""Session settings under which the same files can read as other rows (which column a name
picks; a corrupt or vanished file skipped instead of failing the read; a malformed CSV line
parsed in the columns read only or in all of them)."""

_BLOCK = 1 << 20
_THREADS = 4


def snapshot(df: DataFrame, fmt: str, columns: dict[str, str]) -> Callable[[], str] | None:
    """What fixes the rows of ``df``, a ``fmt`` (``parquet`` or ``csv``) table read by path:
    a function giving the format, the columns read (canonical name = source column), the Spark
    version and :data:`SCAN_SETTINGS`, and every data file's URI, size and SHA-256, one per line
    in URI order; None when a file is not local or the session is Spark Connect (module
    docstring).

    Listing the files reads metadata only (Spark lists them for the read anyway); the bytes are
    read when the function is called, after the charge.
    """
    spark = df.sparkSession
    if fmt not in ("parquet", "csv") or is_connect(spark):
        return None
    uris = sorted(df.inputFiles())
    paths = [_local(uri) for uri in uris]
    if any(p is None for p in paths):
        return None
    local = [p for p in paths if p is not None]
    settings = ",".join(f"{k}={_setting(spark, k)}" for k in SCAN_SETTINGS)
    head = [f"{fmt} files sha-256", columns_line(columns), f"spark {spark.version} {settings}"]

    def describe() -> str:
        try:
            hashes = file_hashes(local)
        except OSError as exc:  # removed or made unreadable after Spark listed it
            raise InputContractError(
                f"input file {exc.filename} could not be read for the release's content digest "
                f"({exc.strerror or type(exc).__name__}); make sure the input does not change "
                "while the job runs (or read a pinned Delta version), then run the job again"
            ) from None
        files = [f"{uri} {size} {h}" for uri, (size, h) in zip(uris, hashes, strict=True)]
        return "\n".join([*head, *files])

    return describe


def file_hashes(paths: Sequence[str]) -> list[tuple[int, str]]:
    """(size in bytes, SHA-256 hex) of each local file, in order, hashed by a few threads
    (``hashlib`` releases the GIL on large blocks)."""
    if not paths:
        return []
    with ThreadPoolExecutor(max_workers=min(_THREADS, len(paths))) as pool:
        return list(pool.map(_hash_file, paths))


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
