"""Identities of datasets, runs and releases; binding a key to one release.

* :func:`default_dataset_id`: the privacy unit a release is charged to when the job is given no
  ``--dataset-id``: the canonical input path.
* :func:`release_id`: the hash of everything that determines a release: job, algorithm, every
  argument that can change the output, :data:`RELEASE_COMPAT_VERSION`, the keyed content digest
  of every table read (:mod:`spark_dp.io.digest`) and the release key's fingerprint. The key is
  bound to it before anything is drawn (:meth:`spark_dp.randomness.Randomness.bind`), so the
  same key on the same rows with the same arguments gives the identical release (a retry is
  free), and a change of any of them gives independent noise and a new charge. Output, report
  and work paths are not in it, nor the input paths: what is read enters through its digest.
* :func:`run_identity`: what a run is before it has read anything (job, algorithm, arguments,
  key fingerprint, dataset): a run that died while validating released nothing, and the next
  run with the same identity takes its charge over instead of being charged again.
* :func:`bind_release`: the library entry points' binding (the job runner binds with its own,
  fuller id).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spark_dp.errors import ParameterError

if TYPE_CHECKING:
    from spark_dp.io.digest import ContentDigest
    from spark_dp.io.read import InputSummary
    from spark_dp.randomness import Randomness

__all__ = [
    "RELEASE_COMPAT_VERSION",
    "bind_release",
    "default_dataset_id",
    "digests_of",
    "is_uri",
    "release_id",
    "run_identity",
]

RELEASE_COMPAT_VERSION = 2
"""Enters every release id. Bump it whenever the outputs for the same rows, arguments and key
change (a new key derivation, a new sampler, another stream layout), so that a release of an
earlier version is never taken for one of this version (and never charged as its repeat).
2: keys bound to the release id, typed stream labels, content digests (issue 34)."""

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")
_RELEASE_DOMAIN = b"spark_dp/v2/release-id\x00"
_RUN_DOMAIN = b"spark_dp/v2/run-identity\x00"


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
) -> str:
    """SHA-256 (hex) of the canonical JSON of (compat version, job, algorithm, arguments, the
    content digest of every table read, key fingerprint).

    Args:
        arguments: every argument that can change the output (a mapping or a parameter
            dataclass); not output, report or work paths, and not input paths.
        digests: one per table read, keyed by this key (their table names must differ).
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
            "data": {d.table: d.value for d in digests},
            "key": key_fingerprint,
        },
    )


def run_identity(
    *, job: str, algorithm: str | None, arguments: Any, key_fingerprint: str, dataset: str
) -> str:
    """What a run is before it reads data: SHA-256 of (compat version, job, algorithm,
    arguments, key fingerprint, dataset)."""
    return _hash(
        _RUN_DOMAIN,
        {
            "compat": RELEASE_COMPAT_VERSION,
            "job": job,
            "algorithm": algorithm,
            "arguments": arguments,
            "key": key_fingerprint,
            "dataset": dataset,
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
    compat version). A key-file or test-seed key is refused unless every table has a digest
    made with that same key: reused with other data, it would give correlated noise. A fresh
    entropy key is never reused, so it may bind without digests. A Randomness the caller has
    bound already (the job runner binds with its own id) is used as is.

    Raises:
        ParameterError: a missing digest for a key-file or seeded key, or a digest made with
            another key.
    """
    if randomness.bound:
        return randomness
    for digest in digests:
        if digest.key_fingerprint != randomness.fingerprint:
            raise ParameterError(
                f"the content digest of {digest.table} was made with another key; digest the "
                "input with the same Randomness (ReadGate.keyed_by(randomness))"
            )
    have = {d.table for d in digests}
    missing = [t for t in tables if t not in have]
    if missing and randomness.mode != "entropy":
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
