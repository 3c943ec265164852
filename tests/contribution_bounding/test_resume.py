"""Resuming from a work directory (docs/design/bounding.md#round-plan), on the chain of T6 and a
random batch.

The run uses the weighted-global order with keys increasing along the chain, 3 distributed
rounds and then the driver finish (T3/P6). It crashes after round 2; the rerun with the same
arguments continues after round 2 and returns exactly the uninterrupted answer (the
reference greedy): M_3 holds r0, r2, r4 of the chain and the driver completes it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from spark_dp.contribution_bounding import BoundingParams, WorkDirMismatchError, bound_contributions
from spark_dp.contribution_bounding.passes import RoundLog
from spark_dp.randomness import Randomness
from tests.contribution_bounding.helpers import batch, chain, incidence_rows, key_seed
from tests.reference import contribution_bounding as ref

pytestmark = pytest.mark.usefixtures("aqe_off")


class Crash(RuntimeError):
    """Stands for an executor or driver failure after a round was saved."""


def _instance() -> tuple[ref.Records, ref.Caps, ref.Caps, dict[str, float], ref.Records]:
    rng = random.Random(2)
    records, caps, table = batch(seed=2, n=12)
    weights = {h: float(rng.randint(0, 2)) for h in records if rng.random() < 0.8}  # rest: 0
    path = chain(21)
    chain_users = {u for us in path.values() for u in us}
    records.update(path)
    caps.update(dict.fromkeys(chain_users, 1))
    table.update(dict.fromkeys(chain_users, 1))
    weights.update({h: -float(i) for i, h in enumerate(sorted(path))})  # −w = i, increasing
    return records, caps, table, weights, path


def test_a_crashed_run_resumes_after_its_last_saved_round(
    spark: SparkSession, tmp_path: Path
) -> None:
    records, caps, table, weights, path = _instance()
    inc = spark.createDataFrame(incidence_rows(records), "record_id string, user_id string")
    caps_df = spark.createDataFrame(list(table.items()), "user_id string, cap long")
    w_df = spark.createDataFrame(list(weights.items()), "record_id string, weight double")
    params = BoundingParams(
        max_contributions=2,
        order="weighted-global",
        max_rounds=3,
        finish="driver-greedy",
        driver_threshold_rows=0,
    )
    work = str(tmp_path / "work")
    run: dict[str, Any] = dict(
        capacities=caps_df, record_weights=w_df, work_dir=work, validate=False
    )

    def crash_after_round_2(entry: RoundLog) -> None:
        if entry.round == 2:
            raise Crash("simulated failure")

    with pytest.raises(Crash):
        bound_contributions(
            inc,
            params,
            randomness=Randomness.create(4).bind("test"),
            on_round=crash_after_round_2,
            **run,
        )
    saved = json.loads((tmp_path / "work" / "pass-1" / "pass.json").read_text())
    assert len(saved["rounds"]) == 2 and not saved["done"]

    # Restart with the same arguments in entropy mode; the seed comes back from the work
    # directory.
    res = bound_contributions(inc, params, randomness=Randomness.create(), **run)
    s = res.summary
    assert s["resumed_from_round"] == 2 and s["seed"] == key_seed(4)
    assert s["rounds"] == 3 and len(s["round_log"]) == 3 and s["finish"]["stopped"] == "driver"

    key = ref.shared_key("weighted-global", records, key_seed(4), weights)
    _, history, _, _ = ref.proposal_rounds(records, caps, lambda u, h: key(h), max_rounds=3)
    by_round = {r["record_id"]: r["round"] for r in res.selected_by_round.collect()}
    for r, (accepted, _) in enumerate(history, start=1):
        assert {h for h, rr in by_round.items() if rr == r} == set(accepted), f"round {r}"
        upto = {h: 1 for h, rr in by_round.items() if 0 < rr <= r}
        assert ref.feasible(records, caps, upto)
    assert {h for h, r in by_round.items() if h in path and r > 0} == {"c00", "c02", "c04"}
    want = ref.greedy(records, caps, key)
    assert set(by_round) == want  # the driver cleanup gives the greedy answer (P6)
    assert {h for h in want if h in path} == {f"c{i:02d}" for i in range(0, 21, 2)}
    assert s["finish"]["driver_accepted"] == sum(1 for r in by_round.values() if r == 0)
    d = ref.degrees(records, dict.fromkeys(want, 1))
    assert {r["user_id"]: r["d"] for r in res.user_state.collect() if r["d"]} == d

    # The same directory with other parameters is refused.
    other = BoundingParams(max_contributions=3, order="weighted-global")
    with pytest.raises(WorkDirMismatchError, match="other inputs or parameters"):
        bound_contributions(inc, other, randomness=Randomness.create(4).bind("test"), **run)
