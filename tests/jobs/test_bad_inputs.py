"""Bad input, tried as a user would: every case exits 2 with a short message, harms nothing.

Each case (the table: :mod:`tests.support.bad_input_cases`) asserts the five properties of issue 17:
exit code 2 (1 for a failure of the environment); one to three lines on stderr, one of them the
message (the others log records), naming the flag or path at fault; no Python or Java trace;
the inputs' bytes unchanged (a hash of every file before and after); nothing new on disk. Each
runs in its own copy of a small workspace (inputs written with pyarrow, no Spark; named pipes,
devices and sockets made in the copy).

Most cases fail before Spark starts: they run as separate processes forked from a server that
imported ``spark-dp`` once (:mod:`tests.support.cli_forkserver`), so a case costs milliseconds
instead of a second of imports; a few go through the real ``spark-dp`` console script and
``jobs/*.py`` files. The cases that need Spark (nulls, schemas, capacities, a non-Parquet input
behind Hadoop) run in this process on the shared session, their output captured at the file
descriptors.

Bad *rows* are the exception (docs/privacy/caveats.md#bad-rows): an empty input, null ids and
invalid capacity rows end with exit 0 and an empty or fixed reading, so that the exit code does
not depend on the rows; only ``--strict-input`` turns them into the exit-2 cases above.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_dp.randomness.key_file import write_key_file
from tests.support.bad_input_cases import (
    CASES,
    ENVIRONMENT_CASES,
    RO,
    SCRIPT_CASES,
    SETUP,
    SPARK_CASES,
)
from tests.support.cli_forkserver import serve
from tests.sweep.workspace import TRACE, apply, error_lines, snapshot

ROOT = Path(__file__).resolve().parents[2]


def _parquet(path: Path, table: pa.Table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def _workspace(root: Path) -> Path:
    pairs = pa.table({"user_id": ["u1", "u1", "u2"], "item": ["a", "b", "a"]})
    _parquet(root / "layout_k" / "part-0.parquet", pairs)
    _parquet(root / "layout_k" / "k=1" / "part-1.parquet", pairs)
    _parquet(root / "layout_nested" / "a" / "b" / "part-0.parquet", pairs)
    _parquet(root / "cols_case" / "part-0.parquet", pairs.append_column("USER_ID", pairs[0]))
    (root / "userdir").mkdir()
    (root / "userdir" / "notes.txt").write_text("mine\n")
    (root / "mine_work").mkdir()
    (root / "twice.yaml").write_text("max_contribution: 5\nmax_contributions: 6\n")
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
    write_key_file(root / "key32")
    (root / "short.key").write_bytes(b"12345")
    (root / "short.key").chmod(0o600)
    (root / "good.yaml").write_text("epsilon: 1.0\n")
    (root / "bad.yaml").write_text("epsilon: [1,\n  delta: :\n")
    (root / "unknown.yaml").write_text("epsilom: 1.0\n")
    (root / "list.yaml").write_text("- 1\n- 2\n")
    (root / "spark_list.yaml").write_text("spark: [1, 2]\n")
    (root / "debug.yaml").write_text("debug_report: d.json\n")
    (root / "large_delta.yaml").write_text("delta: 0.002\n")
    (root / "allow_maybe.yaml").write_text("delta: 0.002\nallow_large_delta: maybe\n")
    (root / "out_exists").mkdir()
    (root / "out_exists" / "part-0.parquet").write_bytes((root / "data.parquet").read_bytes())
    (root / "stale.report.json").write_text("{}")
    (root / "report_dir").mkdir()
    (root / "afile").write_text("a file\n")
    if not RO.startswith("/"):
        (root / "ro").mkdir()
        (root / "ro").chmod(0o555)
    return root


def _check(
    result: dict, words: list[str], before: dict[str, str], root: Path, code: int = 2
) -> None:
    err = result["stderr"]
    lines = [line for line in err.splitlines() if line.strip()]
    assert result["code"] == code, (result["code"], err[-3000:])
    assert 1 <= len(lines) <= 3, err
    assert len(error_lines(err)) == 1, err  # the rest are log records
    assert not TRACE.search(err), err
    for word in words:
        assert word in err, (word, err)
    assert snapshot(root) == before  # the inputs' bytes, and nothing new


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
        for op in SETUP.get(case_id, ()):
            apply(root, op)
        before[case_id] = (snapshot(root), root)
        cases.append({"id": case_id, "argv": argv, "cwd": str(root)})
    results = {r["id"]: r for r in serve(cases, timeout=600)}
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
    before = snapshot(root)
    if script is None:
        cmd = [str(Path(sys.executable).with_name("spark-dp")), *argv]
        if not Path(cmd[0]).exists():
            cmd = [sys.executable, "-m", "spark_dp", *argv]
    else:
        cmd = [sys.executable, str(ROOT / script), *argv]
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=120)
    _check({"code": done.returncode, "stderr": done.stderr}, words, before, root)


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
    spark.createDataFrame([(True, "a")], "user_id boolean, item string").write.parquet(
        str(root / "bools")
    )
    pairs = pa.table({"user_id": [f"u{i}" for i in range(500)], "item": ["a"] * 500})
    _parquet(root / "corrupt" / "part-0.parquet", pairs)
    _corrupt_first_page(root / "corrupt" / "part-0.parquet")
    weights = pa.table({"record_id": ["r1", "r2"], "weight": [1.0, None]})
    _parquet(root / "nullweights" / "part-0.parquet", weights)
    return root


def _corrupt_first_page(path: Path) -> None:
    """Garbage in the first data page of a Parquet file; its footer and magics intact."""
    pq.write_table(pq.read_table(path), path, compression="none")
    data = bytearray(path.read_bytes())
    start = pq.ParquetFile(path).metadata.row_group(0).column(0).data_page_offset
    for i in range(start + 20, start + 400):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


def _in_process(root: Path, tmp_path: Path, monkeypatch, capfd, job: str, argv: list[str],
                hadoop: bool) -> tuple[dict, dict[str, str]]:  # fmt: skip
    """Run a job in this process on the shared session: (its code and stderr, the workspace
    before it ran)."""
    import importlib

    before = snapshot(root)
    monkeypatch.chdir(root)
    if hadoop:  # plain paths resolved by Hadoop, as on a cluster: Spark's errors translated
        (tmp_path / "hadoop-conf").mkdir()
        monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path / "hadoop-conf"))
    capfd.readouterr()
    main = importlib.import_module(f"spark_dp.jobs.{job}").main
    code = main([*(a.replace("{ws}", str(root)) for a in argv), "--log-level", "WARNING"])
    return {"code": code, "stderr": capfd.readouterr().err}, before


@pytest.mark.parametrize(
    ("case_id", "job", "argv", "hadoop", "words"), SPARK_CASES, ids=[c[0] for c in SPARK_CASES]
)
def test_found_while_reading(
    spark_template, tmp_path, monkeypatch, capfd, case_id, job, argv, hadoop, words
) -> None:
    root = tmp_path / "ws"
    shutil.copytree(spark_template, root, symlinks=True)
    result, before = _in_process(root, tmp_path, monkeypatch, capfd, job, argv, hadoop)
    _check(result, words, before, root)


@pytest.mark.parametrize(
    ("case_id", "job", "argv", "words"), ENVIRONMENT_CASES, ids=[c[0] for c in ENVIRONMENT_CASES]
)
def test_environment_failures_are_one_line_and_exit_1(
    spark_template, tmp_path, monkeypatch, capfd, case_id, job, argv, words
) -> None:
    root = tmp_path / "ws"
    shutil.copytree(spark_template, root, symlinks=True)
    result, before = _in_process(root, tmp_path, monkeypatch, capfd, job, argv, False)
    _check(result, words, before, root, code=1)


# --------------------------------------------------------------------------- bad rows


@pytest.fixture(scope="module")
def bad_rows(spark, tmp_path_factory) -> Path:
    """Inputs whose rows are bad but whose schema is right: empty, null ids only, and a
    capacities table with every invalid kind of row."""
    root = tmp_path_factory.mktemp("bad_rows")
    pairs, graph = "user_id string, item string", "record_id string, user_id string"
    spark.createDataFrame([], pairs).write.parquet(str(root / "empty"))
    spark.createDataFrame([("u1", None), (None, "a"), (None, None)], pairs).write.parquet(
        str(root / "nulls")
    )
    spark.createDataFrame([], graph).write.parquet(str(root / "gempty"))
    spark.createDataFrame([("r1", None), (None, "u1")], graph).write.parquet(str(root / "gnulls"))
    rows = [("r1", "a"), ("r2", "b"), ("r3", "c"), ("r4", "d"), ("r5", "e"), ("r5", "a")]
    spark.createDataFrame(rows, graph).write.parquet(str(root / "graph"))
    caps = [("a", -1), ("b", None), (None, 5), ("c", 1), ("c", 0), ("d", 2), ("e", 1)]
    spark.createDataFrame(caps, "user_id string, cap int").write.parquet(str(root / "caps"))
    return root


@pytest.mark.parametrize("data", ["empty", "nulls"])
def test_bad_rows_release_an_empty_result_with_exit_0(bad_rows, tmp_path, spark, capfd, data):
    """docs/privacy/caveats.md#bad-rows: an empty input and one of null ids only end like any
    other input (exit 0, no item, the count of an empty curve, nothing selected), so the exit
    code says nothing about the rows; --strict-input exits 2 instead and writes nothing."""
    from spark_dp.jobs import contribution_bounding, distinct_count, partition_selection, preview

    pairs, graph, quiet = str(bad_rows / data), str(bad_rows / f"g{data}"), ["--log-level", "ERROR"]
    runs = {
        "basic": (partition_selection, ["--input", pairs, "--epsilon", "1", "--output"]),
        "mad2r": (partition_selection, ["--input", pairs, "--epsilon", "1", "--algorithm",
                                        "mad2r", "--output"]),
        "auto": (partition_selection, ["--input", pairs, "--epsilon", "1",
                                       "--max-contributions", "auto", "--output"]),
        "greedy": (distinct_count, ["--input", pairs, "--epsilon", "1", "--report"]),
        "exact": (distinct_count, ["--input", pairs, "--epsilon", "1", "--method", "exact",
                                   "--report"]),
        "preview": (preview, ["--input", pairs, "--epsilon", "0.2", "--json", "--report"]),
        "bounding": (contribution_bounding, ["--input", graph, "--max-contributions", "2",
                                             "--output"]),
    }  # fmt: skip
    for name, (job, argv) in runs.items():
        out = tmp_path / name
        assert job.main([*argv, str(out), *quiet]) == 0, (name, capfd.readouterr().err)
        if job in (partition_selection, contribution_bounding):
            assert spark.read.parquet(str(out)).count() == 0, name
        elif job is distinct_count:
            report = json.loads(out.read_text())
            assert report["release"]["kind"] == "normal" and "lower_bound" in report, name
        strict = tmp_path / f"{name}-strict"
        assert job.main([*argv, str(strict), "--strict-input", *quiet]) == 2, name
        err = capfd.readouterr().err
        assert "--strict-input" in err and "Traceback" not in err, (name, err)
        assert not strict.exists(), name


def test_invalid_capacities_have_one_reading(bad_rows, tmp_path, spark, capfd):
    """A negative or null capacity reads as 0, a null user is dropped, a user listed twice gets
    the smaller capacity: exit 0, and exactly the records those capacities allow; with
    --strict-input, exit 2 naming the problems."""
    from spark_dp.jobs import contribution_bounding

    argv = ["--input", str(bad_rows / "graph"), "--capacities", str(bad_rows / "caps"),
            "--max-contributions", "3", "--log-level", "ERROR"]  # fmt: skip
    assert contribution_bounding.main([*argv, "--output", str(tmp_path / "o")]) == 0
    kept = {r["record_id"] for r in spark.read.parquet(str(tmp_path / "o")).collect()}
    # a (cap -1 → 0), b (null → 0), c (1 and 0 → 0) keep nothing: r1, r2, r3 and r5 (a's) go
    assert kept == {"r4"}
    capfd.readouterr()
    assert contribution_bounding.main([*argv, "--output", str(tmp_path / "s"), "--strict-input"])
    err = capfd.readouterr().err
    assert "negative capacities" in err and "null 'cap'" in err and "null 'user_id'" in err
    assert not (tmp_path / "s").exists()
