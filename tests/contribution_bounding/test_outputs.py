"""What a run returns: the report it writes (docs/design/bounding.md#outputs, #accounting,
#confidential, #seed)."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from spark_dp.contribution_bounding import BoundingResult
from spark_dp.logs import unsafe_debug
from spark_dp.report import PrivacyReport


def _result(**summary: Any) -> BoundingResult:
    base = {
        "algorithm": "greedy",
        "order": {"order": "size-hash", "seed": 3},
        "input": {"n_records": 10},
        "rounds": 2,
        "round_log": [{"round": 1, "accepted": 5}, {"round": 2, "accepted": 2}],
        "selected": 7,
        "distinct_selected": 7,
        "max_degree": 2,
        "seed": 3,
    }
    frame = cast(Any, object())  # fill_report never reads the tables
    return BoundingResult(frame, frame, {**base, **summary}, description="Greedy; order x")


@pytest.mark.parametrize("resumed", [None, 4])
def test_fill_report_states_the_bound_and_the_notes_and_spends_nothing(
    resumed: int | None,
) -> None:
    result = _result(resumed_from_round=resumed)
    report = PrivacyReport("contribution_bounding")
    result.fill_report(report)
    assert report.algorithm == "Greedy; order x"
    assert report.budget == [] and report.epsilon_spent == 0 and report.delta_spent == 0
    assert (report.extra["selected"], report.extra["rounds"], report.extra["max_degree"]) == (
        7,
        2,
        2,
    )
    summary = {k: v for k, v in result.summary.items() if k != "seed"}
    summary["order"] = {"order": "size-hash"}
    assert report.extra["contribution_bounding"] == summary  # the key-derived seed left out
    assert report.mechanism["contribution_bound_k"] == 2
    assert report.mechanism["dataset_size"] == 7
    assert "fixed-graph DP" in report.mechanism["privacy_unit"]
    assert "group size k" in report.mechanism["accounting"]
    assert any(n.startswith("CONFIDENTIAL") for n in report.notes)
    assert any("release key" in n and "docs/design/bounding.md#seed" in n for n in report.notes)
    assert '"seed"' not in json.dumps(report.to_dict(), default=str)
    assert any("spends no privacy budget" in n for n in report.notes)
    resumed_notes = [n for n in report.notes if n.startswith("Resumed")]
    assert resumed_notes == (
        [] if resumed is None else ["Resumed from the saved state after round 4."]
    )
    doc = json.loads(json.dumps(report.to_dict(), default=str))
    assert doc["privacy"]["mechanism"]["contribution_bound_k"] == 2
    assert doc["privacy"]["steps"] == [] and doc["max_degree"] == 2


def test_the_headline_names_the_algorithm_and_shows_counts_only_with_unsafe_debug() -> None:
    """|S|, k and the number of rounds follow the graph: the same line whatever the counts."""
    assert (
        _result().headline()
        == "<private> records selected (greedy), max degree <private>, <private> rounds"
    )
    assert _result(rounds=0).headline() == _result().headline()
    with unsafe_debug():
        assert _result().headline() == "7 records selected (greedy), max degree 2, 2 rounds"
        assert _result(rounds=0).headline().endswith("0 rounds")
