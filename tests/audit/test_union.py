"""The audit's speed-up is exact: one run on a disjoint union of copies releases, copy by copy,
what a run on each copy alone releases with the same key (every registry mechanism)."""

from __future__ import annotations

import numpy as np
import pytest

from spark_dp.audit.scenario import Copies, split_by_copy
from spark_dp.audit.targets import Settings, build_target
from spark_dp.partition_selection.registry import REGISTRY
from spark_dp.randomness import Randomness


def dataset(seed: int) -> dict[str, list[str]]:
    """Users with a popular item (truncated by MAD), shared mid items and own items."""
    rng = np.random.default_rng(seed)
    sets = {}
    for u in range(40):
        items = {"pop"} if rng.random() < 0.8 else set()
        items |= {f"mid{int(k)}" for k in rng.integers(0, 6, size=int(rng.integers(0, 4)))}
        items |= {f"own{u}-{k}" for k in range(int(rng.integers(0, 3)))}
        sets[f"u{u}"] = sorted(items or {"lonely"})
    return sets


@pytest.mark.slow
@pytest.mark.parametrize("name", REGISTRY.names)
def test_union_run_equals_the_runs_on_each_copy(spark, name):
    target = build_target(name, Settings(fast=True, overrides={"max_contributions": 3}))
    copies = [dataset(s) for s in range(2)]
    key = Randomness.create(5).bind("test")  # the targets draw directly: a bound test key
    union = split_by_copy(target.released(Copies(tuple((c, 1) for c in copies)), key, spark))
    for k, sets in enumerate(copies):
        # copy k alone, with the names it has in the union (index k)
        before = tuple(({}, 1) for _ in range(k))
        alone = split_by_copy(target.released(Copies((*before, (sets, 1))), key, spark))
        assert union.get(k, set()) == alone.get(k, set()), (name, k)
    released = set().union(*union.values())
    union_items = {i for sets in copies for items in sets.values() for i in items}
    assert released and len(released) < len(union_items) * len(copies)  # a real selection
