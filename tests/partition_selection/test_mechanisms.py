"""End-to-end mechanisms on a small dataset: outputs, round structure, report account."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from chispa import assert_df_equality

from spark_dp.dp.calibration import Budget
from spark_dp.partition_selection import ALGORITHMS
from spark_dp.partition_selection.calibration import WeightAndThreshold
from spark_dp.partition_selection.columns import BIAS, ITEM, NOISY_WEIGHT, USER_ID
from spark_dp.partition_selection.mad2r import round_two_items, round_two_pairs
from tests.partition_selection.helpers import as_dict, item_set, select
from tests.reference import partition_selection as ref


def small_sets(n_users: int = 800, seed: int = 3) -> dict:
    """A heavy item, 30 items of graded popularity, and one singleton per user."""
    rng = np.random.default_rng(seed)
    sets = {}
    for u in range(n_users):
        items = {"heavy", f"single{u}"}
        items |= {f"m{k}" for k in range(30) if rng.random() < 0.6 / (k + 1)}
        sets[f"u{u}"] = items
    return sets


@pytest.fixture(scope="module")
def small_pairs(spark):
    rows = [(u, i) for u, s in small_sets().items() for i in s]
    df = spark.createDataFrame(rows, "user_id string, item string").persist()
    df.count()
    yield df
    df.unpersist()


UNION = {i for s in small_sets().values() for i in s}
SINGLETONS = {i for i in UNION if i.startswith("single")}


_RUNS: dict = {}


def default_run(pairs, algorithm: str):
    """The selection of ``algorithm`` at the defaults with Δ0 = 10 and seed 5 (memoized)."""
    if algorithm not in _RUNS:
        _RUNS[algorithm] = select(pairs, 5, algorithm=algorithm, max_contributions=10)
    return _RUNS[algorithm]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_each_algorithm_releases_items_only(small_pairs, algorithm):
    selection = default_run(small_pairs, algorithm)
    assert selection.items.columns == [ITEM]
    items = item_set(selection.items)
    assert len(items) == selection.output_items  # rounds select disjoint items
    assert items <= UNION
    assert "heavy" in items  # held by all 800 users
    assert not items & SINGLETONS
    info = selection.report_info()
    assert info["epsilon"] == pytest.approx(1.0)
    assert info["delta"] == pytest.approx(1e-5)
    text = json.dumps(info)
    for forbidden in ("weight_private", "union", "single", "user_count"):
        assert forbidden not in text
    n_rounds = {"mad2r": 2, "dp-sips": 2}.get(algorithm, 1)
    assert [r["label"] for r in info["rounds"]] == [f"round {r + 1}" for r in range(n_rounds)]


def test_seeded_runs_repeat_and_other_seeds_differ(spark):
    rows = [(f"u{u}", f"i{(u * 7 + j) % 40}") for u in range(400) for j in range(1 + u % 9)]
    pairs = spark.createDataFrame(rows, "user_id string, item string")
    a = select(pairs, 1, algorithm="basic", max_contributions=5)
    b = select(pairs, 1, algorithm="basic", max_contributions=5)
    assert_df_equality(a.items, b.items, ignore_row_order=True)
    c = select(pairs, 2, algorithm="basic", max_contributions=5)
    assert item_set(c.items) != item_set(a.items)  # ~40 items sit near the threshold


def test_mad2r_round_one_is_mad_at_the_round_one_budget(small_pairs):
    # Same seed, same streams: MAD2R's round 1 must equal a single MAD run with (0.1ε, 0.1δ),
    # σ1 for δ1/2 and ρ1 for δ1/2 (docs/design/selection.md#mad2r-delta, #split). The output
    # contains round 1.
    two = default_run(small_pairs, "mad2r")
    one = select(
        small_pairs, 5, algorithm="mad", epsilon=0.1, delta=1e-6, max_contributions=10,
        max_adaptive_degree=50, beta=2.0,
    )  # fmt: skip
    u1 = item_set(two.rounds[0].items)
    assert u1 == item_set(one.items)
    assert u1  # "heavy" is found in round 1
    out = item_set(two.items)
    assert out >= u1
    assert not u1 & item_set(two.rounds[1].items)
    r1, r2 = two.report_info()["rounds"]
    expected1 = one.rounds[0].calibration
    assert (r1["sigma"], r1["rho"], r1["tau"]) == (
        expected1["sigma"],
        expected1["rho"],
        expected1["tau"],
    )
    expected2 = WeightAndThreshold.for_budget(Budget(0.9, 9e-6), 10, h_scale=2.0)
    assert (r2["epsilon"], r2["delta"]) == (pytest.approx(0.9), pytest.approx(9e-6))
    assert (r2["sigma"], r2["rho"]) == (expected2.sigma, expected2.rho)
    assert r2["h_scale"] == 2.0 and r2["b_min"] == 0.5 and r2["min_adaptive_degree"] == 4
    assert r2["tau"] == pytest.approx(r2["rho"] + 2 * r2["sigma"])
    assert r2["alpha"] == pytest.approx(0.5 - 1 / (2 * math.sqrt(50)))


def test_dp_sips_round_one_is_basic_and_rounds_are_disjoint(small_pairs):
    three = select(
        small_pairs, 4, algorithm="dp-sips", max_contributions=100, split=(0.05, 0.15, 0.8)
    )
    first = select(
        small_pairs, 4, algorithm="basic", epsilon=0.05, delta=5e-7, max_contributions=100
    )
    assert item_set(three.rounds[0].items) == item_set(first.items)
    seen: set = set()
    for r in three.rounds:
        items = item_set(r.items)
        assert not items & seen
        seen |= items
    assert seen == item_set(three.items)
    rhos = [r["rho"] for r in three.report_info()["rounds"]]
    # docs/design/selection.md#vectors DP-SIPS [.05, .15, .8] rows
    assert rhos == pytest.approx([442.283402, 143.233582, 26.015597], rel=1e-6)


def test_dp_sips_without_recap_keeps_the_round_one_cap(small_pairs):
    sel = select(
        small_pairs, 4, algorithm="dp-sips", max_contributions=10, split=(0.1, 0.9),
        recap_each_round=False,
    )  # fmt: skip
    assert "heavy" in item_set(sel.items)
    assert sel.mechanism["recap_each_round"] is False


def test_round_two_items_fixture_f4(spark, cache):
    # docs/design/selection.md#fixtures, F4: σ1 = 10, ρ1 = 50, ρ2 = 20, C_lb = 1, C_ub = 3.
    values = {"X": 60.0, "Y": 45.0, "Z": 25.0, "Q": -12.0, "R": -10.0}
    noisy = spark.createDataFrame(list(values.items()), f"{ITEM} string, {NOISY_WEIGHT} double")
    removed, biased = round_two_items(
        noisy, sigma1=10.0, rho1=50.0, rho2=20.0, c_lb=1.0, c_ub=3.0, cache=cache
    )
    assert item_set(removed) == {"X", "Q"}  # U1, and U_low (ub = 18 < 20)
    assert as_dict(biased, value=BIAS) == pytest.approx({"Y": 20 / 35})
    capped = spark.createDataFrame(
        [("u1", i) for i in values] + [("u2", "Z")], f"{USER_ID} string, {ITEM} string"
    )
    got = {
        (r[USER_ID], r[ITEM]): r[BIAS] for r in round_two_pairs(capped, removed, biased).collect()
    }
    # Z (lb = 15 < 20) and R (ub = 20 is not < 20, the boundary) stay unbiased.
    assert got == pytest.approx(
        {("u1", "Y"): 20 / 35, ("u1", "Z"): 1.0, ("u1", "R"): 1.0, ("u2", "Z"): 1.0}
    )
    found, low, bias = ref.round_two(values, 10.0, 50.0, 20.0, 1.0, 3.0)
    assert (found | low, {i: b for i, b in bias.items() if b < 1}) == (
        item_set(removed),
        pytest.approx(as_dict(biased, value=BIAS)),
    )
