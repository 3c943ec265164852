"""The driver-side algorithms through the Spark entry point: DP-MF batches and the sweep."""

from __future__ import annotations

import math

import pytest
from pyspark.sql import SparkSession

from spark_dp.contribution_bounding import (
    BoundingParams,
    bound_contributions,
)
from spark_dp.randomness import Randomness
from tests.contribution_bounding.helpers import batch, incidence_rows, key_seed
from tests.reference import contribution_bounding as ref

pytestmark = pytest.mark.usefixtures("aqe_off")


def test_dp_mf_batches_and_the_bias_sweep(spark: SparkSession) -> None:
    records, _caps, _ = batch(seed=21, n=6, max_records=12)
    inc = spark.createDataFrame(incidence_rows(records), "record_id string, user_id string")
    params = BoundingParams(algorithm="dp-mf", iterations=6, batch_size=3, min_sep=2)
    res = bound_contributions(
        inc, params, randomness=Randomness.create(0).bind("test"), validate=False
    )
    rows = sorted((r["batch_index"], r["position"], r["record_id"]) for r in res.selected.collect())
    want = ref.min_sep_batches(records, ref.shared_key("size-hash", records, key_seed(0)), 6, 3, 2)
    assert want is not None and [h for _, _, h in rows] == want
    assert res.summary["max_degree"] <= math.ceil(6 / 2) and res.user_state is None
    sweep = bound_contributions(
        inc,
        BoundingParams(algorithm="bias-sweep", max_contributions=3),
        randomness=Randomness.create(0).bind("test"),
        validate=False,
    )
    points = sweep.selected.collect()
    assert len(points) == 76 and any(p["pareto"] for p in points)
    assert sweep.summary["pareto_front"]
