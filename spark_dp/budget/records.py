"""What the budget store hands out: a :class:`Reservation` and a :class:`DatasetBudget`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["DatasetBudget", "Reservation"]


@dataclass(frozen=True)
class Reservation:
    """A release's claim on a dataset's budget.

    Attributes:
        already_committed: the release id was committed before: nothing was charged now, and
            commit/release are no-ops.
        reused: an earlier reservation of the same release id was taken over (a retry).
        attempt: this attempt's number (an older attempt's ``release`` is then ignored).
    """

    dataset: str
    release: str
    job: str
    epsilon: float
    delta: float
    attempt: int
    already_committed: bool = False
    reused: bool = False


@dataclass(frozen=True)
class DatasetBudget:
    """One dataset's cap and spending, as ``spark-dp budget`` lists it.

    ``spent_*`` sums committed releases, ``reserved_*`` releases still running or failed after
    writing (basic composition), both within the window when the cap has one. ``tight_epsilon``
    is the ε the store's tight accountant proves for all of them at δ = ``cap_delta`` (``None``
    with the basic accountant).
    """

    dataset: str
    cap_epsilon: float
    cap_delta: float
    window_days: float | None
    spent_epsilon: float
    spent_delta: float
    reserved_epsilon: float
    reserved_delta: float
    remaining_epsilon: float
    remaining_delta: float
    releases: int
    reserved_releases: int
    accountant: str
    tight_epsilon: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (an unbounded tight ε is ``None``)."""
        out = dict(self.__dict__)
        if out["tight_epsilon"] is not None and not math.isfinite(out["tight_epsilon"]):
            out["tight_epsilon"] = None
        return out
