"""Synthetic hypergraphs: records (hyperedges) owned by several users.

Ganesh et al. 2025 ("It's My Data Too"), §5.1 and App. C.1; docs/design/bounding.md#generators.

Parameters shared by both kinds (docs/design/bounding.md#generators):

* ``n_records`` = |E|, records generated (before dropping empty ones);
* ``mean_size`` = μ = E[|e|] (the paper fixes μ = 2);
* ``records_per_user`` = d_u, the expected number of records per user;
* the number of users is m = |E|·μ/d_u (docs/design/bounding.md#generators);
* record sizes are Poisson(μ), so a fraction e^{−μ} of records has no user. By default those
  are dropped and counted (``empty_policy="drop"``, docs/design/bounding.md#generators); they must
  never reach the bounding algorithms.

Output ids are integers: ``record_id`` is the record's index among all generated records
(dropped empty records leave gaps), ``user_id`` lies in 0..m−1.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

from spark_dp.checks import check_int_at_least, check_positive
from spark_dp.errors import ParameterError

__all__ = [
    "GraphSample",
    "n_users_for",
    "regular_hypergraph",
    "regular_hypergraph_chunk",
    "skewed_hypergraph",
    "skewed_hypergraph_exact",
]


@dataclass
class GraphSample:
    """Incidences of a generated hypergraph plus the facts needed to describe it.

    Attributes:
        record_id, user_id: int64 arrays, one entry per (record, user) incidence.
        n_records: records generated, including empty ones.
        n_users: size of the user id space m.
        empty_records: records generated with no user (dropped from the incidences).
        generator: name of the model actually used (e.g. ``skewed_approx``).
    """

    record_id: np.ndarray
    user_id: np.ndarray
    n_records: int
    n_users: int
    empty_records: int
    generator: str

    def to_pandas(self) -> pd.DataFrame:
        """The incidences as a pandas DataFrame (record_id, user_id)."""
        import pandas as pd

        return pd.DataFrame({"record_id": self.record_id, "user_id": self.user_id})

    def sizes(self) -> np.ndarray:
        """Sizes of the kept (non-empty) records."""
        _, counts = np.unique(self.record_id, return_counts=True)
        return counts

    def degrees(self) -> np.ndarray:
        """Number of records of every user in 0..m−1 (zeros included)."""
        return np.bincount(self.user_id, minlength=self.n_users)


def n_users_for(n_records: int, mean_size: float, records_per_user: float) -> int:
    """m = |E|·μ/d_u (docs/design/bounding.md#generators), at least 1."""
    return max(1, round(n_records * mean_size / records_per_user))


def _check(n_records: int, mean_size: float, records_per_user: float) -> None:
    check_int_at_least("n_records", n_records, 1)
    check_positive("mean_size", mean_size)
    check_positive("records_per_user", records_per_user)


def _distinct_within_records(
    rec: np.ndarray,
    users: np.ndarray,
    redraw: Callable[[int], np.ndarray],
    max_rounds: int = 10_000,
) -> np.ndarray:
    """Redraw entries that repeat a user inside the same record until all are distinct.

    Rejection gives exactly sampling without replacement: a redrawn slot is distributed like
    a fresh draw conditioned on not repeating, i.e. proportionally among the users not yet
    chosen for that record.
    """
    users = users.copy()
    for _ in range(max_rounds):
        order = np.lexsort((users, rec))
        r, u = rec[order], users[order]
        dup = np.zeros(len(r), dtype=bool)
        dup[1:] = (r[1:] == r[:-1]) & (u[1:] == u[:-1])
        if not dup.any():
            return users
        idx = order[dup]
        users[idx] = redraw(len(idx))
    raise RuntimeError("could not draw distinct users per record (is m tiny?)")


def regular_hypergraph_chunk(
    seed: int,
    chunk: int,
    start: int,
    stop: int,
    n_users: int,
    mean_size: float,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Records ``start..stop-1`` of a probabilistic regular hypergraph.

    Each record draws its size n_i ~ Poisson(μ) (clipped to m), then n_i distinct users
    uniformly without replacement (docs/design/bounding.md#regular). The chunk's generator is seeded
    by SeedSequence([seed, chunk]), so a chunk is reproducible on its own.

    Returns:
        (record ids, user ids, number of empty records in the chunk).
    """
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), int(chunk)]))
    n = stop - start
    sizes = np.minimum(rng.poisson(mean_size, size=n), n_users)
    rec = np.repeat(np.arange(start, stop, dtype=np.int64), sizes)
    users = rng.integers(0, n_users, size=len(rec), dtype=np.int64)
    users = _distinct_within_records(
        rec, users, lambda k: rng.integers(0, n_users, size=k, dtype=np.int64)
    )
    return rec, users, int(np.sum(sizes == 0))


CHUNK_RECORDS = 200_000


def regular_hypergraph(
    n_records: int,
    *,
    records_per_user: float = 2.0,
    mean_size: float = 2.0,
    seed: int = 0,
) -> GraphSample:
    """A probabilistic regular hypergraph (Ganesh et al. App. C.1; docs/design/bounding.md#regular).

    Every record contains each of the m users with probability ≈ μ/m (Poisson arity), so
    user degrees are ≈ Poisson(d_u) and the maximum degree stays small.
    """
    _check(n_records, mean_size, records_per_user)
    m = n_users_for(n_records, mean_size, records_per_user)
    recs, users, empty = [], [], 0
    for chunk, start in enumerate(range(0, n_records, CHUNK_RECORDS)):
        r, u, e = regular_hypergraph_chunk(
            seed, chunk, start, min(start + CHUNK_RECORDS, n_records), m, mean_size
        )
        recs.append(r)
        users.append(u)
        empty += e
    return GraphSample(np.concatenate(recs), np.concatenate(users), n_records, m, empty, "regular")


def _attachment_draw(
    rng: np.random.Generator,
    count: int,
    *,
    total: float,
    n_fresh: int,
    cdf: np.ndarray,
    touched: np.ndarray,
    deg: np.ndarray,
) -> np.ndarray:
    """``count`` users drawn with probability ∝ (1 + deg)^α from a degree snapshot.

    ``cdf`` is the cumulative weight of the users already seen (``touched``); the ``n_fresh``
    users of degree 0 weigh 1 each and are drawn uniformly by rejection.
    """
    u = rng.random(count) * total
    out = np.empty(count, dtype=np.int64)
    fresh = u < n_fresh
    if len(cdf):
        j = np.searchsorted(cdf, u[~fresh] - n_fresh, side="right")
        out[~fresh] = touched[np.minimum(j, len(touched) - 1)]
    nf = int(fresh.sum())
    if nf:
        m = len(deg)
        picks = np.empty(0, dtype=np.int64)
        while len(picks) < nf:
            c = rng.integers(0, m, size=2 * (nf - len(picks)) + 8, dtype=np.int64)
            picks = np.concatenate([picks, c[deg[c] == 0]])
        out[fresh] = picks[:nf]
    return out


def skewed_hypergraph(
    n_records: int,
    *,
    records_per_user: float = 2.0,
    mean_size: float = 2.0,
    alpha: float = 1.5,
    seed: int = 0,
    block_fraction: float = 0.01,
) -> GraphSample:
    """A skewed hypergraph by preferential attachment, scalable approximation
    (docs/design/bounding.md#skewed).

    Records are made one after another. Record i draws n_i ~ Poisson(μ) users without
    replacement, each with probability ∝ (1 + deg(j))^α, where deg(j) counts the records that
    already contain user j (α = 1.5: superlinear, so hub users emerge).

    To run in seconds at 8M records, degrees are refreshed in blocks: the records of a block see
    the degrees at the start of the block, and a block holds ``block_fraction`` of the records
    made so far (at least one record). Early records, where the hubs are decided, are made one
    at a time. ``block_fraction → 0`` gives the sequential approximation exactly. Users
    of degree 0 all have weight 1 and are drawn uniformly, so the cost per block is linear in
    the number of users seen so far, not in m.

    Returns:
        A :class:`GraphSample` labelled ``skewed_approx``.
    """
    _check(n_records, mean_size, records_per_user)
    check_positive("alpha", alpha)
    if not 0 <= block_fraction < 1:
        raise ParameterError(f"block_fraction must lie in [0, 1), got {block_fraction!r}")
    m = n_users_for(n_records, mean_size, records_per_user)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x5E3]))
    sizes = np.minimum(rng.poisson(mean_size, size=n_records), m)
    deg = np.zeros(m, dtype=np.int64)
    touched = np.empty(0, dtype=np.int64)  # users with deg > 0, in order of first appearance
    out_rec, out_user = [], []
    pos = 0
    while pos < n_records:
        block = min(n_records - pos, max(1, math.ceil(block_fraction * pos)))
        bsizes = sizes[pos : pos + block]
        rec = np.repeat(np.arange(pos, pos + block, dtype=np.int64), bsizes)
        k = len(rec)
        if k:
            w = (1.0 + deg[touched]) ** alpha
            cdf = np.cumsum(w)
            n_fresh = m - len(touched)
            total = n_fresh + (cdf[-1] if len(cdf) else 0.0)

            draw = functools.partial(
                _attachment_draw,
                rng,
                total=total,
                n_fresh=n_fresh,
                cdf=cdf,
                touched=touched,
                deg=deg,
            )
            users = _distinct_within_records(rec, draw(k), draw)
            new = np.unique(users[deg[users] == 0])
            np.add.at(deg, users, 1)
            touched = np.concatenate([touched, new])
            out_rec.append(rec)
            out_user.append(users)
        pos += block
    rec_all = np.concatenate(out_rec) if out_rec else np.empty(0, np.int64)
    user_all = np.concatenate(out_user) if out_user else np.empty(0, np.int64)
    return GraphSample(rec_all, user_all, n_records, m, int(np.sum(sizes == 0)), "skewed_approx")


def skewed_hypergraph_exact(
    n_records: int,
    *,
    records_per_user: float = 2.0,
    mean_size: float = 2.0,
    alpha: float = 1.5,
    seed: int = 0,
) -> GraphSample:
    """The literal preferential-attachment model (docs/design/bounding.md#skewed), for small
    cross-checks only.

    Record i includes each user j independently with probability
    p_ij = min(1, μ·(1 + deg(j))^α / Σ_j' (1 + deg(j'))^α). Costs Θ(|E|·m).
    """
    _check(n_records, mean_size, records_per_user)
    m = n_users_for(n_records, mean_size, records_per_user)
    if n_records * m > 5e8:
        raise ParameterError(
            f"skewed_hypergraph_exact costs |E|·m = {n_records * m:.2g} draws; "
            "use skewed_hypergraph for large graphs"
        )
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0xE7A]))
    deg = np.zeros(m, dtype=np.int64)
    recs, users, empty = [], [], 0
    for i in range(n_records):
        w = (1.0 + deg) ** alpha
        p = np.minimum(1.0, mean_size * w / w.sum())
        chosen = np.flatnonzero(rng.random(m) < p)
        if len(chosen) == 0:
            empty += 1
            continue
        deg[chosen] += 1
        recs.append(np.full(len(chosen), i, dtype=np.int64))
        users.append(chosen.astype(np.int64))
    rec_all = np.concatenate(recs) if recs else np.empty(0, np.int64)
    user_all = np.concatenate(users) if users else np.empty(0, np.int64)
    return GraphSample(rec_all, user_all, n_records, m, empty, "skewed_exact")
