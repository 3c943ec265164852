"""Identities of datasets, inputs, requests and releases; binding a key to one release.

* :func:`default_dataset_id`: the privacy unit a release is charged to when the job is given no
  ``--dataset-id``: the canonical input path.
* :func:`input_identity`: *where* a table is read and what its files look like, from metadata
  only (the resolved location and a hash of the listing: names, sizes, modification times).
* :func:`run_identity`: what a run *asks for*, known before it reads anything: job, algorithm,
  every argument that can change the output, the input identity of every table it reads and
  the key's fingerprint. The budget store decides everything from it alone (a request that
  was committed before is not run again; a run that died after its charge is taken over by
  its retry), never from the content of the data (``docs/privacy/budget.md``).
* :func:`release_id`: what a release *is*: the same fields plus the keyed content digest of
  every table read (:mod:`spark_dp.io.digest`) and :data:`RELEASE_COMPAT_VERSION`. The key is
  bound to it before anything is drawn (:meth:`spark_dp.randomness.Randomness.bind`), so the
  same key, request and rows give the identical release (a retry recomputes it exactly), and a
  change of any of them (another input location, a rewritten listing, other rows, another
  argument) gives independent noise. Output, report and work paths are not in it.
* :func:`bind_release`: the library entry points' binding (the job runner binds with its own,
  fuller id).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spark_dp.errors import ParameterError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from spark_dp.io.digest import ContentDigest
    from spark_dp.io.read import InputSummary
    from spark_dp.randomness import Randomness

__all__ = [
    "RELEASE_COMPAT_VERSION",
    "bind_release",
    "default_dataset_id",
    "digests_of",
    "input_identity",
    "is_uri",
    "release_id",
    "run_identity",
]

RELEASE_COMPAT_VERSION = 3
"""Enters every release id. Bump it whenever the outputs for the same rows, arguments and key
change (a new key derivation, a new sampler, another stream layout), so that a release of an
earlier version never shares noise with one of this version.
2: keys bound to the release id, typed stream labels, content digests (issue 34).
3: key files in spark_dp's own format with a salted scrypt fingerprint; rows with a null id
dropped by default (issue 43)."""

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")
_RELEASE_DOMAIN = b"spark_dp/v2/release-id\x00"
_RUN_DOMAIN = b"spark_dp/v2/run-identity\x00"
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


def _listing_hash(entries: Iterator[tuple[str, int, int]]) -> str:
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
    """Where a table is read and what its files look like, from metadata only (no row is read).

    Local paths (and ``file:`` URIs): ``<resolved path>#<hash of the listing>``, the listing
    being every data file's relative name, size and modification time (files and folders whose
    names start with ``_`` or ``.``, which Spark's readers skip, are left out); a path that does
    not exist gets the marker ``absent``. Other URIs (``hdfs://``, ``s3a://``): the URI plus the
    hash of the listing Hadoop's FileSystem API returns when a classic SparkSession is passed,
    else the URI alone (Spark Connect: the client has no Hadoop file system).
    """
    path = str(path)
    if is_uri(path):
        uri = path.rstrip("/")
        if spark is None:
            return uri
        return f"{uri}#{_listing_hash(_hadoop_listing(spark, uri))}"
    local = _local(path)
    if not local.exists():
        return f"{local}#absent"
    return f"{local}#{_listing_hash(_listing(local))}"


def _canonical(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_canonical(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _hash(domain: bytes, doc: Mapping[str, Any]) -> str:
    text = json.dumps(_canonical(doc), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(domain + text.encode("utf-8")).hexdigest()


def release_id(
    *,
    job: str,
    algorithm: str | None,
    arguments: Any,
    digests: Sequence[ContentDigest],
    key_fingerprint: str,
    inputs: Mapping[str, str] | None = None,
) -> str:
    """SHA-256 (hex) of the canonical JSON of (compat version, job, algorithm, arguments, input
    identities, the content digest of every table read, key fingerprint).

    Args:
        arguments: every argument that can change the output (a mapping or a parameter
            dataclass); not output, report or work paths.
        digests: one per table read, keyed by this key (their table names must differ).
        inputs: the :func:`input_identity` of every table read, by role (the job runner's; a
            library call reads DataFrames and passes none).
    """
    tables = [d.table for d in digests]
    if len(set(tables)) != len(tables):
        raise ValueError(f"one digest per table, got {tables}")
    return _hash(
        _RELEASE_DOMAIN,
        {
            "compat": RELEASE_COMPAT_VERSION,
            "job": job,
            "algorithm": algorithm,
            "arguments": arguments,
            "inputs": dict(inputs or {}),
            "data": {d.table: d.value for d in digests},
            "key": key_fingerprint,
        },
    )


def run_identity(
    *,
    job: str,
    algorithm: str | None,
    arguments: Any,
    key_fingerprint: str,
    inputs: Mapping[str, str],
) -> str:
    """What a run asks for, before it reads anything: SHA-256 of (compat version, job,
    algorithm, arguments, the :func:`input_identity` of every table it reads, key fingerprint).

    Metadata only: the budget store decides from it, never from the rows (module docstring).
    """
    return _hash(
        _RUN_DOMAIN,
        {
            "compat": RELEASE_COMPAT_VERSION,
            "job": job,
            "algorithm": algorithm,
            "arguments": arguments,
            "inputs": dict(inputs),
            "key": key_fingerprint,
        },
    )


def digests_of(*sources: ContentDigest | InputSummary | None) -> list[ContentDigest]:
    """The content digests held by ``sources`` (digests or :class:`InputSummary` objects;
    ``None`` and summaries made without a digest are skipped)."""
    from spark_dp.io.digest import ContentDigest

    out = []
    for source in sources:
        digest = source if isinstance(source, ContentDigest) else getattr(source, "digest", None)
        if digest is not None:
            out.append(digest)
    return out


def bind_release(
    randomness: Randomness,
    *,
    family: str,
    algorithm: str | None,
    parameters: Any,
    digests: Sequence[ContentDigest],
    tables: Sequence[str],
) -> Randomness:
    """``randomness`` bound to the release of a library call, or as given if already bound.

    The rule (``docs/privacy/keys.md``): an unbound key is bound to the release id of (family,
    algorithm, parameters, the content digest of every table in ``tables``, key fingerprint,
    compat version), and a key object binds once (:meth:`~spark_dp.randomness.Randomness.bind`
    raises the second time). A key-file or test-seed key is refused unless every table has a
    digest made with that same key: read again or re-created from its seed, the same key may
    come back for other data, and only the digest then tells the two releases apart. An
    entropy key exists in this object only, which binds once, so it may bind without digests.
    A Randomness the caller has bound already (the job runner binds with its own id) is used
    as is.

    Raises:
        ParameterError: a missing digest for a key-file or seeded key, or a digest made with
            another key.
        KeyReusedError: the key object was bound before (a ``ParameterError``).
    """
    if randomness.bound:
        return randomness
    for digest in digests:
        if digest.key_fingerprint != randomness.fingerprint:
            raise ParameterError(
                f"the content digest of {digest.table} was made with another key; digest the "
                "input with the same Randomness (ReadGate.keyed_by(randomness))"
            )
    from spark_dp.io.digest import needs_digest

    have = {d.table for d in digests}
    missing = [t for t in tables if t not in have]
    if missing and needs_digest(randomness):
        raise ParameterError(
            f"a {randomness.mode} key must be bound to the content of every table it is used "
            f"on, and {', '.join(missing)} has no digest: validate the input in the call "
            "(validate=True), or pass digest= what load_pairs / load_incidences / "
            "load_capacities(..., gate=ReadGate.keyed_by(randomness)) returned, or bind the "
            "Randomness yourself"
        )
    rid = release_id(
        job=f"library:{family}",
        algorithm=algorithm,
        arguments=parameters,
        digests=[d for d in digests if d.table in tables],
        key_fingerprint=randomness.fingerprint,
    )
    return randomness.bind(rid)
