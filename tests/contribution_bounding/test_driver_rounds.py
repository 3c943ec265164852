"""Proposal-round semantics on the driver (numpy) against the literal reference
(docs/design/bounding.md#proposal-rounds).

Many random examples here; the Spark rounds are checked against the same reference on
batches in test_proposal_spark.py.
"""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_dp.contribution_bounding import (
    CompactHypergraph,
    greedy,
    shared_sequence,
    simulate_rounds,
)
from spark_dp.contribution_bounding.driver_rounds import shared_incidence_key
from spark_dp.contribution_bounding.orders import per_user_key
from tests.contribution_bounding.helpers import chain, graph_of
from tests.reference import contribution_bounding as ref


def _per_user_incidence_key(
    g: CompactHypergraph, seed: int, weights: dict[tuple[str, str], float] | None = None
) -> np.ndarray:
    """Rank of every incidence in its user's own order (per-user keys,
    docs/design/bounding.md#orders)."""
    weights = weights or {}
    rec = g.record_of_incidence
    keys = [
        per_user_key(
            g.user_ids[u], g.record_ids[r], seed, weights.get((g.record_ids[r], g.user_ids[u]), 0.0)
        )
        for r, u in zip(rec, g.users, strict=True)
    ]
    order = sorted(range(len(keys)), key=lambda j: (g.users[j], keys[j]))
    rank = np.empty(len(keys), dtype=np.int64)
    rank[order] = np.arange(len(keys))
    return rank


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 10**9), order=st.sampled_from(["size-hash", "hash"]))
def test_rounds_equal_reference_round_by_round_and_greedy_at_exhaustion(
    seed: int, order: str
) -> None:
    """P1 feasibility every round, P3 progress, P4 = Greedy(π), P5 maximality."""
    records, caps, _ = ref.random_instance(random.Random(seed))
    g = graph_of(records, caps)
    seq = shared_sequence(g.record_ids, g.sizes, order, seed % 5)
    key = ref.shared_key(order, records, seed % 5)
    sim = simulate_rounds(g, shared_incidence_key(g, seq))
    chosen, history, _, _ = ref.proposal_rounds(records, caps, lambda u, h: key(h))
    assert sim.rounds == len(history) and not sim.stalled
    for r, (accepted, left) in enumerate(history, start=1):
        assert set(g.record_ids[sim.accepted_round == r]) == set(accepted)
        assert sim.log[r - 1]["eligible_records"] == len(left)
        assert accepted or not left  # progress
        so_far = {h: 1 for h in g.record_ids[(sim.accepted_round > 0) & (sim.accepted_round <= r)]}
        assert ref.feasible(records, caps, so_far)
    assert set(g.record_ids[sim.selected]) == chosen == ref.greedy(records, caps, key)
    assert ref.maximal(records, caps, chosen)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**9), stop=st.integers(1, 3))
def test_cleanup_after_r_rounds_equals_greedy(seed: int, stop: int) -> None:
    """T3 / P6: M_R ⊆ Greedy; M_R plus a greedy over the eligible rest from d equals Greedy."""
    records, caps, _ = ref.random_instance(random.Random(seed))
    g = graph_of(records, caps)
    seq = shared_sequence(g.record_ids, g.sizes, "size-hash", 0)
    full = set(g.record_ids[greedy(g, seq)])
    sim = simulate_rounds(g, shared_incidence_key(g, seq), max_rounds=stop)
    partial = set(g.record_ids[sim.selected])
    assert partial <= full
    rest = [i for i in seq if sim.eligible[i]]
    cleanup = greedy(g, np.array(rest, dtype=np.int64), counts=sim.degree)
    assert partial | set(g.record_ids[cleanup]) == full
    discarded = ~sim.selected & ~sim.eligible
    assert not (set(g.record_ids[discarded]) & full)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**9))
def test_per_user_orders_equal_reference_with_the_hash_fallback(seed: int) -> None:
    """Per-user orders (docs/design/bounding.md#orders), with the stall fallback to the shared hash
    order (docs/design/bounding.md#per-user-orders)."""
    rng = random.Random(seed)
    records, caps, _ = ref.random_instance(rng)
    # sorted: set order depends on PYTHONHASHSEED, the draws must not
    weights = {(h, u): float(rng.randint(0, 2)) for h, us in records.items() for u in sorted(us)}
    g = graph_of(records, caps)
    sim = simulate_rounds(g, _per_user_incidence_key(g, 1, weights))
    hash_key = ref.shared_key("hash", records, 1)
    chosen, history, _d, switched = ref.proposal_rounds(
        records, caps, ref.per_user_key(1, weights), fallback=lambda u, h: hash_key(h)
    )
    got = set(g.record_ids[sim.selected])
    if sim.stalled:
        assert switched == sim.rounds
        rest = [i for i in shared_sequence(g.record_ids, g.sizes, "hash", 1) if sim.eligible[i]]
        got |= set(g.record_ids[greedy(g, np.array(rest, dtype=np.int64), counts=sim.degree)])
    else:
        assert switched is None and sim.rounds == len(history)
    assert got == chosen
    assert ref.feasible(records, caps, dict.fromkeys(got, 1))
    assert ref.maximal(records, caps, got)


def test_parallel_records_deadlock_under_opposite_per_user_preferences() -> None:
    """P7 / T9: p1 = p2 = {A, B}, cap 1, A prefers p1 and B prefers p2: no progress."""
    records = {"p1": frozenset("AB"), "p2": frozenset("AB")}
    g = graph_of(records, {"A": 1, "B": 1})
    weights = {("p1", "A"): 1.0, ("p2", "B"): 1.0}
    sim = simulate_rounds(g, _per_user_incidence_key(g, 0, weights))
    assert sim.stalled and sim.rounds == 1 and not sim.selected.any()
    shared = simulate_rounds(
        g, shared_incidence_key(g, shared_sequence(g.record_ids, g.sizes, "hash", 0))
    )
    assert shared.selected.sum() == 1  # P8: under a shared order one of them is taken


def test_chain_takes_eleven_rounds_and_keeps_the_even_records() -> None:
    """T6: path of 21 two-user records, b = 1, keys increasing along the path."""
    records = chain(21)
    g = graph_of(records, dict.fromkeys({u for us in records.values() for u in us}, 1))
    seq = np.argsort(g.record_ids)  # c00 < c01 < ... : keys increase with i
    sim = simulate_rounds(g, shared_incidence_key(g, seq))
    assert sim.rounds == 11
    assert set(g.record_ids[sim.selected]) == {f"c{i:02d}" for i in range(0, 21, 2)}
    three = simulate_rounds(g, shared_incidence_key(g, seq), max_rounds=3)
    assert set(g.record_ids[three.selected]) == {"c00", "c02", "c04"}
