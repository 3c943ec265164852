"""A small privacy-budget ledger: one JSON line per released result, summed per dataset.

Jobs append an entry when run with ``--ledger PATH``; ``spark-dp budget --ledger PATH`` sums
ε and δ per dataset under **basic composition** (Σ ε, Σ δ; valid for any mix of mechanisms,
loose for many Gaussian releases) and warns when a configured total is exceeded.

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

from spark_dp.errors import BudgetError, ConfigError

__all__ = [
    "LedgerEntry",
    "Totals",
    "append_entry",
    "check_budget_values",
    "check_totals",
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
    """Append ``entry`` as one JSON line (advisory lock; creates the file if needed)."""
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


def check_totals(
    rows: Iterable[Totals], max_epsilon: float | None, max_delta: float | None
) -> list[str]:
    """Warnings for datasets whose totals exceed the configured budget."""
    warnings = []
    for t in rows:
        if max_epsilon is not None and t.epsilon > max_epsilon + 1e-12:
            warnings.append(
                f"dataset {t.dataset}: epsilon spent {t.epsilon:.6g} exceeds the budget "
                f"{max_epsilon:.6g}"
            )
        if max_delta is not None and t.delta > max_delta * (1 + 1e-12):
            warnings.append(
                f"dataset {t.dataset}: delta spent {t.delta:.6g} exceeds the budget {max_delta:.6g}"
            )
    return warnings


def check_budget_values(max_epsilon: float | None, max_delta: float | None) -> None:
    """Validate configured totals."""
    if max_epsilon is not None and not max_epsilon > 0:
        raise BudgetError(f"--max-epsilon must be > 0, got {max_epsilon!r}")
    if max_delta is not None and not 0 <= max_delta < 1:
        raise BudgetError(f"--max-delta must lie in [0, 1), got {max_delta!r}")
