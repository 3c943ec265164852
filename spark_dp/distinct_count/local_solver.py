"""Exact DC(D; ℓ) of an in-memory instance: per-ℓ peeling, then a warm-started max-flow.

This is the numpy/scipy engine that runs inside one executor task (``applyInPandas`` over a
connected component of the peeled core, see :mod:`spark_dp.distinct_count.dc_curve`) and, on
small data, directly on the driver.

Model (Knop & Steinke 2023, eq. (2) and §1.1 "Efficient computation";
docs/design/counting.md#exact). DC(D; ℓ) is the value of a maximum flow in the network source →
person (capacity c_i) → item (capacity 1) → sink (capacity 1), with c_i = min(ℓ, |u_i|) on the raw
data. After the exact reductions the capacities are general c_i ≥ 1 and the value sought is
``covered + maxflow(core)``.

Rows. An instance is a list of (person, item) edges, each alive for ℓ in [lo, hi], whose person
has capacity ``ℓ − offset`` at those ℓ (raw data: lo = 1, hi = ℓ_max, offset = 0, so the
capacity is ℓ and the reduction R1 below turns it into min(ℓ, |u_i|)). Spark's first peeling
round produces exactly such rows (docs/design/counting.md#peeling;
:func:`spark_dp.distinct_count.peeling.first_round`).

For each ℓ, ascending:

1. **Peel** (docs/design/counting.md#peeling, proofs App. A.4) to a fixpoint: R1, a person whose
   degree is at most its capacity covers all its items; R2, a person's private items (held by nobody
   else) are taken up to its capacity, which drops by that amount. Both keep DC exactly and act on
   disjoint items, so one round applies both.
2. **Max-flow** on the remaining core (scipy ``maximum_flow``, Dinic), warm-started from the
   previous ℓ's core flow: the edges it used that are still in the core, trimmed to the new
   capacities, form a feasible flow, and only the augmentation on its residual graph is solved
   (docs/design/counting.md#warm-start). When the warm start already meets the trivial upper bound
   min(#items, Σ c_i), no flow is solved.

Every number here (curves, degrees, counts) is private: nothing is logged.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

__all__ = ["PeelResult", "exact_curve_local", "max_flow", "peel", "solve_rows"]


@dataclass(frozen=True)
class PeelResult:
    """What the reductions leave: the items they covered and the core instance.

    Attributes:
        covered: number of items covered by R1/R2 (counted once each).
        person, item: the core edges (dense ids of the input).
        edges: positions of the core edges in the input arrays.
        capacity: per-person remaining capacity (indexed by the input's person ids).
        rounds: rounds run until the fixpoint.
    """

    covered: int
    person: np.ndarray
    item: np.ndarray
    edges: np.ndarray
    capacity: np.ndarray
    rounds: int


def peel(person: np.ndarray, item: np.ndarray, capacity: np.ndarray, n_items: int) -> PeelResult:
    """Apply the exact reductions R1 and R2 in rounds until nothing changes.

    DC(instance) = covered + DC(core with the returned capacities) (docs/design/counting.md#peeling,
    #peeling-proofs).

    Args:
        person, item: edges as dense int ids (person ids index ``capacity``).
        capacity: per-person capacity c_i ≥ 0 (a person with c_i = 0 is dropped).
        n_items: number of item ids (items are ``0..n_items-1``).
    """
    cap = np.asarray(capacity, dtype=np.int64).copy()
    n_persons = len(cap)
    edges = np.flatnonzero(cap[person] > 0)
    p, x = person[edges], item[edges]
    covered = 0
    rounds = 0
    while len(p):
        rounds += 1
        degree = np.bincount(p, minlength=n_persons)
        holders = np.bincount(x, minlength=n_items)
        # R1: light persons (degree ≤ capacity) cover all their items.
        light_edge = (degree <= cap)[p]
        light_item = np.zeros(n_items, dtype=bool)
        light_item[x[light_edge]] = True
        n_light = int(light_item.sum())
        # R2: items held by one remaining (heavy) person: it takes min(c_i, p_i) of them.
        private_edge = ~light_edge & (holders[x] == 1)
        n_private = np.bincount(p[private_edge], minlength=n_persons)
        take = np.minimum(n_private, cap)
        taken = int(take.sum())
        if n_light == 0 and taken == 0:
            break
        covered += n_light + taken
        cap -= take
        keep = ~light_edge & ~private_edge & ~light_item[x] & (cap[p] > 0)
        p, x, edges = p[keep], x[keep], edges[keep]
    return PeelResult(covered, p, x, edges, cap, rounds)


def max_flow(
    person: np.ndarray,
    item: np.ndarray,
    capacity: np.ndarray,
    n_items: int,
    warm: np.ndarray | None = None,
) -> tuple[int, np.ndarray]:
    """Maximum flow value of the person → item network, optionally from a feasible flow.

    Args:
        person, item: the edges (dense ids; person ids index ``capacity``).
        capacity: per-person capacity c_i.
        n_items: number of item ids.
        warm: optional boolean mask over the edges: a feasible flow (each person uses at most
            c_i marked edges, each item at most one). The solver augments from it.

    Returns:
        (value, mask of the edges that carry flow in the maximum flow found).
    """
    n_p = len(capacity)
    m = len(person)
    if m == 0:
        return 0, np.zeros(0, dtype=bool)
    f = np.zeros(m, dtype=bool) if warm is None else np.asarray(warm, dtype=bool)
    load = np.bincount(person[f], minlength=n_p)
    used = np.bincount(item[f], minlength=n_items)
    cap = np.asarray(capacity, dtype=np.int64)
    if np.any(load > cap) or np.any(used > 1):
        raise ValueError("warm start is not a feasible flow")
    upper = min(int(np.count_nonzero(np.bincount(item, minlength=n_items))), int(cap.sum()))
    if int(f.sum()) >= upper:  # the warm start is already maximum
        return int(f.sum()), f
    source, sink = n_p + n_items, n_p + n_items + 1
    persons = np.arange(n_p)
    items = np.arange(n_items)
    pnode, xnode = person, n_p + item
    # Residual capacities of the flow f (forward arc: cap − flow, backward arc: flow).
    rows = np.concatenate(
        [np.full(n_p, source), persons, pnode, xnode, n_p + items, np.full(n_items, sink)]
    )
    cols = np.concatenate(
        [persons, np.full(n_p, source), xnode, pnode, np.full(n_items, sink), n_p + items]
    )
    data = np.concatenate([cap - load, load, 1 - f, f, 1 - used, used]).astype(np.int32)
    nz = data > 0
    n = n_p + n_items + 2
    import scipy.sparse as sp  # loads on first use: a job's `--help` needs no scipy
    from scipy.sparse.csgraph import maximum_flow

    residual = sp.csr_array((data[nz], (rows[nz], cols[nz])), shape=(n, n))
    result = maximum_flow(residual, source, sink, method="dinic")
    net = np.asarray(result.flow[pnode, xnode]).ravel()  # net flow person → item, in {-1, 0, 1}
    flow = f.astype(np.int64) + net
    return int(f.sum()) + int(result.flow_value), flow > 0


def solve_rows(
    person: np.ndarray,
    item: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    offset: np.ndarray,
    ells: Iterable[int],
    *,
    n_persons: int | None = None,
    n_items: int | None = None,
    saturation: int | None = None,
) -> np.ndarray:
    """DC of the instance alive at each ℓ of ``ells`` (see the module docstring).

    Args:
        person, item: dense int ids of the edges.
        lo, hi: each edge is alive for lo ≤ ℓ ≤ hi.
        offset: the edge's person has capacity ℓ − offset at those ℓ (the same for all edges
            of a person alive at the same ℓ).
        ells: the ℓ values to solve, ascending; each warm-starts from the previous one (the
            flow of a smaller ℓ, trimmed to the new capacities, is always feasible).
        n_persons, n_items: id ranges (default: max id + 1).
        saturation: when the rows are a whole instance (not a piece of a peeled one), the
            number of its distinct items DC(D): once a value reaches it, every larger ℓ has it
            too (docs/design/counting.md#curve, #dc/P2) and the loop stops early.

    Returns:
        int64 array aligned with ``ells``.
    """
    person = np.asarray(person, dtype=np.int64)
    item = np.asarray(item, dtype=np.int64)
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    offset = np.asarray(offset, dtype=np.int64)
    n_p = int(n_persons if n_persons is not None else (person.max() + 1 if len(person) else 0))
    n_x = int(n_items if n_items is not None else (item.max() + 1 if len(item) else 0))
    ells = [int(v) for v in ells]
    if any(b <= a for a, b in itertools.pairwise(ells)):
        raise ValueError("ells must be strictly increasing")
    out = np.zeros(len(ells), dtype=np.int64)
    # An edge may appear on several rows (one per ℓ); the warm start is kept per edge.
    _, edge_id = np.unique(person * max(n_x, 1) + item, return_inverse=True)
    matched = np.zeros(int(edge_id.max()) + 1 if len(edge_id) else 0, dtype=bool)
    last = np.zeros(0, dtype=np.int64)  # edge ids carrying flow after the previous ℓ
    for k, ell in enumerate(ells):
        rows = np.flatnonzero((lo <= ell) & (hi >= ell))
        p, x = person[rows], item[rows]
        cap = np.zeros(n_p, dtype=np.int64)
        cap[p] = ell - offset[rows]
        peeled = peel(p, x, cap, n_x)
        value = peeled.covered
        matched[last] = False
        last = np.zeros(0, dtype=np.int64)
        if len(peeled.person):
            ids = edge_id[rows[peeled.edges]]
            warm = _trim_warm_start(matched[ids], peeled.person, peeled.capacity)
            warm = _greedy_extend(warm, peeled.person, peeled.item, peeled.capacity, n_x)
            flow, used = max_flow(peeled.person, peeled.item, peeled.capacity, n_x, warm)
            value += flow
            last = ids[used]
            matched[last] = True
        out[k] = value
        if saturation is not None and value >= saturation:
            out[k:] = value
            break
    return out


def _trim_warm_start(mask: np.ndarray, person: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Keep at most c_i of person i's previously used edges (items are already distinct)."""
    idx = np.flatnonzero(mask)
    out = np.zeros_like(mask)
    out[idx[_rank_within(person[idx]) < capacity[person[idx]]]] = True
    return out


def _greedy_extend(
    flow: np.ndarray,
    person: np.ndarray,
    item: np.ndarray,
    capacity: np.ndarray,
    n_items: int,
    passes: int = 10,
) -> np.ndarray:
    """Add free edges to a feasible flow greedily (docs/design/counting.md#curve: a greedy matching
    is a valid warm start): each pass gives every free item to one person with spare capacity."""
    f = flow.copy()
    spare = capacity - np.bincount(person[f], minlength=len(capacity))
    used = np.bincount(item[f], minlength=n_items) > 0
    cand = np.flatnonzero(~f & (spare[person] > 0) & ~used[item])
    for _ in range(passes):
        if len(cand) == 0:
            break
        first = np.full(n_items, -1, dtype=np.int64)
        first[item[cand[::-1]]] = cand[::-1]  # the first candidate edge of every free item
        pick = first[first >= 0]
        pick = pick[_rank_within(person[pick]) < spare[person[pick]]]
        f[pick] = True
        spare -= np.bincount(person[pick], minlength=len(capacity))
        used[item[pick]] = True
        cand = cand[(spare[person[cand]] > 0) & ~used[item[cand]]]
    return f


def _rank_within(groups: np.ndarray) -> np.ndarray:
    """Rank of each element among the elements of its group, in array order."""
    order = np.argsort(groups, kind="stable")
    g = groups[order]
    start = np.r_[0, np.flatnonzero(np.diff(g)) + 1]
    ranks = np.empty(len(groups), dtype=np.int64)
    ranks[order] = np.arange(len(g)) - np.repeat(start, np.diff(np.r_[start, len(g)]))
    return ranks


def exact_curve_local(person: np.ndarray, item: np.ndarray, max_contributions: int) -> np.ndarray:
    """DC(D; ℓ) for ℓ = 1..ℓ_max of a whole in-memory instance (distinct edges, dense ids).

    Returns:
        int64 array ``c`` with ``c[ℓ-1] = DC(D; ℓ)``.
    """
    person = np.asarray(person, dtype=np.int64)
    item = np.asarray(item, dtype=np.int64)
    m = len(person)
    n_items_total = len(np.unique(item)) if m else 0
    ones = np.ones(m, dtype=np.int64)
    return solve_rows(
        person,
        item,
        ones,
        ones * max_contributions,
        np.zeros(m, dtype=np.int64),
        range(1, max_contributions + 1),
        saturation=n_items_total,
    )
