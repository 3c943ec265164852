"""Delta Lake by path with the real jars (``make test-delta``: Spark 3.5 with delta-spark 3.3.2,
Spark 4.2.0 with delta-spark 4.4.0).

Read at a version and by time travel, a release written as a Delta table in one commit and
replaced with ``--overwrite``, the request and release bound to the version read (the same key
on a new version is a new release and a new charge), a driver killed during a Delta release
leaving the previous table readable, and the bad-input rules for Delta paths.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from spark_dp.budget import BudgetStore
from spark_dp.jobs import distinct_count, partition_selection
from spark_dp.randomness.key_file import write_key_file
from tests.support.job_processes import FAST, at_moment, job_env
from tests.support.spark_session import DELTA_JARS_ENV, DELTA_TEST_CONF

ROOT = Path(__file__).resolve().parents[2]


def _pairs(spark: SparkSession, users: int, items: int) -> DataFrame:
    """``users`` users, each holding the ``items`` common words and one word of its own."""
    rows = [(f"u{u}", f"w{k}") for u in range(users) for k in range(items)]
    rows += [(f"u{u}", f"own{u}") for u in range(users)]
    return spark.createDataFrame(rows, "user_id string, item string")


@pytest.fixture
def table(spark: SparkSession, tmp_path: Path) -> Path:
    """A Delta table with two versions: v0 holds 30 + 300 distinct words, v1 12 + 200."""
    path = tmp_path / "words_delta"
    _pairs(spark, 300, 30).write.format("delta").save(str(path))
    _pairs(spark, 200, 12).write.format("delta").mode("overwrite").save(str(path))
    return path


def _true_count(tmp_path: Path, table: Path, *extra: str) -> int:
    """The distinct count job's NON-PRIVATE true count: which rows the job read."""
    debug = tmp_path / f"debug{len(list(tmp_path.iterdir()))}.json"
    args = ["--input", str(table), "--input-format", "delta", "--epsilon", "1", "--seed", "1"]
    args += ["--method", "greedy", "--report", str(tmp_path / f"r-{debug.name}")]
    args += ["--debug-report", str(debug), "--allow-unsafe-debug", *extra]
    assert distinct_count.main([*args, "--log-level", "ERROR"]) == 0
    written = debug.with_name(debug.name.replace(".json", ".NONPRIVATE.json"))
    return int(json.loads(written.read_text())["true_count"])


def test_latest_version_and_time_travel(table: Path, tmp_path: Path) -> None:
    assert _true_count(tmp_path, table) == 212
    assert _true_count(tmp_path, table, "--input-version", "1") == 212
    assert _true_count(tmp_path, table, "--input-version", "0") == 330


def _select(table: Path, out: Path, *extra: str) -> list[str]:
    args = ["--input", str(table), "--input-format", "delta", "--output", str(out)]
    return [*args, "--algorithm", "basic", "--epsilon", "1", "--delta", "1e-5", *extra]


def test_a_release_is_one_delta_commit_and_overwrite_replaces_it(
    spark: SparkSession, table: Path, tmp_path: Path
) -> None:
    out, plain = tmp_path / "vocab", tmp_path / "vocab_parquet"
    assert (
        partition_selection.main(_select(table, out, "--output-format", "delta", "--seed", "4"))
        == 0
    )
    assert partition_selection.main(_select(table, plain, "--seed", "4")) == 0
    released = spark.read.format("delta").load(str(out))
    assert_df_equality(released, spark.read.parquet(str(plain)), ignore_row_order=True)
    assert sorted(r.item for r in released.collect()) == sorted(f"w{k}" for k in range(12))
    log = sorted(p.name for p in (out / "_delta_log").iterdir() if p.name.endswith(".json"))
    assert log == [f"{0:020d}.json"]  # one commit: the whole release or nothing
    report = json.loads((tmp_path / "vocab.report.json").read_text())
    assert report["parameters"]["algorithm"] == "basic"
    # --overwrite with another version read: the table replaced whole, one commit again
    again = _select(table, out, "--output-format", "delta", "--seed", "4", "--overwrite")
    assert partition_selection.main([*again, "--input-version", "0"]) == 0
    assert sorted(r.item for r in spark.read.format("delta").load(str(out)).collect()) == sorted(
        f"w{k}" for k in range(30)
    )
    log = sorted(p.name for p in (out / "_delta_log").iterdir() if p.name.endswith(".json"))
    assert log == [f"{0:020d}.json"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def _key(tmp_path: Path) -> str:
    path = tmp_path / "key"
    write_key_file(path)
    return str(path)


def _budget(url: str) -> dict:
    with BudgetStore.open(url) as s:
        return next(b.to_dict() for b in s.summary() if b.dataset == "words")


def test_the_same_key_on_a_new_version_is_a_new_release_and_a_new_charge(
    spark: SparkSession, table: Path, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'budget.db'}"
    with BudgetStore.open(store) as s:
        s.set_cap("words", 10.0, 1e-3)
    key = _key(tmp_path)

    def run(report: str, *extra: str) -> int:
        args = ["--input", str(table), "--input-format", "delta", "--epsilon", "1"]
        args += ["--budget-store", store, "--dataset-id", "words", "--noise-key-file", key]
        return distinct_count.main([*args, "--report", str(tmp_path / report), *extra])

    assert run("v1.json") == 0
    assert _budget(store)["spent_epsilon"] == pytest.approx(1.0)
    # the same version, given or latest, the same key: the same request, nothing charged
    assert run("v1.json", "--overwrite") == 0  # a retry: exit 0, the release left as it is
    assert run("v1.json", "--overwrite", "--input-version", "1") == 0
    assert _budget(store)["spent_epsilon"] == pytest.approx(1.0)
    # another version with the same key: another request and release, charged again
    assert run("v0.json", "--input-version", "0") == 0
    _pairs(spark, 100, 5).write.format("delta").mode("append").save(str(table))  # version 2
    assert run("v2.json") == 0
    assert _budget(store)["spent_epsilon"] == pytest.approx(3.0)
    ids = {json.loads((tmp_path / f"v{v}.json").read_text())["release"]["id"] for v in range(3)}
    assert len(ids) == 3
    with BudgetStore.open(store) as s:
        assert [r.shown_state for r in s.runs("words")] == ["committed"] * 3


def test_a_key_file_read_at_a_version_digests_its_snapshot_without_a_pass(
    spark: SparkSession, table: Path, tmp_path: Path
) -> None:
    """A key that can come back, a pinned version: the digest is the version's (the same at
    the same version, another at another version or with another key), and the rows are not
    read for it (nothing counted); unpinned, the rows are digested as for Parquet."""
    from spark_dp.io import ReadGate, load_pairs
    from spark_dp.randomness import Randomness

    key = Randomness.from_key_file(_key(tmp_path))

    def read(version: int | None, gate_key: Randomness = key):
        gate = ReadGate.keyed_by(gate_key)
        return load_pairs(spark, str(table), fmt="delta", version=version, gate=gate)

    pairs, first = read(1)
    _, again = read(1)
    _, older = read(0)
    _, other_key = read(1, Randomness.create(7))
    _, unpinned = read(None)
    assert first.digest is not None and first.rows_read is None  # no pass of its own
    assert again.digest == first.digest
    assert len({d.value for d in (first.digest, older.digest, other_key.digest)}) == 3
    assert unpinned.rows_read == 12 * 200 + 200 and unpinned.digest != first.digest
    # the same files under another commit (a clone of another version, a table made again):
    # the commit file is part of the snapshot
    commit = table / "_delta_log" / f"{1:020d}.json"
    text = commit.read_text()
    commit.write_text(text.replace('"timestamp":', '"timestamp":1', 1))
    (commit.parent / f".{commit.name}.crc").unlink(missing_ok=True)  # the local FS's checksum
    _, recommitted = read(1)
    assert recommitted.digest != first.digest and recommitted.rows_read is None
    commit.write_text(text)
    expected = read_delta_rows(spark, table, 1)
    assert_df_equality(pairs, expected, ignore_row_order=True)
    pairs.unpersist()


def read_delta_rows(spark: SparkSession, table: Path, version: int) -> DataFrame:
    """Version ``version`` of ``table`` read by Delta itself, distinct."""
    reader = spark.read.format("delta").option("versionAsOf", version)
    return reader.load(str(table)).select("user_id", "item").distinct()


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(err) == 1 and "Traceback" not in err[0]
    return err[0]


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--input-version", "5"], ["--input-version 5", "versions up to 1"]),
        (["--input", "{parquet}"], ["is not a Delta table", "drop --input-format delta"]),
        (["--input", "{missing}"], ["does not exist"]),
    ],
)
def test_bad_delta_inputs_exit_2_in_one_line_and_write_nothing(
    spark: SparkSession,
    table: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    words: list[str],
) -> None:
    parquet = tmp_path / "plain"
    _pairs(spark, 10, 2).write.parquet(str(parquet))
    extra = [e.format(parquet=parquet, missing=tmp_path / "nope") for e in extra]
    before = sorted(p.name for p in tmp_path.iterdir())
    assert partition_selection.main([*_select(table, tmp_path / "o"), *extra]) == 2
    line = _one_line(capsys)
    assert all(w in line for w in words), line
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def _delta_args() -> list[str]:
    """The subprocess job's Spark settings: the suite's Delta jars (the job adds Delta's
    extension and catalog itself) and the suite's Delta speed setting."""
    conf = {"spark.jars": os.environ[DELTA_JARS_ENV], **DELTA_TEST_CONF}
    return [arg for key, value in conf.items() for arg in ("--spark-conf", f"{key}={value}")]


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["KILL@0", "KILL@6"])
def test_a_kill_during_a_delta_release_leaves_the_previous_table_readable(
    spark: SparkSession, table: Path, tmp_path: Path, moment: str
) -> None:
    """SIGKILL once the new table is written and staged (moment 0), and half-way through the
    commit (moment 6: the old table moved aside, the new one not yet in place): the previous
    release is readable, at once or after the next run's recovery, and that run then
    releases."""
    out = tmp_path / "vocab"
    assert (
        partition_selection.main(_select(table, out, "--output-format", "delta", "--seed", "4"))
        == 0
    )
    before = spark.read.format("delta").load(str(out)).collect()
    args = _select(table, out, "--output-format", "delta", "--overwrite", "--input-version", "0")
    cmd = [sys.executable, str(ROOT / "jobs" / "partition_selection.py"), *args, *FAST]
    killed = subprocess.run(
        at_moment(moment, "partition-selection", *args, *FAST, *_delta_args()),
        env=job_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    if moment == "KILL@0":  # nothing moved: the previous table as it was
        assert spark.read.format("delta").load(str(out)).collect() == before
    # the next run writing the same target recovers the killed commit first (before Spark)
    probe = [sys.executable, str(ROOT / "jobs" / "partition_selection.py"), *_select(table, out)]
    refused = subprocess.run(probe, env=job_env(), capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "already exists" in refused.stderr  # recovered, refused
    assert sorted(spark.read.format("delta").load(str(out)).collect()) == sorted(before)
    again = subprocess.run(
        [*cmd, *_delta_args()], env=job_env(), capture_output=True, text=True, timeout=900
    )
    assert again.returncode == 0, again.stderr[-2000:]
    items = sorted(r.item for r in spark.read.format("delta").load(str(out)).collect())
    assert items == sorted(f"w{k}" for k in range(30))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_delta_catalog_tables_in_and_out(spark: SparkSession, tmp_path: Path) -> None:
    """A Delta table of the session's catalog (Delta's catalog) read at its latest version and
    a release written as a new Delta catalog table; a Delta table without --input-format delta
    is refused in one line."""
    db = "t38_delta"
    spark.sql(f"CREATE DATABASE {db} LOCATION '{tmp_path / 'db'}'")
    try:
        table = tmp_path / "words_delta"  # versions 0 and 1, registered as db.words
        _pairs(spark, 300, 30).write.format("delta").save(str(table))
        _pairs(spark, 200, 12).write.format("delta").mode("overwrite").save(str(table))
        spark.sql(f"CREATE TABLE {db}.words USING delta LOCATION '{table}'")
        io = ["--input-table", f"{db}.words", "--output-table", f"{db}.vocab"]
        args = [*io, "--algorithm", "basic", "--epsilon", "1", "--delta", "1e-5", "--seed", "4"]
        assert partition_selection.main(args) == 2  # a Delta table: --input-format delta
        delta = ["--input-format", "delta", "--output-format", "delta"]
        assert partition_selection.main([*args, *delta]) == 0
        released = spark.table(f"{db}.vocab")
        assert sorted(r.item for r in released.collect()) == sorted(f"w{k}" for k in range(12))
        detail = spark.sql(f"DESCRIBE DETAIL {db}.vocab").collect()[0]
        assert detail.format == "delta"
        log = sorted(p.name for p in (tmp_path / "db" / "vocab" / "_delta_log").iterdir())
        assert [n for n in log if n.endswith(".json")] == [f"{0:020d}.json"]
        again = [*args, *delta, "--input-version", "0", "--overwrite"]
        assert partition_selection.main(again) == 0
        items = sorted(r.item for r in spark.table(f"{db}.vocab").collect())
        assert items == sorted(f"w{k}" for k in range(30))
    finally:
        spark.sql(f"DROP DATABASE {db} CASCADE")


def _data_files(table: Path) -> list[list[str]]:
    """The rows of a Delta table's data files, file by file in the order its log adds them:
    what two releases of the same rows share (docs/privacy/boundary.md#rows)."""
    import pyarrow.parquet as pq

    added = []
    for line in (table / "_delta_log" / f"{0:020d}.json").read_text().splitlines():
        action = json.loads(line)
        if "add" in action:
            added.append(action["add"]["path"])
    return [pq.read_table(table / path).column("item").to_pylist() for path in added]


def test_a_delta_release_of_the_same_rows_holds_the_same_files(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The neighbour test's Delta case (tests/privacy/test_neighbours.py): D and D + u, where
    u's one item is never released, one key bound by hand. Everything but the Delta log's
    times and ids and its files' names is the same: the exit code, stdout, the log without
    timings, the report without its public fields, the plans, and the data files (as many, the
    same rows in the same order, sorted by item)."""
    from tests.support.neighbours import differences, run_job_in_process

    runs = []
    for name, extra in (("D", []), ("U", [("unew", "own-new")])):  # names of one length
        root = tmp_path / name
        rows = _pairs(spark, 150, 12).union(
            spark.createDataFrame(extra, "user_id string, item string")
        )
        rows.coalesce(1).write.parquet(str(root / "input"))
        argv = _select(root / "input", root / "out" / "vocab", "--seed", "4")
        argv[argv.index("--input-format") : argv.index("--input-format") + 2] = []
        runs.append(
            run_job_in_process(
                spark,
                partition_selection.SPEC,
                [*argv, "--output-format", "delta"],
                root,
                out=root / "out",
            )
        )
    d, du = runs
    assert d.code == 0, d.stderr
    found = differences(d, du, files=False)
    assert not found, "\n\n".join(found)
    files = _data_files(tmp_path / "D" / "out" / "vocab")
    assert files == _data_files(tmp_path / "U" / "out" / "vocab")
    assert len(files) == 1 and files[0] == sorted(f"w{k}" for k in range(12))
