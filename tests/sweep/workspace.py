"""The sweep's workspace: small inputs written with pyarrow (no Spark), the changes a case makes
to its own copy before it runs (special files, a full disk, ...), and what is checked after.

A workspace holds every input any case reads: word pairs and a hypergraph in good shape, in
the layouts Spark would read only in part, with unusual or clashing column names, with id
columns of every refused type, with a corrupt page behind an intact footer; capacities, record
weights (one null), config files, a key, and folders that are not work directories.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import stat
import subprocess
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from spark_dp.driver_jvm import log_line
from spark_dp.randomness.key_file import write_key_file

__all__ = [
    "JVM_NOTICES",
    "TRACE",
    "apply",
    "build_template",
    "error_lines",
    "snapshot",
    "unmount",
]

TRACE = re.compile(r"Traceback|^\s+at [\w$.]+\(|Exception:|Error:\s*$|py4j", re.M)
"""A Python or Java trace (or a py4j error) in a process's stderr."""

JVM_NOTICES = ("WARNING: Using incubator modules",)
"""What the JVM of ``spark-submit`` prints at every start, before spark_dp runs."""

USERS, ITEMS = 600, 20
RECORDS, OWNERS = 300, 120


def error_lines(stderr: str, *, submit: bool = False) -> list[str]:
    """The lines of ``stderr`` that are not log records (what a user reads as the message);
    under ``spark-submit``, the JVM's own start-up notice is left out too."""
    out = [line for line in stderr.splitlines() if line.strip() and not log_line(line)]
    return [line for line in out if not (submit and line.startswith(JVM_NOTICES))]


def _parquet(path: Path, table: pa.Table, **kw: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, **kw)


def _pairs(n_users: int = USERS, offset: int = 0) -> pa.Table:
    users = [f"u{i}" for i in range(offset, offset + n_users) for _ in range(3)]
    items = [f"w{(i * 7 + k) % ITEMS}" for i in range(offset, offset + n_users) for k in range(3)]
    return pa.table({"user_id": users, "item": items})


def _graph(n: int = RECORDS, offset: int = 0) -> pa.Table:
    records = [f"r{i}" for i in range(offset, offset + n) for _ in range(2)]
    owners = [f"u{(i * 13 + k * 7) % OWNERS}" for i in range(offset, offset + n) for k in range(2)]
    return pa.table({"record_id": records, "user_id": owners})


LAYOUTS = {
    # name: the files of the table, relative to its directory (None: the flat part file)
    "mixk": ["part-0.parquet", "k=1/part-1.parquet"],
    "mixsub": ["part-0.parquet", "sub/part-1.parquet"],
    "nested": ["a/b/part-0.parquet", "c/part-1.parquet"],
    "deep": ["a/b/c/part-0.parquet"],
    "mixdepth": ["k=1/j=a/part-0.parquet", "k=2/part-1.parquet"],
    "mixkeys": ["k=1/part-0.parquet", "j=2/part-1.parquet"],
    "plainkey": ["k=1/part-0.parquet", "notkv/part-1.parquet"],
    "hidden_ok": ["part-0.parquet", "_temporary/part-9.parquet", ".staging/part-8.parquet"],
    "hive": ["k=1/part-0.parquet", "k=2/part-1.parquet"],
    "hive2": ["k=1/j=a/part-0.parquet", "k=2/j=b/part-1.parquet"],
}
"""Input layouts: ``hidden_ok``, ``hive`` and ``hive2`` are read whole by Spark; the others are
refused (Spark would read a subset, or fail)."""


def _layouts(root: Path) -> None:
    for name, files in LAYOUTS.items():
        for k, rel in enumerate(files):
            _parquet(root / f"wl_{name}" / rel, _pairs(USERS // 2, offset=k * USERS))
            _parquet(root / f"gl_{name}" / rel, _graph(RECORDS // 2, offset=k * RECORDS))


def _typed(root: Path) -> None:
    """Id columns of every refused type, and column names Spark handles only when quoted."""
    n = 6
    refused = {
        "bool": pa.array([True, False] * (n // 2)),
        "date": pa.array([date(2020, 1, 1 + i) for i in range(n)]),
        "timestamp": pa.array([datetime(2020, 1, 1, i) for i in range(n)]),
        "double": pa.array([float(i) + 0.5 for i in range(n)]),
        "binary": pa.array([bytes([i]) for i in range(n)]),
        "list": pa.array([[i] for i in range(n)]),
    }
    strings = pa.array([f"x{i}" for i in range(n)])
    for name, ids in refused.items():
        _parquet(
            root / f"type_{name}" / "part-0.parquet", pa.table({"user_id": ids, "item": strings})
        )
        _parquet(
            root / f"gtype_{name}" / "part-0.parquet",
            pa.table({"record_id": strings, "user_id": ids}),
        )
    clash = pa.table({"user_id": strings, "USER_ID": strings, "item": strings})
    _parquet(root / "cols_case" / "part-0.parquet", clash)
    gclash = pa.table({"record_id": strings, "Record_ID": strings, "user_id": strings})
    _parquet(root / "gcols_case" / "part-0.parquet", gclash)
    (root / "cols_case.csv").write_text("user_id,USER_ID,item\nu1,x,a\n")
    pairs = _pairs()
    odd = pa.table({"user.id": pairs["user_id"], "it`em": pairs["item"], "note s": pairs["item"]})
    _parquet(root / "cols_odd" / "part-0.parquet", odd)
    graph = _graph()
    godd = pa.table({"record id": graph["record_id"], "user`s.id": graph["user_id"]})
    _parquet(root / "gcols_odd" / "part-0.parquet", godd)


def _corrupt(path: Path, table: pa.Table) -> None:
    """A Parquet file whose first data page is garbage; the footer and both magics intact."""
    _parquet(path, table, compression="none")
    data = bytearray(path.read_bytes())
    start = pq.ParquetFile(path).metadata.row_group(0).column(0).data_page_offset
    for i in range(start + 20, start + 400):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


def build_template(root: Path) -> Path:
    """Write every input of the sweep under ``root`` (created); return it."""
    _parquet(root / "words" / "part-00000.parquet", _pairs())
    (root / "words" / "_SUCCESS").write_text("")
    _parquet(root / "graph" / "part-00000.parquet", _graph())
    users = [f"u{i}" for i in range(OWNERS)]
    _parquet(root / "caps" / "part-0.parquet", pa.table({"user_id": users, "cap": [2] * OWNERS}))
    records = [f"r{i}" for i in range(RECORDS)]
    weights = pa.table({"record_id": records, "weight": [float(i % 5) for i in range(RECORDS)]})
    _parquet(root / "weights" / "part-0.parquet", weights)
    nulls = pa.table({"record_id": records[:4], "weight": [1.0, None, 2.0, None]})
    _parquet(root / "nullweights" / "part-0.parquet", nulls)
    _layouts(root)
    _typed(root)
    _corrupt(root / "corrupt" / "part-0.parquet", _pairs())
    _corrupt(root / "gcorrupt" / "part-0.parquet", _graph())
    write_key_file(root / "key32")  # a key file as spark-dp keygen writes it (0600)
    (root / "notadb.db").write_text("a text file, not a database\n")
    (root / "good.yaml").write_text("epsilon: 1.0\n")
    (root / "twice.yaml").write_text("max_items_per_user: 5\nmax_contributions: 6\n")
    (root / "twice_cb.yaml").write_text("capacity: 2\nmax_contributions: 3\n")
    (root / "twice_dc.yaml").write_text("beta: 0.05\nfailure_probability: 0.1\n")
    (root / "spark_bad.yaml").write_text("spark:\n  spark.sql.shuffle.partitions: abc\n")
    (root / "spark_mem.yaml").write_text("spark:\n  spark.driver.memory: 100m\n")
    (root / "spark_master.yaml").write_text("spark:\n  spark.master: nowhere\n")
    (root / "afile").write_text("a file\n")
    (root / "userdir").mkdir()
    (root / "userdir" / "notes.txt").write_text("my notes\n")
    _parquet(root / "userdir" / "data" / "part-0.parquet", _pairs(10))
    (root / "emptydir").mkdir()
    (root / "badmeta").mkdir()
    (root / "badmeta" / "meta.json").write_text("{not json")
    (root / "othermeta").mkdir()
    (root / "othermeta" / "meta.json").write_text('{"owner": "contribution_bounding input=/x"}')
    return root


# --------------------------------------------------------------------------- case setup


def apply(root: Path, op: tuple[str, ...]) -> str | None:
    """Make one change of a case to its workspace ``root``; a reason when it cannot be made
    here (the case is then skipped, saying why)."""
    kind, rel = op[0], op[1]
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))
    elif kind == "chardev":  # a copy of /dev/null: a real device node as root, else a link
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except PermissionError:
            os.symlink("/dev/null", path)
    elif kind == "link":
        os.symlink(op[2], path)
    elif kind == "mkdir":
        path.mkdir(parents=True)
    elif kind == "keyfile":  # a good key (spark-dp keygen's, 0600) at a place that is refused
        write_key_file(path)
    elif kind == "tmpfs":
        return _full_tmpfs(path, int(op[2]))
    else:
        raise ValueError(f"unknown setup {op}")
    return None


def _full_tmpfs(path: Path, leave: int) -> str | None:
    """A 2 MiB tmpfs at ``path``, filled until ``leave`` bytes are free."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        return f"mounting a tmpfs is not permitted here ({mounted.stderr.strip()[:80]})"
    free = os.statvfs(path).f_bavail * os.statvfs(path).f_frsize
    with open(path / ".filler", "wb") as fh:
        fh.write(b"\0" * max(0, free - leave))
    return None


def unmount(root: Path) -> None:
    """Unmount the tmpfs mounts under ``root`` (deepest first)."""
    mounts = Path("/proc/mounts").read_text().splitlines()
    here = [m.split()[1] for m in mounts if m.split()[1].startswith(str(root))]
    for mount in sorted(here, key=len, reverse=True):
        subprocess.run(["umount", mount], check=False, capture_output=True)


def snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` -> its content hash, ``dir``, or the kind of a special file
    (never opened)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            mode = os.lstat(p).st_mode
            if stat.S_ISREG(mode):
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            elif stat.S_ISDIR(mode):
                out[rel] = "dir"
            else:
                out[rel] = f"special {stat.S_IFMT(mode)}"
    return out
