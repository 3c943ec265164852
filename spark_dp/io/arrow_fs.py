"""The :class:`spark_dp.io.fs.FileSystem` of URIs under Spark Connect, through ``pyarrow.fs``.

The Connect client has no JVM, so the runner reaches ``s3://``, ``gs://`` and ``hdfs://`` with
pyarrow (``s3a://`` and ``s3n://`` are read as ``s3://``), for small files only: the report and
the commit journal. Object stores keep no POSIX modes: who may read a confidential file there is
the bucket's access policy (``docs/privacy/spark-monitoring.md``).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from spark_dp.errors import ConfigError

__all__ = ["ArrowFS"]


class ArrowFS:
    """``pyarrow.fs`` for URIs under Spark Connect (small files only)."""

    def __init__(self, uri: str) -> None:
        from pyarrow import fs as pafs

        self._pafs = pafs
        try:
            self._fs, _ = pafs.FileSystem.from_uri(self._arrow_uri(uri))
        except Exception as exc:  # unknown scheme, missing library, bad authority
            raise ConfigError(
                f"{uri!r}: under Spark Connect spark_dp writes the report itself and cannot "
                f"reach this filesystem ({str(exc).splitlines()[0][:120]}); pass a local --report"
            ) from None

    @staticmethod
    def _arrow_uri(uri: str) -> str:
        return re.sub(r"^s3[an]://", "s3://", str(uri), flags=re.I)

    def _p(self, path: str) -> str:
        return str(self._pafs.FileSystem.from_uri(self._arrow_uri(path))[1])

    def _info(self, path: str) -> Any:
        return self._fs.get_file_info(self._p(path))

    def exists(self, path: str) -> bool:
        return bool(self._info(path).type != self._pafs.FileType.NotFound)

    def is_dir(self, path: str) -> bool:
        return bool(self._info(path).type == self._pafs.FileType.Directory)

    def mkdirs(self, path: str) -> None:
        self._fs.create_dir(self._p(path), recursive=True)

    def rename(self, src: str, dst: str) -> None:
        self._fs.move(self._p(src), self._p(dst))

    def delete(self, path: str) -> None:
        info = self._info(path)
        if info.type == self._pafs.FileType.Directory:
            self._fs.delete_dir(self._p(path))
        elif info.type != self._pafs.FileType.NotFound:
            self._fs.delete_file(self._p(path))

    def list_names(self, directory: str) -> list[str]:
        selector = self._pafs.FileSelector(self._p(directory), allow_not_found=True)
        return [posixpath.basename(i.path) for i in self._fs.get_file_info(selector)]

    def write_text(self, path: str, text: str, *, private: bool = False) -> None:
        # object stores have no POSIX modes: who may read a confidential file there is the
        # bucket's access policy (docs/privacy/spark-monitoring.md)
        with self._fs.open_output_stream(self._p(path)) as out:
            out.write(text.encode("utf-8"))

    def read_text(self, path: str) -> str:
        with self._fs.open_input_stream(self._p(path)) as stream:
            return bytes(stream.read()).decode("utf-8")

    def make_private(self, path: str) -> None:
        """Object stores keep no POSIX modes: who may read is the bucket's access policy."""

    def identity(self, path: str) -> str | None:
        return None
