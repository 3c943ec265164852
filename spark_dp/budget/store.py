"""The budget store: caps per dataset, and the runs charged to them.

A job's life with a store (the job runner does this, :class:`spark_dp.jobs.lease.
BudgetLease`)::

    store = BudgetStore.open("sqlite:///var/spark_dp/budget.db")
    r = store.reserve(dataset=..., identity=run_identity(...), job=..., epsilon=ε, delta=δ,
                      noise=noise_steps(plan.steps))   # before any read; exit 3 if refused
    if r.done: ...                     # this request was committed before: nothing to run
    r = store.charge(r)                # durable, right before the first read of input rows
    r = store.bind(r, release_id(...))  # the data's digest is known, nothing drawn yet
    ... compute, stage output and report (store.renew(r) every 30 s: the run's lease) ...
    store.commit(r)                    # then the staged outputs go into place; or
                                       # store.abandon(r): released before the read, else
                                       # failed (charged)

Without ``--budget-store`` a job records its run in the **default ledger**, the same store in
an SQLite file of the user's state directory (:mod:`.ledger`), opened with ``ledger=True``: a
dataset without a cap is recorded, not refused.

Every transition runs in one transaction that locks the dataset's cap row (``SELECT ... FOR
UPDATE`` on PostgreSQL; ``BEGIN IMMEDIATE`` on SQLite), so concurrent jobs on one dataset are
serialized and their sum never exceeds the cap.

The store composes by its accountant, a privacy filter (basic composition or the zCDP
filter: :mod:`spark_dp.dp.accounting`); a store set to ``pld`` or ``rdp`` by an earlier
version is moved to ``zcdp`` when it is opened.

Caps may hold for a sliding window of ``window_days``: a run then counts from its reservation
until ``window_days`` after it ended (committed or failed). Checking at every reservation bounds
the spending inside every window of that length (not the lifetime loss).

A store of the v1 layout is imported on first open (:mod:`.migrate`): caps, settings and every
charged release, so no spend is lost.

**A run's life**: reserve → charge → bind → commit, or abandon; settle. The rules
(``docs/privacy/budget.md``; the job runner follows them). The store decides from a run's
**request** alone (:func:`spark_dp.release_ids.run_identity`: job, arguments, input
locations and listings, key) and from what its own runs recorded, never from the rows a run
reads (a free repeat decided from a digest would tell whether two inputs are equal, e.g.
whether one user is in D: ``docs/privacy/keys.md``):

* :meth:`~BudgetStore.reserve`, before any data is read: a request **committed** before is not
  run again (``done``: nothing read or charged); one **in flight** (its process not provably
  gone) refuses this run (:class:`BudgetRefused`); one charged that failed or died **before it
  recorded a release id** drew nothing from its key and is **adopted** (the retry costs nothing
  more), one that recorded its release id never is (its retry is a new charge). Otherwise the
  (ε, δ) must fit the cap with every ``reserved``, ``charged``, ``failed`` and ``committed`` run
  counted (within the window; by the store's filter, :mod:`spark_dp.dp.accounting`). The
  default ledger (``ledger=True``) records a dataset without a cap, and runs a test-seeded
  request again.
* :meth:`~BudgetStore.charge`, right before the first read of rows: ``charged`` for good.
* :meth:`~BudgetStore.bind`, the data digested and **before anything is drawn from the key**:
  the run records its release id, once; never replaced, never erased.
* :meth:`~BudgetStore.commit`, right before outputs and report go into place, only from
  ``charged`` with that release id; :meth:`~BudgetStore.abandon` otherwise (``reserved`` →
  ``released``, ``charged`` → ``failed``); :meth:`~BudgetStore.settle` a run whose process is
  provably gone (:attr:`RunRecord.gone`), by the same rules.

Every transition after the reservation is made only by the attempt holding the run
(:mod:`.leases`), and locks the dataset's cap row, so runs of one dataset are serialized.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import exc

from spark_dp.budget.leases import (
    drop_lease,
    held_by,
    hold,
    holder,
    lease_of,
    renew_lease,
    run_record,
)
from spark_dp.budget.migrate import import_v1
from spark_dp.budget.records import DatasetBudget, Reservation, RunRecord, host_name
from spark_dp.budget.schema import CAPS, LEASES, RUNS, SETTINGS, connect, display_url, writing
from spark_dp.dp.accounting import (
    LEGACY_ACCOUNTANTS,
    Charge,
    NoiseStep,
    basic_totals,
    certified_epsilon,
    check_accountant,
    fits_cap,
    fmt,
    refusal,
)
from spark_dp.errors import BudgetError, BudgetRefused, BudgetStoreUnavailable, ConfigError

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine, Row

__all__ = [
    "CHARGED",
    "COMMITTED",
    "COUNTED",
    "FAILED",
    "RELEASED",
    "RESERVED",
    "BudgetStore",
    "DatasetBudget",
    "Reservation",
    "RunRecord",
    "check_cap",
    "counted_rows",
    "row_charge",
]

log = logging.getLogger("spark_dp.budget")

RESERVED, CHARGED, COMMITTED = "reserved", "charged", "committed"
FAILED, RELEASED = "failed", "released"
COUNTED = (RESERVED, CHARGED, FAILED, COMMITTED)
"""States whose (ε, δ) counts against the cap."""
_DAY = 86_400.0


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


def check_cap(epsilon: float, delta: float, window_days: float | None) -> None:
    """Refuse a cap outside its domain (before anything is opened or created).

    Raises:
        ConfigError: ε not a finite number > 0, δ outside [0, 1), a window that is not > 0.
    """
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0):
        raise ConfigError(f"--epsilon of a cap must be a finite number > 0, got {epsilon!r}")
    if not (isinstance(delta, (int, float)) and 0 <= delta < 1):
        raise ConfigError(f"--delta of a cap must lie in [0, 1), got {delta!r}")
    if window_days is not None and not (math.isfinite(window_days) and window_days > 0):
        raise ConfigError(f"--window-days must be a finite number > 0, got {window_days!r}")


class BudgetStore:
    """Caps and runs per dataset in a SQL database (see the module docstring)."""

    def __init__(self, engine: Engine, url: str, *, ledger: bool = False) -> None:
        self._engine = engine
        self.url = display_url(url)
        self.ledger = ledger

    @classmethod
    def open(cls, url: str, *, ledger: bool = False) -> BudgetStore:
        """Open (and create if needed) the store at ``url``: ``sqlite:///path/budget.db`` or a
        SQLAlchemy URL such as ``postgresql://user@host/db``; import a v1 store's contents once
        and move a legacy accountant to the filter (:func:`migrate_accountant`).

        Args:
            ledger: the default ledger (:mod:`.ledger`): a dataset without a cap is recorded,
                not refused.

        Raises:
            ConfigError: a bare path, a file-system URI (``s3a://``, ``hdfs://``), a missing
                driver, an unreachable database, a file that is not a database; the message
                names ``--budget-store``.
            BudgetStoreUnavailable: a store that must be written and cannot be (exit 1).
        """
        engine = connect(url)
        import_v1(engine, display_url(url))
        store = cls(engine, url, ledger=ledger)
        store.migrate_accountant()
        return store

    def close(self) -> None:
        """Release the connections."""
        self._engine.dispose()

    def __enter__(self) -> BudgetStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ settings and caps
    @property
    def accountant(self) -> str:
        """The store's accountant: ``basic`` (default) or ``zcdp`` (a legacy ``pld`` or
        ``rdp`` setting is read as ``zcdp``: :func:`migrate_accountant`)."""
        value = self._setting("accountant")
        if value in LEGACY_ACCOUNTANTS:
            return "zcdp"
        return str(value) if value else "basic"

    def _setting(self, key: str) -> str | None:
        with self._engine.connect() as conn:
            value = conn.execute(sa.select(SETTINGS.c.value).where(SETTINGS.c.key == key)).scalar()
        return None if value is None else str(value)

    def migrate_accountant(self) -> str | None:
        """Move a store set to ``pld`` or ``rdp`` (earlier versions: composition of releases
        whose parameters are fixed in advance) to the ``zcdp`` filter, which re-counts every
        release and stays valid when releases are chosen from earlier ones; an earlier spark_dp
        then refuses the store (``zcdp`` is unknown to it) instead of spending by PLD. Returns
        the legacy name moved from, if any (the store keeps working: nothing else changes)."""
        legacy = self._setting("accountant")
        if legacy not in LEGACY_ACCOUNTANTS:
            return None
        try:
            self._upsert(SETTINGS, {"key": "accountant"}, {"value": "zcdp"})
        except BudgetStoreUnavailable:
            pass  # read-only: read as zcdp all the same (the accountant property)
        log.warning(
            "budget store %s: accountant %s (composition of releases fixed in advance) is now the "
            "zcdp privacy filter, valid when releases are chosen from earlier ones "
            "(docs/privacy/budget.md)",
            self.url,
            legacy,
        )
        return legacy

    def set_accountant(self, name: str) -> None:
        """Choose the accountant for every dataset of this store
        (:mod:`spark_dp.dp.accounting`).

        Raises:
            ConfigError: ``pld``/``rdp`` (no longer offered, one line) or an unknown name.
        """
        check_accountant(name)
        self._upsert(SETTINGS, {"key": "accountant"}, {"value": name})

    def set_cap(
        self, dataset: str, epsilon: float, delta: float = 0.0, *, window_days: float | None = None
    ) -> None:
        """Set (or replace) the cap of ``dataset``; a cap below what is spent refuses every
        further release.

        Raises:
            ConfigError: ε not > 0, δ outside [0, 1), or a window that is not > 0.
        """
        check_cap(epsilon, delta, window_days)
        if not dataset:
            raise ConfigError("--dataset must be a non-empty dataset id")
        values = {
            "epsilon": float(epsilon),
            "delta": float(delta),
            "window_days": None if window_days is None else float(window_days),
            "updated_at": time.time(),
        }
        self._upsert(CAPS, {"dataset": dataset}, values)

    def has_cap(self, dataset: str) -> bool:
        """Whether ``dataset`` has a cap."""
        with self._engine.connect() as conn:
            found = conn.execute(sa.select(CAPS.c.dataset).where(CAPS.c.dataset == dataset))
            return found.first() is not None

    def _upsert(self, table: sa.Table, key: dict[str, Any], values: dict[str, Any]) -> None:
        where = sa.and_(*[table.c[k] == v for k, v in key.items()])
        for attempt in range(3):
            try:
                with writing(self._engine, self.url) as conn:
                    found = conn.execute(
                        sa.select(*table.primary_key).where(where).with_for_update()
                    )
                    if found.first() is None:
                        conn.execute(table.insert().values(**key, **values))
                    else:
                        conn.execute(table.update().where(where).values(**values))
                return
            except exc.IntegrityError:  # inserted concurrently: update it now
                if attempt == 2:
                    raise

    # ------------------------------------------------------------------ reading
    def summary(self, only: str | None = None) -> list[DatasetBudget]:
        """Cap, spent, in-flight and remaining budget per dataset (sorted by dataset; dataset
        ``only``, if given): every dataset with a cap, and every dataset with runs (the ledger
        records datasets without a cap: their cap and remaining budget are ``None``)."""
        accountant = self.accountant
        stale: dict[str, int] = {}
        for record in self.runs(only):
            if record.stale:
                stale[record.dataset] = stale.get(record.dataset, 0) + 1
        out = []
        with self._engine.connect() as conn:
            caps = {c.dataset: c for c in conn.execute(sa.select(CAPS))}
            names = set(caps) | set(conn.execute(sa.select(RUNS.c.dataset).distinct()).scalars())
            for dataset in sorted(names if only is None else names & {only}):
                cap = caps.get(dataset)
                rows = counted_rows(conn, dataset, None if cap is None else cap.window_days)
                if cap is None and not rows:
                    continue
                done = [row_charge(r) for r in rows if r.state in (COMMITTED, FAILED)]
                held = [row_charge(r) for r in rows if r.state in (RESERVED, CHARGED)]
                (se, sd), (re_, rd) = basic_totals(done), basic_totals(held)
                tight = None
                if accountant != "basic" and cap is not None and cap.delta > 0:
                    tight = certified_epsilon([*done, *held], cap.delta, accountant)
                out.append(
                    DatasetBudget(
                        dataset=dataset,
                        cap_epsilon=None if cap is None else cap.epsilon,
                        cap_delta=None if cap is None else cap.delta,
                        window_days=None if cap is None else cap.window_days,
                        spent_epsilon=se,
                        spent_delta=sd,
                        reserved_epsilon=re_,
                        reserved_delta=rd,
                        remaining_epsilon=None if cap is None else cap.epsilon - se - re_,
                        remaining_delta=None if cap is None else cap.delta - sd - rd,
                        releases=sum(r.state == COMMITTED for r in rows),
                        reserved_releases=len(held),
                        failed_releases=sum(r.state == FAILED for r in rows),
                        stale_runs=stale.get(dataset, 0),
                        accountant=accountant,
                        tight_epsilon=tight,
                    )
                )
        return out

    def dataset_budget(self, dataset: str) -> DatasetBudget | None:
        """:meth:`summary`'s row of ``dataset`` (``None``: no cap and no run)."""
        return next(iter(self.summary(dataset)), None)

    def committed_writer(self, role: str, path: str) -> RunRecord | None:
        """The last committed run that wrote ``path`` as its ``role`` (``output``, ``report``),
        as it recorded at its reservation."""
        found = None
        for record in self.runs():
            if record.state == COMMITTED and record.written.get(role) == path:
                if found is None or (record.ended_at or 0) >= (found.ended_at or 0):
                    found = record
        return found

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
                    return _done(committed, job)
            adopted = self._adoptable(conn, dataset, identity)
            if adopted is not None:
                self._update(
                    conn, adopted.run, state=CHARGED, ended_at=None, outputs=written, **owner
                )
                hold(conn, adopted.run, owner)
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
                raise BudgetRefused(refusal(dataset, cap, others, charge, accountant))
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
            hold(conn, run, owner)
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
                .where(held_by(res), RUNS.c.state == RESERVED)
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
                    held_by(res),
                    RUNS.c.state == CHARGED,
                    sa.or_(RUNS.c.release.is_(None), RUNS.c.release == release),
                )
                .values(release=release)
            ).rowcount
            if not found:
                raise BudgetError(
                    f"run {res.run} of dataset {res.dataset!r} cannot record its release id: "
                    f"{holder(conn, res)}; nothing was drawn or written"
                )
        return replace(res, release=release)

    def renew(self, res: Reservation) -> bool:
        """Renew the run's lease (its heartbeat); False once the run is not this attempt's."""
        with writing(self._engine, self.url) as conn:
            return renew_lease(conn, res)

    # ------------------------------------------------------------------ the end of a run
    def commit(self, res: Reservation) -> None:
        """Mark the run committed, right before its outputs and report go into place: only a
        ``charged`` run this process holds, with the release id it bound.

        Raises:
            BudgetError: the run is in another state (settled while it ran, ...) or held by
                another process: its outputs must not go into place.
        """
        where = [held_by(res), RUNS.c.state == CHARGED]
        if res.release is not None:
            where.append(RUNS.c.release == res.release)
        with writing(self._engine, self.url) as conn:
            found = conn.execute(
                RUNS.update().where(*where).values(state=COMMITTED, ended_at=time.time())
            ).rowcount
            if not found:
                raise BudgetError(
                    f"cannot commit run {res.run} of dataset {res.dataset!r}: "
                    f"{holder(conn, res)}; its outputs are not put in place"
                )
            drop_lease(conn, res.run)

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
            drop_lease(conn, res.run)
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
            record = run_record(row, lease_of(conn, run))
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
            drop_lease(conn, run)
        return state

    def runs(self, dataset: str | None = None) -> list[RunRecord]:
        """Every run (of ``dataset``), oldest first."""
        query = sa.select(RUNS).order_by(RUNS.c.started_at)
        if dataset is not None:
            query = query.where(RUNS.c.dataset == dataset)
        with self._engine.connect() as conn:
            leases = {r.run: r for r in conn.execute(sa.select(LEASES))}
            return [run_record(r, leases.get(r.run)) for r in conn.execute(query)]

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
            record = run_record(row, lease_of(conn, row.run))
            if row.state in (RESERVED, CHARGED) and not record.gone:
                raise BudgetRefused(
                    f"budget refused: run {row.run} of this request (same key, arguments and "
                    f"input listing) is in flight (pid {row.pid} on {row.host}); one run of a "
                    "request at a time: wait for it to end, or settle it once its process is "
                    f"gone (spark-dp budget settle --run {row.run})"
                )
            if row.state == RESERVED:  # gone before it read anything: freed
                BudgetStore._update(conn, row.run, state=RELEASED, ended_at=time.time())
                drop_lease(conn, row.run)
            elif row.release is None and adoptable is None:
                adoptable = row
        return adoptable

    @staticmethod
    def _update(conn: Connection, run: str, **values: Any) -> None:
        conn.execute(RUNS.update().where(RUNS.c.run == run).values(**values))


def _done(committed: Row[Any], job: str) -> Reservation:
    """The reservation of a request committed before (run ``committed``): nothing to run."""
    return Reservation(
        committed.dataset,
        committed.run,
        job,
        committed.epsilon,
        committed.delta,
        COMMITTED,
        release=committed.release,
        done=run_record(committed),
    )


def _window(cap: Any) -> float | None:
    return None if cap is None else cap.window_days
