"""I/O contracts: readers, validation errors (asserting the messages), atomic writers."""

from __future__ import annotations

import datetime
import json
import os

import pytest
from chispa import assert_df_equality

from spark_dp import io
from spark_dp.errors import InputContractError, OutputExistsError
from spark_dp.logs import unsafe_debug


def _write(spark, rows, schema, path):
    spark.createDataFrame(rows, schema).write.mode("overwrite").parquet(str(path))
    return str(path)


def test_load_pairs_canonicalizes_and_deduplicates(spark, tmp_path):
    path = _write(
        spark,
        [(1, "a"), (1, "a"), (1, "b"), (2, "a"), (2, "ü€")],
        "uid long, word string",
        tmp_path / "p",
    )
    df, summary = io.load_pairs(spark, path, user_col="uid", item_col="word")
    expected = spark.createDataFrame(
        [("1", "a"), ("1", "b"), ("2", "a"), ("2", "ü€")], "user_id string, item string"
    )
    assert_df_equality(df, expected, ignore_row_order=True, ignore_nullable=True)
    assert (summary.rows_read, summary.duplicates_dropped, summary.rows) == (5, 1, 4)
    # cached deserialized: PySpark's MEMORY_AND_DISK is the serialized level, whose spilled
    # blocks come back in one heap allocation (an OutOfMemoryError at 100M rows, 1 GiB driver)
    level = df.storageLevel
    assert (level.useMemory, level.useDisk, level.deserialized) == (True, True, True)
    df.unpersist()


def test_load_pairs_can_leave_repeated_pairs_to_the_algorithm(spark, tmp_path, caplog):
    path = _write(
        spark, [(1, "a"), (1, "a"), (None, "b"), (2, "b")], "uid long, word string", tmp_path / "p"
    )
    df, summary = io.load_pairs(
        spark, path, user_col="uid", item_col="word", dedupe=False, persist=False
    )
    expected = spark.createDataFrame(
        [("1", "a"), ("1", "a"), ("2", "b")], "user_id string, item string"
    )
    assert_df_equality(df, expected, ignore_row_order=True, ignore_nullable=True)
    assert not df.is_cached
    assert (summary.rows_read, summary.null_rows_dropped) == (4, 1)
    assert summary.duplicates_dropped is None and summary.rows is None
    with caplog.at_level("INFO", logger="spark_dp.io"):
        summary.log()
    assert "read and validated" in caplog.text and "rows read" not in caplog.text
    caplog.clear()
    with caplog.at_level("INFO", logger="spark_dp.io"), unsafe_debug():
        summary.log()
    assert "[UNSAFE-DEBUG] input" in caplog.text
    assert "4 rows read, 1 with null ids dropped (repeated pairs are dropped" in caplog.text
    with pytest.raises(InputContractError, match=r"null ids.*--strict-input"):
        io.load_pairs(spark, path, user_col="uid", item_col="word", dedupe=False, strict=True)


def test_csv_ids_are_read_as_exact_strings(spark, tmp_path):
    p = tmp_path / "pairs.csv"
    p.write_text("user_id,item\n007,x\n7,x\n")
    df, _ = io.load_pairs(spark, str(p))
    assert sorted(r["user_id"] for r in df.collect()) == ["007", "7"]


def test_integer_ids_become_base10_strings(spark, tmp_path):
    path = _write(spark, [(10**15, 3)], "record_id long, user_id int", tmp_path / "i")
    df, _ = io.load_incidences(spark, path)
    assert df.collect()[0].asDict() == {"record_id": "1000000000000000", "user_id": "3"}


@pytest.mark.parametrize(
    ("rows", "schema", "kwargs", "message"),
    [
        (
            [(1, "a")],
            "uid long, item string",
            {},
            r"no column 'user_id' \(columns: uid, item\); did you mean `uid`\? "
            r"pass --user-col uid$",
        ),
        ([(1.5, "a")], "user_id double, item string", {}, "floating-point type double"),
        ([(1, [1])], "user_id long, item array<int>", {}, "unsupported type array<int>"),
        ([(True, "a")], "user_id boolean, item string", {}, "unsupported type boolean"),
        ([(1, datetime.date(2020, 1, 2))], "user_id long, item date", {}, "'item' .* type date"),
        (
            [(datetime.datetime(2020, 1, 2), "a")],
            "user_id timestamp, item string",
            {},
            "unsupported type timestamp",
        ),
        ([], "user_id long, item string", {"strict": True}, r"is empty \(0 rows\)"),
        (
            [(1, None), (2, "b")],
            "user_id long, item string",
            {"strict": True},
            r"null ids \('item': <private> rows\) and --strict-input is set",
        ),
        ([(None, None)], "user_id long, item string", {"strict": True}, "null ids"),
    ],
)
def test_bad_pairs_have_clear_errors(spark, tmp_path, rows, schema, kwargs, message):
    path = _write(spark, rows, schema, tmp_path / "bad")
    with pytest.raises(InputContractError, match=message):
        io.load_pairs(spark, path, **kwargs)


def test_null_rows_are_dropped_and_an_empty_input_is_an_empty_table(spark, tmp_path):
    """The default (docs/privacy/caveats.md#bad-rows): no row value decides whether reading
    fails, so neither does the exit code; the number dropped is a private count."""
    path = _write(
        spark, [(1, None), (None, "x"), (2, "b")], "user_id long, item string", tmp_path / "n"
    )
    df, summary = io.load_pairs(spark, path)
    assert [tuple(r) for r in df.collect()] == [("2", "b")] and summary.null_rows_dropped == 2
    only_nulls = _write(spark, [(None, "x")], "user_id long, item string", tmp_path / "n2")
    empty = _write(spark, [], "user_id long, item string", tmp_path / "n3")
    for path in (only_nulls, empty):
        df, summary = io.load_pairs(spark, path)
        assert df.count() == 0 and df.columns == ["user_id", "item"] and summary.rows == 0
        df, _ = io.load_incidences(spark, path, record_col="item")
        assert df.count() == 0 and df.columns == ["record_id", "user_id"]


def test_missing_path_and_mixed_types(spark, tmp_path):
    with pytest.raises(InputContractError, match="does not exist"):
        io.load_pairs(spark, str(tmp_path / "nope"))
    mixed = tmp_path / "mixed"
    spark.createDataFrame([(1, "a")], "user_id long, item string").write.parquet(
        str(mixed / "part=1")
    )
    spark.createDataFrame([("u", "a")], "user_id string, item string").write.parquet(
        str(mixed / "part=2")
    )
    with pytest.raises(InputContractError, match="mixed types"):
        io.load_pairs(spark, str(mixed))


def test_capacities_contract(spark, tmp_path):
    ok = _write(spark, [(1, 2), (2, 0), (2, 0)], "user_id long, cap int", tmp_path / "c")
    caps, digest = io.load_capacities(spark, ok)
    assert digest is None  # no gate: no digest
    assert sorted(tuple(r) for r in caps.collect()) == [("1", 2), ("2", 0)]
    assert sorted(tuple(r) for r in io.load_capacities(spark, ok, strict=True)[0].collect()) == [
        ("1", 2),
        ("2", 0),
    ]
    # invalid rows: one fixed reading by default (docs/privacy/caveats.md#bad-rows), each an
    # error with --strict-input; (rows, what the table reads as, the strict error)
    cases = [
        ([(1, -1)], [("1", 0)], "<private> negative capacities"),
        ([(1, None)], [("1", 0)], "null 'cap'"),
        ([(None, 3), (2, 1)], [("2", 1)], "null 'user_id'"),
        ([(1, 1), (1, 2), (2, 5), (2, 5)], [("1", 1), ("2", 5)], "different capacities"),
        ([(1, 4), (1, -2)], [("1", 0)], "negative capacities"),
        ([], [], "is empty"),
    ]
    for i, (rows, read, message) in enumerate(cases):
        path = _write(spark, rows, "user_id long, cap int", tmp_path / f"bad{i}")
        assert sorted(tuple(r) for r in io.load_capacities(spark, path)[0].collect()) == read
        with pytest.raises(InputContractError, match=f"{message}.*--strict-input"):
            io.load_capacities(spark, path, strict=True)
    csv = tmp_path / "caps.csv"
    csv.write_text("user_id,cap\na,1\nb,x\n")
    assert sorted(tuple(r) for r in io.load_capacities(spark, str(csv))[0].collect()) == [
        ("a", 1),
        ("b", 0),
    ]
    with pytest.raises(InputContractError, match="not integers"):
        io.load_capacities(spark, str(csv), strict=True)
    floats = _write(spark, [(1, 1.5)], "user_id long, cap double", tmp_path / "f")
    for strict in (False, True):  # the schema: refused in both modes
        with pytest.raises(InputContractError, match="capacities must be integers"):
            io.load_capacities(spark, floats, strict=strict)


def test_atomic_parquet_writer(spark, tmp_path):
    out = str(tmp_path / "out")
    df = spark.createDataFrame([("a",), ("b",)], "item string")
    io.write_parquet_atomic(df, out)
    assert spark.read.parquet(out).count() == 2
    with pytest.raises(OutputExistsError, match="--overwrite"):
        io.write_parquet_atomic(df, out)
    io.write_parquet_atomic(df.limit(1), out, overwrite=True)
    assert spark.read.parquet(out).count() == 1
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no temporary or backup left behind


def test_failed_write_leaves_nothing(spark, tmp_path):
    from pyspark.sql import functions as F

    out = str(tmp_path / "never")
    boom = F.udf(lambda x: 1 // 0, "int")
    df = spark.range(3).select(boom("id").alias("x"))
    with pytest.raises(Exception, match=r"ZeroDivisionError|division"):
        io.write_parquet_atomic(df, out)
    assert os.listdir(tmp_path) == []


def test_failed_overwrite_keeps_the_old_output(spark, tmp_path):
    from pyspark.sql import functions as F

    out = str(tmp_path / "keep")
    io.write_parquet_atomic(spark.range(4), out)
    boom = F.udf(lambda x: 1 // 0, "int")
    with pytest.raises(Exception, match=r"ZeroDivisionError|division"):
        io.write_parquet_atomic(spark.range(3).select(boom("id")), out, overwrite=True)
    assert spark.read.parquet(out).count() == 4
    assert os.listdir(tmp_path) == ["keep"]


def test_json_writer_and_fail_fast_check(tmp_path):
    p = tmp_path / "r" / "report.json"
    io.write_json_atomic({"a": 1}, str(p))
    assert json.loads(p.read_text()) == {"a": 1}
    with pytest.raises(OutputExistsError):
        io.write_json_atomic({"a": 2}, str(p), overwrite=False)
    with pytest.raises(OutputExistsError, match="already exists"):
        io.check_output_path(str(p), overwrite=False)
    io.check_output_path(str(p), overwrite=True)
    io.check_output_path(str(tmp_path / "new"), overwrite=False)


def test_a_partitioned_table_is_read_whole(spark, tmp_path):
    """Issue 39: the layouts the path plan accepts are read completely (every listed file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = {
        "flat": ["part-0.parquet", "part-1.parquet", "_temporary/part-9.parquet"],
        "hive": ["k=1/part-0.parquet", "k=2/part-1.parquet"],
        "hive2": ["k=1/j=a/part-0.parquet", "k=2/j=b/part-1.parquet", "k=2/j=c/part-2.parquet"],
    }
    for name, rels in files.items():
        listed = 0
        for n, rel in enumerate(rels):
            users = [f"u{n}-{i}" for i in range(5 + n)]
            path = tmp_path / name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.table({"user_id": users, "item": ["a"] * len(users)}), path)
            listed += 0 if rel.startswith("_") else len(users)
        _, summary = io.load_pairs(spark, str(tmp_path / name), persist=False)
        assert summary.rows_read == listed, name


def test_unusual_column_names_are_read_as_they_are(spark, tmp_path):
    schema = "`user.id` string, `it``em` string, `cap s` string"
    path = _write(spark, [("u1", "a", "c1"), ("u2", "b", "c2")], schema, tmp_path / "odd")
    df, _ = io.load_pairs(spark, path, user_col="user.id", item_col="it`em", persist=False)
    expected = spark.createDataFrame([("u1", "a"), ("u2", "b")], "user_id string, item string")
    assert_df_equality(df, expected, ignore_row_order=True, ignore_nullable=True)
