"""The budget store: caps per dataset, and the runs charged to them.

A job's life with a store (the job runner does this, :mod:`spark_dp.jobs.budget_hooks`)::

    store = BudgetStore.open("sqlite:///var/spark_dp/budget.db")
    r = store.reserve(dataset=..., identity=run_identity(...), job=..., epsilon=ε, delta=δ,
                      noise=noise_steps(plan.steps))   # before any read; exit 3 if refused
    if r.done: ...                     # this request was committed before: nothing to run
    r = store.charge(r)                # durable, right before the first read of input rows
    r = store.bind(r, release_id(...))  # the data's digest is known: recorded, for the listing
    ... compute, stage output and report ...
    store.commit(r)                    # then the staged outputs go into place; or
                                       # store.abandon(r): released before the read, else
                                       # failed (charged)

The states and rules are :mod:`.lifecycle`'s. Every transition runs in one transaction that
locks the dataset's cap row (``SELECT ... FOR UPDATE`` on PostgreSQL; ``BEGIN IMMEDIATE`` on
SQLite), so concurrent jobs on one dataset are serialized and their sum never exceeds the cap.

Caps may hold for a sliding window of ``window_days``: a run then counts from its reservation
until ``window_days`` after it ended (committed or failed). Checking at every reservation bounds
the spending inside every window of that length (not the lifetime loss).

A store of the v1 layout is imported on first open (:mod:`.migrate`): caps, settings and every
charged release, so no spend is lost.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import exc

from spark_dp.budget.accounting import basic_totals, check_accountant, tight_epsilon
from spark_dp.budget.lifecycle import (
    CHARGED,
    COMMITTED,
    FAILED,
    RESERVED,
    RunLifecycle,
    counted_rows,
    row_charge,
)
from spark_dp.budget.migrate import import_v1
from spark_dp.budget.records import DatasetBudget, Reservation, RunRecord
from spark_dp.budget.schema import CAPS, SETTINGS, connect, display_url, writing
from spark_dp.errors import ConfigError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = ["BudgetStore", "DatasetBudget", "Reservation", "RunRecord", "check_cap"]


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


class BudgetStore(RunLifecycle):
    """Caps and runs per dataset in a SQL database (see the module docstring)."""

    def __init__(self, engine: Engine, url: str) -> None:
        self._engine = engine
        self.url = display_url(url)

    @classmethod
    def open(cls, url: str) -> BudgetStore:
        """Open (and create if needed) the store at ``url``: ``sqlite:///path/budget.db`` or a
        SQLAlchemy URL such as ``postgresql://user@host/db``; import a v1 store's contents once.

        Raises:
            ConfigError: a bare path, a file-system URI (``s3a://``, ``hdfs://``), a missing
                driver, an unreachable database, a file that is not a database; the message
                names ``--budget-store``.
            BudgetStoreUnavailable: a store that must be written and cannot be (exit 1).
        """
        engine = connect(url)
        import_v1(engine, display_url(url))
        return cls(engine, url)

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
    def summary(self) -> list[DatasetBudget]:
        """Cap, spent, in-flight and remaining budget per dataset (sorted by dataset)."""
        accountant = self.accountant
        stale: dict[str, int] = {}
        for record in self.runs():
            if record.stale:
                stale[record.dataset] = stale.get(record.dataset, 0) + 1
        out = []
        with self._engine.connect() as conn:
            for cap in conn.execute(sa.select(CAPS).order_by(CAPS.c.dataset)):
                rows = counted_rows(conn, cap.dataset, cap.window_days)
                done = [row_charge(r) for r in rows if r.state in (COMMITTED, FAILED)]
                held = [row_charge(r) for r in rows if r.state in (RESERVED, CHARGED)]
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
                        releases=sum(r.state == COMMITTED for r in rows),
                        reserved_releases=len(held),
                        failed_releases=sum(r.state == FAILED for r in rows),
                        stale_runs=stale.get(cap.dataset, 0),
                        accountant=accountant,
                        tight_epsilon=tight,
                    )
                )
        return out
