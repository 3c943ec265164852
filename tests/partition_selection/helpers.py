"""Helpers of the partition-selection tests: small random datasets (plain numpy) and readers of
small DataFrames. Fixtures live in conftest.py; nothing else is shared between test modules."""

from __future__ import annotations

import numpy as np
from pyspark.sql import DataFrame

from spark_dp.partition_selection import PartitionSelectionParams, Selection, select_partitions
from spark_dp.partition_selection.columns import ITEM, WEIGHT
from spark_dp.randomness import Randomness

POPULAR = [f"p{k}" for k in range(8)]
RARE = [f"r{k}" for k in range(40)]


def random_sets(rng: np.random.Generator, n_users: int, max_degree: int = 12) -> dict:
    """``{user: set(items)}`` mixing a few popular items with rarer ones."""
    sets = {}
    for u in range(n_users):
        d = int(rng.integers(1, max_degree + 1))
        items = set()
        for _ in range(d):
            pool = POPULAR if rng.random() < 0.6 else RARE
            items.add(str(pool[int(rng.integers(len(pool)))]))
        sets[f"u{u}"] = items
    return sets


def random_neighbour(rng: np.random.Generator, sets: dict) -> tuple[dict, set]:
    """``sets`` plus a new user ``v`` (degree 1..60): (neighbour dataset, v's novel items)."""
    d = int(rng.integers(1, 61))
    n_novel = int(rng.integers(0, d + 1))
    union = sorted({i for s in sets.values() for i in s})
    novel = {f"new{k}" for k in range(n_novel)}
    items = set(novel)
    if union:
        old = rng.choice(union, size=min(d - n_novel, len(union)), replace=False)
        items |= {str(i) for i in old}
    if not items:
        novel = {"new0"}
        items = set(novel)
    bigger = dict(sets)
    bigger["v"] = items
    return bigger, novel


def random_biases(rng: np.random.Generator, items, share: float = 0.4) -> dict:
    """Biases in [0.05, 1) on a random share of ``items`` (the others are unbiased)."""
    return {i: float(rng.uniform(0.05, 1.0)) for i in sorted(items) if rng.random() < share}


def prefixed(datasets: list[dict]) -> dict:
    """Disjoint union of datasets (names prefixed ``k:``): weightings act on each part alone."""
    out = {}
    for k, sets in enumerate(datasets):
        for u, items in sets.items():
            out[f"{k}:{u}"] = {f"{k}:{i}" for i in items}
    return out


def part(weights: dict, k: int) -> dict:
    """The weights of part ``k`` of a :func:`prefixed` union, names unprefixed."""
    prefix = f"{k}:"
    return {i[len(prefix) :]: w for i, w in weights.items() if i.startswith(prefix)}


def as_dict(df: DataFrame, key: str = ITEM, value: str = WEIGHT) -> dict:
    """Collect a small two-column DataFrame into a dict (tests only)."""
    return {r[key]: r[value] for r in df.collect()}


def item_set(df: DataFrame) -> set:
    """The items of a small (item) DataFrame (tests only)."""
    return {r[ITEM] for r in df.collect()}


def select(
    pairs: DataFrame, seed: int = 1, *, validate: bool = False, **params: object
) -> Selection:
    """One seeded run of ``select_partitions`` (tests only); ``params`` build the
    :class:`PartitionSelectionParams`. By default the pairs are taken as already valid (not
    digested: the test key is then bound to a fixed test release id)."""
    p = PartitionSelectionParams(**params)  # type: ignore[arg-type]
    randomness = Randomness.create(seed)
    if not validate:
        randomness = randomness.bind("test")
    return select_partitions(pairs, p, randomness, validate=validate)
