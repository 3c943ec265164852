"""Privacy budget enforced before any data is read.

A **budget store** (SQLite file by default, any SQLAlchemy database such as PostgreSQL for a
team) holds a cap (ε, δ), optionally per time window, for each dataset (the privacy unit: the
users of that data), and every release charged to it. A job reserves its (ε, δ) in one
transaction before it reads data, is refused (:class:`BudgetRefused`, exit 3) if the cap would
be exceeded, and commits once its output and report are written; a run that fails before
writing anything releases its reservation. Release ids make retries free: the same job,
algorithm, parameters, input and key is the same release, charged once.

Composition is basic (Σ ε, Σ δ) by default; a store can use a tight accountant (PLD or RDP from
Google's dp-accounting) for the noise of its releases, Gaussian, Laplace and pure-ε steps alike
(:mod:`.accounting` states exactly what it composes).

Contents: :class:`BudgetStore`, :class:`Reservation`, :class:`DatasetBudget` (:mod:`.store`,
imported on first use: SQLAlchemy loads only when a store is opened); :func:`release_id`,
:func:`input_identity`, :func:`default_dataset_id` (:mod:`.ids`); :class:`NoiseStep`,
:func:`noise_steps` (:mod:`.accounting`); :class:`BudgetRefused`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spark_dp.budget.accounting import ACCOUNTANTS, NoiseStep, noise_steps
from spark_dp.budget.ids import default_dataset_id, input_identity, release_id
from spark_dp.budget.records import DatasetBudget, Reservation
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
    "default_dataset_id",
    "input_identity",
    "noise_steps",
    "release_id",
]

_LAZY = {"BudgetStore"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from spark_dp.budget import store

        return getattr(store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
