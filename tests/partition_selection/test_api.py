"""The public surface of spark_dp.partition_selection and small shared helpers."""

from __future__ import annotations

import spark_dp.partition_selection as ps
from spark_dp.partition_selection.registry import ALGORITHMS


def test_all_lists_exactly_what_the_package_exports():
    public = {n for n in dir(ps) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(ps, n)).__name__ == "module"}
    assert set(ps.__all__) == public - modules
    assert all(hasattr(ps, n) for n in ps.__all__)


def test_every_algorithm_has_a_job_choice():
    from spark_dp.jobs.partition_selection import SPEC

    assert SPEC.params_cls is ps.PartitionSelectionParams
    assert set(ALGORITHMS) == {
        "basic", "basic-laplace", "dp-sips", "mad", "mad2r",
        "truncated-geometric", "laplace-thresholding", "gaussian-thresholding",
    }  # fmt: skip


def test_small_side_gives_the_same_join_with_or_without_broadcast(spark, cache):
    big = spark.createDataFrame(
        [(f"u{k}", f"i{k % 7}") for k in range(200)], "user_id string, item string"
    )
    small = spark.createDataFrame([("i1",), ("i3",)], "item string")
    with_hint = big.join(cache.small_side(small), "item", "left_anti")
    without = big.join(cache.small_side(small, max_rows=0), "item", "left_anti")
    assert sorted(with_hint.collect()) == sorted(without.collect())
    assert with_hint.count() == sum(1 for k in range(200) if k % 7 not in (1, 3))
