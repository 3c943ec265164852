"""Independent references for DC(D; ℓ), the greedy curve and GEM (docs/design/counting.md#tests).

Written from the definitions, sharing no code with ``spark_dp.distinct_count``: brute force over
the retained subsets (eq. (2)), the min-cut formula (P7), bipartite matching with replicated
persons (Algorithm 1), the LP (totally unimodular), sequential one-rule-at-a-time peeling, the
from-scratch greedy of Algorithm 4 and GEM with plain loops. Datasets are lists of item sets in
person order.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Sequence

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.sparse.csgraph import maximum_bipartite_matching

Sets = Sequence[Sequence[Hashable]]


def distinct(sets: Sets) -> int:
    """DC(D): the number of distinct items of the union."""
    return len(set().union(*map(set, sets))) if sets else 0


def dc_brute_force(sets: Sets, ell: int) -> int:
    """max |union of v_i| over v_i ⊆ u_i, |v_i| = min(ℓ, |u_i|) (eq. (2); larger v_i never hurt)."""
    choices = [list(itertools.combinations(sorted(set(u)), min(ell, len(set(u))))) for u in sets]
    best = 0
    for pick in itertools.product(*choices):
        best = max(best, len(set().union(*map(set, pick))) if pick else 0)
    return best


def dc_min_cut(sets: Sets, ell: int) -> int:
    """P7: min over A ⊆ [n] of ℓ·(n − |A|) + |union of u_i over A|
    (docs/design/counting.md#peeling-proofs)."""
    n = len(sets)
    best = math.inf
    for mask in range(1 << n):
        union: set = set()
        size = 0
        for i in range(n):
            if mask >> i & 1:
                union |= set(sets[i])
                size += 1
        best = min(best, ell * (n - size) + len(union))
    return int(best)


def _index_items(sets: Sets) -> tuple[list[list[int]], int]:
    ids: dict = {}
    out = [[ids.setdefault(x, len(ids)) for x in sorted(set(u), key=repr)] for u in sets]
    return out, len(ids)


def dc_matching(sets: Sets, ell: int) -> int:
    """Algorithm 1: maximum matching with min(ℓ, |u_i|) copies of each person."""
    idx, n_items = _index_items(sets)
    rows, cols = [], []
    r = 0
    for items in idx:
        for _ in range(min(ell, len(items))):
            rows += [r] * len(items)
            cols += items
            r += 1
    if r == 0 or n_items == 0:
        return 0
    g = sp.csr_array((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(r, n_items))
    match = maximum_bipartite_matching(g, perm_type="column")
    return int(np.sum(match >= 0))


def dc_lp(sets: Sets, ell: int) -> int:
    """The LP max Σ z_ix, Σ_x z_ix ≤ ℓ, Σ_i z_ix ≤ 1, 0 ≤ z ≤ 1 (totally unimodular)."""
    idx, n_items = _index_items(sets)
    edges = [(i, x) for i, items in enumerate(idx) for x in items]
    if not edges:
        return 0
    a = np.zeros((len(idx) + n_items, len(edges)))
    for k, (i, x) in enumerate(edges):
        a[i, k] = 1
        a[len(idx) + x, k] = 1
    b = np.r_[np.full(len(idx), ell), np.ones(n_items)]
    res = linprog(-np.ones(len(edges)), A_ub=a, b_ub=b, bounds=(0, 1), method="highs")
    return round(-res.fun)


def dc_peeled(sets: Sets, ell: int) -> int:
    """Sequential peeling (one R1 or R2 step at a time) plus a matching on the core."""
    persons = {i: set(u) for i, u in enumerate(sets) if u}
    cap = {i: min(ell, len(u)) for i, u in persons.items()}
    covered = 0
    changed = True
    while changed:
        changed = False
        for i in sorted(persons):
            u = persons[i]
            if len(u) <= cap[i]:  # R1
                covered += len(u)
                for j in persons:
                    if j != i:
                        persons[j] -= u
                del persons[i], cap[i]
                changed = True
                break
            holders: dict = {}
            for v in persons.values():
                for x in v:
                    holders[x] = holders.get(x, 0) + 1
            private = {x for x in u if holders[x] == 1}
            if private:  # R2
                take = min(cap[i], len(private))
                covered += take
                cap[i] -= take
                persons[i] = u - private
                if cap[i] == 0 or not persons[i]:
                    del persons[i], cap[i]
                changed = True
                break
    core = []
    for i in sorted(persons):
        core += [sorted(persons[i], key=repr)] * cap[i]
    return covered + dc_matching(core, 1)


def dc_curve_reference(
    sets: Sets, max_contributions: int, solver: Callable = dc_matching
) -> list[int]:
    """[DC(D; 1), …, DC(D; ℓ_max)] with one of the solvers above."""
    return [solver(sets, ell) for ell in range(1, max_contributions + 1)]


def greedy_from_scratch(sets: Sets, ell: int, key: Callable = lambda x: x) -> int:
    """Algorithm 4 run afresh for bound ℓ: ℓ round-robin passes in the given person order,
    each person taking the first item (under ``key``) nobody covered yet."""
    covered: set = set()
    ordered = [sorted(set(u), key=key) for u in sets]
    for _ in range(ell):
        for u in ordered:
            for x in u:
                if x not in covered:
                    covered.add(x)
                    break
    return len(covered)


def greedy_frequency_order(sets: Sets, ell: int) -> int:
    """Greedy with the INVALID item order (global frequency, id)
    (docs/design/counting.md#item-order)."""
    freq: dict = {}
    for u in sets:
        for x in set(u):
            freq[x] = freq.get(x, 0) + 1
    return greedy_from_scratch(sets, ell, key=lambda x: (freq[x], x))


def gem_probabilities_reference(
    q: Sequence[float], sens: Sequence[float], epsilon: float, beta: float
) -> list[float]:
    """Algorithm 3 with plain loops: t, normalized scores s_i, exp(ε s_i / 2) normalized."""
    m = len(q)
    t = 2.0 / epsilon * math.log(m / beta)
    s = []
    for i in range(m):
        s.append(
            min(
                ((q[i] - t * sens[i]) - (q[j] - t * sens[j])) / (sens[i] + sens[j])
                for j in range(m)
            )
        )
    w = [math.exp(epsilon * si / 2.0) for si in s]
    total = sum(w)
    return [wi / total for wi in w]
