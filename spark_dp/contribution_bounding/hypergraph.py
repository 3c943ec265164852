"""A hypergraph held on the driver as compact arrays, for the sequential algorithms.

Records are hyperedges, users are vertices (docs/design/bounding.md#model). The record →
users lists are stored as CSR arrays (``ptr``, ``users``) over dense user indices, with one
capacity per user. The sequential greedy algorithms (Alg. 2, 3, 4), the ILPs and the driver
finish of the distributed algorithm all work on this form; Spark tables only reach it through
an explicit, size-limited collect.

The hypergraph is confidential (docs/design/bounding.md#confidential): it reveals who shares records
with whom.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from spark_dp.contribution_bounding.columns import CAPACITY, REC, USER_ID
from spark_dp.errors import InputContractError, ParameterError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CompactHypergraph"]


@dataclass(frozen=True, eq=False)
class CompactHypergraph:
    """Records (hyperedges) over users with capacities, as CSR arrays.

    Attributes:
        record_ids: record ids (strings), one per record.
        ptr: int64, length n_records + 1; record i owns ``users[ptr[i]:ptr[i+1]]``.
        users: int64 user indices, distinct within a record.
        user_ids: user ids (strings), one per user index.
        cap: int64 capacity cap(u) ≥ 0 per user index.
    """

    record_ids: np.ndarray
    ptr: np.ndarray
    users: np.ndarray
    user_ids: np.ndarray
    cap: np.ndarray

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_incidences(
        cls,
        record_ids: Collection[Any],
        user_ids: Collection[Any],
        *,
        max_contributions: int | None = None,
        capacities: Mapping[Any, int] | None = None,
    ) -> CompactHypergraph:
        """Build from parallel (record, user) incidence arrays.

        Ids are canonicalized to strings and duplicate pairs count once
        (docs/design/bounding.md#inputs).

        Args:
            record_ids, user_ids: one entry per incidence.
            max_contributions: the default bound b of users missing from ``capacities``.
            capacities: per-user capacities (keys are user ids; unknown users are ignored).

        Raises:
            ParameterError: a negative capacity, or a user with no capacity at all.
        """
        import pandas as pd

        if len(record_ids) != len(user_ids):
            raise InputContractError("record_ids and user_ids must have the same length")
        incidences = pd.DataFrame(
            {REC: pd.Series(record_ids).astype(str), USER_ID: pd.Series(user_ids).astype(str)}
        ).drop_duplicates()
        user_values = np.unique(incidences[USER_ID].to_numpy(dtype=object))
        users = pd.DataFrame(
            {
                USER_ID: user_values,
                CAPACITY: _capacities(user_values, max_contributions, capacities),
            }
        )
        return cls.from_frames(incidences, users)

    @classmethod
    def from_frames(
        cls,
        incidences: pd.DataFrame,
        users: pd.DataFrame,
        *,
        record_col: str = REC,
        user_col: str = USER_ID,
        cap_col: str = CAPACITY,
    ) -> CompactHypergraph:
        """Build from pandas frames: the one conversion of (collected) tables into this form.

        Records are indexed in the sorted order of their ids (for ``rec`` positions: the shared
        order itself); users keep the row order of ``users``. Incidence j of the result is row
        j of ``incidences`` sorted by (record, user), so a caller that sorts the same way first
        can align per-incidence columns with :attr:`users`.

        Args:
            incidences: one row per distinct (record, user) pair.
            users: one row per user with its capacity, covering every user of ``incidences``.
            record_col, user_col, cap_col: the column names.

        Raises:
            InputContractError: an incidence whose user has no row in ``users``.
        """
        import pandas as pd

        inc = incidences.sort_values([record_col, user_col], kind="mergesort")
        record_ids, record_codes = np.unique(inc[record_col].to_numpy(), return_inverse=True)
        user_codes = pd.Index(users[user_col]).get_indexer(inc[user_col])
        if np.any(user_codes < 0):
            raise InputContractError(
                f"some incidences have a {user_col} without a row in the users table; list every "
                f"user with its {cap_col}"
            )
        return cls.from_codes(
            record_codes,
            user_codes,
            record_ids,
            users[user_col].to_numpy(),
            users[cap_col].to_numpy(),
        )

    @classmethod
    def from_codes(
        cls,
        record_codes: np.ndarray,
        user_codes: np.ndarray,
        record_ids: np.ndarray,
        user_ids: np.ndarray,
        cap: np.ndarray,
    ) -> CompactHypergraph:
        """Build from dense codes: incidence j links record ``record_codes[j]`` (sorted, no
        gaps) and user ``user_codes[j]``; ids and capacities are indexed by the codes."""
        record_codes = np.asarray(record_codes, dtype=np.int64)
        if len(record_codes) and np.any(np.diff(record_codes) < 0):
            raise ValueError("record_codes must be sorted")
        counts = np.bincount(record_codes, minlength=len(record_ids))
        if np.any(counts == 0):
            raise InputContractError("every record needs at least one user")
        ptr = np.zeros(len(record_ids) + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        return cls(
            np.asarray(record_ids),
            ptr,
            np.asarray(user_codes, dtype=np.int64),
            np.asarray(user_ids, dtype=object),
            np.asarray(cap, dtype=np.int64),
        )

    @classmethod
    def from_mapping(
        cls,
        records: Mapping[Any, Collection[Any]],
        *,
        max_contributions: int | None = None,
        capacities: Mapping[Any, int] | None = None,
    ) -> CompactHypergraph:
        """Build from ``{record_id: [user ids]}``.

        Raises:
            InputContractError: a record with no user (it would be duplicated forever by
                Alg. 3 and make the duplicate ILP unbounded; docs/design/bounding.md#inputs,
                #generators).
        """
        empty = [r for r, us in records.items() if len(us) == 0]
        if empty:
            raise InputContractError(
                "a record has no user; drop such records before bounding "
                "(user-less records are never selected, docs/design/bounding.md#generators)"
            )
        pairs = [(r, u) for r, us in records.items() for u in us]
        return cls.from_incidences(
            [p[0] for p in pairs],
            [p[1] for p in pairs],
            max_contributions=max_contributions,
            capacities=capacities,
        )

    # ------------------------------------------------------------------ shape
    @property
    def n_records(self) -> int:
        """Number of records."""
        return len(self.record_ids)

    @property
    def n_users(self) -> int:
        """Number of users."""
        return len(self.user_ids)

    @property
    def sizes(self) -> np.ndarray:
        """|h| per record."""
        return np.diff(self.ptr)

    @property
    def record_of_incidence(self) -> np.ndarray:
        """Record index of every incidence (aligned with ``users``)."""
        return np.repeat(np.arange(self.n_records, dtype=np.int64), self.sizes)

    def record_users(self, i: int) -> np.ndarray:
        """User indices of record ``i``."""
        return self.users[self.ptr[i] : self.ptr[i + 1]]

    # ------------------------------------------------------------------ checks
    def degrees(self, multiplicity: np.ndarray) -> np.ndarray:
        """d(u) = Σ_{h ∋ u} mult(h) per user, for a selection given as counts per record."""
        mult = np.asarray(multiplicity, dtype=np.int64)
        return np.bincount(
            self.users, weights=mult[self.record_of_incidence], minlength=self.n_users
        ).astype(np.int64)

    def max_degree(self, multiplicity: np.ndarray) -> int:
        """k = max_u d(u): the contribution bound actually reached (0 for an empty graph)."""
        return int(self.degrees(multiplicity).max()) if self.n_users else 0

    def is_feasible(self, multiplicity: np.ndarray) -> bool:
        """True when d(u) ≤ cap(u) for every user (docs/design/bounding.md#model)."""
        return bool(np.all(self.degrees(multiplicity) <= self.cap))

    def is_maximal(self, selected: np.ndarray) -> bool:
        """True when no unselected record can be added without breaking a capacity."""
        sel = np.asarray(selected).astype(np.int64)
        full = self.degrees(sel) >= self.cap
        blocked = np.bincount(
            self.record_of_incidence, weights=full[self.users], minlength=self.n_records
        )
        return bool(np.all((sel > 0) | (blocked > 0)))


def _capacities(
    user_ids: np.ndarray, max_contributions: int | None, capacities: Mapping[Any, int] | None
) -> np.ndarray:
    b = max_contributions
    if b is not None and (isinstance(b, bool) or int(b) != b or b < 0):
        raise ParameterError(f"max_contributions must be an integer >= 0, got {b!r}")
    table = {str(k): v for k, v in (capacities or {}).items()}
    out = np.empty(len(user_ids), dtype=np.int64)
    missing = False
    for i, u in enumerate(user_ids):
        value = table.get(u, b)
        if value is None:
            missing = True
            continue
        if isinstance(value, bool) or int(value) != value or value < 0:
            raise ParameterError(f"capacity of a user must be an integer >= 0, got {value!r}")
        out[i] = int(value)
    if missing:
        raise ParameterError(
            "a user has no capacity: pass a default max_contributions b or list every user"
        )
    return out
