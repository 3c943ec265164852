"""A run's life in the budget store: reserve → charge → bind → commit, or abandon; settle.

The rules (``docs/privacy/budget.md``; the job runner follows them, :mod:`spark_dp.jobs.runner`).
The store decides from a run's **request** alone, its pre-read identity
(:func:`spark_dp.release_ids.run_identity`: job, arguments, input locations and listings, key),
never from the rows it reads, so no charge decision can tell anyone anything about the data:

* :meth:`~RunLifecycle.reserve`, before any data is read. A request that was **committed**
  before is not run again: the reservation comes back ``done`` (nothing is read or charged;
  the runner points at the committed release). A run of the same request that was charged and
  then failed or died released nothing, and is **adopted** (its charge is this run's: the
  retry costs nothing more). Otherwise the run's (ε, δ) must fit the cap with every
  ``reserved``, ``charged``, ``failed`` and ``committed`` run of the dataset counted (within
  the window, if the cap has one); the row is ``reserved``, the only state that can be freed.
* :meth:`~RunLifecycle.charge`, right before the first read of input rows: ``charged``,
  durably. From here on the (ε, δ) is spent whatever happens: a failure, a kill, a
  data-dependent error leave the run ``failed`` (charged), never freed.
* :meth:`~RunLifecycle.bind`, once the data's digest is known: the run records its release id
  (for the listing only: nothing is decided from it).
* :meth:`~RunLifecycle.commit` once outputs and report are in place: ``committed``.
  :meth:`~RunLifecycle.abandon` when the run ends otherwise: ``reserved`` → ``released``,
  ``charged`` → ``failed``.
* :meth:`~RunLifecycle.settle` (``spark-dp budget settle``): a run whose process is gone
  (:attr:`RunRecord.stale`) by the same rules.

Why not "the same rows again cost nothing": a free repeat decided from the rows' digest would
tell whoever can choose what an input holds whether two inputs are equal, e.g. whether D minus
one user's rows is D, i.e. whether that user is in D (``docs/privacy/keys.md``).

Every transition locks the dataset's cap row, so runs of one dataset are serialized.
"""

from __future__ import annotations

import json
import math
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from spark_dp.budget.accounting import Charge, NoiseStep, basic_totals, fits_cap, tight_epsilon
from spark_dp.budget.records import Reservation, RunRecord, host_name, process_gone
from spark_dp.budget.schema import CAPS, RUNS, writing
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


def _record(row: Row[Any]) -> RunRecord:
    return RunRecord(**{f: getattr(row, f) for f in RunRecord.__dataclass_fields__})


class RunLifecycle:
    """The run transitions of :class:`~spark_dp.budget.store.BudgetStore` (module docstring)."""

    _engine: Engine
    url: str

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
        after its charge, else a new ``reserved`` run.

        Args:
            outputs: where the run writes (role → path), recorded so that a later run of the
                same request can be told where its release is.

        Raises:
            BudgetRefused: the dataset has no cap, or the run would exceed it (exit 3).
        """
        if not (math.isfinite(epsilon) and epsilon >= 0 and 0 <= delta < 1):
            raise BudgetError(f"a release must have ε >= 0 and δ in [0, 1), got {epsilon}, {delta}")
        charge = Charge(float(epsilon), float(delta), tuple(noise))
        accountant = self.accountant
        now, host, pid = time.time(), host_name(), os.getpid()
        written = json.dumps(dict(outputs or {}), sort_keys=True)
        with writing(self._engine, self.url) as conn:
            cap = self._lock_cap(conn, dataset, epsilon, delta)
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
                    conn,
                    adopted.run,
                    state=CHARGED,
                    host=host,
                    pid=pid,
                    started_at=now,
                    ended_at=None,
                    release=None,
                    outputs=written,
                )
                return Reservation(
                    dataset, adopted.run, job, adopted.epsilon, adopted.delta, CHARGED, adopted=True
                )
            others = [row_charge(r) for r in counted_rows(conn, dataset, cap.window_days)]
            if not fits_cap([*others, charge], cap.epsilon, cap.delta, accountant):
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
                    host=host,
                    pid=pid,
                    started_at=now,
                    charged_at=None,
                    ended_at=None,
                )
            )
        return Reservation(dataset, run, job, epsilon, delta, RESERVED)

    # ------------------------------------------------------------------ charge, bind
    def charge(self, res: Reservation) -> Reservation:
        """Make the charge durable, right before the run's first read of input rows."""
        if res.state != RESERVED:
            return res
        with writing(self._engine, self.url) as conn:
            found = conn.execute(
                RUNS.update()
                .where(RUNS.c.run == res.run, RUNS.c.state == RESERVED)
                .values(state=CHARGED, charged_at=time.time())
            ).rowcount
        if not found:
            raise BudgetError(
                f"run {res.run} of dataset {res.dataset!r} is no longer reserved in the store "
                "(settled by an operator?); nothing was read"
            )
        return replace(res, state=CHARGED)

    def bind(self, res: Reservation, release: str) -> Reservation:
        """Record the run's release id, once its input is digested (nothing is decided from
        it: the store's decisions were made from the request, module docstring)."""
        with writing(self._engine, self.url) as conn:
            self._update(conn, res.run, release=release)
        return replace(res, release=release)

    # ------------------------------------------------------------------ the end of a run
    def commit(self, res: Reservation) -> None:
        """Mark the run committed (outputs and report in place)."""
        with writing(self._engine, self.url) as conn:
            found = conn.execute(
                RUNS.update()
                .where(RUNS.c.run == res.run, RUNS.c.state.in_((RESERVED, CHARGED, FAILED)))
                .values(state=COMMITTED, ended_at=time.time())
            ).rowcount
        if not found:
            raise BudgetError(
                f"cannot commit run {res.run} of dataset {res.dataset!r}: the store holds no "
                "reservation of it"
            )

    def abandon(self, res: Reservation) -> str:
        """End a run without a commit: ``released`` if it never read data, else ``failed``
        (charged). Returns the state the run ends in."""
        now = time.time()
        with writing(self._engine, self.url) as conn:
            row = conn.execute(sa.select(RUNS).where(RUNS.c.run == res.run)).first()
            if row is None:
                return "unknown"
            state = {RESERVED: RELEASED, CHARGED: FAILED}.get(row.state, row.state)
            self._update(conn, res.run, state=state, ended_at=now)
        return str(state)

    def settle(self, run: str, *, force: bool = False) -> str:
        """Settle a run whose process is gone: ``reserved`` → ``released``, ``charged`` →
        ``failed`` (charged). Returns the new state.

        Raises:
            BudgetError: no such run, nothing to settle, or its process still runs (unless
                ``force``).
        """
        with writing(self._engine, self.url) as conn:
            row = conn.execute(sa.select(RUNS).where(RUNS.c.run == run)).first()
            if row is None:
                raise BudgetError(f"--run {run}: no such run in {self.url}")
            record = _record(row)
            if record.state not in (RESERVED, CHARGED):
                raise BudgetError(f"--run {run} is {record.shown_state}: nothing to settle")
            if not (record.stale or force):
                raise BudgetError(
                    f"--run {run} may still be running (pid {record.pid} on {record.host}); "
                    "settle it once its process is gone, or pass --force if you know it is"
                )
            state = RELEASED if record.state == RESERVED else FAILED
            self._update(conn, run, state=state, ended_at=time.time())
        return state

    def runs(self, dataset: str | None = None) -> list[RunRecord]:
        """Every run (of ``dataset``), oldest first."""
        query = sa.select(RUNS).order_by(RUNS.c.started_at)
        if dataset is not None:
            query = query.where(RUNS.c.dataset == dataset)
        with self._engine.connect() as conn:
            return [_record(r) for r in conn.execute(query)]

    # ------------------------------------------------------------------ helpers
    def _lock_cap(self, conn: Connection, dataset: str, epsilon: float, delta: float) -> Any:
        cap = conn.execute(
            sa.select(CAPS).where(CAPS.c.dataset == dataset).with_for_update()
        ).first()
        if cap is None:
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
        """A run of this request that was charged and then failed, or whose process is gone:
        nothing of it was released (its staged outputs are removed by the next run's
        recovery), so the next run of the same request takes its charge over."""
        rows = conn.execute(
            sa.select(RUNS)
            .where(
                RUNS.c.dataset == dataset,
                RUNS.c.identity == identity,
                RUNS.c.state.in_((CHARGED, FAILED)),
            )
            .order_by(RUNS.c.started_at)
        )
        for row in rows:
            if row.state == FAILED or process_gone(row.host, row.pid, row.started_at):
                return row
        return None

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
        if accountant != "basic":
            tight = tight_epsilon([*others, charge], cap.delta, accountant)
            msg += f"; {accountant} accountant: ε={tight:.6g} at δ={cap.delta:.3g} with it"
        return msg
