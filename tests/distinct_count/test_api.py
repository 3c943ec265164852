"""The public surface of spark_dp.distinct_count."""

from __future__ import annotations

import types

import spark_dp.distinct_count as dc


def test_all_lists_exactly_the_public_names() -> None:
    assert dc.__all__ == sorted(dc.__all__)
    public = {
        name
        for name, value in vars(dc).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public - {"annotations"} == set(dc.__all__)
    assert callable(dc.greedy_curve) and callable(dc.exact_curve)
