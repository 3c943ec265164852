"""Exact DC(D; ℓ): solvers agree, docs/design/counting.md#tests properties, sensitivity
(docs/design/counting.md)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_dp.distinct_count.local_solver import (
    exact_curve_local,
    max_flow,
    peel,
    solve_rows,
)
from tests.distinct_count.helpers import datasets, exact, random_sets, to_arrays
from tests.reference.distinct_count import (
    dc_brute_force,
    dc_lp,
    dc_matching,
    dc_min_cut,
    dc_peeled,
    distinct,
)


def test_paper_example_exact_two_is_four() -> None:
    # Knop & Steinke's small example (docs/design/counting.md#tests): ({0,1,2},{2,1,3}) at ℓ = 2 →
    # 4.
    assert exact([[0, 1, 2], [2, 1, 3]], 3).tolist() == [2, 4, 4]


@pytest.mark.parametrize(
    ("sets", "curve"),
    [
        # docs/design/counting.md#worked-example worked example
        ([["a", "b", "c"], ["c", "d"], ["e"]], [3, 5, 5]),
        ([["x", "y"], ["x"]], [2, 2]),  # docs/design/counting.md#tests: exact [2, 2]
        ([["a", "b"], ["b", "c"]], [2, 3, 3]),
        ([[], ["a"]], [1, 1]),
    ],
)
def test_fixed_vectors(sets: list[list[str]], curve: list[int]) -> None:
    assert exact(sets, len(curve)).tolist() == curve


def test_brute_force_on_tiny_inputs() -> None:
    rng = np.random.default_rng(11)
    for _ in range(150):
        sets = random_sets(rng, int(rng.integers(1, 5)), 7, 4)
        curve = exact(sets, 4)
        assert curve.tolist() == [dc_brute_force(sets, ell) for ell in range(1, 5)], sets


def test_max_flow_matching_lp_min_cut_and_peeled_core_agree() -> None:
    rng = np.random.default_rng(12)
    for _ in range(120):
        sets = random_sets(rng, int(rng.integers(1, 10)), int(rng.integers(2, 16)), 8)
        curve = exact(sets, 5)
        for ell in range(1, 6):
            want = dc_matching(sets, ell)
            assert curve[ell - 1] == want == dc_lp(sets, ell) == dc_peeled(sets, ell), sets
            if len(sets) <= 9:
                assert want == dc_min_cut(sets, ell)


def test_max_flow_without_peeling_and_from_random_warm_starts() -> None:
    # Dense instances, where the reductions leave a core, exercise the flow solver itself.
    rng = np.random.default_rng(13)
    cores = 0
    for _ in range(200):
        n, universe = int(rng.integers(2, 9)), int(rng.integers(3, 12))
        sets = [
            rng.choice(universe, size=int(rng.integers(2, universe + 1)), replace=False)
            for _ in range(n)
        ]
        p, x = to_arrays(sets)
        n_items = int(x.max()) + 1
        for ell in (1, 2, 3):
            cap = np.minimum(np.bincount(p, minlength=n), ell)
            want = dc_matching(sets, ell)
            value, used = max_flow(p, x, cap, n_items)
            assert value == want == used.sum()
            warm = np.zeros(len(p), dtype=bool)
            load, taken = np.zeros(n, int), np.zeros(n_items, bool)
            for k in rng.permutation(len(p)):
                if rng.random() < 0.6 and load[p[k]] < cap[p[k]] and not taken[x[k]]:
                    warm[k], load[p[k]], taken[x[k]] = True, load[p[k]] + 1, True
            value2, used2 = max_flow(p, x, cap, n_items, warm)
            assert value2 == want
            assert np.all(np.bincount(p[used2], minlength=n) <= cap)
            assert np.all(np.bincount(x[used2], minlength=n_items) <= 1)
            core = peel(p, x, cap, n_items)
            cores += len(core.person) > 0
            assert (
                core.covered + max_flow(core.person, core.item, core.capacity, n_items)[0] == want
            )
    assert cores > 50  # the flow solver really ran on non-empty cores


def test_infeasible_warm_start_is_rejected() -> None:
    p, x = np.array([0, 0]), np.array([0, 1])
    with pytest.raises(ValueError, match="feasible"):
        max_flow(p, x, np.array([1]), 2, warm=np.array([True, True]))


def test_warm_started_curve_equals_from_scratch_solves() -> None:
    rng = np.random.default_rng(14)
    for _ in range(60):
        sets = [rng.choice(20, size=int(rng.integers(3, 12)), replace=False) for _ in range(12)]
        p, x = to_arrays(sets)
        m = len(p)
        warm = solve_rows(p, x, np.ones(m), np.full(m, 10), np.zeros(m), range(1, 11))
        cold = [
            solve_rows(p, x, np.ones(m), np.full(m, 10), np.zeros(m), [ell])[0]
            for ell in range(1, 11)
        ]
        assert warm.tolist() == cold == [dc_matching(sets, ell) for ell in range(1, 11)]


def test_rows_with_intervals_and_offsets() -> None:
    # Person 0 holds a, b, c; at ℓ its capacity is ℓ − 1 (one slot used elsewhere).
    p = np.array([0, 0, 0, 1])
    x = np.array([0, 1, 2, 0])
    lo = np.array([2, 2, 2, 1])
    hi = np.array([3, 3, 3, 1])
    offset = np.array([1, 1, 1, 0])
    # ℓ=1: only person 1's edge alive → 1; ℓ=2: person 0 cap 1 → 1; ℓ=3: cap 2 → 2.
    assert solve_rows(p, x, lo, hi, offset, [1, 2, 3]).tolist() == [1, 1, 2]
    assert solve_rows(p, x, lo, hi, offset, [1, 3]).tolist() == [1, 2]  # warm start from ℓ − 2


@settings(max_examples=60, deadline=None)
@given(datasets(max_persons=9, universe=14, max_size=8))
def test_properties_p1_p2_p5_p6_p8(sets: list[list[int]]) -> None:
    max_contributions = 9
    c = exact(sets, max_contributions)
    sizes = np.array([len(set(u)) for u in sets])
    full = distinct(sets)
    assert np.all(c >= 0) and np.all(c <= full)  # P1
    assert np.all(np.diff(c) >= 0)  # P2 monotone
    if sizes.max(initial=0) <= max_contributions:
        assert np.all(c[sizes.max(initial=1) - 1 :] == full)  # P2: = DC(D) once ℓ ≥ max |u_i|
    ells = np.arange(1, max_contributions + 1)
    assert np.all(c <= np.minimum(full, np.minimum(ells[:, None], sizes).sum(axis=1)))  # P5
    heavy = (sizes[None, :] > ells[:-1, None]).sum(axis=1)
    assert np.all(np.diff(c) <= heavy)  # P6 increment bound
    assert np.all(np.diff(c, n=2) <= 0)  # P8 concavity


@settings(max_examples=60, deadline=None)
@given(datasets(), st.sets(st.integers(0, 15), max_size=8), st.integers(0, 8))
def test_sensitivity_adding_a_person_changes_each_value_by_at_most_ell(
    sets: list[list[int]], new: set[int], where: int
) -> None:
    # P3 / Lemma A.1: 0 ≤ DC(D+j; ℓ) − DC(D; ℓ) ≤ min(ℓ, |u_j|) for a person added anywhere.
    bigger = [*sets[:where], sorted(new), *sets[where:]]
    max_contributions = 8
    before, after = exact(sets, max_contributions), exact(bigger, max_contributions)
    ells = np.arange(1, max_contributions + 1)
    assert np.all(after - before >= 0)
    assert np.all(after - before <= np.minimum(ells, len(new)))


@settings(max_examples=40, deadline=None)
@given(datasets(max_persons=7), st.randoms(use_true_random=False))
def test_invariant_to_person_and_item_order_and_relabelling(
    sets: list[list[int]], rnd: random.Random
) -> None:
    # P9: the value depends only on the set system.
    perm = list(range(len(sets)))
    rnd.shuffle(perm)
    relabel = {x: f"r{(7 * x + 3) % 101}" for x in range(20)}
    other = [[relabel[x] for x in reversed(sets[i])] for i in perm]
    assert exact(sets, 6).tolist() == exact(other, 6).tolist()


def test_dc_one_is_a_maximum_matching() -> None:
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import maximum_bipartite_matching

    rng = np.random.default_rng(15)
    for _ in range(50):
        sets = random_sets(rng, 10, 15, 6)
        p, x = to_arrays(sets)
        if len(p) == 0:
            continue
        g = csr_array((np.ones(len(p)), (p, x)), shape=(len(sets), int(x.max()) + 1))
        matched = int(np.sum(maximum_bipartite_matching(g, perm_type="column") >= 0))
        assert exact(sets, 1)[0] == matched  # P4


def test_saturated_curve_stops_early_with_the_full_count() -> None:
    # Every ℓ beyond saturation repeats DC(D) (docs/design/counting.md#curve); ℓ_max far beyond the
    # max degree.
    sets = [["a", "b"], ["b", "c", "d"], ["e"]]
    assert exact_curve_local(*to_arrays(sets), 50).tolist() == [3, 5] + [5] * 48
