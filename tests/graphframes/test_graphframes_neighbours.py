"""The neighbour test of the distinct count with GraphFrames' components (``make
test-graphframes``: the jar of each Spark line): D and D + u, one key, every artefact the same
(tests/privacy/test_neighbours.py; docs/privacy/boundary.md#neighbour-test)."""

from __future__ import annotations

import os

import pytest

from spark_dp.jobs import distinct_count
from spark_dp.session import graphframes_missing
from tests.privacy.test_neighbours import CORE, assert_same, inputs, run_pair
from tests.support.spark_session import GRAPHFRAMES_JAR_ENV

if not os.path.isfile(os.environ.get(GRAPHFRAMES_JAR_ENV, "")):
    pytest.skip(
        f"no GraphFrames jar ({GRAPHFRAMES_JAR_ENV} unset): make test-graphframes had none to copy",
        allow_module_level=True,
    )

__all__ = ["inputs"]  # the module-scoped fixture of the neighbour test, shared


def test_components_with_graphframes_change_no_artefact(spark, inputs) -> None:
    assert graphframes_missing(spark) is None
    argv = [*CORE, "--components", "graphframes", "--components-min-rows", "0"]
    d, du = run_pair(spark, inputs, distinct_count, argv, "gf")
    assert d.code == 0
    assert_same(d, du)
