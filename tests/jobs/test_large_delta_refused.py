"""A δ above 1e-3 is refused before Spark starts unless the user confirms it.

δ is the probability that the guarantee fails outright; a job refuses one above
:data:`spark_dp.checks.DELTA_CONFIRM` with one line (exit 2) unless ``--allow-large-delta`` or
the config key ``allow_large_delta: true`` confirms it (docs/privacy/caveats.md). The refusals
themselves, one line each, are cases of tests/support/bad_input_cases.py; here: the boundary, the
confirmations (dry runs: no Spark) and what the confirmation leaves alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_dp.checks import DELTA_CONFIRM, DELTA_MAX, check_delta_confirmed
from spark_dp.errors import ParameterError
from spark_dp.jobs import partition_selection


def test_the_boundary_is_inclusive_and_the_confirmation_lifts_it():
    check_delta_confirmed(DELTA_CONFIRM, "--delta 0.001", allowed=False)
    check_delta_confirmed(None, "", allowed=False)  # a job without δ
    check_delta_confirmed(DELTA_MAX, "--delta 0.5", allowed=True)
    with pytest.raises(ParameterError, match=r"^--delta 0\.0011 is above 0\.001: .*fails"):
        check_delta_confirmed(0.0011, "--delta 0.0011", allowed=False)


@pytest.fixture
def words(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "words").mkdir()
    table = pa.table({"user_id": ["u1", "u2"], "item": ["a", "b"]})
    pq.write_table(table, tmp_path / "words" / "part-00000.parquet")
    return tmp_path


def _dry_run(argv: list[str], capsys) -> tuple[int, dict | None, str]:
    base = ["--input", "words", "--output", "o", "--epsilon", "1", "--dry-run", "--no-ledger"]
    code = partition_selection.main([*base, *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


@pytest.mark.parametrize(
    ("argv", "conf", "code"),
    [
        (["--delta", "0.001"], None, 0),
        (["--delta", "0.01"], None, 2),
        (["--delta", "0.01", "--allow-large-delta"], None, 0),
        ([], "delta: 0.01\n", 2),
        ([], "delta: 0.01\nallow_large_delta: true\n", 0),
        ([], "delta: 0.01\nallow-large-delta: false\n", 2),
        (["--allow-large-delta"], "delta: 0.01\nallow_large_delta: false\n", 0),
    ],
)
def test_a_large_delta_runs_only_when_confirmed(words, capsys, argv, conf, code):
    if conf is not None:
        (words / "c.yaml").write_text(conf)
        argv = [*argv, "--config", "c.yaml"]
    got, doc, err = _dry_run(argv, capsys)
    assert got == code, err
    if code == 2:
        (line,) = [x for x in err.splitlines() if "error:" in x]
        assert "--allow-large-delta" in line and "1/(number of users)" in line
    else:
        assert doc is not None and doc["parameters"]["delta"] in (0.001, 0.01)


def test_the_confirmation_changes_nothing_but_the_refusal(words, capsys):
    """The same plan with and without the flag (δ ≤ 1e-3), and δ is still capped at 0.5."""
    _, plain, _ = _dry_run(["--delta", "1e-5"], capsys)
    _, confirmed, _ = _dry_run(["--delta", "1e-5", "--allow-large-delta"], capsys)
    assert plain == confirmed
    code, _, err = _dry_run(["--delta", "0.6", "--allow-large-delta"], capsys)
    assert code == 2 and "at most 0.5" in err
