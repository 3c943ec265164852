"""Where the audit looks: the ε item's base weight and the distinct-count event, fixed before
any run from the mechanism's claimed calibration.

An event chosen after looking at the runs would need its own correction for the choice; here
the choice uses only public constants and the audit's own synthetic datasets, so the bounds of
:mod:`.statistics` hold as they are. The criterion is the ε bound the event would show at its
expected counts under the claimed mechanism (:func:`~.statistics.plugin_epsilon`): the place
where a correct mechanism is closest to its claim, and a broken one beyond it first.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from spark_dp.audit.statistics import plugin_epsilon
from spark_dp.distinct_count.plan import DistinctCountPlan

__all__ = [
    "MAX_FILLERS",
    "CountEvent",
    "count_event_probabilities",
    "place_count_event",
    "place_epsilon_item",
    "two_way_plugin",
]

MAX_FILLERS = 200
"""Largest base weight (users of degree 1) the ε item is given."""


def two_way_plugin(p: float, q: float, delta: float, runs: int, alpha: float) -> float:
    """The best plug-in ε bound of an event with P_{D'} = p and P_D = q, over the event and
    its complement, both directions (what the ε test will compute)."""
    return max(
        plugin_epsilon(p, q, delta, runs, alpha),
        plugin_epsilon(q, p, delta, runs, alpha),
        plugin_epsilon(1.0 - q, 1.0 - p, delta, runs, alpha),
        plugin_epsilon(1.0 - p, 1.0 - q, delta, runs, alpha),
    )


def place_epsilon_item(
    release_probability: Callable[[float], float], delta: float, runs: int, alpha: float
) -> int:
    """The number m of degree-1 fillers of the ε item: its weight is m on D, m + 1 on D'.

    The smallest m ≥ 1 with the largest plug-in bound (m = 1 when no m gives a positive one):
    with m = 0 the item would not exist on D, which the release model does not know.
    """
    best, best_m = 0.0, 1
    for m in range(1, MAX_FILLERS + 1):
        q = release_probability(float(m))
        p = release_probability(float(m + 1))
        score = two_way_plugin(p, q, delta, runs, alpha)
        if score > best + 1e-12:
            best, best_m = score, m
        if q > 1.0 - 1e-9:
            break
    return best_m


@dataclass(frozen=True)
class CountEvent:
    """{ℓ̂ = ell and ν̂ ≥ cut} (any ℓ̂ when ``ell`` is None) for the distinct count."""

    ell: int | None
    cut: int

    def holds(self, ell: int, lower_bound: float) -> bool:
        """Whether a release (ℓ̂, ν̂) is in the event."""
        return (self.ell is None or ell == self.ell) and lower_bound >= self.cut

    def describe(self) -> str:
        """The event in words."""
        chosen = "" if self.ell is None else f"ℓ̂ = {self.ell} and "
        return f"{chosen}ν̂ ≥ {self.cut}"


def _cuts(plan: DistinctCountPlan, *curves: NDArray[np.int64]) -> NDArray[np.float64]:
    """Every cut where the datasets' tails can differ (12 noise scales beyond the scores)."""
    q = np.concatenate([np.asarray(plan.scores(c), dtype=float) for c in curves])
    reach = 12.0 * plan.count.scale(plan.max_contributions)
    return np.arange(math.floor(q.min() - reach), math.ceil(q.max() + reach) + 1)


def place_count_event(
    plan: DistinctCountPlan,
    curve_d: NDArray[np.int64],
    curve_neighbour: NDArray[np.int64],
    runs: int,
    alpha: float,
) -> CountEvent:
    """The event {ℓ̂ = ℓ (or any), ν̂ ≥ c} with the largest plug-in bound (δ = 0)."""
    cuts = _cuts(plan, curve_d, curve_neighbour)
    q_rows = count_event_probabilities(plan, curve_d, cuts)
    p_rows = count_event_probabilities(plan, curve_neighbour, cuts)
    options: list[tuple[int | None, NDArray, NDArray]]
    options = [(k + 1, p_rows[k], q_rows[k]) for k in range(plan.max_contributions)]
    options.append((None, p_rows.sum(axis=0), q_rows.sum(axis=0)))
    best, event = -1.0, CountEvent(None, int(cuts[0]))
    for ell, p, q in options:
        for j, cut in enumerate(cuts):
            score = two_way_plugin(float(p[j]), float(q[j]), 0.0, runs, alpha)
            if score > best:
                best, event = score, CountEvent(ell, int(cut))
    return event


def count_event_probabilities(
    plan: DistinctCountPlan, curve: NDArray[np.int64], cuts: NDArray
) -> NDArray:
    """P[ℓ̂ = ℓ and ν̂ ≥ c] for every ℓ (rows) and cut c (columns): GEM's exact
    probabilities times the count noise's tail P[X ≥ c − q_ℓ] at ℓ (ν̂ = q_ℓ + X)."""
    q = np.asarray(plan.scores(curve), dtype=float)
    chosen = plan.select.probabilities(q)
    return np.array(
        [
            chosen[k] * plan.count.noise_at_least(cuts - q[k], k + 1)
            for k in range(plan.max_contributions)
        ]
    )
