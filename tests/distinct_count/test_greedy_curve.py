"""The greedy curve (Algorithm 2/4): paper examples, ½-approximation, sensitivity, orders."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_dp.distinct_count import greedy_curve_arrays
from tests.distinct_count.helpers import Sets, datasets, exact, greedy, person_key
from tests.reference.distinct_count import (
    distinct,
    greedy_frequency_order,
    greedy_from_scratch,
)


def _in_order(sets: Sets, names: Sequence[object] | None = None) -> list[list[str]]:
    """The sets in the helper's person order (for the from-scratch reference)."""
    ids = list(range(len(sets))) if names is None else names
    order = sorted(range(len(sets)), key=lambda i: (person_key(ids[i]), str(ids[i])))
    return [[str(x) for x in sets[i]] for i in order]


def test_paper_examples() -> None:
    # Knop & Steinke: [[0,1],[2,1]] gives greedy(1) = 2 and greedy(2) = 3 with the dataset
    # order; the algorithm itself with persons in the listed order and lexicographic items.
    indptr = np.array([0, 2, 4])
    items = np.array([0, 1, 1, 2])  # person 0: {0, 1}; person 1: {1, 2} (sorted lists)
    assert greedy_curve_arrays(indptr, items, 3).tolist() == [2, 3, 3]
    # ({0,1,2}, {2,1,3}) at ℓ = 2: greedy and exact both 4 (docs/design/counting.md#tests).
    indptr = np.array([0, 3, 6])
    items = np.array([0, 1, 2, 1, 2, 3])
    assert greedy_curve_arrays(indptr, items, 2).tolist()[1] == 4
    assert exact([[0, 1, 2], [2, 1, 3]], 2).tolist()[1] == 4


def test_spec_vectors_and_the_tight_half_example() -> None:
    # ({a,b},{b,c}) → [2, 3, 3]; ({x,y},{x}) → greedy [1, 2] vs exact [2, 2] (factor ½).
    assert greedy_curve_arrays(np.array([0, 2, 4]), np.array([0, 1, 1, 2]), 3).tolist() == [2, 3, 3]
    assert greedy_curve_arrays(np.array([0, 2, 3]), np.array([0, 1, 0]), 2).tolist() == [1, 2]
    assert exact([["x", "y"], ["x"]], 2).tolist() == [2, 2]
    # ({1,0,2},{1,3}) at ℓ = 2 with sorted lists → 4 (kept visiting order [1,0,2] would give 3).
    assert greedy_curve_arrays(np.array([0, 3, 5]), np.array([0, 1, 2, 1, 3]), 2)[1] == 4
    # The pass follows the lists as given, so the lists must be sorted (C1/C3).
    assert greedy_curve_arrays(np.array([0, 3, 5]), np.array([1, 0, 2, 1, 3]), 2)[1] == 3


@settings(max_examples=80, deadline=None)
@given(datasets(max_persons=9, universe=14, max_size=8))
def test_half_exact_le_greedy_le_exact_and_monotone(sets: list[list[int]]) -> None:
    max_contributions = 9
    g, c = greedy(sets, max_contributions), exact(sets, max_contributions)
    assert np.all(2 * g >= c) and np.all(g <= c)
    assert np.all(np.diff(g) >= 0)
    sizes = [len(set(u)) for u in sets]
    if max(sizes) <= max_contributions:
        assert np.all(g[max(max(sizes), 1) - 1 :] == distinct(sets))


@settings(max_examples=60, deadline=None)
@given(datasets(max_persons=9, universe=14, max_size=8))
def test_incremental_curve_equals_from_scratch_algorithm_4(sets: list[list[int]]) -> None:
    ordered = _in_order(sets)
    want = [greedy_from_scratch(ordered, ell) for ell in range(1, 8)]
    assert greedy(sets, 7).tolist() == want


@settings(max_examples=100, deadline=None)
@given(datasets(max_persons=9), st.sets(st.integers(0, 15), max_size=8), st.integers(0, 1000))
def test_sensitivity_with_the_spec_orders(sets: list[list[int]], new: set[int], name: int) -> None:
    # Adding one person (with its own order key) changes every ĝ[ℓ] by a value in [0, ℓ].
    names = [f"p{i}" for i in range(len(sets))]
    bigger, bigger_names = [*sets, sorted(new)], [*names, f"new{name}"]
    max_contributions = 8
    before = greedy(sets, max_contributions, names)
    after = greedy(bigger, max_contributions, bigger_names)
    ells = np.arange(1, max_contributions + 1)
    assert np.all(after - before >= 0)
    assert np.all(after - before <= ells)


def test_frequency_item_order_breaks_the_sensitivity_bound() -> None:
    # docs/design/counting.md#item-order counterexample: order items by (global frequency, id), ℓ =
    # 1.
    d = [[0, 3], [0, 4], [0], [2, 3]]
    without = [[0, 3], [0], [2, 3]]  # person 2 ({0, 4}) removed
    assert greedy_frequency_order(d, 1) == 4
    assert greedy_frequency_order(without, 1) == 2  # a change of 2 > ℓ = 1: not private
    # With the lexicographic item order (docs/design/counting.md#item-order) the same removal
    # changes it by at most 1.
    assert greedy_from_scratch(d, 1) - greedy_from_scratch(without, 1) <= 1
