"""Check a local input before Spark starts: it exists, can be read, and is what it claims.

A Parquet file starts and ends with the 4 magic bytes ``PAR1``; reading 8 bytes per file tells a
Parquet file from a JSON or CSV file named ``.parquet`` and from a truncated copy (whose footer,
and so its closing magic, is missing) without a JVM. A directory is probed file by file over
its data files (names not starting with ``.`` or ``_``, in any sub-directory); a named pipe,
device or socket among them is refused from its metadata, never opened.

**Layout.** Spark reads a directory's files only when they form one table: data files directly
in it and no data in sub-directories, or a clean Hive-partitioned dataset (every data file at
the same depth under ``key=value`` directories, one key per level, no file above the leaves).
Anything else (part files beside a sub-directory, ``k=1/`` beside loose files, plain nested
folders) makes Spark read a subset or fail; :func:`layout_problem` refuses it, naming the
sub-directory, for local inputs here and for Hadoop inputs from their listing
(:meth:`spark_dp.io.paths.PathPlan.check_with_session`).

Column names that differ only in case (``user_id`` and ``USER_ID``) are refused too: Spark
matches column names case-insensitively and cannot read such a table.

Inputs on other filesystems (``hdfs://``, ``s3a://``, ...) are otherwise checked by Spark when it
reads them; :func:`spark_read_error` turns Spark's errors into the same one-line messages.
"""

from __future__ import annotations

import os
import re
import stat

from spark_dp.errors import InputContractError
from spark_dp.io.delta import delta_read_error, latest_version
from spark_dp.io.fs import LocalFS, local_path, special_kind

__all__ = [
    "INPUT_FORMATS",
    "case_duplicates",
    "data_files",
    "input_format",
    "layout_problem",
    "probe_local_input",
    "spark_read_error",
]

MAGIC = b"PAR1"
MAX_FILES_PROBED = 10_000
"""Beyond this many data files a directory's files are not all probed (Spark checks them)."""


INPUT_FORMATS = ("parquet", "csv", "delta")


def input_format(path: str, fmt: str | None) -> str:
    """``parquet``, ``csv`` or ``delta``: ``fmt`` when given, else from the name (``.csv``,
    ``.csv.gz``: CSV; anything else Parquet; Delta only when asked for)."""
    if fmt:
        fmt = fmt.lower()
        if fmt not in INPUT_FORMATS:
            raise InputContractError(
                f"input format must be one of {', '.join(INPUT_FORMATS)}, got {fmt!r}"
            )
        return fmt
    return "csv" if str(path).lower().endswith((".csv", ".csv.gz")) else "parquet"


def data_files(root: str) -> list[str]:
    """Every data file under ``root`` (hidden names left out, as Spark does), sorted."""
    out = []
    for parent, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        out += [os.path.join(parent, f) for f in sorted(files) if not f.startswith((".", "_"))]
    return out


def _hidden(part: str) -> bool:
    return part.startswith((".", "_"))


def layout_problem(files: list[str]) -> str | None:
    """Why Spark would not read every one of ``files`` as one table, or ``None``.

    Args:
        files: the files under a directory, as paths relative to it (hidden ones, whose name or
            directory starts with ``.`` or ``_``, are left out here as Spark leaves them out).

    Returns:
        one sentence naming the sub-directory at fault, or ``None`` for a flat directory or a
        clean Hive-partitioned dataset.
    """
    parts = [f.strip("/").split("/") for f in files]
    parts = [p for p in parts if not any(_hidden(x) for x in p)]
    if all(len(p) == 1 for p in parts):
        return None
    nested = sorted({"/".join(p[:-1]) for p in parts if len(p) > 1})
    if any(len(p) == 1 for p in parts):
        return (
            f"holds data files both directly and in the sub-directory {nested[0]}/, which Spark "
            "would not read as one table; move them into one flat directory or a clean "
            "key=value partitioning"
        )
    depth = {len(p) for p in parts}
    if len(depth) > 1:
        deepest = max(parts, key=len)
        return (
            f"holds data files at different depths (e.g. in {'/'.join(deepest[:-1])}/), which "
            "Spark would not read as one table; use one flat directory or a clean key=value "
            "partitioning"
        )
    for level in range(len(parts[0]) - 1):
        keys: dict[str, str] = {}
        for p in parts:
            key, eq, _ = p[level].partition("=")
            where = "/".join(p[: level + 1])
            if not eq or not key:
                return (
                    f"holds data in the sub-directory {where}/, which is not a key=value "
                    "partition: Spark would not read it; move the files up or name the "
                    "directories key=value"
                )
            keys.setdefault(key, where)
        if len(keys) > 1:
            a, b = sorted(keys.values())[:2]
            return (
                f"mixes partition keys at one level ({a}/ and {b}/), which Spark refuses; use one "
                "key per level"
            )
    return None


def case_duplicates(names: list[str]) -> tuple[str, str] | None:
    """Two column names that differ only in case (Spark cannot read such a table), or None."""
    seen: dict[str, str] = {}
    for name in names:
        other = seen.setdefault(name.lower(), name)
        if other != name:
            return other, name
    return None


def _schema_names(path: str, fmt: str) -> list[str]:
    """The column names of one data file (Parquet footer, or a CSV header line)."""
    if fmt == "csv":
        import csv

        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            return next(csv.reader(fh), [])
    import pyarrow.parquet as pq

    try:
        return list(pq.read_schema(path).names)
    except Exception:  # an unreadable footer: Spark's own error says which file
        return []


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
    if fmt == "delta":  # its log says which files are the table: checked by the request
        latest_version(LocalFS(), p, flag=flag)
        return
    files = data_files(p) if os.path.isdir(p) else [p]
    if not files:
        raise InputContractError(
            f"{flag} {shown} is a directory without data files (empty, or only hidden files)"
        )
    problem = layout_problem([os.path.relpath(f, p) for f in files]) if os.path.isdir(p) else None
    if problem:
        raise InputContractError(f"{flag} {shown} {problem}")
    for f in files:
        where = shown if f == p else f"{f} (in {shown})"
        if not stat.S_ISREG(os.stat(f).st_mode):  # never opened: a named pipe would block
            kind = special_kind(f) or "not a regular file"
            raise InputContractError(f"{flag} {where} is {kind}; pass regular files only")
    for f in files[:MAX_FILES_PROBED]:
        if not os.access(f, os.R_OK):
            raise InputContractError(f"{flag} {shown}: {f} cannot be read (permission denied)")
        if fmt == "parquet":
            _check_parquet_file(f, flag, shown)
    twins = case_duplicates(_schema_names(files[0], fmt))
    if twins:
        raise InputContractError(_case_message(flag, shown, *twins))


def _case_message(flag: str, shown: str, a: str, b: str) -> str:
    return (
        f"{flag} {shown} has columns {a!r} and {b!r}, whose names differ only in case: Spark "
        "matches column names case-insensitively and cannot read it; rename one upstream"
    )


def spark_read_error(exc: BaseException, path: str, fmt: str, flag: str = "--input") -> str | None:
    """A one-line message for Spark's error on reading ``path``, or ``None`` if unknown."""
    msg = str(exc)
    if fmt == "delta":
        delta = delta_read_error(msg, path, flag)
        if delta is not None:
            return delta
    if "PATH_NOT_FOUND" in msg or "Path does not exist" in msg:
        return f"{flag} {path} does not exist; pass a Parquet file or directory"
    if "CANNOT_MERGE" in msg or "Failed to merge" in msg or "merge incompatible" in msg:
        return (
            f"{flag} {path}: part files disagree on a column's type (ids of mixed types); "
            "rewrite the input with one type per column"
        )
    m = re.search(r"COLUMN_ALREADY_EXISTS\] The column `(.+?)` already exists", msg)
    if m:
        return (
            f"{flag} {path} has two columns named {m.group(1)!r} up to case: Spark matches "
            "column names case-insensitively and cannot read it; rename one upstream"
        )
    if "UNABLE_TO_INFER_SCHEMA" in msg:
        return f"{flag} {path} holds no readable {fmt} files (empty directory?)"
    if "is not a Parquet file" in msg or "CANNOT_READ_FILE_FOOTER" in msg or "magic number" in msg:
        hint = "; for CSV pass --input-format csv" if flag == "--input" else ""
        return f"{flag} {path} is not a readable Parquet file (truncated, or another format){hint}"
    if "AccessDenied" in msg or "Permission denied" in msg:
        return f"{flag} {path} cannot be read (permission denied)"
    return None
