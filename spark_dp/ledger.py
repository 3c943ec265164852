"""DEPRECATED: the JSONL budget ledger, replaced by :mod:`spark_dp.budget` (a budget store
that reserves before any data is read and refuses releases over a cap).

Kept only while the job runner's ``--ledger`` flag still appends to it; nothing new should use
it, and ``spark-dp budget`` now reads a budget store (``--store URL``), not a ledger. The
ledger records a release *after* it happened and never refuses one.

A dataset is identified by the job's resolved input path (or an explicit ``--dataset-id``).
Entries with a fixed seed are kept but flagged: their noise is reproducible, so they should not
be published. Appends are serialized with an advisory file lock.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from spark_dp.errors import ConfigError

__all__ = [
    "LedgerEntry",
    "Totals",
    "append_entry",
    "dataset_id",
    "read_ledger",
    "totals",
]


@dataclass(frozen=True)
class LedgerEntry:
    """One release: which dataset, which job, what it spent."""

    dataset: str
    job: str
    algorithm: str | None
    epsilon: float
    delta: float
    output: str | None
    report: str | None
    seed_mode: str
    time_utc: str = ""

    def to_json(self) -> str:
        d = asdict(self)
        if not d["time_utc"]:
            d["time_utc"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        return json.dumps(d, sort_keys=True)


@dataclass(frozen=True)
class Totals:
    """Basic-composition totals of one dataset."""

    dataset: str
    releases: int
    epsilon: float
    delta: float
    fixed_seed_releases: int


def dataset_id(path: str) -> str:
    """Canonical id of an input path: absolute local path, or the URI as given."""
    if "://" in path and not path.startswith("file://"):
        return path.rstrip("/")
    return str(Path(path.removeprefix("file://")).resolve())


def append_entry(ledger: str | os.PathLike, entry: LedgerEntry) -> None:
    """Append ``entry`` as one JSON line (advisory lock; creates the file if needed).

    Raises:
        ConfigError: ``ledger`` is a URI (``s3a://``, ``hdfs://``): the ledger is a local file
            only, and a URI would silently become a local folder named ``s3a:``.
    """
    if "://" in str(ledger) or str(ledger).lower().startswith(("s3a:", "s3:", "hdfs:", "gs:")):
        raise ConfigError(
            f"--ledger {str(ledger)!r} is a URI; the (deprecated) ledger is a local file only. "
            "Use a budget store instead: --budget-store sqlite:///path/budget.db"
        )
    p = Path(ledger)
    p.parent.mkdir(parents=True, exist_ok=True)
    line = entry.to_json() + "\n"
    with open(p, "a", encoding="utf-8") as fh:
        try:
            import fcntl

            fcntl.flock(fh, fcntl.LOCK_EX)
        except (ImportError, OSError):  # pragma: no cover - non-POSIX
            pass
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def read_ledger(ledger: str | os.PathLike) -> list[LedgerEntry]:
    """All entries of a ledger file.

    Raises:
        ConfigError: the file is missing or a line is not a ledger entry.
    """
    p = Path(ledger)
    if not p.is_file():
        raise ConfigError(f"ledger {str(p)!r} does not exist; jobs create it with --ledger")
    out = []
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(LedgerEntry(**json.loads(line)))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"ledger {str(p)!r} line {n} is not a ledger entry: {exc}") from exc
    return out


def totals(entries: Iterable[LedgerEntry], dataset: str | None = None) -> list[Totals]:
    """Σ ε and Σ δ per dataset (basic composition), optionally for one dataset only."""
    acc: dict[str, dict[str, Any]] = {}
    for e in entries:
        if dataset is not None and e.dataset != dataset:
            continue
        t = acc.setdefault(e.dataset, {"releases": 0, "epsilon": 0.0, "delta": 0.0, "fixed": 0})
        t["releases"] += 1
        t["epsilon"] += e.epsilon
        t["delta"] += e.delta
        t["fixed"] += e.seed_mode != "entropy"
    return [
        Totals(k, v["releases"], v["epsilon"], v["delta"], v["fixed"])
        for k, v in sorted(acc.items())
    ]
