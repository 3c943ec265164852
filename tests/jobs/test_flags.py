"""One command-line vocabulary across the jobs (issue 16 item 5): every subcommand's ``--help``
walked, deprecated aliases, ``--dry-run``, closed pipes. None of it starts Spark."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_dp import cli

JOBS = ("generate", "partition-selection", "contribution-bounding", "distinct-count")
BOUNDED = ("partition-selection", "contribution-bounding", "distinct-count", "calibrate")
OLD_NAMES = ("--max-items-per-user", "--max-contribution ", "--capacity ", "--beta ")


def _help(capsys: pytest.CaptureFixture[str], command: str) -> str:
    assert cli.main([command, "--help"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", [*JOBS, "calibrate"])
def test_every_help_speaks_the_shared_vocabulary(capsys, command: str) -> None:
    text = _help(capsys, command)
    assert text.startswith(f"usage: spark-dp {command} ")
    flat = " ".join(text.split())
    if command in BOUNDED:
        assert "--max-contributions" in flat  # one name for the per-user bound
    for old in OLD_NAMES:  # deprecated aliases: accepted, shown only as what a flag replaces
        assert (flat + " ").count(old) == (flat + " ").count(f"replaces {old}"), old
    assert not re.search(r"--[\w-]+ STR\b", flat)  # choices are listed, not "STR"
    if command in ("partition-selection", "calibrate"):
        assert "--truncation-beta" in flat and "--failure-probability" not in flat
        assert re.search(r"--algorithm \{basic,basic-laplace,dp-sips,mad,mad2r", flat)
    if command == "distinct-count":
        assert "--failure-probability" in flat and "--truncation-beta" not in flat
        assert "--method {exact,greedy}" in flat
    if command in ("partition-selection", "distinct-count", "calibrate"):
        assert "--epsilon" in flat
    if command in JOBS:
        assert "--dry-run" in flat and "--log-level {DEBUG,INFO,WARNING,ERROR}" in flat


def test_each_job_takes_only_its_flags(capsys) -> None:
    helps = {c: " ".join(_help(capsys, c).split()) for c in JOBS}
    only = {
        "--record-col": {"contribution-bounding"},
        "--item-col": {"partition-selection", "distinct-count"},
        "--user-col": {"partition-selection", "distinct-count", "contribution-bounding"},
        "--budget-store": {"partition-selection", "distinct-count"},
        "--dataset-id": {"partition-selection", "distinct-count"},
        "--input": {"partition-selection", "distinct-count", "contribution-bounding"},
        "--output": {"generate", "partition-selection", "contribution-bounding"},
        "--noise-key-file": {"partition-selection", "distinct-count", "contribution-bounding"},
        "--unsafe-debug-logs": {"partition-selection", "distinct-count", "contribution-bounding"},
        "--strict-input": {"partition-selection", "distinct-count", "contribution-bounding"},
        "--debug-report": {"distinct-count"},
        "--delta": {"partition-selection"},
    }
    for flag, jobs in only.items():
        have = {c for c, text in helps.items() if re.search(rf"{flag}[ ,=\]]", text)}
        assert have == jobs, flag


@pytest.fixture
def words(tmp_path: Path) -> Path:
    table = pa.table({"user_id": ["u"], "item": ["a"], "record_id": ["r"]})  # every job's ids
    pq.write_table(table, tmp_path / "w.parquet")
    return tmp_path


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _dry_run(capsys, monkeypatch, cwd: Path, argv: list[str]) -> tuple[dict, str]:
    """(the dry run's JSON, its warnings: logged lines and stderr)."""
    monkeypatch.chdir(cwd)
    lines = _Lines()
    logging.getLogger("spark_dp").addHandler(lines)  # the job's stderr handler may be bound
    try:  # to an earlier test's captured stream
        assert cli.main([*argv, "--dry-run"]) == 0
    finally:
        logging.getLogger("spark_dp").removeHandler(lines)
    out = capsys.readouterr()
    return json.loads(out.out), "\n".join(lines.lines) + out.err


@pytest.mark.parametrize(
    ("argv", "field", "value"),
    [
        (["partition-selection", "--max-items-per-user", "7"], "max_contributions", 7),
        (["partition-selection", "--beta", "3"], "beta", 3.0),
        (["distinct-count", "--max-contribution", "9"], "max_contributions", 9),
        (["distinct-count", "--beta", "0.1"], "beta", 0.1),
        (["contribution-bounding", "--capacity", "4"], "max_contributions", 4),
    ],
)
def test_old_names_still_work_for_one_release(capsys, monkeypatch, words, argv, field, value):
    job, *rest = argv
    common = ["--input", "w.parquet", "--epsilon", "1"] if job != "contribution-bounding" else [
        "--input", "w.parquet"]  # fmt: skip
    if job != "distinct-count":
        common += ["--output", "o"]
    doc, err = _dry_run(capsys, monkeypatch, words, [job, *common, *rest])
    assert doc["parameters"][field] == value
    assert f"{rest[0]} is deprecated" in err and "use --" in err


def test_config_files_take_the_flag_names_too(capsys, monkeypatch, words) -> None:
    (words / "c.yaml").write_text("epsilon: 0.5\nmax_contributions: 12\ntruncation_beta: 1.5\n")
    argv = ["partition-selection", "--input", "w.parquet", "--output", "o", "--config", "c.yaml"]
    doc, err = _dry_run(capsys, monkeypatch, words, argv)
    p = doc["parameters"]
    assert (p["epsilon"], p["max_contributions"], p["beta"]) == (0.5, 12, 1.5)
    assert err == ""


@pytest.mark.parametrize(
    ("job", "key"),
    [
        ("partition-selection", "max_items_per_user"),
        ("distinct-count", "max_contribution"),
        ("contribution-bounding", "capacity"),
    ],
)
def test_old_config_keys_of_the_bound_still_work_with_a_warning(
    capsys, monkeypatch, words, job, key
) -> None:
    epsilon = "" if job == "contribution-bounding" else "epsilon: 0.5\n"
    (words / "c.yaml").write_text(f"{epsilon}{key}: 7\n")
    argv = [job, "--input", "w.parquet", "--config", "c.yaml"]
    if job != "distinct-count":
        argv += ["--output", "o"]
    doc, err = _dry_run(capsys, monkeypatch, words, argv)
    assert doc["parameters"]["max_contributions"] == 7
    assert f"config key '{key}' is deprecated (removed in 0.2.0); use 'max_contributions'" in err


def test_dry_run_prints_paths_and_calibration_and_writes_nothing(capsys, monkeypatch, words):
    argv = ["partition-selection", "--input", "w.parquet", "--output", "o", "--epsilon", "20"]
    doc, err = _dry_run(capsys, monkeypatch, words, argv)
    # the default ledger is a path the run writes too (checked; a dry run creates nothing)
    assert [p["role"] for p in doc["paths"]] == ["input", "output", "report", "ledger"]
    assert doc["paths"][2]["resolved"] == str(words / "o.report.json")
    assert doc["calibration"]["rounds"][0]["algorithm"] == "mad2r"
    assert "epsilon=20 is above 10" in err  # a weak but accepted ε is warned about
    doc, _ = _dry_run(capsys, monkeypatch, words, ["distinct-count", "--input", "w.parquet",
                                                   "--epsilon", "1"])  # fmt: skip
    assert doc["calibration"]["epsilon_select"] == 0.5
    assert [p["role"] for p in doc["paths"]] == ["input", "ledger"]  # the report: to stdout
    bounding = ["contribution-bounding", "--input", "w.parquet", "--output", "o"]
    doc, _ = _dry_run(capsys, monkeypatch, words, [*bounding, "--max-contributions", "2"])
    assert {p["role"] for p in doc["paths"]} >= {"work_dir", "user_state", "report"}
    assert sorted(p.name for p in words.iterdir()) == ["w.parquet"]


def test_dry_run_starts_no_jvm(words) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spark_dp", "distinct-count", "--input", "w.parquet",
         "--epsilon", "1", "--dry-run"],
        cwd=words, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0 and json.loads(done.stdout)["job"] == "distinct_count"
    assert done.stderr == ""  # not even the JVM's start-up line


def test_a_closed_pipe_is_no_traceback() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "spark_dp", "calibrate", "--epsilon", "1", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # `| head -0`: the reader is gone before anything is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_prog_names_in_errors(capsys) -> None:
    assert cli.main(["distinct-count", "--bogus"]) == 2
    assert capsys.readouterr().err.startswith("spark-dp distinct-count: error: ")


def test_audit_speaks_the_shared_vocabulary(capsys) -> None:
    flat = " ".join(_help(capsys, "audit").split())
    assert flat.startswith("usage: spark-dp audit ")
    for flag in ("--max-contributions", "--truncation-beta", "--failure-probability"):
        assert flag in flat, flag
