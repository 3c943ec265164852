"""``--input-table`` and ``--output-table``: tables of the session's catalog (a database made
in a temporary directory), read and written through their locations; the bad-input rules for
tables (exit 2, one line, nothing written). Delta catalog tables: ``tests/delta``."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from chispa import assert_df_equality

from spark_dp.budget import BudgetStore
from spark_dp.jobs import distinct_count, partition_selection
from spark_dp.randomness.key_file import write_key_file
from tests.support.job_processes import FAST, job_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def db(spark, tmp_path: Path) -> Iterator[str]:
    """A database whose tables live under ``tmp_path/db``, with table ``words`` (Parquet):
    30 words every one of 300 users holds, and one word of each user's own."""
    name = f"t38_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name} LOCATION '{tmp_path / 'db'}'")
    rows = [(f"u{u}", f"w{k}") for u in range(300) for k in range(30)]
    rows += [(f"u{u}", f"own{u}") for u in range(300)]
    df = spark.createDataFrame(rows, "user_id string, item string")
    df.write.format("parquet").saveAsTable(f"{name}.words")
    yield name
    spark.sql(f"DROP DATABASE {name} CASCADE")


def _select(*io: str) -> list[str]:
    return [*io, "--algorithm", "basic", "--epsilon", "1", "--delta", "1e-5", "--seed", "4"]


def test_a_table_in_and_a_table_out_as_paths_would_be(spark, db: str, tmp_path: Path) -> None:
    out = tmp_path / "plain"
    words = spark.table(f"{db}.words")
    words.write.parquet(str(tmp_path / "words"))
    assert (
        partition_selection.main(_select("--input", str(tmp_path / "words"), "--output", str(out)))
        == 0
    )
    argv = _select("--input-table", f"{db}.words", "--output-table", f"{db}.vocab")
    assert partition_selection.main(argv) == 0
    released = spark.table(f"{db}.vocab")
    assert_df_equality(released, spark.read.parquet(str(out)), ignore_row_order=True)
    assert sorted(r.item for r in released.collect()) == sorted(f"w{k}" for k in range(30))
    assert (tmp_path / "db" / "vocab").is_dir()
    assert (tmp_path / "db" / "vocab.report.json").is_file()  # the report next to the table
    # a re-run replaces the table with --overwrite only
    assert partition_selection.main(argv) == 2
    assert partition_selection.main([*argv, "--overwrite"]) == 0
    assert sorted(r.item for r in spark.table(f"{db}.vocab").collect()) == sorted(
        f"w{k}" for k in range(30)
    )


@pytest.mark.parametrize(
    ("io", "words"),
    [
        (["--input-table", "{db}.nope", "--output-table", "{db}.o"], ["{db}.nope does not exist"]),
        (["--input-table", "{db}.words", "--output-table", "{db}.words"], ["is the input table"]),
        (
            ["--input-table", "{db}.words", "--output-table", "nodb_38.o"],
            ["nodb_38 does not exist"],
        ),
        (
            ["--input-table", "{db}.words", "--output-table", "{db}.o", "--user-col", "person"],
            ["has no column 'person'"],
        ),
        (["--input-table", "{db}.v", "--output-table", "{db}.o"], ["without a location"]),
        (
            ["--input-table", "{db}.words", "--output-table", "{db}.o", "--input-format", "csv"],
            ["stored as parquet, not csv"],
        ),
        (["--input-table", "x;drop", "--output-table", "{db}.o"], ["is not a table name"]),
        (["--input-table", "{db}.words", "--input", "{tmp}"], ["not allowed with argument"]),
    ],
)
def test_bad_tables_exit_2_in_one_line_and_write_nothing(
    spark, db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], io, words
) -> None:
    spark.sql(f"CREATE VIEW {db}.v AS SELECT * FROM {db}.words")
    io = [a.format(db=db, tmp=tmp_path) for a in io]
    tables = sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN {db}").collect())
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    assert partition_selection.main(_select(*io)) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert all(w.format(db=db) in err[0] for w in words), err[0]
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before  # nothing written
    assert sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN {db}").collect()) == tables


def test_the_request_of_a_table_is_its_location_and_listing(spark, db: str, tmp_path: Path) -> None:
    """The same key on the same table is the same request (not run or charged again); rows
    added to the table make a new request: a new release and a new charge."""
    store = f"sqlite:///{tmp_path / 'budget.db'}"
    with BudgetStore.open(store) as s:
        s.set_cap("words", 10.0, 1e-3)
    key = tmp_path / "key"
    write_key_file(key)

    def run(report: str, *extra: str) -> int:
        args = ["--input-table", f"{db}.words", "--epsilon", "1", "--budget-store", store]
        args += ["--dataset-id", "words", "--noise-key-file", str(key)]
        return distinct_count.main([*args, "--report", str(tmp_path / report), *extra])

    def spent() -> float:
        with BudgetStore.open(store) as s:
            return next(b.spent_epsilon for b in s.summary() if b.dataset == "words")

    assert run("a.json") == 0 and spent() == pytest.approx(1.0)
    assert run("a.json", "--overwrite") == 0 and spent() == pytest.approx(1.0)  # a retry
    spark.createDataFrame([("u9999", "w0")], "user_id string, item string").write.insertInto(
        f"{db}.words"
    )
    assert run("b.json") == 0 and spent() == pytest.approx(2.0)


@pytest.mark.slow
def test_tables_across_spark_submits_with_a_hive_metastore(tmp_path: Path) -> None:
    """Spark's in-memory catalog ends with its session; with a metastore (Hive's, in Derby
    here), a table one job writes is the table the next job reads: generate writes ``words``,
    partition selection reads it and writes ``vocab``, and a third run finds ``vocab``
    registered (refused for its columns, in one line: it has no user column)."""
    hive = ["--spark-conf", "spark.sql.catalogImplementation=hive"]
    hive += ["--spark-conf", f"spark.sql.warehouse.dir={tmp_path / 'wh'}"]
    url = f"jdbc:derby:;databaseName={tmp_path / 'metastore_db'};create=true"
    hive += ["--spark-conf", f"spark.hadoop.javax.jdo.option.ConnectionURL={url}"]

    def job(name: str, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, str(ROOT / "jobs" / f"{name}.py"), *args, *hive, *FAST]
        return subprocess.run(
            cmd, env=job_env(), capture_output=True, text=True, timeout=600, cwd=tmp_path
        )

    gen = job(
        "generate", "--kind", "zipf", "--users", "200", "--seed", "3", "--output-table", "words"
    )
    assert gen.returncode == 0, gen.stderr[-2000:]
    select = job(
        "partition_selection", *_select("--input-table", "words", "--output-table", "vocab")
    )
    assert select.returncode == 0, select.stderr[-2000:]
    report = json.loads((tmp_path / "wh" / "vocab.report.json").read_text())
    assert report["job"] == "partition_selection"
    assert any((tmp_path / "wh" / "vocab").glob("*.parquet"))
    again = job("partition_selection", *_select("--input-table", "vocab", "--output-table", "v2"))
    errors = [line for line in again.stderr.splitlines() if "error:" in line]
    assert again.returncode == 2 and len(errors) == 1, again.stderr[-2000:]
    assert "has no column 'user_id'" in errors[0] and "Traceback" not in again.stderr
    assert not (tmp_path / "wh" / "v2").exists()
