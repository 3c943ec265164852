"""Identities of datasets, inputs and releases, computed without reading any data.

* :func:`default_dataset_id`: the privacy unit a release is charged to when the job is given no
  ``--dataset-id``: the canonical input path.
* :func:`input_identity`: *which* input a release reads: the canonical path plus a hash of the
  file listing (names, sizes, modification times: metadata only, never file contents), so a
  rewritten input is a different input.
* :func:`release_id`: the hash of everything that determines a release: job, algorithm,
  parameters, input identity and the release key's fingerprint. Output and report paths are
  not in it: the same key on the same input and parameters gives the identical release wherever
  it is written, so re-running it (an Airflow retry with the same key) is not charged twice,
  while a fresh key is a new release.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["default_dataset_id", "input_identity", "is_uri", "release_id"]

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")
_RELEASE_DOMAIN = b"spark_dp/v1/release-id\x00"
_LISTING_DOMAIN = b"spark_dp/v1/input-listing\x00"


def is_uri(path: str) -> bool:
    """Whether ``path`` names a Hadoop file system other than the local one (``hdfs://``,
    ``s3a://``, ``gs://``, ...). ``file:`` URIs and plain paths are local."""
    return bool(_URI.match(path)) and not path.lower().startswith("file:")


def _local(path: str) -> Path:
    """The resolved local path of a plain path or a ``file:`` URI."""
    if path.lower().startswith("file:"):
        path = re.sub(r"^file:(//)?", "", path, flags=re.I)
    return Path(path).expanduser().resolve()


def default_dataset_id(path: str) -> str:
    """The dataset id of an input path: the resolved local path, or the URI as given (without
    a trailing ``/``). The privacy unit is the users of that data, whatever its files are."""
    path = str(path)
    return path.rstrip("/") if is_uri(path) else str(_local(path))


def _hidden(name: str) -> bool:
    """Files Spark's readers skip (``_SUCCESS``, ``.crc`` checksums, ``_temporary``)."""
    return name.startswith(("_", "."))


def _listing(root: Path) -> Iterator[tuple[str, int, int]]:
    """(relative name, size, mtime in ns) of every data file under ``root`` (``root`` itself
    when it is a file), in a fixed order. Metadata only: no file is opened."""
    if root.is_file():
        st = root.stat()
        yield root.name, st.st_size, st.st_mtime_ns
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not _hidden(d))
        for name in sorted(n for n in filenames if not _hidden(n)):
            full = Path(dirpath, name)
            st = full.stat()
            yield full.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns


def _digest(entries: Iterator[tuple[str, int, int]]) -> str:
    h = hashlib.sha256(_LISTING_DOMAIN)
    for name, size, mtime in entries:
        h.update(f"{name}\x00{size}\x00{mtime}\n".encode())
    return h.hexdigest()[:32]


def _hadoop_listing(spark: SparkSession, uri: str) -> Iterator[tuple[str, int, int]]:
    """The same listing through Hadoop's FileSystem API (``listFiles`` recursively): names,
    lengths and modification times (ms), for ``hdfs://``, ``s3a://`` and other URIs."""
    jvm: Any = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(uri)
    fs = path.getFileSystem(conf)
    root = fs.makeQualified(path).toUri().getPath().rstrip("/")
    it = fs.listFiles(path, True)
    rows = []
    while it.hasNext():
        st = it.next()
        name = st.getPath().toUri().getPath()
        rel = name[len(root) :].lstrip("/") or name.rsplit("/", 1)[-1]
        if any(_hidden(part) for part in rel.split("/")):
            continue
        rows.append((rel, int(st.getLen()), int(st.getModificationTime()) * 1_000_000))
    yield from sorted(rows)


def input_identity(path: str, *, spark: SparkSession | None = None) -> str:
    """A canonical identity of an input, computed from metadata only (no data is read).

    Local paths (and ``file:`` URIs): ``<resolved path>#<hash of the listing>``, the listing
    being every data file's relative name, size and modification time (files and folders whose
    names start with ``_`` or ``.``, which Spark's readers skip, are left out). A path that
    does not exist gets the marker ``absent`` (the job fails later when it tries to read it,
    and the budget check has already happened without opening anything).

    Other URIs (``hdfs://``, ``s3a://``): the URI as given, or, when a SparkSession is passed,
    the URI plus the hash of the listing Hadoop's FileSystem API returns.
    """
    path = str(path)
    if is_uri(path):
        uri = path.rstrip("/")
        return uri if spark is None else f"{uri}#{_digest(_hadoop_listing(spark, uri))}"
    local = _local(path)
    if not local.exists():
        return f"{local}#absent"
    return f"{local}#{_digest(_listing(local))}"


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_canonical(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def release_id(
    job: str,
    algorithm: str | None,
    parameters: Mapping[str, Any],
    input_identity: str,
    key_fingerprint: str,
) -> str:
    """SHA-256 (hex) of the canonical JSON of (job, algorithm, parameters, input, key).

    Pass the parameters that determine the release (not output, report or work paths): two
    runs with equal arguments and the same key compute the identical release, so the budget
    store charges it once. A key is identified by its public fingerprint only.
    """
    doc = {
        "job": job,
        "algorithm": algorithm,
        "parameters": _canonical(parameters),
        "input": input_identity,
        "key": key_fingerprint,
    }
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(_RELEASE_DOMAIN + text.encode("utf-8")).hexdigest()
