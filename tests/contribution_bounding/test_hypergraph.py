"""The driver-side hypergraph: construction, capacities, degree checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from spark_dp.contribution_bounding import CompactHypergraph
from spark_dp.errors import InputContractError, ParameterError


def test_pairs_are_deduplicated_and_ids_canonical() -> None:
    g = CompactHypergraph.from_incidences([1, 1, 1, "2"], ["a", "a", "b", "a"], max_contributions=2)
    assert list(g.record_ids) == ["1", "2"]
    assert list(g.sizes) == [2, 1]
    assert list(g.user_ids) == ["a", "b"]


def test_capacities_default_table_and_errors() -> None:
    g = CompactHypergraph.from_incidences(
        ["r", "r", "s"], ["a", "b", "b"], max_contributions=2, capacities={"a": 0, "zz": 9}
    )
    assert dict(zip(g.user_ids, g.cap, strict=True)) == {"a": 0, "b": 2}
    with pytest.raises(ParameterError, match="a user has no capacity") as missing:
        CompactHypergraph.from_incidences(["r", "r", "s"], ["a", "b", "c"], capacities={"a": 1})
    assert not any(ch.isdigit() for ch in str(missing.value))  # no count of the input
    with pytest.raises(ParameterError, match="max_contributions must be an integer >= 0, got -1"):
        CompactHypergraph.from_incidences(["r"], ["a"], max_contributions=-1)
    with pytest.raises(ParameterError, match="got -2"):
        CompactHypergraph.from_incidences(["r"], ["a"], max_contributions=1, capacities={"a": -2})


def test_degrees_feasibility_and_maximality() -> None:
    g = CompactHypergraph.from_mapping(
        {"x": ["a", "b"], "y": ["b"], "z": ["c"]}, max_contributions=1
    )
    assert list(g.degrees(np.array([1, 0, 1]))) == [1, 1, 1]
    assert g.is_feasible(np.array([1, 0, 1]))
    assert not g.is_feasible(np.array([1, 1, 0]))
    assert g.is_maximal(np.array([1, 0, 1]))
    assert not g.is_maximal(np.array([1, 0, 0]))
    assert g.max_degree(np.array([0, 2, 0])) == 2


def test_from_frames_indexes_records_by_id_and_keeps_the_user_rows() -> None:
    """The one pandas -> CSR conversion: records in sorted id order (rec positions = the
    shared order), users in their row order, incidences sorted by (record, user)."""
    inc = pd.DataFrame({"rec": [5, 2, 2, 9], "user_id": ["b", "b", "a", "a"]})
    users = pd.DataFrame({"user_id": ["b", "a"], "cap": [1, 3]})
    g = CompactHypergraph.from_frames(inc, users)
    assert list(g.record_ids) == [2, 5, 9] and g.record_ids.dtype == np.int64
    assert list(g.user_ids) == ["b", "a"] and list(g.cap) == [1, 3]
    assert [list(g.user_ids[g.record_users(i)]) for i in range(3)] == [["a", "b"], ["b"], ["a"]]
    with pytest.raises(InputContractError, match="without a row in the users table"):
        CompactHypergraph.from_frames(inc, users.iloc[:1])
