"""``python -m bench.lines --only ...`` runs the chosen jobs with the floors of their datasets.

A job's ratio to floor B needs floor B of the same dataset, line and run; a dataset none of the
chosen jobs reads needs no floors (at ``--scale xl`` the hypergraph's two floors alone take
several minutes).
"""

from __future__ import annotations

from bench.lines import GRAPH_JOBS, PAIR_JOBS, PEER_JOBS, _selected

ALL = [*PAIR_JOBS, *PEER_JOBS, *GRAPH_JOBS]


def _names(only: list[str]) -> list[str]:
    return [f"{job.kind}:{job.name}" for job in _selected(ALL, only)]


def test_pair_jobs_bring_the_pair_floors_only():
    assert _names(["mad2r", "tumult/k=1"]) == [
        "pairs:floor-a", "pairs:floor-b", "pairs:floor-c", "pairs:floor-d",
        "pairs:mad2r", "pairs:tumult/k=1",
    ]  # fmt: skip


def test_graph_jobs_bring_the_graph_floors_only():
    assert _names(["cb-proposal"]) == ["graph:floor-a", "graph:floor-b", "graph:cb-proposal"]


def test_no_filter_runs_everything_and_a_floor_name_runs_the_floors():
    assert _selected(ALL, []) == ALL
    assert _names(["floor-c"]) == [
        "pairs:floor-a", "pairs:floor-b", "pairs:floor-c", "pairs:floor-d",
    ]  # fmt: skip
