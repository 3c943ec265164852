"""What the budget store hands out: a :class:`Reservation`, a :class:`DatasetBudget` and a
:class:`RunRecord`; and whether a run's process is provably gone (:func:`process_gone`,
:meth:`RunRecord.gone`)."""

from __future__ import annotations

import json
import math
import os
import socket
import time
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "LEASE_SECONDS",
    "RENEW_SECONDS",
    "DatasetBudget",
    "Lease",
    "Reservation",
    "RunRecord",
    "host_name",
    "process_gone",
    "process_started",
]

RENEW_SECONDS = 30.0
"""How often a run in flight renews its lease (a daemon thread of the job's driver)."""

LEASE_SECONDS = 600.0
"""A lease not renewed for this long has expired: its run's process is taken to be gone, on
any host (a process on this host is judged by its pid and start time instead)."""

_SLACK = 5.0  # seconds between a process's start and its run's start time
_TICK = 2.0  # seconds of tolerance on a process start time read back from /proc


def host_name() -> str:
    """This machine's name as the store records it."""
    return socket.gethostname()[:255]


def process_started(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), on Linux; else None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        with open("/proc/stat", encoding="ascii") as fh:
            boot = next(float(line.split()[1]) for line in fh if line.startswith("btime "))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def process_gone(
    host: str, pid: int, started_at: float, process_start: float | None = None
) -> bool:
    """Whether the process of a run on this host has provably ended: no process ``pid``, or a
    process ``pid`` that is another one (its start time differs from the recorded
    ``process_start``; without one, it started after the run did). Runs of other hosts are
    never judged here (only by their lease, :meth:`RunRecord.gone`)."""
    if host != host_name():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        pass
    started = process_started(pid)
    if started is None:
        return False
    if process_start is not None:
        return abs(started - process_start) > _TICK
    return started > started_at + _SLACK


@dataclass(frozen=True)
class Lease:
    """The heartbeat of a run in flight: renewed by its process, expired when not renewed for
    ``lease_seconds``; ``process_started`` tells a reused pid from the run's process."""

    process_started: float | None
    renewed_at: float
    lease_seconds: float

    @property
    def expired(self) -> bool:
        """Not renewed for longer than its term."""
        return time.time() > self.renewed_at + self.lease_seconds


@dataclass(frozen=True)
class Reservation:
    """One run's claim on a dataset's budget, as the store hands it back at each step.

    Attributes:
        run: the run id (the store's row).
        state: ``reserved``, ``charged``, ``committed`` ...
        release: the release id, once the run has digested its input.
        adopted: this run took over the charge of an earlier run of the same request that
            failed or died after its charge and before it recorded a release id (it had drawn
            nothing, so released nothing).
        done: the committed run of the same request, when there is one: then nothing is read
            or charged, and ``run`` is that run's id.
        host, pid, started_at: the attempt that holds the run (this process, since its
            reservation or adoption); every later transition is refused to any other.
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
    host: str = ""
    pid: int = 0
    started_at: float = 0.0

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
    lease: Lease | None = None

    @property
    def gone(self) -> bool:
        """Whether the process of this run has provably ended: on this host, its pid is not
        alive or is another process (:func:`process_gone`); on any host, its lease expired
        (:attr:`Lease.expired`). A run of another host without a lease (written by an earlier
        spark_dp) is never judged gone: ``settle --force`` ends it."""
        same_host = process_gone(
            self.host,
            self.pid,
            self.started_at,
            self.lease.process_started if self.lease is not None else None,
        )
        return same_host or (self.lease is not None and self.lease.expired)

    @property
    def stale(self) -> bool:
        """A reserved or charged run whose process is provably gone (:attr:`gone`): its
        process will never finish it (``spark-dp budget settle``)."""
        return self.state in ("reserved", "charged") and self.gone

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
    ``tight_epsilon`` is, with the ``zcdp`` filter, the smallest cap ε at δ = ``cap_delta``
    whose filter admits all of them (:func:`spark_dp.dp.filters.filter_epsilon`; ``None``
    with the basic accountant, or without a cap). A dataset of the default ledger may have no
    cap: its ``cap_*`` and ``remaining_*`` are then ``None`` (recorded, never refused).
    """

    dataset: str
    cap_epsilon: float | None
    cap_delta: float | None
    window_days: float | None
    spent_epsilon: float
    spent_delta: float
    reserved_epsilon: float
    reserved_delta: float
    remaining_epsilon: float | None
    remaining_delta: float | None
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
