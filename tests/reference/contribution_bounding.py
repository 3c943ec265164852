"""Pure-Python reference of contribution bounding, written from docs/design/bounding.md, independent
of spark_dp.

docs/design/bounding.md#proposal-rounds (proposal rounds, literal sets), #orders (SHA-256 keys),
#greedy (Alg. 2, 3, 4 pseudocode), #bias-mitigating (literal interleave), #ilp (the optimum, here by
#exhaustive search on tiny instances). Deliberately naive: dicts and sets, full passes, no
shortcuts (e.g. Alg. 3 re-scans every record in every pass), so that agreement with the
package is evidence rather than repetition.

Instances are ``records: {record_id: frozenset(user ids)}`` and ``caps: {user id: cap}``
covering every user.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections.abc import Callable
from functools import partial
from typing import Any

Records = dict[str, frozenset[str]]
Caps = dict[str, int]
Seed = int | str
SharedKey = Callable[[str], Any]
"""key(h) of a shared order (lower = preferred)."""
UserKey = Callable[[str, str], Any]
"""key(u, h) of user u's own order (lower = preferred)."""


def prio(seed: Seed, record_id: object) -> str:
    """Lowercase hex SHA-256 of f"{seed}:{record_id}"."""
    return hashlib.sha256(f"{seed}:{record_id}".encode()).hexdigest()


def user_prio(seed: Seed, user_id: object, record_id: object) -> str:
    """Lowercase hex SHA-256 of f"{seed}:{user_id}:{record_id}"."""
    return hashlib.sha256(f"{seed}:{user_id}:{record_id}".encode()).hexdigest()


def shared_key(
    order: str, records: Records, seed: Seed, weights: dict[str, float] | None = None
) -> SharedKey:
    """key(h) of a shared order; weights: {record_id: w} (missing = 0)."""
    w = weights or {}
    if order == "size-hash":
        return lambda h: (len(records[h]), prio(seed, h), h)
    if order == "hash":
        return lambda h: (prio(seed, h), h)
    if order == "weighted-global":
        return lambda h: (-w.get(h, 0.0), prio(seed, h), h)
    raise ValueError(order)


def per_user_key(seed: Seed, weights: dict[tuple[str, str], float] | None = None) -> UserKey:
    """key(u, h) of per-user orders; weights: {(record_id, user_id): w} (missing = 0)."""
    w = weights or {}
    return lambda u, h: (-w.get((h, u), 0.0), user_prio(seed, u, h), h)


def greedy(
    records: Records, caps: Caps, key: SharedKey, counts: dict[str, int] | None = None
) -> set[str]:
    """Greedy(π) / Alg. 2: one pass; keep h iff every user has count < cap."""
    count = dict.fromkeys(caps, 0) if counts is None else dict(counts)
    out: set[str] = set()
    for h in sorted(records, key=key):
        if all(count[u] < caps[u] for u in records[h]):
            out.add(h)
            for u in records[h]:
                count[u] += 1
    return out


def greedy_dup(records: Records, caps: Caps, key: SharedKey) -> tuple[dict[str, int], int]:
    """Alg. 3: full passes over all records until one adds nothing; (multiplicities, passes
    that added something)."""
    if any(len(us) == 0 for us in records.values()):
        raise ValueError("records without users never stop Alg. 3")
    count = dict.fromkeys(caps, 0)
    mult = dict.fromkeys(records, 0)
    order = sorted(records, key=key)
    passes = 0
    while True:
        added = 0
        for h in order:
            if all(count[u] < caps[u] for u in records[h]):
                mult[h] += 1
                added += 1
                for u in records[h]:
                    count[u] += 1
        if not added:
            return {h: m for h, m in mult.items() if m}, passes
        passes += 1


def proposal_rounds(
    records: Records,
    caps: Caps,
    key: UserKey,
    *,
    max_rounds: int | None = None,
    fallback: UserKey | None = None,
    counts: dict[str, int] | None = None,
) -> tuple[set[str], list[tuple[frozenset[str], frozenset[str]]], dict[str, int], int | None]:
    """docs/design/bounding.md#proposal-rounds literally. key(u, h) ranks u's records (lower =
    preferred).

    Returns:
        (M, history, d, switched_after): history[r-1] = (accepted in round r, E after it);
        switched_after = round after which the fallback shared order was used (P7) or None.
    """
    users = set(caps)
    d = dict.fromkeys(users, 0) if counts is None else dict(counts)
    sat = {u: d[u] >= caps[u] for u in users}
    eligible = {h for h, us in records.items() if not any(sat[u] for u in us)}
    chosen: set[str] = set()
    history: list[tuple[frozenset[str], frozenset[str]]] = []
    switched: int | None = None
    r = 0
    while eligible and (max_rounds is None or r < max_rounds):
        r += 1
        proposals: dict[str, set[str]] = {}
        for u in users:
            if sat[u]:
                continue
            mine = sorted((h for h in eligible if u in records[h]), key=partial(key, u))
            proposals[u] = set(mine[: caps[u] - d[u]])
        accepted = {h for h in eligible if all(h in proposals[u] for u in records[h])}
        chosen |= accepted
        eligible -= accepted
        for h in accepted:
            for u in records[h]:
                d[u] += 1
        newly = {u for u in users if not sat[u] and d[u] >= caps[u]}
        for u in newly:
            sat[u] = True
        eligible = {h for h in eligible if not (records[h] & newly)}
        history.append((frozenset(accepted), frozenset(eligible)))
        if not accepted and eligible:
            if fallback is None:
                raise RuntimeError("no progress")
            key, fallback, switched = fallback, None, r
    return chosen, history, d, switched


def min_sep_batches(
    records: Records, key: SharedKey, iterations: int, batch: int, min_sep: int
) -> list[str] | None:
    """Alg. 4 (docs/design/bounding.md#min-sep): the list of T·B record ids, or None on FAIL."""
    order = sorted(records, key=key)
    n = len(order)
    out: list[str] = []
    last: dict[str, int] = {}
    misses = pos = 0
    while len(out) < iterations * batch:
        if n == 0:
            return None
        h = order[pos % n]
        pos += 1
        t = len(out) // batch
        if all(u not in last or t - last[u] >= min_sep for u in records[h]):
            out.append(h)
            for u in records[h]:
                last[u] = t
            misses = 0
        else:
            misses += 1
            if misses >= n:
                return None
    return out


def interleave(small: list[Any], large: list[Any], c1: int, c2: int) -> list[Any]:
    """c1 from small, c2 from large, repeat; then the rest of whichever list is left."""
    out: list[Any] = []
    i = j = 0
    while i < len(small) or j < len(large):
        out += small[i : i + c1]
        i += c1
        out += large[j : j + c2]
        j += c2
    return out


def degrees(records: Records, mult: dict[str, int]) -> dict[str, int]:
    """d(u) = Σ_{h ∋ u} mult(h)."""
    d: dict[str, int] = {}
    for h, m in mult.items():
        for u in records[h]:
            d[u] = d.get(u, 0) + m
    return d


def feasible(records: Records, caps: Caps, mult: dict[str, int]) -> bool:
    """Every user within its capacity."""
    return all(v <= caps[u] for u, v in degrees(records, mult).items())


def maximal(records: Records, caps: Caps, chosen: set[str]) -> bool:
    """No unselected record fits."""
    d = degrees(records, dict.fromkeys(chosen, 1))
    return all(h in chosen or any(d.get(u, 0) >= caps[u] for u in us) for h, us in records.items())


def optimum(records: Records, caps: Caps, duplicates: bool = False) -> int:
    """Exact optimum by exhaustive search (tiny instances only)."""
    ids = sorted(records)
    if not duplicates:
        best = 0
        for k in range(len(ids), 0, -1):
            if k <= best:
                break
            for combo in itertools.combinations(ids, k):
                if feasible(records, caps, dict.fromkeys(combo, 1)):
                    return k
        return best
    ubs = [min(caps[u] for u in records[h]) for h in ids]
    best = 0

    def search(i: int, left: dict[str, int], total: int) -> None:
        nonlocal best
        if total + sum(ubs[i:]) <= best:
            return
        if i == len(ids):
            best = max(best, total)
            return
        h = ids[i]
        top = min(left[u] for u in records[h])
        for m in range(top, -1, -1):
            for u in records[h]:
                left[u] -= m
            search(i + 1, left, total + m)
            for u in records[h]:
                left[u] += m

    search(0, dict(caps), 0)
    return best


def random_instance(
    rng: random.Random,
    *,
    max_users: int = 15,
    max_records: int = 40,
    prefix: str = "",
    default_cap: int = 2,
) -> tuple[Records, Caps, Caps]:
    """docs/design/bounding.md#greedy-equivalence instance: 1–15 users, 0–40 records of size 1–4,
    some parallel records, ~30% of users with their own cap in {0..3}.

    Returns:
        (records, caps of every user, the per-user table: the users with their own cap).
    """
    n_users = rng.randint(1, max_users)
    users = [f"{prefix}u{i}" for i in range(n_users)]
    records: Records = {}
    for i in range(rng.randint(0, max_records)):
        if records and rng.random() < 0.15:  # a parallel record: same users, new id
            us = rng.choice(list(records.values()))
        else:
            us = frozenset(rng.sample(users, rng.randint(1, min(4, n_users))))
        records[f"{prefix}r{i}"] = us
    table = {u: rng.randint(0, 3) for u in users if rng.random() < 0.3}
    caps = {u: table.get(u, default_cap) for u in users}
    return records, caps, table
