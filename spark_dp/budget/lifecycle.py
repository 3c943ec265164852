"""A run's life in the budget store: reserve → charge → bind → commit, or abandon; settle.

The rules (``docs/privacy/budget.md``; the job runner follows them, :mod:`spark_dp.jobs.runner`):

* :meth:`~RunLifecycle.reserve`, before any data is read: the run's (ε, δ) must fit the cap
  with every ``reserved``, ``charged``, ``failed`` and ``committed`` run of the dataset counted
  (within the window, if the cap has one). The row is ``reserved``, the only state that can be
  freed. Two exceptions: a run with the same pre-read identity (job, arguments, key, dataset)
  that died before its data was digested released nothing, and is **adopted** (its charge is
  this run's); and a run over the cap whose identity was charged before is admitted
  **conditionally**: it costs nothing and may only finish as a repeat of that earlier release.
* :meth:`~RunLifecycle.charge`, right before the first read of input rows: ``charged``,
  durably. From here on the (ε, δ) is spent whatever happens: a failure, a kill, a
  data-dependent error leave the run ``failed`` (charged), never freed.
* :meth:`~RunLifecycle.bind`, once the data's digest is known: the run records its release
  id. If a ``charged``, ``failed`` or ``committed`` run of the dataset has the same id, this
  run is the same release (same key, rows and arguments: the identical noise): it becomes a
  ``repeat`` of it and costs nothing more. A conditional run that is not a repeat is refused
  here (exit 3): it has read the data but released nothing, and the refusal tells only that
  the input is not the one released before.
* :meth:`~RunLifecycle.commit` once outputs and report are in place: ``committed`` (a repeat
  commits the run it repeats if that one had failed). :meth:`~RunLifecycle.abandon` when the run
  ends otherwise: ``reserved`` → ``released``, ``charged`` → ``failed``.
* :meth:`~RunLifecycle.settle` (``spark-dp budget settle``): a run whose process is gone
  (:attr:`RunRecord.stale`) by the same rules.

Every transition locks the dataset's cap row, so runs of one dataset are serialized.
"""

from __future__ import annotations

import json
import math
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from spark_dp.budget.accounting import Charge, GaussianStep, basic_totals, fits_cap, tight_epsilon
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
    "REPEAT",
    "RESERVED",
    "RunLifecycle",
    "counted_rows",
    "fmt",
    "row_charge",
]

RESERVED, CHARGED, COMMITTED = "reserved", "charged", "committed"
FAILED, RELEASED, REPEAT = "failed", "released", "repeat"
COUNTED = (RESERVED, CHARGED, FAILED, COMMITTED)
"""States whose (ε, δ) counts against the cap."""
_RELEASED_BEFORE = (CHARGED, FAILED, COMMITTED)
_DAY = 86_400.0


def fmt(eps: float, delta: float) -> str:
    return f"ε={eps:.6g}, δ={delta:.3g}"


def row_charge(row: Row[Any]) -> Charge:
    """The :class:`Charge` of a run row (its Gaussian steps from the generic JSON column)."""
    steps = tuple(GaussianStep.from_dict(d) for d in json.loads(row.gaussian))
    return Charge(float(row.epsilon), float(row.delta), steps)


def counted_rows(conn: Connection, dataset: str, window_days: float | None) -> list[Any]:
    """The runs that count against the cap: in flight (reserved, charged), and spent (failed,
    committed; within the window, if any). Conditional runs never count."""
    spent: sa.ColumnElement[bool] = RUNS.c.state.in_((FAILED, COMMITTED))
    if window_days is not None:
        spent = sa.and_(spent, RUNS.c.ended_at >= time.time() - window_days * _DAY)
    query = sa.select(RUNS).where(
        RUNS.c.dataset == dataset,
        RUNS.c.conditional.is_(False),
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
        gaussian: Sequence[GaussianStep] = (),
        algorithm: str | None = None,
        test_seed: bool = False,
    ) -> Reservation:
        """Reserve (ε, δ) of ``dataset`` for a new run with pre-read ``identity``.

        Raises:
            BudgetRefused: the dataset has no cap, or the run would exceed it and nothing with
                its identity was charged before (exit 3).
        """
        if not (math.isfinite(epsilon) and epsilon >= 0 and 0 <= delta < 1):
            raise BudgetError(f"a release must have ε >= 0 and δ in [0, 1), got {epsilon}, {delta}")
        charge = Charge(float(epsilon), float(delta), tuple(gaussian))
        accountant = self.accountant
        now, host, pid = time.time(), host_name(), os.getpid()
        with writing(self._engine, self.url) as conn:
            cap = self._lock_cap(conn, dataset, epsilon, delta)
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
                )
                return Reservation(
                    dataset, adopted.run, job, adopted.epsilon, adopted.delta, CHARGED, adopted=True
                )
            others = [row_charge(r) for r in counted_rows(conn, dataset, cap.window_days)]
            conditional = False
            if not fits_cap([*others, charge], cap.epsilon, cap.delta, accountant):
                if not self._released_before(conn, dataset, identity):
                    raise BudgetRefused(self._refusal(dataset, cap, others, charge, accountant))
                conditional = True  # it may only run as a repeat of that release
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
                    gaussian=json.dumps([g.to_dict() for g in gaussian]),
                    state=RESERVED,
                    conditional=conditional,
                    repeat_of=None,
                    test_seed=bool(test_seed),
                    host=host,
                    pid=pid,
                    started_at=now,
                    charged_at=None,
                    ended_at=None,
                )
            )
        return Reservation(dataset, run, job, epsilon, delta, RESERVED, conditional=conditional)

    # ------------------------------------------------------------------ charge, bind
    def charge(self, res: Reservation) -> Reservation:
        """Make the charge durable, right before the run's first read of input rows."""
        if res.conditional or res.state != RESERVED:
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
        """Record the run's release id; a repeat of a charged release costs nothing more.

        Raises:
            BudgetRefused: a conditional run whose release is not a repeat (exit 3).
            BudgetError: the same release id was charged with another (ε, δ).
        """
        with writing(self._engine, self.url) as conn:
            self._lock_cap(conn, res.dataset, res.epsilon, res.delta)
            prior = conn.execute(
                sa.select(RUNS)
                .where(
                    RUNS.c.dataset == res.dataset,
                    RUNS.c.release == release,
                    RUNS.c.state.in_(_RELEASED_BEFORE),
                    RUNS.c.run != res.run,
                )
                .order_by(RUNS.c.started_at)
            ).first()
            if prior is not None:
                if not (
                    math.isclose(prior.epsilon, res.epsilon)
                    and math.isclose(prior.delta, res.delta)
                ):
                    raise BudgetError(
                        f"release {release} of dataset {res.dataset!r} was charged "
                        f"{fmt(prior.epsilon, prior.delta)}, now {fmt(res.epsilon, res.delta)}: "
                        "a release id must always spend the same budget"
                    )
                self._update(conn, res.run, state=REPEAT, release=release, repeat_of=prior.run)
                return replace(res, state=REPEAT, release=release, repeat_of=prior.run)
            if res.conditional:
                self._update(conn, res.run, state=RELEASED, release=release, ended_at=time.time())
            else:
                self._update(conn, res.run, release=release)
        if res.conditional:
            raise BudgetRefused(
                f"budget refused: dataset {res.dataset!r} has no budget left for "
                f"{fmt(res.epsilon, res.delta)}; this run was admitted only as a retry of an "
                "earlier release with the same key and arguments, and its input differs from "
                "that release's (nothing was released or charged)"
            )
        return replace(res, release=release)

    # ------------------------------------------------------------------ the end of a run
    def commit(self, res: Reservation) -> None:
        """Mark the run committed (outputs and report in place); a repeat commits the run it
        repeats when that one had failed or died."""
        now = time.time()
        with writing(self._engine, self.url) as conn:
            if res.repeat_of is not None:
                self._update(conn, res.run, ended_at=now)
                prior = conn.execute(sa.select(RUNS).where(RUNS.c.run == res.repeat_of)).first()
                if prior is not None and (
                    prior.state == FAILED
                    or (
                        prior.state == CHARGED
                        and process_gone(prior.host, prior.pid, prior.started_at)
                    )
                ):
                    self._update(conn, prior.run, state=COMMITTED, ended_at=now)
                return
            found = conn.execute(
                RUNS.update()
                .where(RUNS.c.run == res.run, RUNS.c.state.in_((RESERVED, CHARGED, FAILED)))
                .values(state=COMMITTED, ended_at=now)
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
    def _adoptable(conn: Connection, dataset: str, identity: str) -> Any:
        """A run of this identity that was charged and died (or failed) before it digested its
        input: it released nothing, so the next such run takes its charge over."""
        rows = conn.execute(
            sa.select(RUNS).where(
                RUNS.c.dataset == dataset,
                RUNS.c.identity == identity,
                RUNS.c.release.is_(None),
                RUNS.c.conditional.is_(False),
                RUNS.c.state.in_((CHARGED, FAILED)),
            )
        )
        for row in rows:
            if row.state == FAILED or process_gone(row.host, row.pid, row.started_at):
                return row
        return None

    @staticmethod
    def _released_before(conn: Connection, dataset: str, identity: str) -> bool:
        return (
            conn.execute(
                sa.select(RUNS.c.run).where(
                    RUNS.c.dataset == dataset,
                    RUNS.c.identity == identity,
                    RUNS.c.release.is_not(None),
                    RUNS.c.state.in_(_RELEASED_BEFORE),
                )
            ).first()
            is not None
        )

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
