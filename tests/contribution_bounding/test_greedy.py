"""[B] Algorithms 2, 3, 4 on the driver against the reference, the papers' toys, D1–D4, T13."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_dp.contribution_bounding import (
    CompactHypergraph,
    greedy,
    greedy_with_duplicates,
    largest_feasible_min_sep,
    min_sep_batches,
    shared_sequence,
)
from spark_dp.errors import InputContractError
from tests.contribution_bounding.helpers import FIG1, TOY52, as_records, graph_of
from tests.reference import contribution_bounding as ref

ORDERS = ["size-hash", "hash"]


def _setup(
    seed: int, order: str, **kw: Any
) -> tuple[ref.Records, ref.Caps, CompactHypergraph, np.ndarray, ref.SharedKey]:
    records, caps, _ = ref.random_instance(random.Random(seed), **kw)
    g = graph_of(records, caps)
    seq = shared_sequence(g.record_ids, g.sizes, order, seed=seed % 7)
    key = ref.shared_key(order, records, seed % 7)
    return records, caps, g, seq, key


def _ids(g: CompactHypergraph, mask: np.ndarray) -> set[str]:
    return set(g.record_ids[np.asarray(mask, dtype=bool)])


# --------------------------------------------------------------------------- Alg. 2


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 10**9), order=st.sampled_from(ORDERS))
def test_alg2_equals_reference_and_is_feasible_and_maximal(seed: int, order: str) -> None:
    records, caps, g, seq, key = _setup(seed, order)
    mask = greedy(g, seq)
    assert _ids(g, mask) == ref.greedy(records, caps, key)
    assert g.is_feasible(mask)
    assert g.is_maximal(mask)
    assert ref.maximal(records, caps, _ids(g, mask))


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10**9))
def test_alg2_from_start_counts_equals_reference(seed: int) -> None:
    """The driver finish (docs/design/bounding.md#driver-finish): greedy over a subset, starting
    from given degrees."""
    records, caps, g, seq, key = _setup(seed, "size-hash")
    rng = random.Random(seed)
    counts = {u: rng.randint(0, caps[u]) for u in caps}
    keep = [i for i in seq if rng.random() < 0.7]
    start = np.array([counts[u] for u in g.user_ids])
    got = _ids(g, greedy(g, np.array(keep, dtype=np.int64), counts=start))
    sub = {g.record_ids[i]: records[g.record_ids[i]] for i in keep}
    assert got == ref.greedy(sub, caps, key, counts=counts)


def test_sequence_must_list_distinct_records() -> None:
    g = graph_of(as_records(FIG1), dict.fromkeys("ABCD", 2))
    with pytest.raises(ValueError, match="distinct"):
        greedy(g, np.array([0, 0, 1]))


# --------------------------------------------------------------------------- Alg. 3


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 10**9), order=st.sampled_from(ORDERS))
def test_alg3_equals_reference_and_d1_to_d3(seed: int, order: str) -> None:
    records, caps, g, seq, key = _setup(seed, order)
    res = greedy_with_duplicates(g, seq)
    mult = {g.record_ids[i]: int(m) for i, m in enumerate(res.multiplicity) if m}
    want, passes = ref.greedy_dup(records, caps, key)
    assert mult == want
    assert res.passes == passes
    assert ref.feasible(records, caps, mult)
    # D1: the distinct records are Alg. 2's output.
    assert set(mult) == ref.greedy(records, caps, key)
    # D3: mult(h) ≤ min cap over its users; passes that add something ≤ max cap.
    assert all(m <= min(caps[u] for u in records[h]) for h, m in mult.items())
    assert res.passes <= max(caps.values(), default=0)
    assert res.total == sum(want.values()) and res.distinct == len(want)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10**9))
def test_alg3_equals_alg2_when_k_is_1(seed: int) -> None:
    """D4."""
    records, caps, _ = ref.random_instance(random.Random(seed), default_cap=1)
    caps = dict.fromkeys(caps, 1)
    g = graph_of(records, caps)
    seq = shared_sequence(g.record_ids, g.sizes, "size-hash", 0)
    res = greedy_with_duplicates(g, seq)
    assert np.array_equal(res.multiplicity > 0, greedy(g, seq))
    assert res.multiplicity.max(initial=0) <= 1


def test_records_without_users_are_rejected_up_front() -> None:
    """T12: a user-less record would be duplicated forever."""
    with pytest.raises(InputContractError, match="no user") as raised:
        CompactHypergraph.from_mapping({"a": ["u"], "e": [], "f": []}, max_contributions=2)
    assert not any(ch.isdigit() for ch in str(raised.value))  # no count of the input


# --------------------------------------------------------------------------- toys (T11, App. T)


@pytest.mark.parametrize(
    ("seed", "order", "want"),
    [
        (0, "size-hash", {"e3", "e4", "e5"}),
        (0, "hash", {"e2", "e4"}),
        (1, "size-hash", {"e3", "e4", "e5"}),
        (42, "size-hash", {"e1", "e4", "e5"}),  # the paper's S
    ],
)
def test_figure_1_toy(seed: int, order: str, want: set[str]) -> None:
    records = as_records(FIG1)
    g = graph_of(records, dict.fromkeys("ABCD", 2))
    seq = shared_sequence(g.record_ids, g.sizes, order, seed)
    assert _ids(g, greedy(g, seq)) == want
    # the paper's S = {e1, e4, e5} is feasible with k = 2
    assert ref.feasible(records, dict.fromkeys("ABCD", 2), dict.fromkeys(["e1", "e4", "e5"], 1))


@pytest.mark.parametrize(
    ("seed", "order", "want"),
    [
        (0, "size-hash", ["e4", "e3", "e1", "e5", "e2"]),
        (0, "hash", ["e2", "e4", "e3", "e1", "e5"]),
        (1, "size-hash", ["e3", "e5", "e4", "e1", "e2"]),
        (42, "size-hash", ["e1", "e4", "e3", "e5", "e2"]),
    ],
)
def test_key_orders_of_appendix_t(seed: int, order: str, want: list[str]) -> None:
    ids = list(FIG1)
    seq = shared_sequence(ids, [len(FIG1[r]) for r in ids], order, seed)
    assert [ids[i] for i in seq] == want


def test_section_5_2_toy_alg2_and_alg3() -> None:
    records = as_records(TOY52)
    caps = dict.fromkeys("ABCD", 3)
    g = graph_of(records, caps)
    seq = shared_sequence(g.record_ids, g.sizes, "size-hash", 0)
    assert [g.record_ids[i] for i in seq] == ["r1", "r4", "r3", "r2", "r5"]
    assert _ids(g, greedy(g, seq)) == {"r1", "r2", "r3", "r4"}
    res = greedy_with_duplicates(g, seq)
    mult = {g.record_ids[i]: int(m) for i, m in enumerate(res.multiplicity) if m}
    assert mult == {"r1": 1, "r2": 1, "r3": 1, "r4": 2}
    assert res.total == 5 and res.passes + 1 == 3  # 3 passes including the empty one
    seq1 = shared_sequence(g.record_ids, g.sizes, "size-hash", 1)
    res1 = greedy_with_duplicates(g, seq1)
    mult1 = {g.record_ids[i]: int(m) for i, m in enumerate(res1.multiplicity) if m}
    assert mult1 == {"r1": 1, "r3": 1, "r5": 1, "r4": 2}


# --------------------------------------------------------------------------- Alg. 4 (T13)


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 10**9),
    iterations=st.integers(1, 12),
    batch=st.integers(1, 6),
    min_sep=st.integers(1, 5),
)
def test_alg4_equals_reference_and_min_sep_holds(
    seed: int, iterations: int, batch: int, min_sep: int
) -> None:
    records, _caps, g, seq, key = _setup(seed, "size-hash", max_records=25)
    res = min_sep_batches(g, iterations, batch, min_sep, seq)
    want = ref.min_sep_batches(records, key, iterations, batch, min_sep)
    if want is None:
        assert res.failed and res.batches.size == 0
        return
    assert not res.failed
    assert res.batches.shape == (iterations, batch)  # exactly T·B entries
    got = [g.record_ids[i] for i in res.batches.ravel()]
    assert got == want
    last: dict = {}
    count: dict = {}
    for t in range(iterations):
        for h in got[t * batch : (t + 1) * batch]:
            for u in records[h]:
                assert u not in last or t - last[u] >= min_sep
                last[u] = t
                count[u] = count.get(u, 0) + 1
    assert res.k == max(count.values())
    assert res.k <= math.ceil(iterations / min_sep)


def test_alg4_fails_when_one_user_owns_every_record() -> None:
    """T13: with B = 2 a batch can hold only one of that user's records: FAIL at once."""
    g = CompactHypergraph.from_mapping({f"h{i}": ["solo"] for i in range(5)}, max_contributions=1)
    res = min_sep_batches(g, iterations=3, batch_size=2, min_sep=1)
    assert res.failed
    assert res.filled == 1
    ok = min_sep_batches(g, iterations=3, batch_size=1, min_sep=1)
    assert not ok.failed and ok.k == 3


def test_largest_feasible_min_sep_is_one_below_the_first_failure() -> None:
    _records, _caps, g, seq, _ = _setup(5, "size-hash", max_records=30)
    best = largest_feasible_min_sep(g, 8, 2, sequence=seq)
    if best is None:
        assert min_sep_batches(g, 8, 2, 2, seq).failed
    else:
        assert not min_sep_batches(g, 8, 2, best, seq).failed
        assert best == 8 or min_sep_batches(g, 8, 2, best + 1, seq).failed
