"""``bench.scale``: each job's ratio is taken against the floor C of its own run, and the
ratio compared between runs of the command is the median of its runs."""

from __future__ import annotations

import pytest

from bench.scale import median_ratios, ratios


def _row(job: str, run: int, seconds: float | None) -> dict:
    return {"line": "4", "dataset": "d", "job": job, "run": run, "seconds": seconds}


ROWS = [
    _row("floor-c", 1, 100.0), _row("basic", 1, 110.0),
    _row("floor-c", 2, 200.0), _row("basic", 2, 300.0),
    _row("floor-c", 3, 100.0), _row("basic", 3, 120.0),
]  # fmt: skip


def test_a_ratio_is_against_the_floor_of_its_own_run():
    assert ratios(ROWS) == {
        ("4", "d", "basic", 1): pytest.approx(1.1),
        ("4", "d", "basic", 2): pytest.approx(1.5),
        ("4", "d", "basic", 3): pytest.approx(1.2),
    }


def test_the_median_of_the_runs_and_no_ratio_without_a_timed_floor():
    assert median_ratios(ROWS) == {("4", "d", "basic"): pytest.approx(1.2)}
    failed = [_row("floor-c", 1, None), _row("basic", 1, 110.0)]
    assert median_ratios(failed) == {}
