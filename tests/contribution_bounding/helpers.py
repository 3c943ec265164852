"""Test helpers of contribution bounding: the papers' toys, the chain, batches of instances.

A *batch* is the disjoint union of many small random instances (ids prefixed per instance).
The algorithms treat disjoint components independently and in lock step, so one Spark run
over a batch checks every component at once, round by round
(docs/design/bounding.md#greedy-equivalence asks for ≥ 1,000 instances in Python; Spark runs use
batches).
"""

from __future__ import annotations

import random
from typing import Any

from spark_dp.contribution_bounding import CompactHypergraph
from tests.reference import contribution_bounding as ref

# [B] Figure 1 (docs/design/bounding.md#toy-instances): e1..e5 over users A..D.
FIG1 = {"e1": "AB", "e2": "ABC", "e3": "BD", "e4": "CB", "e5": "DC"}
# [B] §5.2 (docs/design/bounding.md#toy-instances): r1 = (A), r2 = (A,B), r3 = (A,C), r4 = (B,C), r5
# = (A,D).
TOY52 = {"r1": "A", "r2": "AB", "r3": "AC", "r4": "BC", "r5": "AD"}


def as_records(mapping: dict, user_prefix: str = "") -> ref.Records:
    """{record: "ABC"} -> {record: frozenset of user ids}."""
    return {r: frozenset(f"{user_prefix}{u}" for u in us) for r, us in mapping.items()}


def chain(n: int = 21, prefix: str = "c") -> ref.Records:
    """docs/design/bounding.md#toy-instances: records r_i = {i, i+1}, i = 0..n-1."""
    return {f"{prefix}{i:02d}": frozenset({f"{prefix}v{i}", f"{prefix}v{i + 1}"}) for i in range(n)}


def graph_of(records: ref.Records, caps: ref.Caps) -> CompactHypergraph:
    """The compact form of a reference instance (caps cover every user)."""
    return CompactHypergraph.from_mapping(records, capacities=caps)


def batch(
    seed: int, n: int, default_cap: int = 2, **kw: Any
) -> tuple[ref.Records, ref.Caps, ref.Caps]:
    """Disjoint union of ``n`` random T2 instances: (records, caps, per-user cap table)."""
    rng = random.Random(seed)
    records: ref.Records = {}
    caps: ref.Caps = {}
    table: ref.Caps = {}
    for k in range(n):
        r, c, t = ref.random_instance(rng, prefix=f"i{k}-", default_cap=default_cap, **kw)
        records.update(r)
        caps.update(c)
        table.update(t)
    return records, caps, table


def incidence_rows(records: ref.Records, rng: random.Random | None = None) -> list[tuple]:
    """(record_id, user_id) rows; with ``rng``: shuffled, with some rows repeated."""
    rows = [(h, u) for h, us in records.items() for u in sorted(us)]
    if rng is not None:
        rows += [rng.choice(rows) for _ in range(len(rows) // 10)] if rows else []
        rng.shuffle(rows)
    return rows


def key_seed(seed: int, release: str = "test") -> int:
    """The order seed of a run keyed by ``Randomness.create(seed).bind(release)`` (derived
    from the bound key; a job's release id is in its report, ``release.id``)."""
    from spark_dp.contribution_bounding.state_store import order_seed
    from spark_dp.randomness import Randomness

    return order_seed(Randomness.create(seed).bind(release), None)
