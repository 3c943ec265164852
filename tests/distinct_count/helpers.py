"""Helpers shared by the distinct-count tests: datasets as lists of item sets, the Fashion curve,
partitions of a graph."""

from __future__ import annotations

import zlib
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy.sparse.csgraph import connected_components as scipy_components

from spark_dp.distinct_count import exact_curve_local, greedy_curve_arrays

#: A dataset: one item collection per person.
Sets = Sequence[Sequence[Hashable]]

# docs/design/counting.md#tests: exact DC(D; ℓ) of Amazon Fashion for ℓ = 1..30, then 1450 for every
# ℓ ≥ 30.
FASHION = np.array(
    [368, 643, 855, 1014, 1117, 1195, 1252, 1290, 1317, 1340, 1357, 1373, 1387, 1400, 1412,
     1420, 1428, 1432, 1435, 1438, 1441, 1442, 1443, 1444, 1445, 1446, 1447, 1448, 1449, 1450]
    + [1450] * 70
)  # fmt: skip


def person_key(name: object) -> int:
    """A per-person order key that depends only on the person's own id
    (docs/design/counting.md#person-order)."""
    return zlib.crc32(str(name).encode())


def to_arrays(sets: Sets) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(person, item) dense id arrays of a list of item sets (duplicates dropped)."""
    ids: dict[Hashable, int] = {}
    p: list[int] = []
    x: list[int] = []
    for i, u in enumerate(sets):
        for it in sorted(set(u), key=str):
            p.append(i)
            x.append(ids.setdefault(it, len(ids)))
    return np.array(p, dtype=np.int64), np.array(x, dtype=np.int64)


def exact(sets: Sets, max_contributions: int) -> NDArray[np.int64]:
    """The library's local exact curve of a list of sets."""
    p, x = to_arrays(sets)
    return exact_curve_local(p, x, max_contributions)


def greedy(
    sets: Sets, max_contributions: int, names: Sequence[object] | None = None
) -> NDArray[np.int64]:
    """The library's greedy curve with the orders of docs/design/counting.md#greedy-conditions:
    persons by a per-person key (ties by name), items by their string (byte-lexicographic for
    ASCII)."""
    ids = list(range(len(sets))) if names is None else list(names)
    order = sorted(range(len(sets)), key=lambda i: (person_key(ids[i]), str(ids[i])))
    lists = [sorted({str(x) for x in sets[i]}) for i in order]
    vocab = {x: k for k, x in enumerate(sorted({x for u in lists for x in u}))}
    indptr = np.r_[0, np.cumsum([len(u) for u in lists])]
    flat = np.array([vocab[x] for u in lists for x in u], dtype=np.int64)
    return greedy_curve_arrays(indptr, flat, max_contributions)


def random_sets(rng: np.random.Generator, n: int, universe: int, max_size: int) -> list[list[int]]:
    """n random item sets over ``range(universe)`` with sizes 0..max_size."""
    return [
        sorted(
            rng.choice(
                universe, size=int(rng.integers(0, min(universe, max_size) + 1)), replace=False
            ).tolist()
        )
        for _ in range(n)
    ]


def datasets(
    max_persons: int = 8, universe: int = 12, max_size: int = 6
) -> st.SearchStrategy[list[list[int]]]:
    """Hypothesis strategy: a list of item sets (docs/design/counting.md#tests: n ≤ 15, universe ≤
    30, |u_i| ≤ 10)."""
    return st.lists(
        st.sets(st.integers(0, universe - 1), max_size=max_size).map(sorted),
        min_size=1,
        max_size=max_persons,
    )


def partition(pairs: Iterable[tuple[Any, ...]]) -> set[frozenset[Any]]:
    """The vertex sets of (vertex, label) pairs."""
    groups: dict[Any, set[Any]] = {}
    for v, c in pairs:
        groups.setdefault(c, set()).add(v)
    return {frozenset(g) for g in groups.values()}


def scipy_partition(edges: Sequence[tuple[int, ...]]) -> set[frozenset[Any]]:
    """The connected components of an edge list, by scipy (the reference)."""
    verts = sorted({v for e in edges for v in e})
    index = {v: k for k, v in enumerate(verts)}
    rows = [index[a] for a, _ in edges]
    cols = [index[b] for _, b in edges]
    g = sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=(len(verts), len(verts)))
    _, labels = scipy_components(g, directed=False)
    return partition(zip(verts, labels, strict=True))
