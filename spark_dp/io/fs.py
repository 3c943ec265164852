"""Filesystem operations of the job runner, with the JVM only where nothing else works.

Three backends behind one small interface (:class:`FileSystem`), chosen per path by
:func:`filesystem`:

* :class:`LocalFS`: paths without a scheme that are local (see :func:`is_local`) and ``file:``
  URIs, through Python's ``os`` and ``shutil``. No Spark needed, so it works before Spark starts
  and under Spark Connect (where the client and a local server share the disk).
* :class:`HadoopFS`: any other URI (``hdfs://``, ``s3a://``, ``abfss://``, ...) and cluster paths
  without a scheme, through the Hadoop ``FileSystem`` of a **classic** session's JVM gateway.
* :class:`spark_dp.io.arrow_fs.ArrowFS`: other URIs under **Spark Connect** (no JVM on the
  client), through ``pyarrow.fs`` (``s3://``, ``gs://``, ``hdfs://``; ``s3a://`` and ``s3n://``
  are read as ``s3://``). The runner uses it only for small files (the report, the commit journal).

Renames are atomic on local disks and HDFS (and the commit protocol of
:mod:`spark_dp.io.staging` relies on that); on object stores a rename of a directory is a copy,
which the protocol tolerates because the report is written last.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shutil
import stat
import tempfile
from typing import TYPE_CHECKING, Any, Protocol

from spark_dp.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "FileSystem",
    "HadoopFS",
    "LocalFS",
    "can_create_in",
    "filesystem",
    "is_connect",
    "is_local",
    "local_path",
    "parent_and_name",
    "read_json",
    "scheme",
    "special_kind",
]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):")


def scheme(path: str) -> str | None:
    """The URI scheme of ``path`` in lower case (``None`` for a plain path)."""
    m = _SCHEME.match(str(path))
    return m.group(1).lower() if m else None


def is_local(path: str, *, plain_is_local: bool = True) -> bool:
    """True for ``file:`` URIs, and for plain paths when they resolve to the local disk.

    ``plain_is_local`` says how a path without a scheme resolves: on the local disk for a
    local master, through Hadoop's default filesystem (often HDFS) on a cluster.
    """
    s = scheme(path)
    return s == "file" or (s is None and plain_is_local)


def local_path(path: str) -> str:
    """The plain local path of a ``file:`` URI or a plain path (``~`` expanded)."""
    p = str(path)
    if scheme(p) == "file":
        p = re.sub(r"^file:(//localhost)?", "", p, flags=re.I)
        p = "/" + p.lstrip("/") if p.startswith("//") else p
    return os.path.expanduser(p)


_SPECIAL = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def special_kind(path: str) -> str | None:
    """What a local path is when it is neither a regular file nor a directory (``"a named
    pipe"``, ``"a character device"``, ...), following symbolic links; ``None`` otherwise or
    when it does not exist. Found from its metadata alone: a named pipe is never opened (an open
    for reading blocks until a writer comes)."""
    try:
        mode = os.stat(local_path(path)).st_mode
    except OSError:
        return None
    return next((name for test, name in _SPECIAL if test(mode)), None)


def can_create_in(directory: str) -> bool:
    """True if a file can be created in the local ``directory``: asked of the filesystem itself
    (a probe file, removed at once), as permissions alone mislead for root and read-only
    mounts."""
    if not os.access(directory, os.W_OK | os.X_OK):
        return False
    try:
        fd, probe = tempfile.mkstemp(prefix=".spark_dp-probe-", dir=directory)
    except OSError:
        return False
    os.close(fd)
    os.remove(probe)
    return True


def parent_and_name(path: str) -> tuple[str, str]:
    """(parent, last component) of a path or URI, ignoring a trailing slash."""
    p = str(path).rstrip("/") or "/"
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.\-]+://[^/]*)(/.*)?$", p)
    if m:
        head, rest = m.group(1), m.group(2) or "/"
        parent, name = posixpath.split(rest)
        return head + (parent or "/"), name
    parent, name = posixpath.split(p)
    return parent or ".", name


def is_connect(spark: SparkSession | None) -> bool:
    """True for a Spark Connect session (no JVM gateway on this side)."""
    from spark_dp.session import is_classic

    return spark is not None and not is_classic(spark)


class FileSystem(Protocol):
    """What the runner needs from a filesystem. Paths are strings as the user gave them."""

    def exists(self, path: str) -> bool: ...

    def is_dir(self, path: str) -> bool: ...

    def mkdirs(self, path: str) -> None: ...

    def rename(self, src: str, dst: str) -> None: ...

    def delete(self, path: str) -> None: ...

    def list_names(self, directory: str) -> list[str]: ...

    def write_text(self, path: str, text: str, *, private: bool = False) -> None: ...

    def read_text(self, path: str) -> str: ...

    def make_private(self, path: str) -> None: ...

    def identity(self, path: str) -> str | None:
        """What stays the same when ``path`` is renamed and differs for any other file or
        directory put there (device and inode on a local disk); ``None`` where the backend
        cannot tell (the commit protocol then relies on its journals alone)."""
        ...


class LocalFS:
    """The local disk through ``os`` and ``shutil``."""

    def exists(self, path: str) -> bool:
        return os.path.lexists(local_path(path))

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(local_path(path))

    def mkdirs(self, path: str) -> None:
        os.makedirs(local_path(path), exist_ok=True)

    def rename(self, src: str, dst: str) -> None:
        os.rename(local_path(src), local_path(dst))

    def delete(self, path: str) -> None:
        p = local_path(path)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p, ignore_errors=False)
        elif os.path.lexists(p):
            os.remove(p)

    def list_names(self, directory: str) -> list[str]:
        try:
            return os.listdir(local_path(directory))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def write_text(self, path: str, text: str, *, private: bool = False) -> None:
        """Write ``text``; ``private``: the file is created with mode 0600 (never readable by
        others, not even for an instant)."""
        p = local_path(path)
        os.makedirs(os.path.dirname(p) or ".", exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        fd = os.open(p, flags, 0o600 if private else 0o666)
        if private:
            os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())

    def read_text(self, path: str) -> str:
        with open(local_path(path), encoding="utf-8") as fh:
            return fh.read()

    def make_private(self, path: str) -> None:
        """Readable by the owner only: 0600 files, 0700 directories, recursively."""
        p = local_path(path)
        if not os.path.isdir(p):
            os.chmod(p, 0o600)
            return
        os.chmod(p, 0o700)
        for dirpath, dirnames, filenames in os.walk(p):
            for d in dirnames:
                os.chmod(os.path.join(dirpath, d), 0o700)
            for f in filenames:
                os.chmod(os.path.join(dirpath, f), 0o600)

    def identity(self, path: str) -> str | None:
        """Device, inode and modification time: a rename keeps all three; a file or directory
        put there later differs in one of them even when the inode number is reused."""
        try:
            st = os.lstat(local_path(path))
        except OSError:
            return None
        return f"{st.st_dev}:{st.st_ino}:{st.st_mtime_ns}"


class HadoopFS:
    """Hadoop ``FileSystem`` through a classic session's JVM gateway."""

    def __init__(self, spark: SparkSession) -> None:
        sc: Any = spark.sparkContext
        self._jvm: Any = sc._jvm
        self._conf: Any = sc._jsc.hadoopConfiguration()

    def _fs(self, path: str) -> tuple[Any, Any]:
        jpath = self._jvm.org.apache.hadoop.fs.Path(str(path))
        return jpath.getFileSystem(self._conf), jpath

    def qualify(self, path: str) -> str:
        """The fully qualified URI of ``path`` (scheme, authority, absolute path)."""
        fs, jpath = self._fs(path)
        return str(fs.makeQualified(jpath).toString())

    def exists(self, path: str) -> bool:
        fs, jpath = self._fs(path)
        return bool(fs.exists(jpath))

    def is_dir(self, path: str) -> bool:
        fs, jpath = self._fs(path)
        return bool(fs.exists(jpath) and fs.getFileStatus(jpath).isDirectory())

    def mkdirs(self, path: str) -> None:
        fs, jpath = self._fs(path)
        if not fs.mkdirs(jpath):
            raise OSError(f"cannot create directory {path!r}")

    def rename(self, src: str, dst: str) -> None:
        fs, jsrc = self._fs(src)
        _, jdst = self._fs(dst)
        if not fs.rename(jsrc, jdst):
            raise OSError(f"cannot rename {src!r} to {dst!r}")

    def delete(self, path: str) -> None:
        fs, jpath = self._fs(path)
        if fs.exists(jpath):
            fs.delete(jpath, True)

    def list_names(self, directory: str) -> list[str]:
        fs, jpath = self._fs(directory)
        if not fs.exists(jpath):
            return []
        return [str(st.getPath().getName()) for st in fs.listStatus(jpath)]

    def write_text(self, path: str, text: str, *, private: bool = False) -> None:
        """Write ``text``; ``private``: created with permission 0600 (Hadoop's FsPermission,
        where the file system keeps permissions: HDFS, the local file system)."""
        fs, jpath = self._fs(path)
        if private:
            perm = self._jvm.org.apache.hadoop.fs.permission.FsPermission("600")
            out = fs.create(
                jpath,
                perm,
                True,
                4096,
                fs.getDefaultReplication(jpath),
                fs.getDefaultBlockSize(jpath),
                None,
            )
        else:
            out = fs.create(jpath, True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()

    def read_text(self, path: str) -> str:
        fs, jpath = self._fs(path)
        stream = fs.open(jpath)
        try:
            return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def make_private(self, path: str) -> None:
        """Readable by the owner only (FsPermission 600 files, 700 directories), recursively,
        where the file system keeps permissions (HDFS, the local file system)."""
        fs, jpath = self._fs(path)
        perm = self._jvm.org.apache.hadoop.fs.permission.FsPermission
        todo = [fs.getFileStatus(jpath)]
        while todo:
            st = todo.pop()
            fs.setPermission(st.getPath(), perm("700" if st.isDirectory() else "600"))
            if st.isDirectory():
                todo += list(fs.listStatus(st.getPath()))

    def identity(self, path: str) -> str | None:
        return None

    def checksum(self, path: str) -> tuple[int, int, int, str, str]:
        """A file's length, modification time (ms), HDFS inode id and file checksum (algorithm,
        hex bytes), from the file system's metadata: HDFS combines the CRCs each datanode keeps
        beside its blocks, without reading the data (docs/privacy/keys.md#hdfs).

        Raises:
            OSError: the file is gone or unreadable (``filename`` set), or its file system is
                not HDFS or keeps no checksum for it.
        """
        from py4j.protocol import Py4JJavaError

        fs, jpath = self._fs(path)
        try:
            if str(fs.getScheme()) != "hdfs":
                raise OSError(0, f"not an HDFS file ({fs.getScheme()})", path)
            st = fs.getFileStatus(jpath)
            sum_ = fs.getFileChecksum(jpath)
        except Py4JJavaError as exc:
            reason = str(exc.java_exception.getClass().getSimpleName())
            raise OSError(0, reason, path) from None
        if sum_ is None:
            raise OSError(0, "the file system keeps no checksum for it", path)
        algorithm = str(sum_.getAlgorithmName())
        return (
            int(st.getLen()),
            int(st.getModificationTime()),
            int(st.getFileId()),
            algorithm,
            bytes(sum_.getBytes()).hex(),
        )

    def list_files(self, directory: str) -> list[str]:
        """Every file under ``directory``, recursively, as paths relative to it."""
        fs, jpath = self._fs(directory)
        root = str(fs.makeQualified(jpath).toString()).rstrip("/") + "/"
        found = fs.listFiles(jpath, True)
        out = []
        while found.hasNext():
            name = str(found.next().getPath().toString())
            out.append(name[len(root) :] if name.startswith(root) else name)
        return out


def read_json(fs: FileSystem, path: str) -> dict[str, Any] | None:
    """The JSON object at ``path``; ``None`` if absent, unreadable or half written."""
    try:
        if not fs.exists(path):
            return None
        doc = json.loads(fs.read_text(path))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def filesystem(
    path: str, spark: SparkSession | None = None, *, plain_is_local: bool = True
) -> FileSystem:
    """The backend for ``path``: local disk, Hadoop (classic session) or pyarrow (Connect).

    Raises:
        ConfigError: a non-local path with no session to reach it, or under Connect a
            filesystem pyarrow cannot reach.
    """
    if is_local(path, plain_is_local=plain_is_local):
        return LocalFS()
    if spark is None:
        raise ConfigError(f"{path!r} is not a local path and no Spark session is running")
    if is_connect(spark):
        from spark_dp.io.arrow_fs import ArrowFS

        return ArrowFS(path)
    return HadoopFS(spark)
