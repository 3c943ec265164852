"""Claiming a work directory: the order seed and the resume fingerprint
(docs/design/bounding.md#round-plan, #seed)."""

from __future__ import annotations

from spark_dp.contribution_bounding import BoundingParams, ContributionBoundingParams
from spark_dp.contribution_bounding.state_store import fingerprint_params, order_seed
from spark_dp.randomness import Randomness


def test_the_order_seed_comes_from_the_key_or_a_resumed_run() -> None:
    seven = order_seed(Randomness.create(7).bind("test"), None)
    assert seven == order_seed(Randomness.create(7).bind("test"), {"seed": 3})  # a key fixes it
    assert seven != order_seed(Randomness.create(8).bind("test"), None)
    assert order_seed(Randomness.create().bind("test"), {"seed": 3}) == 3  # entropy, resuming
    fresh = {
        order_seed(Randomness.create().bind("test"), None) for _ in range(4)
    }  # entropy, new run
    assert len(fresh) == 4 and all(0 <= s < 2**63 for s in fresh | {seven})


def test_the_fingerprint_keeps_what_changes_the_answer() -> None:
    base = fingerprint_params(BoundingParams(max_contributions=2))
    same = ContributionBoundingParams(
        max_contributions=2,
        work_dir="w",
        keep_work_dir=True,
        driver_threshold_rows=0,
        salt_buckets=8,
    )
    assert fingerprint_params(same) == base  # paths and speed knobs never change the answer
    assert fingerprint_params(BoundingParams(max_contributions=3)) != base
    assert "max_rounds" not in base and "finish" not in base  # exhaustive: R does not matter
    stopped = fingerprint_params(BoundingParams(max_contributions=2, finish="none", max_rounds=3))
    assert (stopped["finish"], stopped["max_rounds"]) == ("none", 3)
