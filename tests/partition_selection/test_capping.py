"""Degree cap Δ0 (docs/design/selection.md#cap, invariants 3 and 4 of #invariants)."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import numpy as np
from chispa import assert_df_equality
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import Window
from pyspark.sql import functions as F
from scipy import stats as scipy_stats

from spark_dp.partition_selection.capping import cap_user_items, with_degree
from spark_dp.partition_selection.columns import DEGREE, ITEM, USER_ID
from spark_dp.partition_selection.layout import keep
from spark_dp.randomness import Randomness
from tests.partition_selection.helpers import random_neighbour, random_sets


def kept(df) -> dict:
    out: dict = {}
    for r in df.collect():
        out.setdefault(r[USER_ID], set()).add(r[ITEM])
    return out


def test_cap_is_uniform_and_depends_only_on_the_users_own_set(pairs_df):
    n, d0 = 3000, 3
    sets = {f"u{u}": [f"i{k}" for k in range(10)] for u in range(n)}
    sets.update({"small": ["a", "b"], "exact": ["x", "y", "z"]})
    capped = cap_user_items(pairs_df(sets), d0, Randomness.create(7).bind("test")).localCheckpoint()
    rows = capped.collect()
    got = kept(capped)
    assert got["small"] == {"a", "b"} and got["exact"] == {"x", "y", "z"}
    assert all(len(s) == d0 and s <= set(sets[u]) for u, s in got.items() if u.startswith("u"))
    assert {(r[USER_ID], r[DEGREE]) for r in rows if r[USER_ID] == "small"} == {("small", 2)}
    assert {r[DEGREE] for r in rows if r[USER_ID].startswith("u")} == {d0}
    # uniform: each item kept by ≈ n·3/10 users (binomial, 4 sd)
    counts = Counter(i for u, s in got.items() if u.startswith("u") for i in s)
    sd = math.sqrt(n * 0.3 * 0.7)
    assert all(abs(c - 0.3 * n) < 4 * sd for c in counts.values())
    # Other users' data never changes a user's kept subset (same secret salt).
    alone = kept(
        cap_user_items(
            pairs_df({u: sets[u] for u in ("u1", "u2")}), d0, Randomness.create(7).bind("test")
        )
    )
    assert alone == {"u1": got["u1"], "u2": got["u2"]}


def test_repeated_pairs_count_once(spark, pairs_df):
    """The cap is the step that drops repeated pairs (jobs do not deduplicate before it)."""
    rng = random.Random(3)
    sets = {
        f"u{u}": [f"i{rng.randrange(40)}" for _ in range(rng.randrange(1, 30))] for u in range(60)
    }
    distinct = {u: sorted(set(items)) for u, items in sets.items()}
    rows = [(u, i) for u, items in sets.items() for i in items for _ in range(rng.randrange(1, 4))]
    rng.shuffle(rows)
    repeated = spark.createDataFrame(rows, "user_id string, item string").repartition(3)
    assert repeated.count() > sum(map(len, distinct.values()))
    for d0 in (5, 100):
        got = cap_user_items(repeated, d0, Randomness.create(11).bind("test"))
        want = cap_user_items(pairs_df(distinct), d0, Randomness.create(11).bind("test"))
        assert_df_equality(got, want, ignore_row_order=True, ignore_nullable=True)
        degrees = {r[USER_ID]: r[DEGREE] for r in got.collect()}
        assert degrees == {u: min(len(s), d0) for u, s in distinct.items()}
        assert got.count() == sum(min(len(s), d0) for s in distinct.values())


def test_entropy_mode_draws_a_fresh_subsample(pairs_df):
    sets = {f"u{u}": [f"i{k}" for k in range(20)] for u in range(50)}
    a = kept(cap_user_items(pairs_df(sets), 5, Randomness.create().bind("test")))
    b = kept(cap_user_items(pairs_df(sets), 5, Randomness.create().bind("test")))
    assert a != b


def test_with_degree_recounts_after_removals(capped_df):
    capped = capped_df({"u1": "abc", "u2": "a"})
    reduced = with_degree(capped.where("item != 'a'").select(USER_ID, ITEM))
    assert {(r[USER_ID], r[ITEM], r[DEGREE]) for r in reduced.collect()} == {
        ("u1", "b", 2),
        ("u1", "c", 2),
    }


# --------------------------------------------------------------------------- issue 18


def salted_ranks(spark, sets: dict, randomness: Randomness) -> dict:
    """The rule of the cap, computed apart from it: each user's distinct items ordered by
    (salted hash of (user, item), item), the salt a literal here (the cap joins it as data)."""
    rows = [(u, i) for u, items in sets.items() for i in set(items)]
    df = spark.createDataFrame(rows, f"{USER_ID} string, {ITEM} string")
    h = F.xxhash64(F.lit(randomness.salt("capping")), F.col(USER_ID), F.col(ITEM))
    ordered: dict = {}
    for r in sorted(df.select(USER_ID, ITEM, h.alias("h")).collect(), key=lambda r: (r.h, r.item)):
        ordered.setdefault(r[USER_ID], []).append(r[ITEM])
    return ordered


def test_light_users_pass_through_and_heavy_users_keep_their_smallest_hashes(spark, pairs_df):
    """Users at or under Δ0 keep every distinct item (degree = their count); users over Δ0 keep
    exactly the Δ0 items of smallest salted hash: the rule of docs/design/selection.md#cap,
    unchanged by issue 18, so a fixed seed keeps the same subsets as before."""
    rng = random.Random(5)
    d0 = 6
    sets = {
        f"u{u}": [f"i{rng.randrange(30)}" for _ in range(rng.randrange(1, 16))] for u in range(80)
    }
    rows = [(u, i) for u, items in sets.items() for i in items for _ in range(rng.randrange(1, 3))]
    randomness = Randomness.create(21).bind("test")
    capped = cap_user_items(
        spark.createDataFrame(rows, "user_id string, item string"), d0, randomness
    )
    got = {(r[USER_ID], r[ITEM]): r[DEGREE] for r in capped.collect()}
    ranks = salted_ranks(spark, sets, randomness)
    want = {(u, i): min(len(order), d0) for u, order in ranks.items() for i in order[:d0]}
    assert got == want
    light = [u for u, items in sets.items() if len(set(items)) <= d0]
    heavy = [u for u, items in sets.items() if len(set(items)) > d0]
    assert light and heavy
    assert all({i for (v, i) in got if v == u} == set(sets[u]) for u in light)
    assert all(len({i for (v, i) in got if v == u}) == d0 for u in heavy)


def test_cap_is_uniform_over_salts(spark, pairs_df):
    """Every Δ0-subset of a heavy user's items is kept equally often: a chi-square test over the
    C(7, 3) = 35 subsets, for 600 users with the same 7 items under 10 salts (6000 draws, about
    171 per subset). A rule that favours some items (by name, by a weak hash) fails it."""
    items, d0, n_users, salts = [f"x{k}" for k in range(7)], 3, 600, 10
    sets = {f"u{u}": items for u in range(n_users)}
    counts: Counter = Counter()
    for salt in range(salts):
        got = kept(cap_user_items(pairs_df(sets), d0, Randomness.create(1000 + salt).bind("test")))
        counts.update(frozenset(s) for s in got.values())
    subsets = [frozenset(c) for c in itertools.combinations(items, d0)]
    assert set(counts) <= set(subsets)
    observed = [counts[s] for s in subsets]
    assert sum(observed) == n_users * salts
    _, p = scipy_stats.chisquare(observed)
    assert p > 1e-4, (p, observed)
    per_item = Counter(i for s in counts.elements() for i in s)
    _, p_items = scipy_stats.chisquare([per_item[i] for i in items])
    assert p_items > 1e-4


neighbour_seeds = st.integers(0, 2**32 - 1)


@settings(max_examples=12, deadline=None)
@given(neighbour_seeds, st.integers(1, 8))
def test_a_users_subset_ignores_the_other_users(spark, seed, d0):
    """docs/design/selection.md#cap-own-data on random neighbouring inputs: adding a user (with
    items shared with others, repeated pairs included) changes no other user's kept subset or
    degree."""
    rng = np.random.default_rng(seed)
    sets = {u: sorted(s) for u, s in random_sets(rng, int(rng.integers(1, 12))).items()}
    bigger, _ = random_neighbour(rng, sets)

    def rows(data: dict) -> list:
        return [
            (u, i)
            for u, s in data.items()
            for i in sorted(s)
            for _ in range(1 + sum(map(ord, i)) % 2)
        ]

    randomness = Randomness.create(seed % 1000).bind("test")
    schema = "user_id string, item string"
    small = cap_user_items(spark.createDataFrame(rows(sets), schema), d0, randomness)
    large = cap_user_items(spark.createDataFrame(rows(bigger), schema), d0, randomness)
    a = {(r[USER_ID], r[ITEM], r[DEGREE]) for r in small.collect()}
    b = {(r[USER_ID], r[ITEM], r[DEGREE]) for r in large.collect() if r[USER_ID] != "v"}
    assert a == b
    assert len({i for (u, i, _) in large.collect() if u == "v"}) == min(len(bigger["v"]), d0)


def test_kept_capped_pairs_need_no_shuffle_for_per_user_steps(spark, pairs_df, cache):
    """The layout contract of issue 18: capped pairs kept by layout.keep stay partitioned and
    sorted by user, so a window over each user's pairs (MAD's e_u, UserWeights' sums) plans no
    exchange and no sort, and a broadcast join onto them keeps that."""
    sets = {f"u{u}": [f"i{k}" for k in range(u % 9 + 1)] for u in range(50)}
    capped = keep(cap_user_items(pairs_df(sets), 4, Randomness.create(3).bind("test")), cache)
    items = spark.createDataFrame([("i1", 0.5)], f"{ITEM} string, r double")
    per_user = capped.join(F.broadcast(items), ITEM, "left").withColumn(
        "n", F.count(F.lit(1)).over(Window.partitionBy(USER_ID))
    )
    plan = per_user._jdf.queryExecution().executedPlan().toString()
    tail = plan.split("InMemoryTableScan")[0]
    assert "Window" in tail and "Exchange" not in tail and "Sort [" not in tail, plan
