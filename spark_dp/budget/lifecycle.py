"""A run's life in the budget store: reserve → charge → bind → commit, or abandon; settle.

The rules (``docs/privacy/budget.md``; the job runner follows them, :mod:`spark_dp.jobs.runner`).
The store decides from a run's **request** alone, its pre-read identity
(:func:`spark_dp.release_ids.run_identity`: job, arguments, input locations and listings, key),
and from what its own earlier runs recorded, never from the rows a run reads, so no charge
decision can tell anyone anything about the data:

* :meth:`~RunLifecycle.reserve`, before any data is read. A request that was **committed**
  before is not run again: the reservation comes back ``done`` (nothing is read or charged;
  the runner points at the committed release). A run of the same request still in flight (its
  process not provably gone) refuses this one (:class:`BudgetRefused`: two processes of one
  request never run at once). A run of the same request that was charged and then failed or
  died **before it recorded a release id** drew nothing from its key, so released nothing: it
  is **adopted** (its charge is this run's: the retry costs nothing more). A run that recorded
  a release id may have staged, or shown, a release: it is never adopted, and its retry is a
  new charge. Otherwise the run's (ε, δ) must fit the cap with every ``reserved``,
  ``charged``, ``failed`` and ``committed`` run of the dataset counted (within the window, if
  the cap has one; by the store's filter, :mod:`.accounting`); the row is ``reserved``, the
  only state that can be freed. The default ledger (``ledger=True``) records a dataset without
  a cap instead of refusing it, and always runs a test-seeded request again (a new charge).
* :meth:`~RunLifecycle.charge`, right before the first read of input rows: ``charged``,
  durably. From here on the (ε, δ) is spent whatever happens: a failure, a kill, a
  data-dependent error leave the run ``failed`` (charged), never freed.
* :meth:`~RunLifecycle.bind`, once the data's digest is known and **before any value is drawn
  from the key**: the run records its release id, once; it is never replaced or erased.
* :meth:`~RunLifecycle.commit` right before outputs and report go into place: ``committed``,
  only from ``charged`` with the release id the run bound.
  :meth:`~RunLifecycle.abandon` when the run ends otherwise: ``reserved`` → ``released``,
  ``charged`` → ``failed``.
* :meth:`~RunLifecycle.settle` (``spark-dp budget settle``): a run whose process is provably
  gone (:attr:`RunRecord.gone`) by the same rules.

Every transition after the reservation is made only by the attempt that holds the run (its
host, pid and start time, :class:`Reservation`): a run settled, or adopted by a retry, while
its first process still runs cannot bind, commit or end it any more.

Why not "the same rows again cost nothing": a free repeat decided from the rows' digest would
tell whoever can choose what an input holds whether two inputs are equal, e.g. whether D minus
one user's rows is D, i.e. whether that user is in D (``docs/privacy/keys.md``).

Every transition locks the dataset's cap row, so runs of one dataset are serialized.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from spark_dp.budget.accounting import Charge, NoiseStep, basic_totals, certified_epsilon, fits_cap
from spark_dp.budget.records import (
    LEASE_SECONDS,
    RENEW_SECONDS,
    Lease,
    Reservation,
    RunRecord,
    host_name,
    process_started,
)
from spark_dp.budget.schema import CAPS, LEASES, RUNS, writing
from spark_dp.errors import BudgetError, BudgetRefused

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine, Row

__all__ = [
    "CHARGED",
    "COMMITTED",
    "COUNTED",
    "FAILED",
    "RELEASED",
    "RESERVED",
    "Heartbeat",
    "RunLifecycle",
    "counted_rows",
    "fmt",
    "row_charge",
]

RESERVED, CHARGED, COMMITTED = "reserved", "charged", "committed"
FAILED, RELEASED = "failed", "released"
COUNTED = (RESERVED, CHARGED, FAILED, COMMITTED)
"""States whose (ε, δ) counts against the cap."""
_DAY = 86_400.0
log = logging.getLogger("spark_dp.budget")


def fmt(eps: float, delta: float) -> str:
    return f"ε={eps:.6g}, δ={delta:.3g}"


def row_charge(row: Row[Any]) -> Charge:
    """The :class:`Charge` of a run row (its noise steps from the generic JSON column; a dict
    without ``event``, as the first stores wrote, is a Gaussian step)."""
    steps = tuple(NoiseStep.from_dict(d) for d in json.loads(row.noise))
    return Charge(float(row.epsilon), float(row.delta), steps)


def counted_rows(conn: Connection, dataset: str, window_days: float | None) -> list[Any]:
    """The runs that count against the cap: in flight (reserved, charged), and spent (failed,
    committed; within the window, if any)."""
    spent: sa.ColumnElement[bool] = RUNS.c.state.in_((FAILED, COMMITTED))
    if window_days is not None:
        spent = sa.and_(spent, RUNS.c.ended_at >= time.time() - window_days * _DAY)
    query = sa.select(RUNS).where(
        RUNS.c.dataset == dataset,
        sa.or_(RUNS.c.state.in_((RESERVED, CHARGED)), spent),
    )
    return list(conn.execute(query.order_by(RUNS.c.started_at)))


def _record(row: Row[Any], lease: Row[Any] | None = None) -> RunRecord:
    fields = {f: getattr(row, f) for f in RunRecord.__dataclass_fields__ if f != "lease"}
    held = None
    if lease is not None and (lease.host, lease.pid, lease.started_at) == (
        row.host,
        row.pid,
        row.started_at,
    ):
        held = Lease(lease.process_started, lease.renewed_at, lease.lease_seconds)
    return RunRecord(**fields, lease=held)


def _lease_of(conn: Connection, run: str) -> Row[Any] | None:
    return conn.execute(sa.select(LEASES).where(LEASES.c.run == run)).first()


class RunLifecycle:
    """The run transitions of :class:`~spark_dp.budget.store.BudgetStore` (module docstring)."""

    _engine: Engine
    url: str
    ledger: bool = False  # the default ledger: a dataset without a cap is recorded, not refused

    @property
    def accountant(self) -> str:  # pragma: no cover - defined by the store
        raise NotImplementedError

    # ------------------------------------------------------------------ reserve
    def reserve(
        self,
        *,
        dataset: str,
        identity: str,
        job: str,
        epsilon: float,
        delta: float,
        noise: Sequence[NoiseStep] = (),
        algorithm: str | None = None,
        test_seed: bool = False,
        outputs: Mapping[str, str] | None = None,
    ) -> Reservation:
        """Reserve (ε, δ) of ``dataset`` for a run of the request ``identity`` (module
        docstring): ``done`` if that request was committed before, adopted if a run of it died
        after its charge and before its release id, else a new ``reserved`` run.

        Args:
            outputs: where the run writes (role → path), recorded so that a later run of the
                same request can be told where its release is.
            test_seed: the key comes from a test seed (marked; in the default ledger such a
                request runs again, as a new charge, instead of pointing at its release).

        Raises:
            BudgetRefused: the dataset has no cap (a store, not the ledger), the run would
                exceed it, or a run of the same request is in flight (exit 3).
        """
        if not (math.isfinite(epsilon) and epsilon >= 0 and 0 <= delta < 1):
            raise BudgetError(f"a release must have ε >= 0 and δ in [0, 1), got {epsilon}, {delta}")
        charge = Charge(float(epsilon), float(delta), tuple(noise))
        accountant = self.accountant
        now, host, pid = time.time(), host_name(), os.getpid()
        owner: dict[str, Any] = {"host": host, "pid": pid, "started_at": now}
        written = json.dumps(dict(outputs or {}), sort_keys=True)
        with writing(self._engine, self.url) as conn:
            cap = self._lock_cap(conn, dataset, epsilon, delta)
            if not (self.ledger and test_seed):
                committed = self._committed(conn, dataset, identity)
                if committed is not None:
                    return Reservation(
                        dataset,
                        committed.run,
                        job,
                        committed.epsilon,
                        committed.delta,
                        COMMITTED,
                        release=committed.release,
                        done=_record(committed),
                    )
            adopted = self._adoptable(conn, dataset, identity)
            if adopted is not None:
                self._update(
                    conn, adopted.run, state=CHARGED, ended_at=None, outputs=written, **owner
                )
                self._hold(conn, adopted.run, owner)
                return Reservation(
                    dataset,
                    adopted.run,
                    job,
                    adopted.epsilon,
                    adopted.delta,
                    CHARGED,
                    adopted=True,
                    host=host,
                    pid=pid,
                    started_at=now,
                )
            others = [row_charge(r) for r in counted_rows(conn, dataset, _window(cap))]
            if cap is not None and not fits_cap(
                [*others, charge], cap.epsilon, cap.delta, accountant
            ):
                raise BudgetRefused(self._refusal(dataset, cap, others, charge, accountant))
            run = uuid.uuid4().hex
            conn.execute(
                RUNS.insert().values(
                    run=run,
                    dataset=dataset,
                    identity=identity,
                    release=None,
                    job=job,
                    algorithm=algorithm,
                    epsilon=float(epsilon),
                    delta=float(delta),
                    noise=json.dumps([g.to_dict() for g in noise]),
                    state=RESERVED,
                    test_seed=bool(test_seed),
                    outputs=written,
                    charged_at=None,
                    ended_at=None,
                    **owner,
                )
            )
            self._hold(conn, run, owner)
        return Reservation(
            dataset, run, job, epsilon, delta, RESERVED, host=host, pid=pid, started_at=now
        )

    # ------------------------------------------------------------------ charge, bind, renew
    def charge(self, res: Reservation) -> Reservation:
        """Make the charge durable, right before the run's first read of input rows."""
        if res.state != RESERVED:
            return res
        with writing(self._engine, self.url) as conn:
            found = conn.execute(
                RUNS.update()
                .where(_owned(res), RUNS.c.state == RESERVED)
                .values(state=CHARGED, charged_at=time.time())
            ).rowcount
        if not found:
            raise BudgetError(
                f"run {res.run} of dataset {res.dataset!r} is no longer reserved for this "
                "process in the store (settled by an operator?); nothing was read"
            )
        return replace(res, state=CHARGED)

    def bind(self, res: Reservation, release: str) -> Reservation:
        """Record the run's release id, once its input is digested and before anything is
        drawn from its key: once only, never replaced (a run that holds a release id is never
        adopted, module docstring).

        Raises:
            BudgetError: the run is not charged by this process any more (settled or taken
                over), or holds another release id: the key is then never bound.
        """
        with writing(self._engine, self.url) as conn:
            found = conn.execute(
                RUNS.update()
                .where(
                    _owned(res),
                    RUNS.c.state == CHARGED,
                    sa.or_(RUNS.c.release.is_(None), RUNS.c.release == release),
                )
                .values(release=release)
            ).rowcount
            if not found:
                raise BudgetError(
                    f"run {res.run} of dataset {res.dataset!r} cannot record its release id: "
                    f"{self._holder(conn, res)}; nothing was drawn or written"
                )
        return replace(res, release=release)

    def renew(self, res: Reservation) -> bool:
        """Renew the run's lease (its heartbeat); False once the run is not this attempt's."""
        with writing(self._engine, self.url) as conn:
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

    # ------------------------------------------------------------------ the end of a run
    def commit(self, res: Reservation) -> None:
        """Mark the run committed, right before its outputs and report go into place: only a
        ``charged`` run this process holds, with the release id it bound.

        Raises:
            BudgetError: the run is in another state (settled while it ran, ...) or held by
                another process: its outputs must not go into place.
        """
        where = [_owned(res), RUNS.c.state == CHARGED]
        if res.release is not None:
            where.append(RUNS.c.release == res.release)
        with writing(self._engine, self.url) as conn:
            found = conn.execute(
                RUNS.update().where(*where).values(state=COMMITTED, ended_at=time.time())
            ).rowcount
            if not found:
                raise BudgetError(
                    f"cannot commit run {res.run} of dataset {res.dataset!r}: "
                    f"{self._holder(conn, res)}; its outputs are not put in place"
                )
            conn.execute(LEASES.delete().where(LEASES.c.run == res.run))

    def abandon(self, res: Reservation) -> str:
        """End a run without a commit: ``released`` if it never read data, else ``failed``
        (charged). Returns the state the run ends in (a run no longer held by this process
        is left as it is: its state is returned)."""
        now = time.time()
        with writing(self._engine, self.url) as conn:
            row = conn.execute(sa.select(RUNS).where(RUNS.c.run == res.run)).first()
            if row is None:
                return "unknown"
            if (row.host, row.pid, row.started_at) != (res.host, res.pid, res.started_at):
                return str(row.state)
            state = {RESERVED: RELEASED, CHARGED: FAILED}.get(row.state, row.state)
            self._update(conn, res.run, state=state, ended_at=now)
            conn.execute(LEASES.delete().where(LEASES.c.run == res.run))
        return str(state)

    def settle(self, run: str, *, force: bool = False) -> str:
        """Settle a run whose process is provably gone: ``reserved`` → ``released``,
        ``charged`` → ``failed`` (charged). Returns the new state.

        Raises:
            BudgetError: no such run, nothing to settle, or its process may still run (unless
                ``force``).
        """
        with writing(self._engine, self.url) as conn:
            row = conn.execute(sa.select(RUNS).where(RUNS.c.run == run)).first()
            if row is None:
                raise BudgetError(f"--run {run}: no such run in {self.url}")
            record = _record(row, _lease_of(conn, run))
            if record.state not in (RESERVED, CHARGED):
                raise BudgetError(f"--run {run} is {record.shown_state}: nothing to settle")
            if not (record.gone or force):
                raise BudgetError(
                    f"--run {run} may still be running (pid {record.pid} on {record.host}, "
                    "its lease not expired); settle it once its process is gone, or pass "
                    "--force if you know it is"
                )
            state = RELEASED if record.state == RESERVED else FAILED
            self._update(conn, run, state=state, ended_at=time.time())
            conn.execute(LEASES.delete().where(LEASES.c.run == run))
        return state

    def runs(self, dataset: str | None = None) -> list[RunRecord]:
        """Every run (of ``dataset``), oldest first."""
        query = sa.select(RUNS).order_by(RUNS.c.started_at)
        if dataset is not None:
            query = query.where(RUNS.c.dataset == dataset)
        with self._engine.connect() as conn:
            leases = {r.run: r for r in conn.execute(sa.select(LEASES))}
            return [_record(r, leases.get(r.run)) for r in conn.execute(query)]

    # ------------------------------------------------------------------ helpers
    def _lock_cap(self, conn: Connection, dataset: str, epsilon: float, delta: float) -> Any:
        cap = conn.execute(
            sa.select(CAPS).where(CAPS.c.dataset == dataset).with_for_update()
        ).first()
        if cap is None and not self.ledger:
            raise BudgetRefused(
                f"budget refused: dataset {dataset!r} has no cap set (requested "
                f"{fmt(epsilon, delta)}); set one with `spark-dp budget set-cap --store "
                f"{self.url} --dataset {dataset} --epsilon E [--delta D]`"
            )
        return cap

    @staticmethod
    def _committed(conn: Connection, dataset: str, identity: str) -> Any:
        """The committed run of this request, if any (the first, should there be several)."""
        return conn.execute(
            sa.select(RUNS)
            .where(
                RUNS.c.dataset == dataset,
                RUNS.c.identity == identity,
                RUNS.c.state == COMMITTED,
            )
            .order_by(RUNS.c.started_at)
        ).first()

    @staticmethod
    def _adoptable(conn: Connection, dataset: str, identity: str) -> Any:
        """The run of this request whose charge the next run of it takes over, if any: one
        that was charged and then failed, or whose process is provably gone, **before it
        recorded a release id** (its key was never bound, so nothing of it was drawn, staged or
        released). A run of the request that still runs refuses this one; one of it that was
        reserved and whose process is gone never read data and is released on the way."""
        rows = conn.execute(
            sa.select(RUNS)
            .where(
                RUNS.c.dataset == dataset,
                RUNS.c.identity == identity,
                RUNS.c.state.in_((RESERVED, CHARGED, FAILED)),
            )
            .order_by(RUNS.c.started_at)
        )
        adoptable = None
        for row in list(rows):
            record = _record(row, _lease_of(conn, row.run))
            if row.state in (RESERVED, CHARGED) and not record.gone:
                raise BudgetRefused(
                    f"budget refused: run {row.run} of this request (same key, arguments and "
                    f"input listing) is in flight (pid {row.pid} on {row.host}); one run of a "
                    "request at a time: wait for it to end, or settle it once its process is "
                    f"gone (spark-dp budget settle --run {row.run})"
                )
            if row.state == RESERVED:  # gone before it read anything: freed
                RunLifecycle._update(conn, row.run, state=RELEASED, ended_at=time.time())
                conn.execute(LEASES.delete().where(LEASES.c.run == row.run))
            elif row.release is None and adoptable is None:
                adoptable = row
        return adoptable

    @staticmethod
    def _hold(conn: Connection, run: str, owner: Mapping[str, Any]) -> None:
        """Give the run's lease to the attempt ``owner`` (this process)."""
        conn.execute(LEASES.delete().where(LEASES.c.run == run))
        conn.execute(
            LEASES.insert().values(
                run=run,
                process_started=process_started(int(owner["pid"])),
                renewed_at=owner["started_at"],
                lease_seconds=LEASE_SECONDS,
                **owner,
            )
        )

    @staticmethod
    def _holder(conn: Connection, res: Reservation) -> str:
        """Why a transition of ``res`` found nothing: the run's state and holder now."""
        row = conn.execute(sa.select(RUNS).where(RUNS.c.run == res.run)).first()
        if row is None:
            return "the store holds no such run"
        if (row.host, row.pid, row.started_at) != (res.host, res.pid, res.started_at):
            return f"it is held by another process now (pid {row.pid} on {row.host})"
        return f"the store holds it as {_record(row).shown_state}"

    @staticmethod
    def _update(conn: Connection, run: str, **values: Any) -> None:
        conn.execute(RUNS.update().where(RUNS.c.run == run).values(**values))

    def _refusal(
        self, dataset: str, cap: Any, others: list[Charge], charge: Charge, accountant: str
    ) -> str:
        eps, delta = basic_totals(others)
        window = f" per {cap.window_days:g} days" if cap.window_days is not None else ""
        msg = (
            f"budget refused: dataset {dataset!r} has spent {fmt(eps, delta)} (committed, "
            f"failed and in flight, basic composition); this release requests "
            f"{fmt(charge.epsilon, charge.delta)}; cap {fmt(cap.epsilon, cap.delta)}{window}"
        )
        if accountant != "basic" and cap.delta > 0:
            needed = certified_epsilon([*others, charge], cap.delta, accountant)
            msg += f"; {accountant} filter: with it they need a cap of ε={needed:.6g}"
        return msg


def _owned(res: Reservation) -> sa.ColumnElement[bool]:
    """The run ``res`` names, as long as the attempt ``res`` holds it."""
    return sa.and_(
        RUNS.c.run == res.run,
        RUNS.c.host == res.host,
        RUNS.c.pid == res.pid,
        RUNS.c.started_at == res.started_at,
    )


def _window(cap: Any) -> float | None:
    return None if cap is None else cap.window_days


class Heartbeat:
    """A run's lease renewed every :data:`~spark_dp.budget.records.RENEW_SECONDS` from a daemon
    thread, until :meth:`stop` (or until the run is no longer this process's: settled or taken
    over). A driver that dies stops renewing: its lease expires after
    :data:`~spark_dp.budget.records.LEASE_SECONDS` and its run becomes provably gone on every
    host. A renewal that fails (the database briefly unreachable) is retried at the next beat."""

    def __init__(self, store: RunLifecycle, res: Reservation, every: float = RENEW_SECONDS) -> None:
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, args=(store, res, every), name="spark_dp budget lease", daemon=True
        )
        self._thread.start()

    def _beat(self, store: RunLifecycle, res: Reservation, every: float) -> None:
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
