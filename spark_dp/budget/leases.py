"""Who holds a run in flight: its attempt (host, pid, start time) and its lease.

A run is held by one attempt at a time, the process that reserved it or took it over
(:mod:`.store`); every transition after the reservation names that attempt
(:func:`held_by`), so a process whose run was settled or adopted meanwhile moves nothing. The
attempt's **lease** (the ``leases`` table, :mod:`.schema`) records the process's start time (a
reused pid is another process) and its heartbeat, renewed every
:data:`~spark_dp.budget.records.RENEW_SECONDS` by :class:`Heartbeat` from a daemon thread of
the driver; a lease not renewed for :data:`~spark_dp.budget.records.LEASE_SECONDS` has expired,
and its run's process is provably gone on any host (:attr:`RunRecord.gone
<spark_dp.budget.records.RunRecord.gone>`). The lease goes with the run's last transition.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import sqlalchemy as sa

from spark_dp.budget.records import (
    LEASE_SECONDS,
    RENEW_SECONDS,
    Lease,
    Reservation,
    RunRecord,
    process_started,
)
from spark_dp.budget.schema import LEASES, RUNS

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Row

__all__ = [
    "Heartbeat",
    "drop_lease",
    "held_by",
    "hold",
    "holder",
    "lease_of",
    "renew_lease",
    "run_record",
]

log = logging.getLogger("spark_dp.budget")


def run_record(row: Row[Any], lease: Row[Any] | None = None) -> RunRecord:
    """The :class:`RunRecord` of a run row, with its lease when the lease is its attempt's."""
    fields = {f: getattr(row, f) for f in RunRecord.__dataclass_fields__ if f != "lease"}
    held = None
    if lease is not None:
        if (lease.host, lease.pid, lease.started_at) == (row.host, row.pid, row.started_at):
            held = Lease(lease.process_started, lease.renewed_at, lease.lease_seconds)
    return RunRecord(**fields, lease=held)


def lease_of(conn: Connection, run: str) -> Row[Any] | None:
    """The lease row of ``run``, if it has one."""
    return conn.execute(sa.select(LEASES).where(LEASES.c.run == run)).first()


def hold(conn: Connection, run: str, owner: Mapping[str, Any]) -> None:
    """Give the run's lease to the attempt ``owner`` (``host``, ``pid``, ``started_at``: this
    process, its start time read from the system)."""
    drop_lease(conn, run)
    conn.execute(
        LEASES.insert().values(
            run=run,
            process_started=process_started(int(owner["pid"])),
            renewed_at=owner["started_at"],
            lease_seconds=LEASE_SECONDS,
            **owner,
        )
    )


def drop_lease(conn: Connection, run: str) -> None:
    """The run ended (or changes hands): its lease goes."""
    conn.execute(LEASES.delete().where(LEASES.c.run == run))


def held_by(res: Reservation) -> sa.ColumnElement[bool]:
    """The run ``res`` names, as long as the attempt ``res`` holds it."""
    return sa.and_(
        RUNS.c.run == res.run,
        RUNS.c.host == res.host,
        RUNS.c.pid == res.pid,
        RUNS.c.started_at == res.started_at,
    )


def renew_lease(conn: Connection, res: Reservation) -> bool:
    """Renew the lease of ``res``'s run now, if ``res``'s attempt still holds it."""
    found = conn.execute(
        LEASES.update()
        .where(
            LEASES.c.run == res.run,
            LEASES.c.host == res.host,
            LEASES.c.pid == res.pid,
            LEASES.c.started_at == res.started_at,
        )
        .values(renewed_at=time.time())
    ).rowcount
    return bool(found)


def holder(conn: Connection, res: Reservation) -> str:
    """Why a transition of ``res`` found nothing to change: the run's state and holder now."""
    row = conn.execute(sa.select(RUNS).where(RUNS.c.run == res.run)).first()
    if row is None:
        return "the store holds no such run"
    if (row.host, row.pid, row.started_at) != (res.host, res.pid, res.started_at):
        return f"it is held by another process now (pid {row.pid} on {row.host})"
    return f"the store holds it as {run_record(row).shown_state}"


class _Renews(Protocol):
    def renew(self, res: Reservation) -> bool: ...


class Heartbeat:
    """A run's lease renewed every :data:`~spark_dp.budget.records.RENEW_SECONDS` from a daemon
    thread, until :meth:`stop` (or until the run is no longer this process's: settled or taken
    over). A driver that dies stops renewing: its lease expires and its run becomes provably
    gone on every host. A renewal that fails (the database briefly unreachable) is retried at
    the next beat."""

    def __init__(self, store: _Renews, res: Reservation, every: float = RENEW_SECONDS) -> None:
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, args=(store, res, every), name="spark_dp budget lease", daemon=True
        )
        self._thread.start()

    def _beat(self, store: _Renews, res: Reservation, every: float) -> None:
        while not self._stopped.wait(every):
            try:
                if not store.renew(res):
                    return
            except Exception:  # the next beat tries again; the lease has minutes to spare
                log.debug("budget: renewing the lease of run %s failed", res.run, exc_info=True)

    def stop(self) -> None:
        """Stop renewing (the run ends: its lease row goes with its last transition)."""
        self._stopped.set()
        self._thread.join(timeout=10)
