"""Delta Lake flags on a session without Delta's jars (the main suite's), and the log reading
of :mod:`spark_dp.io.delta`: refused in one line (exit 2) before any data is read. The reads and
writes themselves run with the real jars in ``tests/delta`` (``make test-delta``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spark_dp.errors import InputContractError
from spark_dp.io.delta import check_version, delta_identity, latest_version
from spark_dp.io.fs import LocalFS
from spark_dp.jobs import partition_selection


def _log(table: Path, *versions: int) -> Path:
    """A Delta log with commits ``versions`` (their content: one line of metadata each)."""
    (table / "_delta_log").mkdir(parents=True)
    for v in versions:
        commit = {"commitInfo": {"version": v}}
        (table / "_delta_log" / f"{v:020d}.json").write_text(json.dumps(commit) + "\n")
    (table / "_delta_log" / "00000000000000000000.crc").write_text("{}")
    return table


def test_versions_come_from_the_commit_file_names(tmp_path: Path) -> None:
    table = _log(tmp_path / "t", 0, 1, 2)
    fs = LocalFS()
    assert latest_version(fs, str(table)) == 2
    assert check_version(fs, str(table), None) == 2
    assert check_version(fs, str(table), 1) == 1
    with pytest.raises(InputContractError, match="has versions up to 2"):
        check_version(fs, str(table), 3)
    (tmp_path / "plain").mkdir()
    with pytest.raises(InputContractError, match="is not a Delta table"):
        latest_version(fs, str(tmp_path / "plain"))


def test_the_identity_is_the_version_and_its_commit(tmp_path: Path) -> None:
    table, fs = _log(tmp_path / "t", 0, 1), LocalFS()
    v0, v1 = (delta_identity(fs, str(table), str(table), v) for v in (0, 1))
    assert v0 != v1 and v1.startswith(f"delta:{table}@v1#")
    assert delta_identity(fs, str(table), str(table), 1) == v1  # metadata only: stable
    (table / "_delta_log" / f"{1:020d}.json").write_text('{"commitInfo": {"other": 1}}\n')
    assert delta_identity(fs, str(table), str(table), 1) != v1  # a table made again


def _select(table: Path, tmp_path: Path, *extra: str) -> list[str]:
    args = ["--input", str(table), "--output", str(tmp_path / "out"), "--algorithm", "basic"]
    return [*args, "--epsilon", "1", "--delta", "1e-5", "--seed", "1", *extra]


@pytest.mark.parametrize(
    ("delta_log", "extra", "words"),
    [
        (True, ["--input-format", "delta"], ["--input-format delta needs the Delta Lake jars"]),
        (False, ["--input-format", "delta"], ["is not a Delta table", "drop --input-format"]),
        (True, ["--input-version", "0"], ["--input-version", "add --input-format delta"]),
        (True, ["--input-format", "delta", "--input-version", "4"], ["versions up to 1"]),
        (True, ["--input-format", "delta", "--input-version", "-1"], ["a Delta version is >= 0"]),
    ],
)
def test_delta_flags_refused_in_one_line_before_any_read(
    spark, tmp_path: Path, capsys: pytest.CaptureFixture[str], delta_log, extra, words
) -> None:
    table = tmp_path / "words"
    if delta_log:
        _log(table, 0, 1)
    else:
        spark.createDataFrame([("u", "w")], "user_id string, item string").write.parquet(str(table))
    before = sorted(p.name for p in tmp_path.iterdir())
    assert partition_selection.main(_select(table, tmp_path, *extra)) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert all(w in err[0] for w in words), err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
