"""Bad input, tried as a user would: every case exits 2 with a short message, harms nothing.

Each case asserts the five properties of issue 17: exit code 2; one to three lines on stderr,
naming the flag or path at fault; no Python or Java trace; the inputs' bytes unchanged (a hash
of every file before and after); nothing new on disk. Each runs in its own copy of a small
workspace (inputs written with pyarrow, no Spark).

Most cases fail before Spark starts: they run as separate processes forked from a server that
imported ``spark-dp`` once (:mod:`tests.cli_forkserver`), so a case costs milliseconds instead of
a second of imports; a few go through the real ``spark-dp`` console script and ``jobs/*.py``
files. The cases that need Spark (nulls, schemas, capacities, a non-Parquet input behind Hadoop)
run in this process on the shared session, their output captured at the file descriptors.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.cli_forkserver import run_in_server

ROOT = Path(__file__).resolve().parents[1]
RO = "/proc/spark_dp" if os.geteuid() == 0 else "ro/sub"  # root writes anywhere but /proc
TRACE = re.compile(r"Traceback|^\s+at [\w$.]+\(|Exception:|Error:\s*$|py4j", re.M)


def ps(*extra: str, inp: str = "words", out: str = "o", eps: str | None = "1") -> list[str]:
    """A partition-selection command line."""
    base = ["partition-selection", "--input", inp, "--output", out]
    return [*base, *(["--epsilon", eps] if eps else []), *extra]


def dc(*extra: str, inp: str = "words", eps: str | None = "1") -> list[str]:
    """A distinct-count command line."""
    return ["distinct-count", "--input", inp, *(["--epsilon", eps] if eps else []), *extra]


def cb(*extra: str, inp: str = "graph", out: str = "o") -> list[str]:
    """A contribution-bounding command line."""
    return ["contribution-bounding", "--input", inp, "--output", out, *extra]


def gen(*extra: str, out: str = "g") -> list[str]:
    """A generate command line."""
    return ["generate", "--output", out, *extra]


# (id, argv, words the message must contain)
CASES: list[tuple[str, list[str], list[str]]] = [
    # --- partition selection: paths (issue 17: the input destroyed with exit 0, and worse)
    ("ps-report-is-input", ps("--report", "data.parquet", inp="data.parquet"),
     ["--report data.parquet", "same path as --input data.parquet"]),
    ("ps-output-is-input-overwrite", ps("--overwrite", out="words"),
     ["--output words", "same path as --input words"]),
    ("ps-output-is-input", ps(out="words"), ["--output words", "--input words"]),
    ("ps-output-contains-input", ps("--overwrite", out="."), ["--output .", "contains --input"]),
    ("ps-report-inside-input", ps("--report", "words/r.json"), ["--report", "lies inside"]),
    ("ps-report-is-output", ps("--report", "o"), ["--report o", "--output o"]),
    ("ps-report-inside-output", ps("--report", "o/r.json"), ["--report o/r.json", "--output"]),
    ("ps-output-empty", ps(out=""), ["--output", "empty"]),
    ("ps-report-empty", ps("--report", ""), ["--report", "empty"]),
    ("ps-output-under-file", ps(out="afile/o"), ["--output afile/o", "not a directory"]),
    ("ps-report-under-file", ps("--report", "afile/r.json"), ["--report afile/r.json"]),
    ("ps-output-unwritable", ps(out=f"{RO}/o"), ["--output", "not writable"]),
    ("ps-output-exists", ps(out="out_exists"), ["--output out_exists", "--overwrite"]),
    ("ps-default-report-exists", ps(out="stale"), ["stale.report.json", "already exists"]),
    ("ps-report-is-dir", ps("--report", "report_dir", "--overwrite"), ["--report", "directory"]),
    ("ps-store-is-input", ps("--budget-store", "sqlite:///words"),
     ["--budget-store words", "--input"]),
    ("ps-store-is-dir", ps("--budget-store", "sqlite:///report_dir"),
     ["--budget-store", "directory"]),
    ("ps-store-empty", ps("--budget-store", ""), ["--budget-store", "empty"]),
    ("ps-store-uri", ps("--budget-store", "s3a://bucket/budget.db"), ["--budget-store"]),
    ("ps-store-bare-path", ps("--budget-store", "budget.db"), ["--budget-store"]),
    ("ps-ledger-replaced", ps("--ledger", "l.jsonl"), ["--ledger", "--budget-store"]),
    ("ps-key-is-output", ps("--noise-key-file", "key32", "--overwrite", out="key32"),
     ["--output key32", "--noise-key-file key32"]),
    ("ps-config-is-report", ps("--config", "good.yaml", "--report", "good.yaml", "--overwrite"),
     ["--report good.yaml", "--config"]),
    # --- partition selection: the input itself
    ("ps-input-missing", ps(inp="nope"), ["--input nope", "does not exist"]),
    ("ps-input-json", ps(inp="bad.json"), ["--input bad.json", "JSON"]),
    ("ps-input-csv-named-parquet", ps(inp="fake.parquet"),
     ["--input fake.parquet", "--input-format csv"]),
    ("ps-input-truncated", ps(inp="trunc.parquet"), ["--input trunc.parquet", "complete"]),
    ("ps-input-empty-dir", ps(inp="empty_dir"), ["--input empty_dir", "without data files"]),
    ("ps-input-text", ps(inp="notes.txt"), ["--input notes.txt", "not a Parquet file"]),
    ("ps-input-dir-with-junk", ps(inp="junk_dir"), ["junk_dir", "not a Parquet file"]),
    ("ps-input-format-bad", ps("--input-format", "xml"), ["--input-format"]),
    # --- partition selection: values
    ("ps-epsilon-missing", ps(eps=None), ["--epsilon is required"]),
    ("ps-epsilon-zero", ps(eps="0"), ["epsilon"]),
    ("ps-epsilon-nan", ps(eps="nan"), ["epsilon"]),
    ("ps-epsilon-1e9", ps(eps="1e9"), ["epsilon", "at most 100"]),
    ("ps-epsilon-1e5-geometric", ps("--algorithm", "truncated-geometric", eps="1e5"),
     ["epsilon", "at most 100"]),
    ("ps-epsilon-50-sampler", ps(eps="50"), ["delta", "sampler"]),
    ("ps-epsilon-text", ps(eps="one"), ["--epsilon"]),
    ("ps-delta-huge", ps("--delta", "0.999999"), ["delta", "at most 0.5"]),
    ("ps-delta-zero", ps("--delta", "0"), ["delta"]),
    ("ps-bound-1e12", ps("--max-contributions", "1000000000000"), ["max_contributions"]),
    ("ps-bound-zero", ps("--max-contributions", "0"), ["max_contributions"]),
    ("ps-bound-old-name", ps("--max-items-per-user", "0"), ["max_contributions"]),
    ("ps-bound-float", ps("--max-contributions", "1e3"), ["--max-contributions"]),
    ("ps-algorithm-bad", ps("--algorithm", "nope"), ["--algorithm"]),
    ("ps-split-over-1", ps("--split", "0.5,0.6"), ["split"]),
    ("ps-split-three-mad2r", ps("--split", "0.1,0.2,0.7"), ["mad2r"]),
    ("ps-truncation-beta", ps("--truncation-beta", "-1"), ["beta"]),
    ("ps-b-min", ps("--b-min", "0.2"), ["b_min"]),
    ("ps-record-col", ps("--record-col", "r"), ["--record-col"]),
    ("ps-unknown-flag", ps("--frobnicate"), ["--frobnicate"]),
    ("ps-log-level", ps("--log-level", "LOUD"), ["--log-level"]),
    ("ps-unsafe-logs", ps("--unsafe-debug-logs"), ["--unsafe-debug-logs", "--allow-unsafe"]),
    ("ps-key-short", ps("--noise-key-file", "short.key"), ["--noise-key-file", "32"]),
    ("ps-key-missing", ps("--noise-key-file", "nokey"), ["--noise-key-file nokey"]),
    ("ps-key-and-seed", ps("--noise-key-file", "key32", "--seed", "1"), ["--seed"]),
    ("ps-config-unparsable", ps("--config", "bad.yaml"), ["bad.yaml", "parsed"]),
    ("ps-config-missing", ps("--config", "nope.yaml"), ["nope.yaml"]),
    ("ps-config-unknown-key", ps("--config", "unknown.yaml"), ["epsilom", "'epsilon'"]),
    ("ps-config-list", ps("--config", "list.yaml"), ["list.yaml", "mapping"]),
    ("ps-config-spark-list", ps("--config", "spark_list.yaml"), ["spark"]),
    ("ps-spark-conf", ps("--spark-conf", "novalue"), ["--spark-conf"]),
    ("ps-dry-run-still-checks", ps("--report", "data.parquet", "--dry-run", inp="data.parquet"),
     ["--report data.parquet"]),
    # --- distinct count
    ("dc-epsilon-missing", dc(eps=None), ["--epsilon is required"]),
    ("dc-epsilon-1e9", dc(eps="1e9"), ["epsilon", "at most 100"]),
    ("dc-bound-1e12", dc("--max-contributions", "1000000000000"), ["max_contributions"]),
    ("dc-bound-old-name", dc("--max-contribution", "0"), ["max_contributions"]),
    ("dc-failure-probability", dc("--failure-probability", "0.7"), ["beta"]),
    ("dc-method", dc("--method", "nope"), ["--method"]),
    ("dc-output-flag", dc("--output", "o"), ["--output"]),
    ("dc-delta-flag", dc("--delta", "1e-5"), ["--delta"]),
    ("dc-debug-unconfirmed", dc("--debug-report", "d.json"), ["--debug-report", "--allow"]),
    ("dc-debug-with-store", dc("--debug-report", "d.json", "--allow-unsafe-debug",
                               "--budget-store", "sqlite:///b.db"),
     ["--debug-report", "--budget-store"]),
    ("dc-debug-inside-input", dc("--debug-report", "words/d.json", "--allow-unsafe-debug"),
     ["--debug-report", "--input"]),
    ("dc-debug-from-config", dc("--config", "debug.yaml", "--allow-unsafe-debug"),
     ["debug_report"]),
    ("dc-report-is-input", dc("--report", "data.parquet", inp="data.parquet"),
     ["--report data.parquet"]),
    ("dc-report-exists", dc("--report", "afile"), ["--report afile", "--overwrite"]),
    # --- contribution bounding
    ("cb-no-bound", cb(), ["--max-contributions"]),
    ("cb-bound-negative", cb("--max-contributions", "-1"), ["max_contributions"]),
    ("cb-bound-huge", cb("--max-contributions", "10000000000"), ["max_contributions", "at most"]),
    ("cb-bound-old-name", cb("--capacity", "-1"), ["max_contributions"]),
    ("cb-output-is-input", cb("--max-contributions", "2", "--overwrite", out="graph"),
     ["--output graph", "--input graph"]),
    ("cb-capacities-missing", cb("--capacities", "nocaps"), ["--capacities nocaps"]),
    ("cb-capacities-is-output", cb("--capacities", "caps", "--overwrite", out="caps"),
     ["--output caps", "--capacities caps"]),
    ("cb-work-dir-is-input", cb("--max-contributions", "2", "--work-dir", "graph"),
     ["--work-dir graph", "--input graph"]),
    ("cb-work-dir-is-file", cb("--max-contributions", "2", "--work-dir", "afile"),
     ["--work-dir afile", "file"]),
    ("cb-user-state-is-output", cb("--max-contributions", "2", "--user-state", "o"),
     ["--user-state o", "--output o"]),
    ("cb-weights-json", cb("--max-contributions", "2", "--order", "weighted-global",
                           "--record-weights", "bad.json"), ["--record-weights bad.json"]),
    ("cb-item-col", cb("--max-contributions", "2", "--item-col", "x"), ["--item-col"]),
    ("cb-budget-store", cb("--max-contributions", "2", "--budget-store", "sqlite:///b.db"),
     ["--budget-store"]),
    ("cb-order", cb("--max-contributions", "2", "--order", "nope"), ["--order"]),
    # --- generate
    ("gen-output-empty", gen(out=""), ["--output", "empty"]),
    ("gen-output-under-file", gen(out="afile/g"), ["--output afile/g"]),
    ("gen-output-exists", gen(out="out_exists"), ["--output out_exists", "--overwrite"]),
    ("gen-users-zero", gen("--users", "0"), ["users"]),
    ("gen-kind", gen("--kind", "nope"), ["--kind"]),
    ("gen-input-flag", gen("--input", "words"), ["--input"]),
    ("gen-key-flag", gen("--noise-key-file", "key32"), ["--noise-key-file"]),
    ("gen-unsafe-flag", gen("--unsafe-debug-logs"), ["--unsafe-debug-logs"]),
    # --- the spark-dp command and its tools
    ("cli-no-command", [], ["command"]),
    ("cli-unknown-command", ["frobnicate"], ["frobnicate"]),
    ("calibrate-epsilon-missing", ["calibrate"], ["--epsilon"]),
    ("calibrate-epsilon-1e9", ["calibrate", "--epsilon", "1e9"], ["epsilon", "at most 100"]),
    ("calibrate-geometric-1e5",
     ["calibrate", "--epsilon", "1e5", "--algorithm", "truncated-geometric"], ["epsilon"]),
    ("calibrate-bound-1e12",
     ["calibrate", "--epsilon", "1", "--max-contributions", "1000000000000"],
     ["max_contributions"]),
    ("calibrate-delta", ["calibrate", "--epsilon", "1", "--delta", "0.999999"], ["delta"]),
    ("calibrate-unknown-flag", ["calibrate", "--epsilon", "1", "--record-col", "x"],
     ["--record-col"]),
]  # fmt: skip

# Cases run through the real console script or a jobs/*.py file (not the fork server).
SCRIPT_CASES: list[tuple[str, list[str], str | None, list[str]]] = [
    ("console-report-is-input", ps("--report", "data.parquet", inp="data.parquet"), None,
     ["--report data.parquet"]),
    ("console-calibrate-1e9", ["calibrate", "--epsilon", "1e9"], None, ["epsilon"]),
    ("script-ps-output-is-input", ps("--overwrite", out="words")[1:],
     "jobs/partition_selection.py", ["--output words"]),
    ("script-cb-missing-input", cb("--max-contributions", "2", inp="nope")[1:],
     "jobs/contribution_bounding.py", ["--input nope"]),
    ("script-dc-truncated", dc(inp="trunc.parquet")[1:], "jobs/distinct_count.py",
     ["--input trunc.parquet"]),
]  # fmt: skip


def _parquet(path: Path, table: pa.Table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def _workspace(root: Path) -> Path:
    pairs = pa.table({"user_id": ["u1", "u1", "u2"], "item": ["a", "b", "a"]})
    _parquet(root / "words" / "part-00000.parquet", pairs)
    (root / "words" / "_SUCCESS").write_text("")
    _parquet(root / "data.parquet", pairs)
    graph = pa.table({"record_id": ["r1", "r1", "r2"], "user_id": ["u1", "u2", "u1"]})
    _parquet(root / "graph" / "part-00000.parquet", graph)
    _parquet(root / "caps" / "part-00000.parquet", pa.table({"user_id": ["u1"], "cap": [1]}))
    (root / "bad.json").write_text('{"user_id": "u1", "item": "a"}\n')
    (root / "fake.parquet").write_text("user_id,item\nu1,a\n")
    (root / "trunc.parquet").write_bytes((root / "data.parquet").read_bytes()[:-20])
    (root / "empty_dir").mkdir()
    (root / "notes.txt").write_text("not a table\n")
    (root / "junk_dir").mkdir()
    (root / "junk_dir" / "part-0.parquet").write_text("junk")
    (root / "key32").write_bytes(bytes(range(32)))
    (root / "key32").chmod(0o600)
    (root / "short.key").write_bytes(b"12345")
    (root / "short.key").chmod(0o600)
    (root / "good.yaml").write_text("epsilon: 1.0\n")
    (root / "bad.yaml").write_text("epsilon: [1,\n  delta: :\n")
    (root / "unknown.yaml").write_text("epsilom: 1.0\n")
    (root / "list.yaml").write_text("- 1\n- 2\n")
    (root / "spark_list.yaml").write_text("spark: [1, 2]\n")
    (root / "debug.yaml").write_text("debug_report: d.json\n")
    (root / "out_exists").mkdir()
    (root / "out_exists" / "part-0.parquet").write_bytes((root / "data.parquet").read_bytes())
    (root / "stale.report.json").write_text("{}")
    (root / "report_dir").mkdir()
    (root / "afile").write_text("a file\n")
    if not RO.startswith("/"):
        (root / "ro").mkdir()
        (root / "ro").chmod(0o555)
    return root


def _snapshot(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


def _check(result: dict, words: list[str], before: dict[str, str], root: Path) -> None:
    err = result["stderr"]
    lines = [line for line in err.splitlines() if line.strip()]
    assert result["code"] == 2, (result["code"], err[-3000:])
    assert 1 <= len(lines) <= 3, err
    assert not TRACE.search(err), err
    for word in words:
        assert word in err, (word, err)
    assert _snapshot(root) == before  # the inputs' bytes, and nothing new


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return _workspace(tmp_path_factory.mktemp("bad_inputs") / "template")


@pytest.fixture(scope="module")
def forked(template: Path, tmp_path_factory) -> dict[str, tuple[dict, dict, Path]]:
    """Every fork-server case, run once: id -> (result, snapshot before, workspace)."""
    base = tmp_path_factory.mktemp("forked")
    cases, before = [], {}
    for case_id, argv, _ in CASES:
        root = base / case_id
        shutil.copytree(template, root, symlinks=True)
        before[case_id] = (_snapshot(root), root)
        cases.append({"id": case_id, "argv": argv, "cwd": str(root)})
    results = run_in_server(cases)
    return {k: (results[k], *before[k]) for k in before}


def test_there_are_enough_cases() -> None:
    assert len(CASES) + len(SCRIPT_CASES) + len(SPARK_CASES) >= 60
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize(
    ("case_id", "words"), [(c[0], c[2]) for c in CASES], ids=[c[0] for c in CASES]
)
def test_before_spark(forked, case_id: str, words: list[str]) -> None:
    result, before, root = forked[case_id]
    _check(result, words, before, root)
    assert "incubator" not in result["stderr"]  # no JVM was started


@pytest.mark.parametrize(
    ("case_id", "argv", "script", "words"), SCRIPT_CASES, ids=[c[0] for c in SCRIPT_CASES]
)
def test_console_script_and_job_files(template, tmp_path, case_id, argv, script, words) -> None:
    root = tmp_path / "ws"
    shutil.copytree(template, root, symlinks=True)
    before = _snapshot(root)
    if script is None:
        cmd = [str(Path(sys.executable).with_name("spark-dp")), *argv]
        if not Path(cmd[0]).exists():
            cmd = [sys.executable, "-m", "spark_dp", *argv]
    else:
        cmd = [sys.executable, str(ROOT / script), *argv]
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=120)
    _check({"code": done.returncode, "stderr": done.stderr}, words, before, root)


# (id, job module, argv, HADOOP_CONF_DIR set, words): failures found while reading the data.
SPARK_CASES: list[tuple[str, str, list[str], bool, list[str]]] = [
    ("spark-ps-nulls", "partition_selection", ps(inp="nulls")[1:], False,
     ["null ids", "--drop-nulls"]),
    ("spark-ps-empty", "partition_selection", ps(inp="empty")[1:], False, ["is empty"]),
    ("spark-dc-missing-column", "distinct_count", dc("--user-col", "uid")[1:], False,
     ["'uid'", "--*-col"]),
    ("spark-dc-float-ids", "distinct_count", dc(inp="floats")[1:], False, ["floating-point"]),
    ("spark-cb-mixed-types", "contribution_bounding",
     cb("--max-contributions", "1", inp="mixed")[1:], False, ["mixed types"]),
    ("spark-cb-negative-caps", "contribution_bounding", cb("--capacities", "negcaps")[1:], False,
     ["negcaps", "negative"]),
    ("spark-uri-not-parquet", "partition_selection", ps(inp="{ws}/fake.parquet")[1:], True,
     ["--input", "fake.parquet", "--input-format csv"]),
    ("spark-uri-missing", "distinct_count", dc(inp="{ws}/nope")[1:], True,
     ["--input", "/nope does not exist"]),
]  # fmt: skip


@pytest.fixture(scope="module")
def spark_template(spark, template: Path, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("spark_bad") / "template"
    shutil.copytree(template, root, symlinks=True)
    spark.createDataFrame([("u1", "a"), (None, "b")], "user_id string, item string").write.parquet(
        str(root / "nulls")
    )
    spark.createDataFrame([], "user_id string, item string").write.parquet(str(root / "empty"))
    spark.createDataFrame([(1.5, "a")], "user_id double, item string").write.parquet(
        str(root / "floats")
    )
    spark.createDataFrame([(1, 1)], "record_id long, user_id long").write.parquet(
        str(root / "mixed" / "p=1")
    )
    spark.createDataFrame([("r", "u")], "record_id string, user_id string").write.parquet(
        str(root / "mixed" / "p=2")
    )
    spark.createDataFrame([("u1", -1)], "user_id string, cap int").write.parquet(
        str(root / "negcaps")
    )
    return root


@pytest.mark.parametrize(
    ("case_id", "job", "argv", "hadoop", "words"), SPARK_CASES, ids=[c[0] for c in SPARK_CASES]
)
def test_found_while_reading(
    spark_template, tmp_path, monkeypatch, capfd, case_id, job, argv, hadoop, words
) -> None:
    import importlib

    root = tmp_path / "ws"
    shutil.copytree(spark_template, root, symlinks=True)
    before = _snapshot(root)
    monkeypatch.chdir(root)
    if hadoop:  # plain paths resolved by Hadoop, as on a cluster: Spark's errors translated
        (tmp_path / "hadoop-conf").mkdir()
        monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path / "hadoop-conf"))
    capfd.readouterr()
    main = importlib.import_module(f"spark_dp.jobs.{job}").main
    code = main([*(a.replace("{ws}", str(root)) for a in argv), "--log-level", "WARNING"])
    _check({"code": code, "stderr": capfd.readouterr().err}, words, before, root)
