"""Delta Lake tables by path: the session's settings, probes, versions, reads and writes.

A Delta table is a directory of Parquet files and a transaction log ``_delta_log/`` of commits
``<version, 20 digits>.json``; version ``v`` of the table is what those commits up to ``v`` say,
so a version is immutable (docs/operations/tables.md#delta-lake).

* **Session.** Delta needs its SQL extension and catalog set when the session starts
  (:data:`DELTA_SESSION_CONF`): a job that reads or writes Delta adds them to the settings of a
  session it starts, unless given; its jars come from the user (``--packages``, ``--jars`` or
  ``spark.jars``), and :func:`check_delta_session` refuses, in one line and before any data is
  read, a session without them.
* **Version.** :func:`latest_version` reads the log's file names (metadata only): the largest
  commit number. The job pins the version it reads (``--input-version N``, else the latest when
  the request is made), so the request's input identity (:func:`delta_identity`) and the rows
  read are the same version even when another writer commits meanwhile.
* **Snapshot.** :func:`snapshot` describes the rows a read at a pinned version holds (the
  version, its data files, the columns read) from metadata only: a job with a key that can
  come back (a key file, a seed) binds its release to the keyed digest of that description
  instead of a pass over the rows (:func:`spark_dp.io.digest.snapshot_digest`;
  docs/privacy/keys.md#snapshot).
* **Write.** A release is written as a new Delta table in one commit (version 0) at a staged
  sibling and moved into place by the job's commit protocol (:mod:`spark_dp.io.staging`), as a
  Parquet output: no reader ever sees half a table, and a run killed before its commit point
  leaves the previous table as it was.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from spark_dp.errors import ConfigError, InputContractError
from spark_dp.io.digest import columns_line

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from spark_dp.io.fs import FileSystem

__all__ = [
    "DELTA_EXTENSION",
    "DELTA_LOG",
    "DELTA_SESSION_CONF",
    "check_delta_session",
    "check_version",
    "delta_identity",
    "delta_read_error",
    "latest_version",
    "read_delta",
    "snapshot",
]

DELTA_LOG = "_delta_log"
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_SESSION_CONF = {
    "spark.sql.extensions": DELTA_EXTENSION,
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
"""The static settings Delta needs in a session (set at start-up only)."""

DELTA_PACKAGES = (
    "--packages io.delta:delta-spark_4.2_2.13:4.4.0 (Spark 4.2; for another Spark 4.x, the Delta "
    "release built for it) or io.delta:delta-spark_2.12:3.3.2 (Spark 3.5)"
)

_COMMIT = re.compile(r"^(\d{20})\.json$")
_IDENTITY_DOMAIN = b"spark_dp/v1/delta-commit\x00"


def _commits(fs: FileSystem, path: str) -> list[int]:
    log = f"{str(path).rstrip('/')}/{DELTA_LOG}"
    return sorted(int(m.group(1)) for n in fs.list_names(log) if (m := _COMMIT.match(n)))


def latest_version(fs: FileSystem, path: str, *, flag: str = "--input") -> int:
    """The newest version of the Delta table at ``path`` (its largest commit number).

    Raises:
        InputContractError: ``path`` holds no Delta log (not a Delta table).
    """
    commits = _commits(fs, path) if fs.is_dir(path) else []
    if not commits:
        raise InputContractError(
            f"{flag} {path} is not a Delta table (no {DELTA_LOG}/ with commits); drop "
            "--input-format delta for a Parquet or CSV input"
        )
    return commits[-1]


def check_version(fs: FileSystem, path: str, version: int | None, *, flag: str = "--input") -> int:
    """The version a run reads: ``version`` (``--input-version``) or the latest.

    Raises:
        InputContractError: not a Delta table, or a version the table does not have yet.
    """
    latest = latest_version(fs, path, flag=flag)
    if version is None:
        return latest
    if version > latest:
        raise InputContractError(
            f"--input-version {version}: {flag} {path} has versions up to {latest}; pass one of "
            "them"
        )
    return version


def delta_identity(fs: FileSystem, resolved: str, path: str, version: int) -> str:
    """The input identity of version ``version`` of a Delta table: ``delta:<resolved>@v<N>#<h>``,
    ``h`` a hash of that version's commit file (transaction metadata: which files it adds and
    removes, never a row), so a table deleted and created again at the same path is another
    input."""
    commit = f"{str(path).rstrip('/')}/{DELTA_LOG}/{version:020d}.json"
    h = hashlib.sha256(_IDENTITY_DOMAIN + fs.read_text(commit).encode("utf-8"))
    return f"delta:{resolved}@v{version}#{h.hexdigest()[:32]}"


def check_delta_session(spark: SparkSession, flag: str) -> None:
    """Refuse a session that cannot read or write Delta, in one line, before any data is read.

    Raises:
        ConfigError: the Delta jars are not on the classpath, or the session was started
            without Delta's extension and catalog (an active session a job reuses).
    """
    from spark_dp.session import is_classic, jvm_class_present

    if is_classic(spark) and not jvm_class_present(spark, DELTA_EXTENSION):
        raise ConfigError(
            f"{flag} needs the Delta Lake jars, which are not on the classpath: add "
            f"{DELTA_PACKAGES}, or --jars with those files"
        )
    extensions = str(spark.conf.get("spark.sql.extensions", "") or "")
    if DELTA_EXTENSION not in extensions:
        settings = " ".join(f"--conf {k}={v}" for k, v in DELTA_SESSION_CONF.items())
        raise ConfigError(
            f"{flag} needs a session started with Delta's extension and catalog, and this one "
            f"was started without them; start it with {settings}"
        )


def read_delta(spark: SparkSession, path: str, version: int | None) -> DataFrame:
    """Version ``version`` (else the latest) of the Delta table at ``path``."""
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", int(version))
    return reader.load(str(path))


def delta_read_error(msg: str, path: str, flag: str) -> str | None:
    """A one-line message for Delta's error on reading ``path``, or ``None`` if unknown."""
    if "DELTA_TABLE_NOT_FOUND" in msg or "is not a Delta table" in msg:
        return (
            f"{flag} {path} is not a Delta table; drop --input-format delta for a Parquet or "
            "CSV input"
        )
    m = re.search(r"time travel Delta table to version (\d+)\. Available versions: (.+?)\.", msg)
    if m:
        return (
            f"--input-version {m.group(1)}: {flag} {path} keeps versions {m.group(2)} only "
            "(older ones were cleaned up); pass one of them"
        )
    return None


def snapshot(df: DataFrame, path: str, version: int, columns: dict[str, str]) -> str:
    """What fixes the rows of ``df``, the Delta table at ``path`` read at ``version``: the
    version, a hash of that version's commit file, the data files of that version
    (``inputFiles``: names the writer made fresh, never rewritten) and the columns read
    (canonical name = source column). Metadata only: no row is read.

    The commit file tells apart two tables whose version lists the same files with other
    deletion vectors (a shallow clone of another version, a table made again at the path): its
    actions and time are those of one commit. It is read through Spark, as the rows are (the
    same path resolution, classic or Connect), and hashed line by line in sorted order.
    """
    commit = f"{str(path).rstrip('/')}/{DELTA_LOG}/{int(version):020d}.json"
    lines = sorted(r[0] for r in df.sparkSession.read.text(commit).collect())
    h = hashlib.sha256(_IDENTITY_DOMAIN + "\n".join(lines).encode("utf-8")).hexdigest()
    files = sorted(df.inputFiles())
    return "\n".join([f"delta@v{int(version)}#{h}", columns_line(columns), *files])
