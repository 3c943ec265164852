"""The budget store: check-and-reserve before any data is read, commit once written.

A job's life with a store (the job runner does this)::

    store = BudgetStore.open("sqlite:///var/spark_dp/budget.db")
    r = store.reserve(dataset=..., release=release_id(...), job=..., epsilon=ε, delta=δ,
                      noise=noise_steps(plan.steps))            # BudgetRefused: exit 3
    ... read, compute, write output and report ...
    store.commit(r)               # or store.release(r) if it failed before writing anything

``reserve`` runs in one transaction that locks the dataset's cap row (``SELECT ... FOR
UPDATE`` on PostgreSQL; ``BEGIN IMMEDIATE`` on SQLite), so concurrent jobs on one dataset are
serialized and their sum never exceeds the cap. Reserved releases count as spent until they
are committed (kept) or released (freed).

Release ids (:func:`spark_dp.budget.release_id`) make releases idempotent: reserving a release
that is already committed charges nothing (``already_committed``); one that is still reserved
(an earlier attempt crashed, or a retry runs) is taken over by the new attempt.

Caps may hold for a sliding window of ``window_days``: a release then counts from its
reservation until ``window_days`` after its commit. Checking at every reservation bounds the
spending inside every window of that length (not the lifetime loss).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import exc

from spark_dp.budget.accounting import (
    Charge,
    NoiseStep,
    basic_totals,
    check_accountant,
    fits_cap,
    tight_epsilon,
)
from spark_dp.budget.records import DatasetBudget, Reservation
from spark_dp.budget.schema import CAPS, RELEASES, SETTINGS, connect, display_url
from spark_dp.errors import BudgetError, BudgetRefused, ConfigError

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine, Row

__all__ = ["BudgetStore", "DatasetBudget", "Reservation"]

RESERVED, COMMITTED, RELEASED = "reserved", "committed", "released"
_DAY = 86_400.0


def _check_cap(epsilon: float, delta: float, window_days: float | None) -> None:
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0):
        raise ConfigError(f"--epsilon of a cap must be a finite number > 0, got {epsilon!r}")
    if not (isinstance(delta, (int, float)) and 0 <= delta < 1):
        raise ConfigError(f"--delta of a cap must lie in [0, 1), got {delta!r}")
    if window_days is not None and not (math.isfinite(window_days) and window_days > 0):
        raise ConfigError(f"--window-days must be a finite number > 0, got {window_days!r}")


def _charge(row: Row[Any]) -> Charge:
    steps = tuple(NoiseStep.from_dict(d) for d in json.loads(row.gaussian))  # all noise steps
    return Charge(float(row.epsilon), float(row.delta), steps)


def _fmt(eps: float, delta: float) -> str:
    return f"ε={eps:.6g}, δ={delta:.3g}"


class BudgetStore:
    """Caps and releases per dataset in a SQL database (see the module docstring)."""

    def __init__(self, engine: Engine, url: str) -> None:
        self._engine = engine
        self.url = display_url(url)

    @classmethod
    def open(cls, url: str) -> BudgetStore:
        """Open (and create if needed) the store at ``url``: ``sqlite:///path/budget.db`` or a
        SQLAlchemy URL such as ``postgresql://user@host/db``.

        Raises:
            ConfigError: a bare path, a file-system URI (``s3a://``, ``hdfs://``), a missing
                driver or an unreachable database; the message names ``--budget-store``.
        """
        return cls(connect(url), url)

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
        """The store's accountant: ``basic`` (default), ``pld`` or ``rdp``."""
        with self._engine.connect() as conn:
            value = conn.execute(
                sa.select(SETTINGS.c.value).where(SETTINGS.c.key == "accountant")
            ).scalar()
        return str(value) if value else "basic"

    def set_accountant(self, name: str) -> None:
        """Choose the accountant for every dataset of this store (see :mod:`.accounting`)."""
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
        _check_cap(epsilon, delta, window_days)
        if not dataset:
            raise ConfigError("--dataset must be a non-empty dataset id")
        values = {
            "epsilon": float(epsilon),
            "delta": float(delta),
            "window_days": None if window_days is None else float(window_days),
            "updated_at": time.time(),
        }
        self._upsert(CAPS, {"dataset": dataset}, values)

    def _upsert(self, table: sa.Table, key: dict[str, Any], values: dict[str, Any]) -> None:
        where = sa.and_(*[table.c[k] == v for k, v in key.items()])
        for attempt in range(3):
            try:
                with self._engine.begin() as conn:
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

    # ------------------------------------------------------------------ reservations
    def reserve(
        self,
        *,
        dataset: str,
        release: str,
        job: str,
        epsilon: float,
        delta: float,
        noise: Sequence[NoiseStep] = (),
        algorithm: str | None = None,
    ) -> Reservation:
        """Reserve (ε, δ) of ``dataset`` for ``release`` in one transaction.

        Returns a reservation to :meth:`commit` or :meth:`release`; if ``release`` is already
        committed, one with ``already_committed`` set that charged nothing; if it is reserved
        by an earlier attempt, that reservation (taken over by this attempt).

        Raises:
            BudgetRefused: the dataset has no cap, or the release would exceed it (exit 3).
            BudgetError: the release id was reserved before with another (ε, δ).
        """
        if not (math.isfinite(epsilon) and epsilon >= 0 and 0 <= delta < 1):
            raise BudgetError(f"a release must have ε >= 0 and δ in [0, 1), got {epsilon}, {delta}")
        charge = Charge(float(epsilon), float(delta), tuple(noise))
        accountant = self.accountant
        with self._engine.begin() as conn:
            cap = conn.execute(
                sa.select(CAPS).where(CAPS.c.dataset == dataset).with_for_update()
            ).first()
            if cap is None:
                raise BudgetRefused(
                    f"budget refused: dataset {dataset!r} has no cap set (requested "
                    f"{_fmt(epsilon, delta)}); set one with `spark-dp budget set-cap --store "
                    f"{self.url} --dataset {dataset} --epsilon E [--delta D]`"
                )
            row = conn.execute(
                sa.select(RELEASES).where(
                    RELEASES.c.dataset == dataset, RELEASES.c.release == release
                )
            ).first()
            if row is not None:
                self._check_same(row, epsilon, delta)
                if row.state == COMMITTED:
                    return Reservation(
                        dataset, release, job, epsilon, delta, row.attempt, already_committed=True
                    )
                if row.state == RESERVED:
                    attempt = row.attempt + 1
                    self._set(conn, dataset, release, attempt=attempt, job=job)
                    return Reservation(dataset, release, job, epsilon, delta, attempt, reused=True)
            others = [_charge(r) for r in self._charged_rows(conn, dataset, cap.window_days)]
            if not fits_cap([*others, charge], cap.epsilon, cap.delta, accountant):
                raise BudgetRefused(self._refusal(dataset, cap, others, charge, accountant))
            attempt = 1 if row is None else row.attempt + 1
            values = {
                "job": job,
                "algorithm": algorithm,
                "epsilon": float(epsilon),
                "delta": float(delta),
                "gaussian": json.dumps([g.to_dict() for g in noise]),
                "state": RESERVED,
                "attempt": attempt,
                "reserved_at": time.time(),
                "committed_at": None,
                "released_at": None,
            }
            if row is None:
                conn.execute(RELEASES.insert().values(dataset=dataset, release=release, **values))
            else:
                self._set(conn, dataset, release, **values)
        return Reservation(dataset, release, job, epsilon, delta, attempt)

    def commit(self, reservation: Reservation) -> None:
        """Mark the release as written: its budget stays spent (idempotent)."""
        if reservation.already_committed:
            return
        with self._engine.begin() as conn:
            found = self._set(
                conn,
                reservation.dataset,
                reservation.release,
                state=COMMITTED,
                committed_at=time.time(),
            )
        if not found:
            raise BudgetError(
                f"cannot commit release {reservation.release} of dataset "
                f"{reservation.dataset!r}: the store holds no reservation of it"
            )

    def release(self, reservation: Reservation) -> None:
        """Cancel a reservation that wrote nothing: its budget is freed. A no-op for a committed
        release, or when a later attempt has taken the reservation over."""
        if reservation.already_committed:
            return
        with self._engine.begin() as conn:
            conn.execute(
                RELEASES.update()
                .where(
                    RELEASES.c.dataset == reservation.dataset,
                    RELEASES.c.release == reservation.release,
                    RELEASES.c.state == RESERVED,
                    RELEASES.c.attempt == reservation.attempt,
                )
                .values(state=RELEASED, released_at=time.time())
            )

    # ------------------------------------------------------------------ reading
    def summary(self) -> list[DatasetBudget]:
        """Cap, spent, reserved and remaining budget per dataset (sorted by dataset)."""
        accountant = self.accountant
        out = []
        with self._engine.connect() as conn:
            for cap in conn.execute(sa.select(CAPS).order_by(CAPS.c.dataset)):
                rows = list(self._charged_rows(conn, cap.dataset, cap.window_days))
                done = [_charge(r) for r in rows if r.state == COMMITTED]
                held = [_charge(r) for r in rows if r.state == RESERVED]
                (se, sd), (re_, rd) = basic_totals(done), basic_totals(held)
                tight = None
                if accountant != "basic":
                    tight = tight_epsilon([*done, *held], cap.delta, accountant)
                out.append(
                    DatasetBudget(
                        dataset=cap.dataset,
                        cap_epsilon=cap.epsilon,
                        cap_delta=cap.delta,
                        window_days=cap.window_days,
                        spent_epsilon=se,
                        spent_delta=sd,
                        reserved_epsilon=re_,
                        reserved_delta=rd,
                        remaining_epsilon=cap.epsilon - se - re_,
                        remaining_delta=cap.delta - sd - rd,
                        releases=len(done),
                        reserved_releases=len(held),
                        accountant=accountant,
                        tight_epsilon=tight,
                    )
                )
        return out

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _charged_rows(conn: Connection, dataset: str, window_days: float | None) -> list[Any]:
        """Reserved releases, and committed ones (within the window, if any)."""
        cond = RELEASES.c.state == RESERVED
        committed = RELEASES.c.state == COMMITTED
        if window_days is not None:
            committed = sa.and_(
                committed, RELEASES.c.committed_at >= time.time() - window_days * _DAY
            )
        query = sa.select(RELEASES).where(RELEASES.c.dataset == dataset, sa.or_(cond, committed))
        return list(conn.execute(query.order_by(RELEASES.c.reserved_at)))

    @staticmethod
    def _set(conn: Connection, dataset: str, release: str, **values: Any) -> int:
        """Update one release row; the number of rows found (0 or 1)."""
        result = conn.execute(
            RELEASES.update()
            .where(RELEASES.c.dataset == dataset, RELEASES.c.release == release)
            .values(**values)
        )
        return int(result.rowcount)

    @staticmethod
    def _check_same(row: Row[Any], epsilon: float, delta: float) -> None:
        if not (math.isclose(row.epsilon, epsilon) and math.isclose(row.delta, delta)):
            raise BudgetError(
                f"release {row.release} of dataset {row.dataset!r} was reserved with "
                f"{_fmt(row.epsilon, row.delta)}, now requested with {_fmt(epsilon, delta)}: a "
                "release id must always spend the same budget"
            )

    def _refusal(
        self,
        dataset: str,
        cap: Row[Any],
        others: list[Charge],
        charge: Charge,
        accountant: str,
    ) -> str:
        eps, delta = basic_totals(others)
        window = f" per {cap.window_days:g} days" if cap.window_days is not None else ""
        msg = (
            f"budget refused: dataset {dataset!r} has spent {_fmt(eps, delta)} (committed and "
            f"reserved, basic composition); this release requests "
            f"{_fmt(charge.epsilon, charge.delta)}; cap {_fmt(cap.epsilon, cap.delta)}{window}"
        )
        if accountant != "basic":
            tight = tight_epsilon([*others, charge], cap.delta, accountant)
            msg += f"; {accountant} accountant: ε={tight:.6g} at δ={cap.delta:.3g} with it"
        return msg
