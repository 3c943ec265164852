"""Exact ILP (HiGHS) against exhaustive search, and greedy against the ILP
(docs/design/bounding.md#ilp).

What is asserted, and why (the issue asks "greedy ≥ 0.9 of optimum and never above it"):

* On every instance: |Greedy| ≤ OPT (OPT is a maximum) and max_h |h| · |Greedy| ≥ OPT (any
  maximal b-matching, docs/design/bounding.md#maximal). These are theorems, checked on many tiny
  random instances.
* The 0.9 ratio is *not* a theorem: on tiny instances the size-hash greedy reaches 2/3 of OPT
  (docs/design/bounding.md#measured), and the only guaranteed floor is 1/max|h| (reached below). It
  is asserted where docs/design/bounding.md#measured measured it, on seeded synthetic
  graphs (regular and skewed) with the size-hash order, as a regression guard: there
  Alg. 2 keeps 0.956–1.0 of OPT at 1.3k records (docs/design/bounding.md#measured: 0.948–0.998 at
  5k).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_dp.contribution_bounding import (
    CompactHypergraph,
    ProblemTooLargeError,
    greedy,
    greedy_with_duplicates,
    lp_upper_bound,
    shared_sequence,
    solve_ilp,
)
from spark_dp.generators import regular_hypergraph, skewed_hypergraph
from spark_dp.logs import unsafe_debug
from tests.contribution_bounding.helpers import FIG1, TOY52, as_records, graph_of
from tests.reference import contribution_bounding as ref


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 10**9))
def test_ilp_equals_exhaustive_search(seed: int) -> None:
    records, caps, _ = ref.random_instance(random.Random(seed), max_users=6, max_records=9)
    g = graph_of(records, caps)
    sol = solve_ilp(g)
    assert sol.optimal and sol.objective == ref.optimum(records, caps)
    assert g.is_feasible(sol.multiplicity) and sol.multiplicity.max(initial=0) <= 1
    dup = solve_ilp(g, duplicates=True)
    assert dup.optimal and dup.objective == ref.optimum(records, caps, duplicates=True)
    assert g.is_feasible(dup.multiplicity)
    assert lp_upper_bound(g) >= sol.objective - 1e-6


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**9), order=st.sampled_from(["size-hash", "hash"]))
def test_greedy_never_above_optimum_and_within_the_maximal_bound(seed: int, order: str) -> None:
    records, caps, _ = ref.random_instance(random.Random(seed), max_records=25)
    g = graph_of(records, caps)
    seq = shared_sequence(g.record_ids, g.sizes, order, 0)
    kept = int(greedy(g, seq).sum())
    opt = solve_ilp(g).objective
    r_max = int(g.sizes.max(initial=1))
    assert kept <= opt <= r_max * kept
    assert greedy_with_duplicates(g, seq).total <= solve_ilp(g, duplicates=True).objective


def test_tiny_instances_can_be_far_below_the_optimum() -> None:
    """Why 0.9 is not asserted on tiny graphs: scanning the pair first keeps 1 where OPT is 2,
    so the maximal bound OPT ≤ max|h| · |Greedy| is tight (docs/design/bounding.md#ilp)."""
    records = {"bc": frozenset("BC"), "b": frozenset("B"), "c": frozenset("C")}
    g = graph_of(records, {"B": 1, "C": 1})
    seq = np.array([list(g.record_ids).index(h) for h in ("bc", "b", "c")])
    assert greedy(g, seq).sum() == 1
    assert solve_ilp(g).objective == 2


@pytest.mark.parametrize("kind", ["regular", "skewed"])
@pytest.mark.parametrize("records_per_user", [2, 4, 8])
def test_size_hash_greedy_keeps_at_least_90_percent_on_synthetic_graphs(
    kind: str, records_per_user: int
) -> None:
    gen = regular_hypergraph if kind == "regular" else skewed_hypergraph
    sample = gen(1500, records_per_user=records_per_user, seed=11)
    for k in (1, 2, 3):
        g = CompactHypergraph.from_incidences(sample.record_id, sample.user_id, max_contributions=k)
        seq = shared_sequence(g.record_ids, g.sizes, "size-hash", 0)
        kept = int(greedy(g, seq).sum())
        sol = solve_ilp(g, time_limit=60)
        assert sol.optimal
        assert 0.9 * sol.objective <= kept <= sol.objective, (kind, records_per_user, k)


@pytest.mark.parametrize(("mapping", "cap", "plain", "dup"), [(FIG1, 2, 3, 4), (TOY52, 3, 4, 6)])
def test_toy_optima(mapping: dict[str, str], cap: int, plain: int, dup: int) -> None:
    """Toy instances: Fig. 1 ILP = 3; Sec. 5.2 ILP = 4 without and 6 with duplicates."""
    records = as_records(mapping)
    g = graph_of(records, dict.fromkeys({u for us in records.values() for u in us}, cap))
    assert solve_ilp(g).objective == plain
    assert solve_ilp(g, duplicates=True).objective == dup


def test_size_limit_is_a_clear_error() -> None:
    g = CompactHypergraph.from_mapping({f"h{i}": ["u"] for i in range(30)}, max_contributions=1)
    with pytest.raises(
        ProblemTooLargeError, match="<private> record variables, more than the limit 10"
    ):
        solve_ilp(g, max_records=10)
    with unsafe_debug(), pytest.raises(ProblemTooLargeError, match="30 record variables"):
        solve_ilp(g, max_records=10)


def test_empty_instance() -> None:
    g = CompactHypergraph.from_incidences([], [], max_contributions=1)
    assert solve_ilp(g).objective == 0
