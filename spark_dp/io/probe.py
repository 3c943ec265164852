"""Check a local input before Spark starts: it exists, can be read, and is what it claims.

A Parquet file starts and ends with the 4 magic bytes ``PAR1``; reading 8 bytes per file tells a
Parquet file from a JSON or CSV file named ``.parquet`` and from a truncated copy (whose footer,
and so its closing magic, is missing) without a JVM. A directory is probed file by file over
its data files (names not starting with ``.`` or ``_``, in any partition sub-directory).

Inputs on other filesystems (``hdfs://``, ``s3a://``, ...) are checked by Spark when it reads
them; :func:`spark_read_error` turns Spark's errors into the same one-line messages.
"""

from __future__ import annotations

import os

from spark_dp.errors import InputContractError
from spark_dp.io.fs import local_path

__all__ = ["input_format", "probe_local_input", "spark_read_error"]

MAGIC = b"PAR1"
MAX_FILES_PROBED = 10_000
"""Beyond this many data files a directory's files are not all probed (Spark checks them)."""


def input_format(path: str, fmt: str | None) -> str:
    """``parquet`` or ``csv``: ``fmt`` when given, else from the name (``.csv``, ``.csv.gz``)."""
    if fmt:
        fmt = fmt.lower()
        if fmt not in ("parquet", "csv"):
            raise InputContractError(f"input format must be 'parquet' or 'csv', got {fmt!r}")
        return fmt
    return "csv" if str(path).lower().endswith((".csv", ".csv.gz")) else "parquet"


def _data_files(root: str) -> list[str]:
    out = []
    for parent, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        out += [os.path.join(parent, f) for f in sorted(files) if not f.startswith((".", "_"))]
        if len(out) >= MAX_FILES_PROBED:
            break
    return out[:MAX_FILES_PROBED]


def _looks_like(head: bytes) -> str:
    text = head.lstrip()
    if text[:1] in (b"{", b"["):
        return "it looks like JSON"
    if head[:2] == b"\x1f\x8b":
        return "it is gzip-compressed"
    if text and all(32 <= b < 127 or b in (9, 10, 13) for b in text[:64]):
        return "it looks like text (CSV?)"
    return "it does not start with the Parquet magic bytes"


def _check_parquet_file(path: str, flag: str, shown: str) -> None:
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        head = fh.read(64)
        if size >= 12:
            fh.seek(size - 4)
            tail = fh.read(4)
        else:
            tail = b""
    where = shown if path == local_path(shown) else f"{path} (in {shown})"
    if head[:4] != MAGIC:
        hint = "; for CSV pass --input-format csv" if flag == "--input" else ""
        raise InputContractError(f"{flag} {where} is not a Parquet file: {_looks_like(head)}{hint}")
    if tail != MAGIC:
        raise InputContractError(
            f"{flag} {where} is not a complete Parquet file (its footer is missing: truncated "
            "or still being written); copy it again"
        )


def probe_local_input(path: str, fmt: str | None, *, flag: str = "--input") -> None:
    """Check a local input table before Spark starts.

    Args:
        path: a plain path or ``file:`` URI.
        fmt: ``parquet``, ``csv`` or ``None`` (from the name).
        flag: the flag that named the path, for messages.

    Raises:
        InputContractError: missing, unreadable, empty directory, or not Parquet.
    """
    shown = str(path)
    p = local_path(shown)
    if not os.path.lexists(p):
        raise InputContractError(f"{flag} {shown} does not exist; pass a Parquet file or directory")
    if not os.path.exists(p):
        raise InputContractError(f"{flag} {shown} is a broken symbolic link")
    if not os.access(p, os.R_OK) or (os.path.isdir(p) and not os.access(p, os.X_OK)):
        raise InputContractError(f"{flag} {shown} cannot be read (permission denied)")
    fmt = input_format(shown, fmt)
    files = _data_files(p) if os.path.isdir(p) else [p]
    if not files:
        raise InputContractError(
            f"{flag} {shown} is a directory without data files (empty, or only hidden files)"
        )
    for f in files:
        if not os.access(f, os.R_OK):
            raise InputContractError(f"{flag} {shown}: {f} cannot be read (permission denied)")
        if fmt == "parquet":
            _check_parquet_file(f, flag, shown)


def spark_read_error(exc: BaseException, path: str, fmt: str, flag: str = "--input") -> str | None:
    """A one-line message for Spark's error on reading ``path``, or ``None`` if unknown."""
    msg = str(exc)
    if "PATH_NOT_FOUND" in msg or "Path does not exist" in msg:
        return f"{flag} {path} does not exist; pass a Parquet file or directory"
    if "CANNOT_MERGE" in msg or "Failed to merge" in msg or "merge incompatible" in msg:
        return (
            f"{flag} {path}: part files disagree on a column's type (ids of mixed types); "
            "rewrite the input with one type per column"
        )
    if "UNABLE_TO_INFER_SCHEMA" in msg:
        return f"{flag} {path} holds no readable {fmt} files (empty directory?)"
    if "is not a Parquet file" in msg or "CANNOT_READ_FILE_FOOTER" in msg or "magic number" in msg:
        hint = "; for CSV pass --input-format csv" if flag == "--input" else ""
        return f"{flag} {path} is not a readable Parquet file (truncated, or another format){hint}"
    if "AccessDenied" in msg or "Permission denied" in msg:
        return f"{flag} {path} cannot be read (permission denied)"
    return None
