"""The budget store: caps per dataset, and the runs charged to them.

A job's life with a store (the job runner does this, :class:`spark_dp.jobs.budget_hooks.
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

The states and rules are :mod:`.lifecycle`'s. Every transition runs in one transaction that
locks the dataset's cap row (``SELECT ... FOR UPDATE`` on PostgreSQL; ``BEGIN IMMEDIATE`` on
SQLite), so concurrent jobs on one dataset are serialized and their sum never exceeds the cap.

The store composes by its accountant, a privacy filter (basic composition or the zCDP
filter: :mod:`.accounting`); a store set to ``pld`` or ``rdp`` by an earlier version is moved to
``zcdp`` when it is opened.

Caps may hold for a sliding window of ``window_days``: a run then counts from its reservation
until ``window_days`` after it ended (committed or failed). Checking at every reservation bounds
the spending inside every window of that length (not the lifetime loss).

A store of the v1 layout is imported on first open (:mod:`.migrate`): caps, settings and every
charged release, so no spend is lost.
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import exc

from spark_dp.budget.accounting import (
    LEGACY_ACCOUNTANTS,
    basic_totals,
    certified_epsilon,
    check_accountant,
)
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
from spark_dp.budget.schema import CAPS, RUNS, SETTINGS, connect, display_url, writing
from spark_dp.errors import BudgetStoreUnavailable, ConfigError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = ["BudgetStore", "DatasetBudget", "Reservation", "RunRecord", "check_cap"]

log = logging.getLogger("spark_dp.budget")


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
        """Choose the accountant for every dataset of this store (see :mod:`.accounting`).

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
