"""Degree cap Δ0 (spec §2.1, A9; invariants 3 and 4 of §5.1)."""

from __future__ import annotations

import math
import random
from collections import Counter

from chispa import assert_df_equality

from spark_dp.partition_selection.capping import cap_user_items, with_degree
from spark_dp.partition_selection.columns import DEGREE, ITEM, USER_ID
from spark_dp.randomness import Randomness


def kept(df) -> dict:
    out: dict = {}
    for r in df.collect():
        out.setdefault(r[USER_ID], set()).add(r[ITEM])
    return out


def test_cap_is_uniform_and_depends_only_on_the_users_own_set(pairs_df):
    n, d0 = 3000, 3
    sets = {f"u{u}": [f"i{k}" for k in range(10)] for u in range(n)}
    sets.update({"small": ["a", "b"], "exact": ["x", "y", "z"]})
    capped = cap_user_items(pairs_df(sets), d0, Randomness.create(7)).localCheckpoint()
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
        cap_user_items(pairs_df({u: sets[u] for u in ("u1", "u2")}), d0, Randomness.create(7))
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
        got = cap_user_items(repeated, d0, Randomness.create(11))
        want = cap_user_items(pairs_df(distinct), d0, Randomness.create(11))
        assert_df_equality(got, want, ignore_row_order=True, ignore_nullable=True)
        degrees = {r[USER_ID]: r[DEGREE] for r in got.collect()}
        assert degrees == {u: min(len(s), d0) for u, s in distinct.items()}
        assert got.count() == sum(min(len(s), d0) for s in distinct.values())


def test_entropy_mode_draws_a_fresh_subsample(pairs_df):
    sets = {f"u{u}": [f"i{k}" for k in range(20)] for u in range(50)}
    a = kept(cap_user_items(pairs_df(sets), 5, Randomness.create()))
    b = kept(cap_user_items(pairs_df(sets), 5, Randomness.create()))
    assert a != b


def test_with_degree_recounts_after_removals(capped_df, cache):
    capped = capped_df({"u1": "abc", "u2": "a"})
    reduced = with_degree(capped.where("item != 'a'").select(USER_ID, ITEM), cache)
    assert {(r[USER_ID], r[ITEM], r[DEGREE]) for r in reduced.collect()} == {
        ("u1", "b", 2),
        ("u1", "c", 2),
    }
