"""Privacy budget: reserved before any data is read, charged for good once it is read.

A **budget store** (SQLite file by default, any SQLAlchemy database such as PostgreSQL for a
team) holds a cap (ε, δ), optionally per time window, for each dataset (the privacy unit: the
users of that data), and every run charged to it. A job reserves its (ε, δ) in one transaction
before it reads data, is refused (:class:`BudgetRefused`, exit 3) if the cap would be exceeded,
makes the charge durable right before its first read of input rows (never refunded after that:
a failure or a kill leaves it *failed (charged)*), and commits once its output and report are
written; only a run that fails before reading frees its reservation. The store decides from a
run's request only (job, arguments, input locations and listings, key; never the rows): a
request committed before is not run again, and a run that died after its charge is taken over
by its retry, which costs nothing more (``docs/privacy/budget.md``).

Composition is basic (Σ ε, Σ δ) by default; a store can use a tight accountant (PLD or RDP from
Google's dp-accounting) for the noise of its releases, Gaussian, Laplace and pure-ε steps alike
(:mod:`spark_dp.dp.accounting` states exactly what it composes).

Contents: :class:`BudgetStore` (:mod:`.store`, imported on first use:
SQLAlchemy loads only when a store is opened), :class:`Reservation`, :class:`DatasetBudget`
(:mod:`.records`); :class:`NoiseStep`, :func:`noise_steps` (:mod:`spark_dp.dp.accounting`);
:class:`BudgetRefused`. The identities a run is charged and bound by (request, release id,
dataset id) are :mod:`spark_dp.release_ids`'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spark_dp.budget.records import DatasetBudget, Reservation
from spark_dp.dp.accounting import ACCOUNTANTS, NoiseStep, noise_steps
from spark_dp.errors import BudgetRefused

if TYPE_CHECKING:
    from spark_dp.budget.store import BudgetStore

__all__ = [
    "ACCOUNTANTS",
    "BudgetRefused",
    "BudgetStore",
    "DatasetBudget",
    "NoiseStep",
    "Reservation",
    "noise_steps",
]

_LAZY = {"BudgetStore"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from spark_dp.budget import store

        return getattr(store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
