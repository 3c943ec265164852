"""The proposal rounds of [A] simulated on the driver with vectorized numpy.

Same semantics as the distributed rounds (docs/design/bounding.md#proposal-rounds), on a
:class:`~spark_dp.contribution_bounding.hypergraph.CompactHypergraph`: every unsaturated user
proposes its best cap(u) − d(u) eligible records, a record is accepted when all its users
propose it, degrees and saturation update, and records of saturated users leave the eligible
set. Each round costs O(incidences).

Uses: the driver finish of a run with per-user orders (where P6 does not hold, so the rounds
themselves must be continued), round counts in experiments, and cross-checks in tests.
With a shared order the result at exhaustion equals :func:`~.greedy.greedy`
(docs/design/bounding.md#greedy-equivalence).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from spark_dp.contribution_bounding.hypergraph import CompactHypergraph

__all__ = ["DriverRounds", "shared_incidence_key", "simulate_rounds"]


@dataclass
class DriverRounds:
    """State after simulated rounds.

    Attributes:
        accepted_round: per record, the round (1, 2, ...) that accepted it, 0 if none.
        eligible: records still eligible (undecided) when the simulation stopped.
        degree: d(u) per user.
        rounds: rounds run.
        stalled: True when the last round accepted nothing while records were eligible
            (only possible with per-user orders, docs/design/bounding.md#per-user-orders); the
            caller must switch orders.
        log: per round: accepted, newly_saturated, eligible_records (left), proposals.
    """

    accepted_round: np.ndarray
    eligible: np.ndarray
    degree: np.ndarray
    rounds: int
    stalled: bool = False
    log: list[dict[str, int]] = field(default_factory=list)

    @property
    def selected(self) -> np.ndarray:
        """Boolean mask of accepted records."""
        return self.accepted_round > 0


def shared_incidence_key(graph: CompactHypergraph, sequence: np.ndarray) -> np.ndarray:
    """Per-incidence key of a shared order: the record's position in ``sequence``."""
    position = np.empty(graph.n_records, dtype=np.int64)
    position[np.asarray(sequence, dtype=np.int64)] = np.arange(graph.n_records)
    return position[graph.record_of_incidence]


def simulate_rounds(
    graph: CompactHypergraph,
    key: np.ndarray,
    *,
    max_rounds: int | None = None,
    counts: np.ndarray | None = None,
) -> DriverRounds:
    """Run proposal rounds until no record is eligible, ``max_rounds``, or a stall.

    Args:
        graph: records and capacities.
        key: int64 per incidence (aligned with ``graph.users``): user u prefers the records
            with smaller keys among its incidences; must be strict within each user.
        max_rounds: stop after this many rounds (``None``: run to exhaustion or a stall).
        counts: starting d(u) (default zeros). Users with d ≥ cap start saturated and their
            records are not eligible (docs/design/bounding.md#proposal-rounds, the cap = 0 rule A7).

    Returns:
        The state reached; ``stalled`` tells a per-user order deadlocked
        (docs/design/bounding.md#per-user-orders).
    """
    n, m = graph.n_records, graph.n_users
    rec = graph.record_of_incidence
    users = graph.users
    cap = graph.cap
    sizes = graph.sizes
    d = np.zeros(m, dtype=np.int64) if counts is None else np.asarray(counts, np.int64).copy()
    sat = d >= cap
    eligible = np.bincount(rec, weights=sat[users], minlength=n) == 0
    perm = np.lexsort((np.asarray(key, dtype=np.int64), users))  # by user, then key
    accepted_round = np.zeros(n, dtype=np.int64)
    out = DriverRounds(accepted_round, eligible, d, 0)
    while eligible.any() and (max_rounds is None or out.rounds < max_rounds):
        out.rounds += 1
        p = perm[eligible[rec[perm]]]
        u = users[p]
        starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
        rank = np.arange(len(p)) - np.repeat(starts, np.diff(np.r_[starts, len(p)]))
        proposed = p[rank < (cap - d)[u]]
        votes = np.bincount(rec[proposed], minlength=n)
        acc = eligible & (votes == sizes)
        accepted_round[acc] = out.rounds
        d += np.bincount(users[acc[rec]], minlength=m)
        newly = (d >= cap) & ~sat
        sat |= newly
        dead = np.bincount(rec, weights=newly[users], minlength=n) > 0
        eligible &= ~acc & ~dead
        out.log.append(
            {
                "round": out.rounds,
                "proposals": len(proposed),
                "accepted": int(acc.sum()),
                "newly_saturated": int(newly.sum()),
                "eligible_records": int(eligible.sum()),
            }
        )
        if not acc.any() and eligible.any():
            out.stalled = True
            break
    out.eligible = eligible
    out.degree = d
    return out
