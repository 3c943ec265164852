"""What the budget store hands out: a :class:`Reservation`, a :class:`DatasetBudget` and a
:class:`RunRecord`; and whether a run's process is gone (:func:`process_gone`)."""

from __future__ import annotations

import json
import math
import os
import socket
import time
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "STALE_AFTER_HOURS",
    "DatasetBudget",
    "Reservation",
    "RunRecord",
    "host_name",
    "process_gone",
]

STALE_AFTER_HOURS = 24.0
"""A reserved or charged run older than this is listed as stale (whatever its host)."""

_SLACK = 5.0  # seconds between a process's start and its run's start time


def host_name() -> str:
    """This machine's name as the store records it."""
    return socket.gethostname()[:255]


def _process_started(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), on Linux; else None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        with open("/proc/stat", encoding="ascii") as fh:
            boot = next(float(line.split()[1]) for line in fh if line.startswith("btime "))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def process_gone(host: str, pid: int, started_at: float) -> bool:
    """Whether the process of a run on this host has ended: no process ``pid``, or one that
    started after the run did (the pid was reused). Runs of other hosts are never judged gone
    here (only by age, :data:`STALE_AFTER_HOURS`)."""
    if host != host_name():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        pass
    started = _process_started(pid)
    return started is not None and started > started_at + _SLACK


@dataclass(frozen=True)
class Reservation:
    """One run's claim on a dataset's budget, as the store hands it back at each step.

    Attributes:
        run: the run id (the store's row).
        state: ``reserved``, ``charged``, ``committed`` ...
        release: the release id, once the run has digested its input.
        adopted: this run took over the charge of an earlier run of the same request that
            failed or died after its charge (it had released nothing).
        done: the committed run of the same request, when there is one: then nothing is read
            or charged, and ``run`` is that run's id.
    """

    dataset: str
    run: str
    job: str
    epsilon: float
    delta: float
    state: str
    release: str | None = None
    adopted: bool = False
    done: RunRecord | None = None

    @property
    def charged(self) -> bool:
        """Whether this run holds a charge (its own or an adopted one); a request committed
        before (:attr:`done`) charges nothing."""
        return self.done is None


@dataclass(frozen=True)
class RunRecord:
    """One run as ``spark-dp budget runs`` lists it."""

    run: str
    dataset: str
    job: str
    algorithm: str | None
    state: str
    epsilon: float
    delta: float
    release: str | None
    test_seed: bool
    outputs: str | None
    host: str
    pid: int
    started_at: float
    ended_at: float | None

    @property
    def stale(self) -> bool:
        """A reserved or charged run whose process is gone, or older than
        :data:`STALE_AFTER_HOURS`: its process will never finish it (``spark-dp budget settle``)."""
        if self.state not in ("reserved", "charged"):
            return False
        if time.time() - self.started_at > STALE_AFTER_HOURS * 3600:
            return True
        return process_gone(self.host, self.pid, self.started_at)

    @property
    def shown_state(self) -> str:
        """The state as listed: ``failed (charged)``, ``charged (stale)``, ..."""
        if self.state == "failed":
            return "failed (charged)"
        return f"{self.state} (stale)" if self.stale else self.state

    @property
    def written(self) -> dict[str, str]:
        """Where the run writes (role → path), as it recorded at its reservation."""
        return dict(json.loads(self.outputs)) if self.outputs else {}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (with ``stale``, the shown state and the paths written)."""
        out = {**asdict(self), "stale": self.stale, "shown_state": self.shown_state}
        out["outputs"] = self.written
        return out


@dataclass(frozen=True)
class DatasetBudget:
    """One dataset's cap and spending, as ``spark-dp budget`` lists it.

    ``spent_*`` sums committed and failed (charged) runs, ``reserved_*`` runs in flight
    (reserved or charged), both within the window when the cap has one (basic composition).
    ``tight_epsilon`` is the ε the store's tight accountant proves for all of them at
    δ = ``cap_delta`` (``None`` with the basic accountant).
    """

    dataset: str
    cap_epsilon: float
    cap_delta: float
    window_days: float | None
    spent_epsilon: float
    spent_delta: float
    reserved_epsilon: float
    reserved_delta: float
    remaining_epsilon: float
    remaining_delta: float
    releases: int
    reserved_releases: int
    failed_releases: int
    stale_runs: int
    accountant: str
    tight_epsilon: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (an unbounded tight ε is ``None``)."""
        out = dict(self.__dict__)
        if out["tight_epsilon"] is not None and not math.isfinite(out["tight_epsilon"]):
            out["tight_epsilon"] = None
        return out
