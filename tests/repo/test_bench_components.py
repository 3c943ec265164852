"""``python -m bench.components --cores ...`` runs the chosen core sizes under their own name."""

from __future__ import annotations

import pytest

from bench.components import SCALES, _targets


def test_the_scale_s_cores_by_default():
    assert _targets("full", None, job=True) == (SCALES["full"]["cores"], "full")


def test_chosen_cores_are_named_in_the_results():
    assert _targets("full", "1000000,5000000", job=False) == ((1_000_000, 5_000_000), "full-1m-5m")
    assert _targets("quick", "250000,1234", job=False) == ((250_000, 1234), "quick-250k-1234")


def test_the_whole_job_needs_its_core():
    with pytest.raises(SystemExit, match="--no-job"):
        _targets("full", "1000000", job=True)
    assert _targets("full", "1000000,5000000", job=True)[0] == (1_000_000, 5_000_000)
