"""``python -m bench.components --cores ...`` runs the chosen core sizes under their own name."""

from __future__ import annotations

import pytest

from bench.components import SCALES, USERS_PER_EDGE, _failure, _same, _targets, users_for


def test_the_scale_s_cores_by_default():
    assert _targets("full", None, job=True) == (SCALES["full"]["cores"], "full")


def test_chosen_cores_are_named_in_the_results():
    assert _targets("full", "1000000,5000000", job=False) == ((1_000_000, 5_000_000), "full-1m-5m")
    assert _targets("quick", "250000,1234", job=False) == ((250_000, 1234), "quick-250k-1234")


def test_the_whole_job_needs_its_core():
    with pytest.raises(SystemExit, match="--no-job"):
        _targets("full", "1000000", job=True)
    assert _targets("full", "1000000,5000000", job=True)[0] == (1_000_000, 5_000_000)


def test_a_core_s_users_are_fitted_to_the_cores_made_before():
    assert users_for(1_000_000, []) == round(1_000_000 * USERS_PER_EDGE)
    assert users_for(2_000, [(100, 1_000)]) == 1_000  # one core: proportional, floor of 1,000
    assert users_for(8_000_000, [(1_000, 2_000), (1_000_000, 2_000_000)]) == 4_000_000
    # a power law edges = users ** 0.8, known exactly: the fit inverts it from its two nearest
    made = [(u, round(u**0.8)) for u in (10_000, 100_000, 1_000_000, 10_000_000)]
    for users in (30_000, 3_000_000, 40_000_000):
        assert users_for(round(users**0.8), made) == pytest.approx(users, rel=1e-3)
    # the two nearest are used, not the first two: a far core of another slope is left out
    bent = [(1_000, 100), (1_000_000, 1_000_000), (4_000_000, 2_000_000)]
    assert users_for(4_000_000, bent) == 16_000_000


def test_no_cores_runs_the_path_alone():
    assert _targets("full", "none", job=False) == ((), "full-path")
    with pytest.raises(SystemExit, match="--no-job"):
        _targets("full", "none", job=True)


def test_a_failed_step_reports_the_error_at_the_top_of_its_trace():
    trace = "\n".join(
        ["WARN something", "py4j.protocol.Py4JJavaError: An error occurred while calling o81.run.",
         ": java.lang.StackOverflowError"]
        + [f"\tat frame{i}(Native Method)" for i in range(40)]
    )  # fmt: skip
    said = _failure(trace + "\nCaused by: java.lang.StackOverflowError\n\tat frame40")
    assert said.startswith("py4j.protocol.Py4JJavaError: An error occurred")
    assert ": java.lang.StackOverflowError / Caused by: java.lang.StackOverflowError ..." in said
    tail = "frame39(Native Method) | Caused by: java.lang.StackOverflowError | at frame40"
    assert said.endswith(tail)
    assert _failure("just one line\n") == "just one line"


def test_the_partitions_agree_only_among_methods_that_finished():
    assert [_same(set()), _same({"a"}), _same({"a", "b"})] == ["-", "yes", "NO"]
