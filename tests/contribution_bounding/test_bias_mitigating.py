"""The bias-mitigating variant and its Pareto sweep (docs/design/bounding.md#bias-mitigating)."""

from __future__ import annotations

import itertools
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_dp.contribution_bounding import (
    CompactHypergraph,
    SweepPoint,
    bias_grid,
    bias_mitigated_greedy,
    greedy,
    interleave_sequence,
    pareto_front,
    pareto_sweep,
    shared_sequence,
)
from spark_dp.contribution_bounding.bias_mitigating import interleave_position
from spark_dp.generators import skewed_hypergraph
from tests.contribution_bounding.helpers import graph_of
from tests.reference import contribution_bounding as ref


@settings(max_examples=300, deadline=None)
@given(
    n_small=st.integers(0, 30),
    n_large=st.integers(0, 30),
    c1=st.integers(1, 10),
    c2=st.integers(1, 10),
)
def test_closed_form_position_reproduces_the_literal_interleave(
    n_small: int, n_large: int, c1: int, c2: int
) -> None:
    small = [("s", q) for q in range(n_small)]
    large = [("l", q) for q in range(n_large)]
    literal = ref.interleave(small, large, c1, c2)  # includes the tail after one runs out
    q = np.array([x[1] for x in small + large], dtype=np.int64)
    is_large = np.array([False] * n_small + [True] * n_large)
    pos = interleave_position(q, is_large, n_small, n_large, c1, c2)
    placed = [None] * len(literal)
    for p, x in zip(pos, small + large, strict=True):
        placed[p] = x
    assert placed == literal
    # the sort key (floor(q/c), group, q) of docs/design/bounding.md#bias-mitigating gives the same
    # sequence
    keyed = sorted(
        small + large, key=lambda x: (x[1] // (c1 if x[0] == "s" else c2), x[0] == "l", x[1])
    )
    assert keyed == literal


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 10**9), u_thr=st.integers(1, 3), c1=st.integers(1, 4), c2=st.integers(1, 4)
)
def test_variant_is_alg2_over_the_literal_interleave(
    seed: int, u_thr: int, c1: int, c2: int
) -> None:
    records, caps, _ = ref.random_instance(random.Random(seed))
    g = graph_of(records, caps)
    key = ref.shared_key("size-hash", records, 0)
    ordered = sorted(records, key=key)
    small = [h for h in ordered if len(records[h]) <= u_thr]
    large = [h for h in ordered if len(records[h]) > u_thr]
    scan = ref.interleave(small, large, c1, c2)
    assert [g.record_ids[i] for i in interleave_sequence(g, u_thr, c1, c2, seed=0)] == scan
    got = set(g.record_ids[bias_mitigated_greedy(g, u_thr, c1, c2, seed=0)])
    assert got == ref.greedy(records, caps, scan.index)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10**9), c1=st.integers(1, 5), c2=st.integers(1, 5))
def test_threshold_above_every_size_gives_alg2_exactly(seed: int, c1: int, c2: int) -> None:
    records, caps, _ = ref.random_instance(random.Random(seed))
    g = graph_of(records, caps)
    seq = shared_sequence(g.record_ids, g.sizes, "size-hash", 0)
    assert np.array_equal(bias_mitigated_greedy(g, 4, c1, c2, seed=0), greedy(g, seq))


def test_grid_has_80_settings_of_which_76_distinct() -> None:
    assert len(bias_grid(distinct=False)) == 80
    assert len(bias_grid()) == 76 == len(set(bias_grid()))
    assert {u for u, _, _ in bias_grid()} == {1, 2, 3, 4}


def test_pareto_filter_removes_dominated_points() -> None:
    pts = [
        SweepPoint(1, 1, 1, 10, 2.0),
        SweepPoint(1, 1, 2, 8, 2.5),
        SweepPoint(1, 2, 1, 8, 2.2),  # dominated by (8, 2.5)
        SweepPoint(2, 1, 1, 12, 1.5),
        SweepPoint(2, 1, 2, 12, 1.4),  # dominated by (12, 1.5)
        SweepPoint(3, 1, 1, 9, 1.9),  # dominated by (10, 2.0)
    ]
    front = pareto_front(pts)
    assert {(p.selected, p.mean_size) for p in front} == {(10, 2.0), (8, 2.5), (12, 1.5)}


def test_sweep_front_has_mean_size_decreasing_in_size() -> None:
    """[B] App. C.5 with k = 3 on a small skewed graph: 76 datasets, front monotone."""
    s = skewed_hypergraph(1500, records_per_user=4, seed=2)
    g = CompactHypergraph.from_incidences(s.record_id, s.user_id, max_contributions=3)
    points = pareto_sweep(g, seed=0)
    assert len(points) == 76
    front = sorted((p for p in points if p.pareto), key=lambda p: (p.selected, -p.mean_size))
    assert front and len(front) < len(points)
    for a, b in itertools.pairwise(front):
        assert b.selected >= a.selected and b.mean_size <= a.mean_size
        if b.selected == a.selected:  # otherwise one of them would dominate the other
            assert b.mean_size == a.mean_size
    kept = set(map(id, front))
    for p in points:
        if id(p) not in kept:
            assert any(o.selected >= p.selected and o.mean_size >= p.mean_size for o in front)
