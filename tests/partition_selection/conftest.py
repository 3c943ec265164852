"""Helpers for the partition-selection tests (the Spark session comes from tests/conftest.py)."""

from __future__ import annotations

import pytest

from spark_dp.partition_selection.columns import DEGREE, ITEM, USER_ID, WEIGHT


@pytest.fixture
def capped_df(spark):
    """Factory: (user_id, item, degree) from ``{user: items}`` (already capped, no subsample)."""

    def make(sets: dict):
        rows = [(str(u), str(i), len(set(s))) for u, s in sets.items() for i in set(s)]
        return spark.createDataFrame(rows, f"{USER_ID} string, {ITEM} string, {DEGREE} long")

    return make


@pytest.fixture
def weights_df(spark):
    """Factory: (item, weight_private) from ``{item: weight}``."""

    def make(weights: dict):
        rows = [(str(i), float(w)) for i, w in weights.items()]
        return spark.createDataFrame(rows, f"{ITEM} string, {WEIGHT} double")

    return make
