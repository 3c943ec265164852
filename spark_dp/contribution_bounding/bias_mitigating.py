"""The bias-mitigating variant of Algorithm 2 and its Pareto sweep.

[B] §5.5 and App. C.5; docs/design/bounding.md#bias-mitigating. Maximizing |S| favours records
with few users. The variant splits the records at a size threshold u_thr into small
(|h| ≤ u_thr) and large (|h| > u_thr) lists, each in the ``size-hash`` order, and scans c1
small records, then c2 large ones, and so on; once one list runs out the rest of the other
follows (docs/design/bounding.md#bias-mitigating). The scan is Alg. 2's single pass with bound k.

As a global order (docs/design/bounding.md#bias-mitigating, for the distributed job): a small record
at 0-based position q of its list has key (floor(q/c1), 0, q), a large one (floor(q/c2), 1, q).
Sorting by the key reproduces the scan, and the key's rank has the closed form of
:func:`interleave_position`, so no second sort is needed. Being a shared order, the proposal rounds
run to exhaustion return exactly this variant's output (docs/design/bounding.md#greedy-equivalence).

The tuning grid of [B] App. C.5 is k = 3, u_thr ∈ {1, 2, 3, 4}, (c1, c2) ∈ {(1, c)} or {(c, 1)}
for c = 1..10: [B] counts 80 settings but (1, 1) appears twice, so 76 are distinct
(docs/design/bounding.md#bias-mitigating).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from spark_dp.checks import check_int_at_least
from spark_dp.contribution_bounding.greedy import greedy
from spark_dp.contribution_bounding.hypergraph import CompactHypergraph
from spark_dp.contribution_bounding.orders import shared_sequence

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = [
    "SweepPoint",
    "bias_grid",
    "bias_mitigated_greedy",
    "interleave_position",
    "interleave_position_column",
    "interleave_sequence",
    "pareto_front",
    "pareto_sweep",
]


def _check(u_thr: int, c1: int, c2: int) -> None:
    check_int_at_least("size_threshold (u_thr)", u_thr, 0)
    check_int_at_least("small_block (c1)", c1, 1)
    check_int_at_least("large_block (c2)", c2, 1)


def interleave_position(
    q: np.ndarray, large: np.ndarray, n_small: int, n_large: int, c1: int, c2: int
) -> np.ndarray:
    """Position in the interleaved scan of the record at position q of its list.

    Block b of the scan holds small records b·c1 .. (b+1)·c1 − 1, then large ones
    b·c2 .. (b+1)·c2 − 1, lists that ran out contributing nothing. So a small record with
    b = floor(q/c1) has min(b·c1, n_s) + min(b·c2, n_l) + (q − b·c1) records before it, and a
    large one with b = floor(q/c2) has min((b+1)·c1, n_s) + min(b·c2, n_l) + (q − b·c2).
    """
    q = np.asarray(q, dtype=np.int64)
    large = np.asarray(large, dtype=bool)
    b = np.where(large, q // c2, q // c1)
    small_before = np.minimum(np.where(large, b + 1, b) * c1, n_small)
    large_before = np.minimum(b * c2, n_large)
    return small_before + large_before + q - np.where(large, b * c2, b * c1)


def interleave_position_column(
    q: Column, large: Column, n_small: int, n_large: int, c1: int, c2: int
) -> Column:
    """:func:`interleave_position` as a Spark column expression (q: long, large: boolean)."""
    from pyspark.sql import functions as F

    b = F.when(large, F.floor(q / c2)).otherwise(F.floor(q / c1)).cast("long")
    small_before = F.least(F.when(large, b + 1).otherwise(b) * c1, F.lit(n_small))
    large_before = F.least(b * c2, F.lit(n_large))
    return small_before + large_before + q - F.when(large, b * c2).otherwise(b * c1)


def interleave_sequence(
    graph: CompactHypergraph,
    u_thr: int,
    c1: int,
    c2: int,
    *,
    seed: int | str = 0,
    base_sequence: np.ndarray | None = None,
) -> np.ndarray:
    """The variant's scan order as a permutation of record indices (best first).

    Args:
        graph: the records.
        u_thr, c1, c2: threshold and block lengths.
        seed: seed of the size-hash order (ignored with ``base_sequence``).
        base_sequence: the size-hash order if already known (e.g. records collected in it).
    """
    _check(u_thr, c1, c2)
    if base_sequence is None:
        base = shared_sequence(graph.record_ids, graph.sizes, "size-hash", seed)
    else:
        base = np.asarray(base_sequence, dtype=np.int64)
    large = graph.sizes[base] > u_thr
    q = np.empty(len(base), dtype=np.int64)
    q[~large] = np.arange(int((~large).sum()))
    q[large] = np.arange(int(large.sum()))
    pos = interleave_position(q, large, int((~large).sum()), int(large.sum()), c1, c2)
    out = np.empty(len(base), dtype=np.int64)
    out[pos] = base
    return out


def bias_mitigated_greedy(
    graph: CompactHypergraph,
    u_thr: int,
    c1: int,
    c2: int,
    *,
    seed: int | str = 0,
    base_sequence: np.ndarray | None = None,
) -> np.ndarray:
    """BiasMitigatedAlg2 (docs/design/bounding.md#bias-mitigating): Alg. 2's single pass over the
    interleaved scan.

    Returns:
        Boolean mask of selected records.
    """
    seq = interleave_sequence(graph, u_thr, c1, c2, seed=seed, base_sequence=base_sequence)
    return greedy(graph, seq)


def bias_grid(*, distinct: bool = True) -> list[tuple[int, int, int]]:
    """[B]'s grid of (u_thr, c1, c2): 76 distinct settings, or the paper's 80 with repeats."""
    pairs = [(1, c) for c in range(1, 11)] + [(c, 1) for c in range(1, 11)]
    if distinct:
        pairs = list(dict.fromkeys(pairs))
    return [(u, c1, c2) for u in (1, 2, 3, 4) for c1, c2 in pairs]


@dataclass(frozen=True)
class SweepPoint:
    """One dataset of the sweep: |S| and its mean record size ("average edge degree")."""

    u_thr: int
    c1: int
    c2: int
    selected: int
    mean_size: float
    pareto: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for reports and tables)."""
        return asdict(self)


def pareto_sweep(
    graph: CompactHypergraph,
    *,
    seed: int | str = 0,
    grid: Iterable[tuple[int, int, int]] | None = None,
    base_sequence: np.ndarray | None = None,
) -> list[SweepPoint]:
    """Run the variant for every setting and mark the Pareto front
    (docs/design/bounding.md#bias-mitigating).

    The bound k comes from the graph's capacities ([B] uses k = 3 for all users).
    ``base_sequence`` is the size-hash order when already known (else computed from ``seed``).

    Returns:
        One point per setting, in grid order, ``pareto=True`` on non-dominated points.
    """
    sizes = graph.sizes
    if base_sequence is None:
        base_sequence = shared_sequence(graph.record_ids, sizes, "size-hash", seed)
    points = []
    for u_thr, c1, c2 in grid if grid is not None else bias_grid():
        mask = bias_mitigated_greedy(graph, u_thr, c1, c2, base_sequence=base_sequence)
        n = int(mask.sum())
        mean = float(sizes[mask].mean()) if n else 0.0
        points.append(SweepPoint(u_thr, c1, c2, n, mean))
    front = {id(p) for p in pareto_front(points)}
    return [
        SweepPoint(p.u_thr, p.c1, p.c2, p.selected, p.mean_size, id(p) in front) for p in points
    ]


def pareto_front(points: list[SweepPoint]) -> list[SweepPoint]:
    """Points not dominated on (|S|, mean size), both larger-is-better.

    p is dominated when another point is ≥ on both numbers and > on one. Along the front the
    mean size decreases as |S| grows ([B] App. C.5).
    """
    return [
        p
        for p in points
        if not any(
            (o.selected >= p.selected and o.mean_size >= p.mean_size)
            and (o.selected > p.selected or o.mean_size > p.mean_size)
            for o in points
        )
    ]
