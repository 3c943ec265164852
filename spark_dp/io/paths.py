"""The path plan: every path a job reads or writes, resolved and checked before Spark starts.

Rules (a violation is exit code 2 with a message naming the flags and paths involved):

1. No path is empty.
2. No path the job writes (output, report, user state, work directory, budget store, debug file)
   equals, contains or lies inside a path it reads (input, capacities, record weights, config,
   key file) or another path it writes. ``--overwrite`` never applies to a path that is also
   read: ``--report data.parquet --input data.parquet`` and ``--output words --input words
   --overwrite`` are refused, the input untouched.
3. The directory a written path goes into exists and is writable, or can be created (its
   nearest existing ancestor is a writable directory, not a file).
4. An existing output, report, user state or debug file is refused unless ``--overwrite``; a
   report, budget store or debug file must not be an existing directory, nor a work directory
   a file. An existing work directory must be this job's own resumable state (its ``claim``
   recognises the metadata the job wrote there): anything else is refused, never adopted, never
   deleted.
5. Every path read or written is a regular file or a directory: a named pipe, device or socket
   is refused from its metadata (a named pipe is never opened: reading it would block).
6. Local inputs exist, can be read, are Parquet (or CSV with ``--input-format csv``) and are
   laid out so that Spark reads every data file: :func:`spark_dp.io.probe.probe_local_input`.
7. A key file is never an input, nor inside one (:meth:`PathPlan.refuse_read_as_data`): it
   would be read as data.

Local paths (plain paths on a local master, ``file:`` URIs) are checked completely before
Spark starts, after :func:`spark_dp.io.staging.recover` has finished or undone a commit a
killed run left behind (each action logged at once, whatever happens next). Other URIs are
compared as strings first and checked through Hadoop once the session exists
(:meth:`PathPlan.check_with_session`), still before any data is read.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spark_dp.errors import InputContractError, OutputExistsError, PathConflictError
from spark_dp.io.fs import (
    FileSystem,
    HadoopFS,
    LocalFS,
    can_create_in,
    is_connect,
    is_local,
    local_path,
    special_kind,
)
from spark_dp.io.probe import layout_problem, probe_local_input
from spark_dp.io.staging import clean_stale, journal_path, recover

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "CONFIDENTIAL_SUFFIX",
    "PathPlan",
    "PathSpec",
    "confidential_path",
    "default_report_path",
    "suffixed_path",
]

log = logging.getLogger(__name__)

CONFIDENTIAL_SUFFIX = ".confidential.json"
"""How a file holding private values is named (and it is created with mode 0600)."""


def suffixed_path(path: str, suffix: str) -> str:
    """``path`` ending in ``suffix`` (such as ``.confidential.json``; a trailing ``.json`` is
    replaced), so that a file's name says what it holds."""
    path = str(path)
    if path.endswith(suffix):
        return path
    if path.lower().endswith(".json"):
        path = path[: -len(".json")]
    return path + suffix


def confidential_path(path: str) -> str:
    """``path`` ending in ``.confidential.json`` (:func:`suffixed_path`)."""
    return suffixed_path(path, CONFIDENTIAL_SUFFIX)


def default_report_path(output: str, confidential: bool = False) -> str:
    """The report beside ``output``: ``<output>.report.json`` (``.report.confidential.json``
    for a ``confidential`` job), which a reader of ``output`` takes for its report."""
    path = f"{str(output).rstrip('/')}.report.json"
    return confidential_path(path) if confidential else path


READ, WRITE, APPEND, STATE = "read", "write", "append", "state"
"""How a job uses a path: reads it; writes it at the commit (staged, refused if present
without --overwrite); appends to it (an SQLite budget store); keeps state in it (a work
directory)."""


@dataclass(frozen=True)
class PathSpec:
    """One path of a job.

    Attributes:
        role: what it is (``input``, ``output``, ``report``, ``user_state``, ...).
        flag: the flag (or config key) that named it, for messages.
        path: as given.
        access: :data:`READ`, :data:`WRITE`, :data:`APPEND` or :data:`STATE`.
        file: True when it must be a file (not a directory) if it exists.
        fmt: input format of a table that is read (``parquet``, ``csv`` or None).
        table: a table that is read (probed, its layout checked).
        claim: for a work directory (:data:`STATE`) that exists: ``claim(fs, path, inputs)``
            raises :class:`~spark_dp.errors.PathConflictError` unless it holds this job's own
            state for ``inputs`` (:meth:`PathPlan.inputs`).
    """

    role: str
    flag: str
    path: str
    access: str
    file: bool = False
    fmt: str | None = None
    table: bool = False
    claim: Callable[[FileSystem, str, str], None] | None = None

    @property
    def writes(self) -> bool:
        """True unless the job only reads the path."""
        return self.access != READ

    def shown(self) -> str:
        return f"{self.flag} {self.path}"


def _normal_uri(path: str) -> str:
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.\-]+)://([^/]*)(/.*)?$", path)
    if not m:
        return posixpath.normpath(path)
    return f"{m.group(1).lower()}://{m.group(2)}{posixpath.normpath(m.group(3) or '/')}"


def _relation(a: str, b: str) -> str | None:
    """How resolved path ``a`` relates to ``b``: equals, contains, inside or None."""
    if a == b:
        return "is the same path as"
    if b.startswith(a.rstrip("/") + "/"):
        return "contains"
    if a.startswith(b.rstrip("/") + "/"):
        return "lies inside"
    return None


class PathPlan:
    """The resolved paths of one run and their checks.

    Args:
        specs: every path of the run.
        plain_is_local: paths without a scheme are on the local disk (a local master).
    """

    def __init__(self, specs: Iterable[PathSpec], *, plain_is_local: bool = True) -> None:
        self.plain_is_local = plain_is_local
        self.specs = [s for s in specs if s.path is not None]
        self.resolved: dict[PathSpec, str] = {}
        for s in self.specs:
            if not str(s.path).strip():
                raise PathConflictError(f"{s.flag} is an empty string; pass a path")
            self.resolved[s] = self._resolve(s.path)
        self._inputs = ";".join(
            sorted(f"{s.role}={self.resolved[s]}" for s in self.specs if s.table and not s.writes)
        )

    def inputs(self) -> str:
        """The tables this run reads, resolved before Spark starts (``role=path;...``): what a
        work directory's owner records."""
        return self._inputs

    def _local(self, path: str) -> bool:
        return is_local(path, plain_is_local=self.plain_is_local)

    def is_local(self, spec: PathSpec) -> bool:
        """Whether ``spec``'s path is on the local disk (else a Hadoop URI)."""
        return self._local(spec.path)

    def is_local_path(self, path: str) -> bool:
        """Whether ``path`` is on the local disk for this run (else a Hadoop URI)."""
        return self._local(path)

    def _resolve(self, path: str) -> str:
        if self._local(path):
            return os.path.realpath(local_path(path))
        return _normal_uri(str(path))

    def same_path(self, a: str, b: str) -> bool:
        """Whether two paths of this run name the same file or directory (resolved)."""
        return self._resolve(a) == self._resolve(b)

    def get(self, role: str) -> str | None:
        """The path (as given) of ``role``, or None."""
        for s in self.specs:
            if s.role == role:
                return s.path
        return None

    def for_spark(self, role: str) -> str | None:
        """The path of ``role`` as Spark must see it: local paths made absolute (the JVM's
        working directory is not Python's once a notebook or test changed directory)."""
        for s in self.specs:
            if s.role == role:
                if self._local(s.path):
                    return os.path.abspath(local_path(s.path))
                return s.path
        return None

    @property
    def committed(self) -> list[PathSpec]:
        """The paths written at the commit (staged first)."""
        return [s for s in self.specs if s.access == WRITE]

    def to_dict(self) -> list[dict[str, Any]]:
        """The plan for ``--dry-run``."""
        keys = ("role", "flag", "path", "access")
        return [
            {**{k: getattr(s, k) for k in keys}, "resolved": self.resolved[s]} for s in self.specs
        ]

    # ------------------------------------------------------------------ checks
    def check_conflicts(self) -> None:
        """Rules 1 and 2 on the resolved paths."""
        writes = [s for s in self.specs if s.writes]
        reads = [s for s in self.specs if not s.writes]
        for w in writes:
            for other in reads + [x for x in writes if x is not w]:
                rel = _relation(self.resolved[w], self.resolved[other])
                if rel is None:
                    continue
                why = (
                    "a job never writes where it reads, with or without --overwrite"
                    if not other.writes
                    else "each output needs its own path"
                )
                raise PathConflictError(f"{w.shown()} {rel} {other.shown()}: {why}")

    def prepare_local(self, *, overwrite: bool, recover_commits: bool = True) -> None:
        """Rules 3-6 for local paths, after recovering a killed run's commit (its actions are
        logged as they happen, even when a check then fails)."""
        fs = LocalFS()
        local = [s for s in self.specs if self._local(s.path)]
        for s in local:  # before anything is opened or moved
            _refuse_special(s, local_path(s.path))
        if recover_commits:
            self._recover([s for s in local if s.access in (WRITE, STATE)], fs)
        for s in local:
            if s.writes:
                self._check_parent(s)
                self._check_target(s, fs, overwrite)
            elif s.table:
                probe_local_input(s.path, s.fmt, flag=s.flag)
            elif not os.path.isfile(local_path(s.path)):
                what = "a directory" if os.path.isdir(local_path(s.path)) else "not a readable file"
                raise InputContractError(f"{s.shown()} is {what}; pass a file")

    def _recover(self, targets: list[PathSpec], fs: FileSystem) -> None:
        for s in targets:
            if recover(journal_path(s.path), lambda _p: fs):
                log.warning("%s: recovered the commit of an interrupted run", s.shown())
        for s in targets:
            clean_stale(s.path, fs)

    def refuse_read_as_data(self, flag: str, path: str) -> None:
        """Rule 7: ``path`` (a key file) is no local table the job reads, nor inside one."""
        key = os.path.realpath(local_path(path))
        for s in self.specs:
            if s.access != READ or not s.table or not self.is_local(s):
                continue
            table = os.path.realpath(local_path(s.path))
            if key == table or key.startswith(table.rstrip("/") + "/"):
                where = "is" if key == table else "lies inside"
                raise PathConflictError(
                    f"{flag} {path} {where} {s.shown()}: a key must never be read as data; "
                    "keep it outside every input (e.g. in a secret store)"
                )

    def remove_state(self, device: int) -> None:
        """Remove the local work directories on filesystem ``device`` (a full disk): they are
        this job's own (rule 4), and a re-run starts them over."""
        for s in self.specs:
            path = local_path(s.path)
            if s.access == STATE and self._local(s.path) and os.path.isdir(path):
                if os.stat(path).st_dev == device:
                    LocalFS().delete(path)
                    log.warning("%s: removed the work directory from the full disk", s.shown())

    def _check_parent(self, s: PathSpec) -> None:
        p = os.path.dirname(os.path.abspath(local_path(s.path).rstrip("/") or "/"))
        while not os.path.lexists(p):
            p = os.path.dirname(p)
        if not os.path.isdir(p):
            what = special_kind(p) or "a file"
            raise PathConflictError(f"{s.shown()}: {p} is {what}, not a directory")
        if not can_create_in(p):
            raise PathConflictError(f"{s.shown()}: directory {p} is not writable")

    def _check_target(self, s: PathSpec, fs: FileSystem, overwrite: bool) -> None:
        if not fs.exists(s.path):
            return
        if s.file and fs.is_dir(s.path):
            raise PathConflictError(f"{s.shown()} is a directory; pass a file path")
        if s.access == STATE and not fs.is_dir(s.path):
            raise PathConflictError(f"{s.shown()} is a file; pass a directory")
        if s.access == STATE and s.claim is not None:
            s.claim(fs, s.path, self._inputs)
        if s.access == WRITE and not overwrite:
            raise OutputExistsError(
                f"{s.shown()} already exists; pass --overwrite to replace it, or choose "
                "another path"
            )

    def check_with_session(self, spark: SparkSession, *, overwrite: bool) -> None:
        """Rules 2-4 for the paths not on the local disk, through Hadoop (classic sessions);
        under Spark Connect only the string comparison of :meth:`check_conflicts` applies."""
        remote = [s for s in self.specs if not self._local(s.path)]
        if not remote or is_connect(spark):
            return
        hadoop = HadoopFS(spark)
        for s in remote:
            self.resolved[s] = _normal_uri(hadoop.qualify(s.path))
        self.check_conflicts()
        self._recover([s for s in remote if s.access in (WRITE, STATE)], hadoop)
        for s in remote:
            if s.writes:
                self._check_target(s, hadoop, overwrite)
            elif not hadoop.exists(s.path):
                raise InputContractError(f"{s.shown()} does not exist")
            elif s.table and s.fmt != "delta" and hadoop.is_dir(s.path):  # Delta: its log
                problem = layout_problem(hadoop.list_files(s.path))
                if problem:
                    raise InputContractError(f"{s.shown()}: {problem}")


def _refuse_special(s: PathSpec, path: str) -> None:
    """Rule 5: a named pipe, device or socket is neither read nor written."""
    kind = special_kind(path)
    if kind is None:
        return
    error = PathConflictError if s.writes else InputContractError
    raise error(f"{s.shown()} is {kind}; pass a regular file or directory")
