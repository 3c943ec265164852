"""Sequential greedy contribution bounding on the driver: [B] Algorithms 2, 3 and 4.

Ganesh et al. 2025, "It's My Data Too", §4 and App. B.2; docs/design/bounding.md#greedy-order.
All three scan the records in one shared total order π (by default the ``size-hash`` key,
docs/design/bounding.md#greedy-order), the same order the distributed algorithm uses, so that:

* :func:`greedy` (Alg. 2) is exactly the distributed proposal rounds run to exhaustion
  (docs/design/bounding.md#greedy-equivalence), and the driver finish of those rounds (P6);
* :func:`greedy_with_duplicates` (Alg. 3) keeps the distinct records of Alg. 2 (D1) and adds
  copies in later passes (D2, D3);
* :func:`min_sep_batches` (Alg. 4) cuts the cyclic scan into T batches of size B under
  min-separation, or reports FAIL.

The feasibility test "S plus h satisfies the bound" only involves the users of h, so it is
``count(u) < cap(u) for every u ∈ h`` (docs/design/bounding.md#greedy-order). These loops are plain
Python over the CSR lists of a
:class:`~spark_dp.contribution_bounding.hypergraph.CompactHypergraph`: linear time, a few million
records per second-ish; the Spark path hands them only what fits the driver. Selection reads the
hypergraph only (fixed-graph DP).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spark_dp.checks import check_int_at_least
from spark_dp.contribution_bounding.hypergraph import CompactHypergraph

__all__ = [
    "DuplicateSelection",
    "MinSepBatches",
    "greedy",
    "greedy_with_duplicates",
    "largest_feasible_min_sep",
    "min_sep_batches",
]


def _sequence(graph: CompactHypergraph, sequence: np.ndarray | None) -> list[int]:
    """The scan order as a list; a subset of the records may be given (the rest is skipped)."""
    if sequence is None:
        return list(range(graph.n_records))
    seq = np.asarray(sequence, dtype=np.int64)
    if len(seq) and (
        seq.min() < 0 or seq.max() >= graph.n_records or len(np.unique(seq)) != len(seq)
    ):
        raise ValueError("sequence must list distinct record indices")
    return seq.tolist()


def _greedy_pass(
    candidates: list[int], ptr: list[int], users: list[int], cap: list[int], cnt: list[int]
) -> list[int]:
    """One scan: add h iff every user of h has cnt < cap; updates ``cnt``; returns the added."""
    added = []
    for i in candidates:
        s, e = ptr[i], ptr[i + 1]
        for j in range(s, e):
            u = users[j]
            if cnt[u] >= cap[u]:
                break
        else:
            for j in range(s, e):
                cnt[users[j]] += 1
            added.append(i)
    return added


def greedy(
    graph: CompactHypergraph,
    sequence: np.ndarray | None = None,
    *,
    counts: np.ndarray | None = None,
) -> np.ndarray:
    """Greedy(π), [B] Algorithm 2 (no duplicates): one pass in order π.

    Keeps record h iff count(u) < cap(u) for every u ∈ h, then counts it. The result is a
    maximal feasible b-matching, so |S| ≥ OPT / max_h |h| (docs/design/bounding.md#maximal).

    Args:
        graph: the hypergraph with capacities.
        sequence: π as record indices, best first (default: index order); records not listed
            are skipped (used to scan only the still-eligible records).
        counts: starting count(u) per user (default zeros), e.g. the degrees reached by
            distributed rounds before the driver finish (docs/design/bounding.md#driver-finish).

    Returns:
        Boolean mask over records: selected or not.
    """
    seq = _sequence(graph, sequence)
    cnt = [0] * graph.n_users if counts is None else np.asarray(counts).tolist()
    added = _greedy_pass(seq, graph.ptr.tolist(), graph.users.tolist(), graph.cap.tolist(), cnt)
    mask = np.zeros(graph.n_records, dtype=bool)
    mask[added] = True
    return mask


@dataclass(frozen=True)
class DuplicateSelection:
    """Output of Alg. 3.

    Attributes:
        multiplicity: copies per record (0 = not selected).
        passes: passes that added at least one copy (the final empty pass not counted).
    """

    multiplicity: np.ndarray
    passes: int

    @property
    def total(self) -> int:
        """|S| counted with multiplicity."""
        return int(self.multiplicity.sum())

    @property
    def distinct(self) -> int:
        """Number of distinct selected records."""
        return int(np.count_nonzero(self.multiplicity))


def greedy_with_duplicates(
    graph: CompactHypergraph, sequence: np.ndarray | None = None
) -> DuplicateSelection:
    """[B] Algorithm 3 (with duplicates): repeated passes in order π until one adds nothing.

    Pass 1 is Alg. 2 (D1). A later pass is a greedy over the records in the same order with the
    counts reached so far (D2). A record that gains a copy in pass p gained one in pass p − 1
    (D3: its users' counts never decrease), so pass p only visits the records pass p − 1 added,
    which gives exactly the same multiset as visiting all records. mult(h) ≤ min_{u∈h} cap(u),
    and the bound for accounting is k = max_u Σ_{h∋u} mult(h) (docs/design/bounding.md#duplicates).
    The paper's per-example stopping rule equals this pass rule
    (docs/design/bounding.md#duplicates).
    """
    seq = _sequence(graph, sequence)
    ptr, users, cap = graph.ptr.tolist(), graph.users.tolist(), graph.cap.tolist()
    cnt = [0] * graph.n_users
    mult = np.zeros(graph.n_records, dtype=np.int64)
    passes = 0
    candidates = seq
    while candidates:
        added = _greedy_pass(candidates, ptr, users, cap, cnt)
        if not added:
            break
        passes += 1
        mult[added] += 1
        candidates = added
    return DuplicateSelection(mult, passes)


@dataclass(frozen=True)
class MinSepBatches:
    """Output of Alg. 4.

    Attributes:
        failed: True when a full cycle over the records added nothing (FAIL).
        batches: int64 array (T, B) of record indices; batch t is row t (empty on FAIL).
        k: post-hoc contribution bound max_u (appearances of u), ≤ ceil(T / min_sep).
        user_counts: appearances per user.
        filled: entries placed before stopping (T·B on success).
    """

    failed: bool
    batches: np.ndarray
    k: int
    user_counts: np.ndarray
    filled: int


def min_sep_batches(
    graph: CompactHypergraph,
    iterations: int,
    batch_size: int,
    min_sep: int,
    sequence: np.ndarray | None = None,
) -> MinSepBatches:
    """[B] Algorithm 4 (DP-MF): T batches of B records with min-separation, or FAIL.

    The cursor runs cyclically over π. Record h joins batch t = floor(|S| / B) iff every user
    of h last appeared in a batch t' with t − t' ≥ min_sep. The loop stops at exactly T·B
    entries (the source writes ``while |S| ≤ TB``, one too many; docs/design/bounding.md#min-sep)
    and fails after n consecutive misses, [B]'s "nothing added since h was last seen". Batches are
    positional: training must consume them in this order (docs/design/bounding.md#min-sep).
    Capacities are not used: k is measured afterwards and is at most ceil(T / min_sep)
    (docs/design/bounding.md#min-sep).

    Args:
        graph: the hypergraph (capacities ignored).
        iterations: T ≥ 1.
        batch_size: B ≥ 1.
        min_sep: minimum batch distance between two appearances of a user, ≥ 1.
        sequence: π (default: index order).
    """
    check_int_at_least("iterations", iterations, 1)
    check_int_at_least("batch_size", batch_size, 1)
    check_int_at_least("min_sep", min_sep, 1)
    seq = _sequence(graph, sequence)
    n, total = len(seq), iterations * batch_size
    ptr, users = graph.ptr.tolist(), graph.users.tolist()
    last = [-min_sep] * graph.n_users
    cnt = [0] * graph.n_users
    out = [0] * total
    filled = pos = misses = 0
    failed = n == 0
    while not failed and filled < total:
        i = seq[pos % n]
        pos += 1
        t = filled // batch_size
        s, e = ptr[i], ptr[i + 1]
        for j in range(s, e):
            if t - last[users[j]] < min_sep:
                misses += 1
                failed = misses >= n
                break
        else:
            for j in range(s, e):
                last[users[j]] = t
                cnt[users[j]] += 1
            out[filled] = i
            filled += 1
            misses = 0
    counts = np.asarray(cnt, dtype=np.int64)
    batches = (
        np.empty((0, batch_size), dtype=np.int64)
        if failed
        else np.asarray(out, dtype=np.int64).reshape(iterations, batch_size)
    )
    k = int(counts.max()) if len(counts) else 0
    return MinSepBatches(failed, batches, k, counts, filled)


def largest_feasible_min_sep(
    graph: CompactHypergraph,
    iterations: int,
    batch_size: int,
    *,
    start: int = 2,
    sequence: np.ndarray | None = None,
) -> int | None:
    """The tuning rule of [B] App. C.2: sweep min_sep upward from ``start`` until Alg. 4 fails.

    Returns:
        The largest feasible min_sep (one less than the first that fails), or ``None`` when
        ``start`` itself fails. Values above T behave like T (a user then appears at most
        once), so the sweep stops at T.
    """
    check_int_at_least("start", start, 1)
    best = None
    m = start
    while m <= iterations:
        if min_sep_batches(graph, iterations, batch_size, m, sequence).failed:
            break
        best = m
        m += 1
    return best
