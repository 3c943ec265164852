"""The bench's cap alternatives (``python -m bench.cap_alternatives``) compute the same cap.

Their timings compare only how the cap is computed, which holds only if every variant returns
spark_dp's rows; here on users around Δ0 = 100 items, a third of them with repeated pairs.
"""

from __future__ import annotations

import random

import pyspark
import pytest
from chispa import assert_df_equality

import bench.cap_alternatives as alternatives

COLUMNS = ("user_id", "item", "degree")
SPARK = tuple(int(p) for p in pyspark.__version__.split(".")[:2])
needs_min_by_k = pytest.mark.skipif(
    SPARK < (4, 2), reason=f"min_by(x, ord, k) needs Spark >= 4.2, this is {pyspark.__version__}"
)


@pytest.fixture(scope="module")
def pairs(spark):
    rng = random.Random(3)
    rows = []
    for user in range(120):
        items = [f"w{rng.randrange(600)}" for _ in range(rng.choice([3, 99, 100, 101, 150, 400]))]
        if user % 3 == 0:
            items += items[: len(items) // 2]  # repeated pairs
        rows += [(user, item) for item in items]
    return spark.createDataFrame(rows, "user_id long, item string")


@pytest.mark.parametrize(
    "variant",
    ["wholeset", "rankcap", "setcap", "hashcap", pytest.param("minbycap", marks=needs_min_by_k)],
)
def test_every_variant_returns_the_sorted_caps_rows(spark, pairs, variant):
    expected = alternatives.sortcap(pairs).select(*COLUMNS)
    got = alternatives.VARIANTS[variant](pairs).select(*COLUMNS)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


@needs_min_by_k
def test_min_by_without_its_second_pass_is_right_only_without_repeats(spark, pairs):
    distinct = pairs.dropDuplicates()
    expected = alternatives.sortcap(distinct).select(*COLUMNS)
    got = alternatives.minby_lower_bound(distinct).select(*COLUMNS)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
    # With repeats it keeps a repeated pair twice: the second pass is what makes it exact.
    repeated = alternatives.minby_lower_bound(pairs)
    assert repeated.count() > repeated.dropDuplicates().count()


def test_floor_c_keeps_a_repeated_pair_twice(spark, pairs):
    """Floor C is the cap only for input without repeats: with them, a repeat takes a slot."""
    distinct = pairs.dropDuplicates()
    expected = alternatives.sortcap(distinct).select("user_id", "item")
    got = alternatives.floor_c(distinct).select("user_id", "item")
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
    repeated = alternatives.floor_c(pairs)
    assert repeated.count() > repeated.dropDuplicates().count()
